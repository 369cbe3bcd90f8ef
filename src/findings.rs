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

/// The role of a repeated finding's last occurrence: "the last of N" (the
/// front leaves it out of the fingerprint, rocrtrace/findings.py LAST_OF).
pub const LAST_OF: &str = "the last of ";

/// Repeated findings folded into their first occurrence (repeated
/// findings of one rule at one site aggregate, so a trace that does the
/// same wrong thing 10^6 times costs one finding, not 10^6).  A repeat is
/// a finding equal to an earlier one in all but its event: rule, severity,
/// message, subject, key, details, evidence roles, and the event's call
/// site (its frames) in the same process (a process runs one program, which
/// the fingerprint names).  It is counted there with its last occurrence;
/// [`Repeats::finish`] writes the count into the first (its message, its
/// `occurrences` detail, and the last occurrence as evidence);
/// [`fold_programs`] then folds across the processes of one program.
#[derive(Debug, Default)]
pub struct Repeats {
    /// identity hash -> indices of first occurrences
    seen: foldhash::HashMap<u64, Vec<usize>>,
    /// index of a first occurrence -> (repeats, the last one's event)
    more: foldhash::HashMap<usize, (u64, Event)>,
    /// first occurrences of processes that ended, by their identity in
    /// their program (no pid): what later ones of that program fold into
    ended: foldhash::HashMap<u64, Vec<usize>>,
}

fn identity(f: &Finding, ev: &Event) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    f.rule.hash(&mut h);
    f.severity.hash(&mut h);
    f.message.hash(&mut h);
    f.key.hash(&mut h);
    f.cause.hash(&mut h);
    ev.h.pid.hash(&mut h);
    ev.h.stack.hash(&mut h);
    h.finish()
}

fn same(a: &Finding, b: &Finding) -> bool {
    fn site(f: &Finding) -> Option<(Option<u32>, &[crate::events::Frame])> {
        f.event.as_ref().map(|e| (e.h.pid, &e.h.stack[..]))
    }
    a.rule == b.rule
        && a.severity == b.severity
        && a.message == b.message
        && a.key == b.key
        && a.cause == b.cause
        && a.file == b.file
        && a.subject == b.subject
        && a.details == b.details
        && site(a) == site(b)
        && a.evidence.len() == b.evidence.len()
        && a.evidence
            .iter()
            .zip(&b.evidence)
            .all(|(x, y)| x.role == y.role && x.note == y.note)
}

impl Repeats {
    /// Count `f` against an equal earlier finding, `at(i)` giving the
    /// findings kept so far: Some(its index) when it was (drop `f`), None
    /// when `f` is a first occurrence, remembered at `index` (keep it there).
    pub fn fold<'a>(
        &mut self,
        f: &Finding,
        index: usize,
        at: impl Fn(usize) -> Option<&'a Finding>,
    ) -> Option<usize> {
        let ev = f.event.as_ref()?; // about a whole input: nothing repeats it
        let firsts = self.seen.entry(identity(f, ev)).or_default();
        match firsts.iter().find(|&&i| at(i).is_some_and(|g| same(g, f))) {
            Some(&i) => {
                let e = self.more.entry(i).or_insert_with(|| (0, ev.clone()));
                e.0 += 1;
                e.1 = ev.clone();
                Some(i)
            }
            None => {
                firsts.push(index);
                None
            }
        }
    }

    /// A process running `program` ended: its first occurrences at `firsts`
    /// fold into equal ones of ended processes of the same program (their
    /// counts and last occurrences move there); returns the indices that
    /// folded, which the caller drops.  So repeats across processes (the
    /// same sweep in every child) cost one finding while the trace runs.
    pub fn end_process<'a>(
        &mut self,
        firsts: Vec<usize>,
        program: Option<&[u8]>,
        at: impl Fn(usize) -> Option<&'a Finding>,
    ) -> Vec<usize> {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut folded = Vec::new();
        for i in firsts {
            let Some(f) = at(i) else { continue };
            let Some(ev) = &f.event else { continue };
            // the process is gone: its own identity is no longer asked for
            let id = identity(f, ev);
            if let Some(v) = self.seen.get_mut(&id) {
                v.retain(|&k| k != i);
                if v.is_empty() {
                    self.seen.remove(&id);
                }
            }
            let mut h = foldhash::fast::FixedState::default().build_hasher();
            (f.rule, f.severity, &f.message, &f.key, &f.cause).hash(&mut h);
            (program, &ev.h.stack).hash(&mut h);
            let firsts = self.ended.entry(h.finish()).or_default();
            match firsts
                .iter()
                .copied()
                .find(|&j| j != i && at(j).is_some_and(|g| same_elsewhere(g, f)))
            {
                Some(j) => {
                    let (n, last) = self.more.remove(&i).unwrap_or_else(|| (0, ev.clone()));
                    let e = self.more.entry(j).or_insert_with(|| (0, last.clone()));
                    e.0 += n + 1;
                    if last.h.seq > e.1.h.seq {
                        e.1 = last;
                    }
                    folded.push(i);
                }
                None => firsts.push(i),
            }
        }
        folded
    }

    /// Write each count into its first occurrence in `list`.
    pub fn finish(&mut self, list: &mut [Finding]) {
        self.finish_with(|i, mark| {
            if let Some(f) = list.get_mut(i) {
                mark(f);
            }
        });
    }

    /// [`Repeats::finish`] for a list whose taken-back findings are None.
    pub fn finish_opt(&mut self, list: &mut [Option<Finding>]) {
        self.finish_with(|i, mark| {
            if let Some(Some(f)) = list.get_mut(i) {
                mark(f);
            }
        });
    }

    fn finish_with(&mut self, mut at: impl FnMut(usize, &dyn Fn(&mut Finding))) {
        self.seen.clear();
        self.ended.clear();
        for (i, (n, last)) in std::mem::take(&mut self.more) {
            let times = n + 1;
            at(i, &|f: &mut Finding| {
                f.message += &times_suffix(times);
                f.details.insert(OCCURRENCES.into(), Json::from(times));
                f.evidence
                    .push(Evidence::new(format!("{LAST_OF}{times}"), &last));
            });
        }
    }
}

/// The detail that counts a folded finding's occurrences.
pub const OCCURRENCES: &str = "occurrences";

fn occurrences(f: &Finding) -> u64 {
    f.details
        .get(OCCURRENCES)
        .and_then(Json::as_u64)
        .unwrap_or(1)
}

fn times_suffix(times: u64) -> String {
    format!("; {times} times in all (the first and the last are shown)")
}

/// The message without the count a fold wrote into it.
fn base_message(f: &Finding) -> &str {
    let n = occurrences(f);
    if n > 1 {
        f.message
            .strip_suffix(times_suffix(n).as_str())
            .unwrap_or(&f.message)
    } else {
        &f.message
    }
}

/// Equal but for the event, its process and file, and the counts.
fn same_elsewhere(a: &Finding, b: &Finding) -> bool {
    let told = |f: &Finding| {
        f.evidence
            .iter()
            .filter(|e| !e.role.starts_with(LAST_OF))
            .map(|e| (e.role.clone(), e.note.clone()))
            .collect::<Vec<_>>()
    };
    let details = |f: &Finding| {
        let mut d = f.details.clone();
        d.remove(OCCURRENCES);
        d
    };
    let stack = |f: &Finding| f.event.as_ref().map(|e| e.h.stack.clone());
    a.rule == b.rule
        && a.severity == b.severity
        && base_message(a) == base_message(b)
        && a.key == b.key
        && a.cause == b.cause
        && a.subject == b.subject
        && stack(a) == stack(b)
        && told(a) == told(b)
        && details(a) == details(b)
}

/// The models fold repeats within a process as they go; this folds what is
/// left across the processes and files of one program (a child per file of
/// a `-ff` trace doing the same close-all sweep: one note, N times), the
/// counts added up.  The earliest occurrence
/// (trace order) is kept, with the latest as its last; `program` names a
/// process's program (the fingerprint's), so findings of two programs
/// never fold.  Linear in the findings.
pub fn fold_programs(
    findings: Vec<Finding>,
    program: impl Fn(Option<u32>) -> Vec<u8>,
) -> Vec<Finding> {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: Vec<Option<usize>> = vec![None; findings.len()];
    let mut seen: foldhash::HashMap<u64, Vec<usize>> = foldhash::HashMap::default();
    for (i, f) in findings.iter().enumerate() {
        let Some(ev) = &f.event else { continue };
        let mut h = foldhash::fast::FixedState::default().build_hasher();
        (f.rule, f.severity, base_message(f), &f.key, &f.cause).hash(&mut h);
        program(ev.h.pid).hash(&mut h);
        ev.h.stack.hash(&mut h);
        let firsts = seen.entry(h.finish()).or_default();
        let hit = firsts
            .iter()
            .copied()
            .find(|&g| same_elsewhere(&findings[groups[g][0]], f));
        let g = hit.unwrap_or_else(|| {
            groups.push(Vec::new());
            firsts.push(groups.len() - 1);
            groups.len() - 1
        });
        groups[g].push(i);
        group_of[i] = Some(g);
    }
    let mut slots: Vec<Option<Finding>> = findings.into_iter().map(Some).collect();
    let seq = |f: &Finding| f.event.as_ref().map_or(0, |e| e.h.seq);
    let mut merged: Vec<Option<Finding>> = Vec::with_capacity(groups.len());
    for members in &groups {
        let mut fs: Vec<Finding> = members.iter().filter_map(|&i| slots[i].take()).collect();
        let keep = (0..fs.len()).min_by_key(|&k| seq(&fs[k])).unwrap_or(0);
        let mut f = fs.swap_remove(keep);
        if fs.is_empty() {
            merged.push(Some(f)); // no repeat elsewhere: as the model left it
            continue;
        }
        f.message = base_message(&f).to_owned();
        let mut total = occurrences(&f);
        let mut last: Option<Event> = None;
        let mut later = |e: &Event| {
            if last.as_ref().is_none_or(|l| e.h.seq > l.h.seq) {
                last = Some(e.clone());
            }
        };
        let (mine, lasts): (Vec<Evidence>, Vec<Evidence>) = std::mem::take(&mut f.evidence)
            .into_iter()
            .partition(|e| !e.role.starts_with(LAST_OF));
        f.evidence = mine;
        lasts.iter().for_each(|e| later(&e.event));
        for o in &fs {
            total += occurrences(o);
            if let Some(e) = &o.event {
                later(e);
            }
            for e in o.evidence.iter().filter(|e| e.role.starts_with(LAST_OF)) {
                later(&e.event);
            }
        }
        if total > 1 {
            f.message += &times_suffix(total);
            f.details.insert(OCCURRENCES.into(), Json::from(total));
            if let Some(l) = last {
                f.evidence
                    .push(Evidence::new(format!("{LAST_OF}{total}"), &l));
            }
        }
        merged.push(Some(f));
    }
    // each group where its first member stood; findings about a whole
    // input where they stood
    let mut out = Vec::with_capacity(merged.len());
    for (i, slot) in slots.into_iter().enumerate() {
        match group_of[i] {
            None => out.extend(slot),
            Some(g) if groups[g][0] == i => out.extend(merged[g].take()),
            Some(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Header, Kind};

    fn at(line: u64, pid: u32, msg: &str) -> Finding {
        let h = Header {
            line,
            seq: line,
            pid: Some(pid),
            ..Default::default()
        };
        let ev = Event::new(h, Kind::Syscall(Default::default()));
        let mut f = Finding::new(crate::rules::Rule::FdBadFd, msg, Some(&ev));
        f.evidence = vec![Evidence::new("this call", &ev)];
        f
    }

    #[test]
    fn only_equal_findings_fold() {
        // within a process as they come (Repeats), then across the
        // processes of one program (fold_programs); whole-input findings
        // never fold
        let whole = Finding::new(crate::rules::Rule::TraceUnparsed, "x", None);
        let fs = vec![
            at(1, 7, "a"),
            at(2, 7, "b"),
            at(3, 8, "a"),
            at(4, 7, "a"),
            whole.clone(),
            at(5, 7, "a"),
            at(6, 9, "a"),
            whole,
        ];
        let mut r = Repeats::default();
        let mut kept: Vec<Finding> = Vec::new();
        for f in fs {
            if r.fold(&f, kept.len(), |i| kept.get(i)).is_none() {
                kept.push(f);
            }
        }
        r.finish(&mut kept);
        let lines = |fs: &[Finding]| -> Vec<_> {
            fs.iter()
                .map(|f| (f.line, f.details.get(OCCURRENCES).cloned()))
                .collect()
        };
        assert_eq!(
            lines(&kept),
            vec![
                (Some(1), Some(Json::from(3))),
                (Some(2), None),
                (Some(3), None),
                (None, None),
                (Some(6), None),
                (None, None)
            ]
        );
        // pids 7 and 8 run one program, 9 another
        let prog = |pid: Option<u32>| {
            if pid == Some(9) {
                b"y".to_vec()
            } else {
                b"x".to_vec()
            }
        };
        let got = fold_programs(kept, prog);
        assert_eq!(
            lines(&got),
            vec![
                (Some(1), Some(Json::from(4))),
                (Some(2), None),
                (None, None),
                (Some(6), None),
                (None, None)
            ]
        );
        let roles: Vec<_> = got[0]
            .evidence
            .iter()
            .map(|e| (e.role.as_str(), e.event.h.line))
            .collect();
        assert_eq!(roles, vec![("this call", 1), ("the last of 4", 5)]);
        assert!(got[0].message.starts_with("a; 4 times in all"));
        assert_eq!(got[1].message, "b");
    }
}
