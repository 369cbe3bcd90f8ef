//! The replay models: fds, buffer handles and dma-bufs, and SVM.

pub mod buffer;
pub mod common;
pub mod dmabuf;
pub mod fds;
pub mod handles;
pub mod inside;
pub mod svm;
pub mod svm_build;
pub mod svm_map;
pub mod svm_records;
#[cfg(test)]
pub mod testkit;
