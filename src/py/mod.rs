//! The Python bindings: what `rocrtrace._engine` exposes, one file per
//! concern; src/lib.rs registers them.  Nothing outside src/py/ and lib.rs
//! depends on pyo3.

pub mod convert;
pub mod read;
pub mod table;
pub mod parse;
pub mod fds;
pub mod svm;
