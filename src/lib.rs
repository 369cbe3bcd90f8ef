//! rocrtrace's compiled core.  The Python package drives it through the
//! extension module `rocrtrace._engine` defined here; everything else is plain
//! Rust that `cargo test` and the fuzz target use without Python.
//!
//! The core is the whole engine: read/ (bytes to lines, every input shape),
//! parse/ (the strace/preload and tinygrad dialects), events.rs, models/
//! (fds, handles, dma-bufs, SVM), rules.rs (the rule catalogue), findings.rs,
//! analyze.rs (one trace through the models) and table.rs; py/ is its Python
//! face (the README's layout).  It is the only engine: the Python one it was
//! ported from is retired, and tests/engine/expected.py holds the outputs
//! both agreed on.

pub mod analyze;
pub mod events;
pub mod findings;
pub mod kfd;
pub mod models;
pub mod ordered;
pub mod parse;
#[cfg(feature = "python")]
pub mod py;
pub mod read;
pub mod replay;
pub mod rules;
pub mod table;

/// The engine allocates and frees many small values per line (tokens, field
/// trees, events); mimalloc's thread-local free lists serve that pattern
/// faster than glibc's malloc.  Only Rust allocations
/// use it: Python objects keep Python's allocator.  The extension only: the
/// plain core (fuzz/) keeps the system allocator its sanitizers watch.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOC: alloc::MiMalloc = alloc::MiMalloc;

#[cfg(feature = "python")]
mod alloc;

/// `rocrtrace._engine`: the few functions the package calls (typed in
/// rocrtrace/_engine.pyi), and with the `hooks` feature the entry points
/// the tests and benchmarks feed events through.
#[cfg(feature = "python")]
#[pyo3::pymodule]
mod _engine {
    #[pymodule_export]
    use crate::py::analyze::{
        analyze, analyze_calls, analyze_events, event_batches, events_table, history,
    };
    #[pymodule_export]
    use crate::py::read::{ReadError, input_formats};
    #[pymodule_export]
    use crate::py::rules::rule_catalogue;
    #[pymodule_export]
    use crate::py::table::table_of_events;

    #[cfg(feature = "hooks")]
    #[pymodule_export]
    use crate::py::hooks::fds::{FdModels, run_fd_models, time_fd_models};
    #[cfg(feature = "hooks")]
    #[pymodule_export]
    use crate::py::hooks::parse::parse_lines;
    #[cfg(feature = "hooks")]
    #[pymodule_export]
    use crate::py::hooks::read::{parse_tinygrad_lines, read_input, trace_events};
    #[cfg(feature = "hooks")]
    #[pymodule_export]
    use crate::py::hooks::roundtrip_events;
    #[cfg(feature = "hooks")]
    #[pymodule_export]
    use crate::py::hooks::svm::{run_svm_model, time_svm_model};

    #[pymodule_init]
    fn init(_m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        crate::alloc::tune();
        Ok(())
    }
}
