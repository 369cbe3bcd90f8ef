//! The replay models.  So far the SVM interval map and the SVM model are
//! compiled; the others (fds, handles) are still rocrtrace/models.

pub mod svm;
pub mod svm_build;
pub mod svm_map;
