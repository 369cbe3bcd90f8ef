//! The Python bindings: what `rocrtrace._engine` exposes, one file per
//! concern; src/lib.rs registers them.  Nothing outside src/py/ and lib.rs
//! depends on pyo3.  The test and benchmark entry points (hooks/) are built
//! only with the `hooks` feature.

pub mod analyze;
pub mod convert;
#[cfg(feature = "hooks")]
pub mod hooks;
pub mod read;
pub mod rules;
pub mod svm;
pub mod table;
