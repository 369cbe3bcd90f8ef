//! The Python bindings: what `rocrtrace._engine` exposes, one file per
//! concern; src/lib.rs registers them.  Nothing outside src/py/ and lib.rs
//! depends on pyo3.

pub mod analyze;
pub mod convert;
pub mod fds;
pub mod parse;
pub mod read;
pub mod svm;
pub mod table;
