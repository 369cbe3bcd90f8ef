//! The replay models: fds, buffer handles and dma-bufs, and SVM (ports of
//! rocrtrace/models; the Python ones stay the reference until the
//! comparison harness has them equal).

pub mod common;
pub mod dmabuf;
pub mod fds;
pub mod handles;
pub mod svm;
pub mod svm_build;
pub mod svm_map;
