//! rocrtrace's compiled core.  The Python package drives it through the
//! extension module `rocrtrace._engine` defined here; everything else is plain
//! Rust that `cargo test` and the fuzz target use without Python.
//!
//! The core is the whole engine: read/ (bytes to lines, every input shape),
//! parse/ (the strace/preload and tinygrad dialects), events.rs, models/
//! (fds, handles, dma-bufs, SVM), findings.rs, analyze.rs (one trace through
//! the models) and table.rs; py/ is its Python face (/work/shared/ENGINE.md).
//! The Python engine it was ported from stays as the reference until retired.

pub mod analyze;
pub mod events;
pub mod findings;
pub mod kfd;
pub mod models;
pub mod parse;
#[cfg(feature = "python")]
pub mod py;
pub mod read;
pub mod replay;
pub mod table;

/// The engine allocates and frees many small values per line (tokens, field
/// trees, events) on a single thread; mimalloc's thread-local free lists
/// serve that pattern faster than glibc's malloc.  Only Rust allocations
/// use it: Python objects keep Python's allocator.  The extension only: the
/// plain core (fuzz/) keeps the system allocator its sanitizers watch.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `rocrtrace._engine`: the few functions Python calls, nothing else.
#[cfg(feature = "python")]
#[pyo3::pymodule]
mod _engine {
    use crate::parse::tokens::{self, Builder, Number};
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

    #[pymodule_export]
    use crate::py::analyze::{analyze, analyze_calls, analyze_events, events_table, history};
    #[pymodule_export]
    use crate::py::convert::roundtrip_events;
    #[pymodule_export]
    use crate::py::read::{ReadError, parse_tinygrad_lines, read_input, trace_events};
    #[pymodule_export]
    use crate::py::table::table_of_events;

    #[pymodule_export]
    use crate::py::fds::{FdModels, run_fd_models, time_fd_models};
    #[pymodule_export]
    use crate::py::parse::parse_lines;
    #[pymodule_export]
    use crate::py::svm::run_svm_model;
    #[pymodule_export]
    use crate::py::svm::time_svm_model;

    /// Deeper than this `bracketed` refuses to walk (its recursion follows the
    /// depth; tokens.MAX_NESTING is 64).
    const DEPTH_BOUND: isize = 1024;

    /// scan_line(line) -> (kind, tid, time, name, args, ret, err, ret_path, dur) or None
    ///
    /// kind: 0 a complete call, 1 an unfinished call, 2 a resumed call.
    #[pyfunction]
    fn scan_line<'py>(line: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let py = line.py();
        // A str with lone surrogates (a log read with surrogateescape) has no
        // UTF-8 form, and is no ASCII line this tokenizer takes.
        let Ok(text) = line.to_str() else {
            return Ok(None);
        };
        let Some(l) = tokens::scan_line(text) else {
            return Ok(None);
        };
        let (mut ret, mut err, mut path, mut dur) = (None, None, None, None);
        if let Some(o) = l.outcome {
            if let Some(n) = o.ret {
                let Some(v) = int_of(py, n) else {
                    return Ok(None);
                };
                ret = Some(v);
            }
            err = o.err.map(|e| PyString::intern(py, e));
            path = o.ret_path.map(|p| PyString::new(py, p));
            dur = o.dur;
        }
        let args = PyList::new(py, l.args.iter().map(|a| PyString::new(py, a)))?;
        let name = PyString::intern(py, l.name);
        let out = (l.kind as u8, l.tid, l.time, name, args, ret, err, path, dur);
        Ok(Some(out.into_pyobject(py)?))
    }

    /// `int(text, 0)`; None where Python refuses it (more digits than
    /// sys.get_int_max_str_digits()).
    fn int_of<'py>(py: Python<'py>, n: Number<'_>) -> Option<Bound<'py, PyAny>> {
        match n.value() {
            Some(v) => Some(match i64::try_from(v) {
                Ok(small) => small.into_pyobject(py).ok()?.into_any(),
                Err(_) => v.into_pyobject(py).ok()?.into_any(),
            }),
            None => py.get_type::<PyInt>().call1((n.text(), 0)).ok(),
        }
    }

    /// bracketed(tok, scalar, general, depth, max_depth) -> tokens._parse(tok, None,
    /// depth) for a tok holding '{' or '[': lists, dicts and (entry, exit) pairs built
    /// here, scalars from scalar(text), anything outside the well-formed language
    /// from general(text, None, depth); deeper than max_depth: the text.
    #[pyfunction]
    fn bracketed<'py>(
        tok: &Bound<'py, PyString>,
        scalar: &Bound<'py, PyAny>,
        general: &Bound<'py, PyAny>,
        depth: isize,
        max_depth: isize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if max_depth.saturating_sub(depth) > DEPTH_BOUND {
            return Err(PyValueError::new_err(format!(
                "bracketed: max_depth - depth is at most {DEPTH_BOUND}"
            )));
        }
        let Ok(text) = tok.to_str() else {
            return general.call1((tok, tok.py().None(), depth));
        };
        let mut b = Objects {
            tok,
            text,
            scalar,
            general,
        };
        tokens::bracketed(text, depth, max_depth, &mut b)
    }

    /// Builds bracketed values as Python objects, calling back into
    /// tokens.py for scalars and for text outside the well-formed language.
    struct Objects<'a, 'py> {
        tok: &'a Bound<'py, PyString>,
        text: &'a str,
        scalar: &'a Bound<'py, PyAny>,
        general: &'a Bound<'py, PyAny>,
    }

    impl<'a, 'py> Builder<'a> for Objects<'a, 'py> {
        type Value = Bound<'py, PyAny>;
        type Error = PyErr;

        fn scalar(&mut self, text: &'a str) -> PyResult<Self::Value> {
            self.scalar.call1((text,))
        }

        fn general(&mut self, text: &'a str, depth: isize) -> PyResult<Self::Value> {
            let py = self.tok.py();
            if std::ptr::eq(text, self.text) {
                // the whole token: the caller's own str, not a copy
                self.general.call1((self.tok, py.None(), depth))
            } else {
                self.general.call1((text, py.None(), depth))
            }
        }

        fn text(&mut self, text: &'a str) -> PyResult<Self::Value> {
            Ok(PyString::new(self.tok.py(), text).into_any())
        }

        fn list(
            &mut self,
            items: impl ExactSizeIterator<Item = Self::Value>,
        ) -> PyResult<Self::Value> {
            Ok(PyList::new(self.tok.py(), items)?.into_any())
        }

        fn dict(
            &mut self,
            fields: impl Iterator<Item = (&'a str, Self::Value)>,
        ) -> PyResult<Self::Value> {
            let py = self.tok.py();
            let d = PyDict::new(py);
            for (k, v) in fields {
                d.set_item(PyString::intern(py, k), v)?;
            }
            Ok(d.into_any())
        }

        fn pair(&mut self, entry: Self::Value, exit: Self::Value) -> PyResult<Self::Value> {
            Ok(PyTuple::new(self.tok.py(), [entry, exit])?.into_any())
        }
    }
}
