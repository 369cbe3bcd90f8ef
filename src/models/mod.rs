//! The replay models.  So far only the SVM interval map is compiled; the
//! models themselves (fds, handles, svm claims) are still rocrtrace/models.

pub mod svm_map;
