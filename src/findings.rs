//! Findings: what the models conclude, with the events that prove it (they
//! cross into Python as rocrtrace/findings.py's Finding and Evidence).
//!
//! The core builds findings; the Python front symbolizes the frames a report
//! shows, computes fingerprints (they depend on the symbolized call sites)
//! and renders.  So a finding here carries the fingerprint's *ingredients*
//! (`key`) but no fingerprint, and its severity only when it differs from the
//! rule's default (rules.rs is the one table of rules and severities).

use crate::events::{Event, FileId};
use crate::rules::{Rule, Severity};
use serde_json::{Map, Value as Json};

/// One event that makes a finding true, and its role in the story
/// ("this close", "previous close", "created by" ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub role: String,
    pub event: Event,
    pub note: String,
}

impl Evidence {
    pub fn new(role: impl Into<String>, event: &Event) -> Self {
        Evidence {
            role: role.into(),
            event: event.clone(),
            note: String::new(),
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub rule: Rule,
    pub message: String,
    /// the offending event; None for a finding about the whole input
    pub event: Option<Event>,
    /// what the finding is about (`kind`, `fd`, `fd_kind`, `range` ...), in
    /// the order Python's dict literal lists it (JSON reports keep it)
    pub subject: Map<String, Json>,
    pub evidence: Vec<Evidence>,
    /// None: the rule's default severity
    pub severity: Option<Severity>,
    pub cause: Option<String>,
    /// The fingerprint's stable ingredients, each as Python's `str()` of
    /// the key item it stands for (`None`, `3`, `'x'` prints as `x`).
    pub key: Vec<String>,
    pub details: Map<String, Json>,
    /// for findings with no event (the event's own file and line otherwise)
    pub file: Option<FileId>,
    pub line: Option<u64>,
}

impl Finding {
    /// A finding about `event` (or the whole input when None), with the
    /// rule's default severity and nothing else filled in.
    pub fn new(rule: Rule, message: impl Into<String>, event: Option<&Event>) -> Self {
        Finding {
            rule,
            message: message.into(),
            event: event.cloned(),
            subject: Map::new(),
            evidence: Vec::new(),
            severity: None,
            cause: None,
            key: Vec::new(),
            details: Map::new(),
            file: event.map(|e| e.h.file),
            line: event.map(|e| e.h.line),
        }
    }
}

/// Python's `str(x)` of a key item, for the common item types.
pub fn key_str(x: Option<&str>) -> String {
    x.map_or_else(|| "None".to_owned(), str::to_owned)
}
