//! The replay models.  Compiled so far: the SVM interval map and the fd,
//! handle and dma-buf models (ports of rocrtrace/models; the Python ones
//! stay the product's engine until the comparison harness has them equal).

pub mod common;
pub mod dmabuf;
pub mod fds;
pub mod handles;
pub mod svm_map;
