//! `_engine.rule_catalogue`: the rule catalogue (src/rules.rs) as
//! rocrtrace/rules.py reads it, once, when it is imported.

use crate::rules::Rule;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// `rule_catalogue() -> [dict]`: every rule in catalogue order, each
/// `{"id", "severity", "summary", "help", "example", "fix"}` (strings).
#[pyfunction]
pub fn rule_catalogue(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for r in Rule::ALL {
        let i = r.info();
        let d = PyDict::new(py);
        d.set_item("id", i.id)?;
        d.set_item("severity", i.severity.as_str())?;
        d.set_item("summary", i.summary)?;
        d.set_item("help", i.help)?;
        d.set_item("example", i.example)?;
        d.set_item("fix", i.fix)?;
        out.append(d)?;
    }
    Ok(out)
}
