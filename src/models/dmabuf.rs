//! dma-buf bookkeeping on top of the fd model: which buffer an exported fd
//! is, how often one buffer is exported (dmabuf-reexport), exported fds
//! held open long after their last use and the peak of open dma-buf fds
//! per process (fd-held-open).  Driven by the handle model, which owns the
//! buffer identities (`buffer`).

use super::buffer::{BufRef, merge, resolve};
use super::common::*;
use super::fds::{FdKind, Proc, Release, Slot};
use crate::events::Event;
use crate::findings::{Evidence, Finding};
use crate::rules::Rule;
use foldhash::HashMap;
use serde_json::json;
use std::rc::Rc;

#[derive(Debug, Default)]
struct ProcStats {
    open_dmabufs: u64,
    peak: u64,
    peak_event: Option<Ev>,
    /// allocation count when the open count first reached k+1
    levels: Vec<u64>,
    held_reports: u64,
    held_total: u64,
}

pub struct DmabufTracker {
    /// the handle model's findings (it emits its own here too)
    pub findings: Vec<Finding>,
    pub reexport_threshold: u64,
    pub held_allocs: i64,
    pub held_seconds: f64,
    pub held_max_reports: u64,
    pub peak_min: u64,
    stats: HashMap<Pid, ProcStats>,
    names: Rc<Names>,
}

#[cfg(test)]
impl DmabufTracker {
    /// Processes the tracker keeps statistics for (the model tests: none
    /// once every process ended).
    pub fn live_processes(&self) -> usize {
        self.stats.len()
    }
}

impl DmabufTracker {
    pub fn new(
        names: Rc<Names>,
        reexport_threshold: u64,
        held_allocs: i64,
        held_seconds: f64,
        peak_min: u64,
    ) -> Self {
        DmabufTracker {
            findings: Vec::new(),
            reexport_threshold,
            held_allocs,
            held_seconds,
            held_max_reports: 5,
            peak_min,
            stats: HashMap::default(),
            names,
        }
    }

    pub fn names(&self) -> Rc<Names> {
        self.names.clone()
    }

    pub fn buffer_of(slot: Option<&Slot>) -> Option<BufRef> {
        slot?.buffer.as_ref().map(resolve)
    }

    pub fn exported(&mut self, buf: &BufRef, ev: &Ev, slot: Option<&mut Slot>) {
        let buf = resolve(buf);
        {
            let mut b = buf.borrow_mut();
            b.exports += 1;
            if b.first_export.is_none() {
                b.first_export = Some(ev.clone());
            }
            b.last_export = Some(ev.clone());
        }
        if let Some(slot) = slot {
            slot.buffer = merge(slot.buffer.as_ref(), Some(&buf));
        }
        let (exports, has) = {
            let b = buf.borrow();
            (b.exports, b.finding.is_some())
        };
        if exports >= self.reexport_threshold && !has {
            let b = buf.borrow();
            let first = b.first_export.clone().expect("first export");
            let mut evidence = vec![
                Evidence::new("first export", &first).with_note(site(&first)),
                Evidence::new(format!("export #{exports}"), ev).with_note(site(ev)),
            ];
            if let Some(c) = &b.created {
                evidence.push(Evidence::new("buffer created by", c).with_note(site(c)));
            }
            let mut f = Finding::new(Rule::DmabufReexport, "", Some(ev));
            f.subject.insert("kind".into(), json!("handle"));
            f.subject.insert("handle".into(), json!(b.handle));
            f.evidence = evidence;
            f.key = vec![ioctl_or_export(&first), ioctl_or_export(ev)];
            drop(b);
            self.findings.push(f);
            buf.borrow_mut().finding = Some(self.findings.len() - 1);
        }
        if buf.borrow().finding.is_some() {
            self.reexport_message(&buf);
        }
    }

    fn reexport_message(&mut self, buf: &BufRef) {
        let b = buf.borrow();
        let Some(i) = b.finding else { return };
        let msg = format!(
            "{} was exported as a dma-buf fd {} times (threshold {}); first by {}, last by {}. \
             Each export makes a new fd and a new import: per-chunk x per-agent amplification \
             (export once and reuse the fd, or import once per device)",
            b.label,
            b.exports,
            self.reexport_threshold,
            short(&self.names, b.first_export.as_ref()),
            short(&self.names, b.last_export.as_ref())
        );
        let f = &mut self.findings[i];
        f.details.insert("exports".into(), json!(b.exports));
        f.message = msg;
    }

    // fd lifecycle (called by the handle model from the fd model's hooks) ----

    pub fn fd_open(&mut self, p: &Proc, slot: &Slot, ev: &Ev) {
        if slot.kind != FdKind::Dmabuf {
            return;
        }
        let st = self.stats.entry(p.pid).or_default();
        st.open_dmabufs += 1;
        if st.open_dmabufs > st.peak {
            st.peak = st.open_dmabufs;
            st.peak_event = Some(ev.clone());
            if (st.levels.len() as u64) < st.peak {
                st.levels.push(p.allocs());
            }
        }
    }

    pub fn fd_release(&mut self, p: &Proc, slot: &Slot, ev: Option<&Ev>, how: Release) {
        if slot.kind != FdKind::Dmabuf {
            return;
        }
        let mut st = self.stats.remove(&p.pid).unwrap_or_default();
        st.open_dmabufs = st.open_dmabufs.saturating_sub(1);
        if how != Release::Unseen {
            self.held(p, slot, ev, &mut st, false);
        }
        self.stats.insert(p.pid, st);
    }

    pub fn process_end(&mut self, p: &Proc, ev: Option<&Ev>, slots: &[&Slot]) {
        let Some(mut st) = self.stats.remove(&p.pid) else {
            return;
        };
        for s in slots {
            if s.kind == FdKind::Dmabuf {
                self.held(p, s, ev, &mut st, true);
            }
        }
        self.peak(&st);
    }

    // fd-held-open -------------------------------------------------------------

    fn held(&mut self, p: &Proc, slot: &Slot, end: Option<&Ev>, st: &mut ProcStats, at_exit: bool) {
        if !slot.exported() || slot.origin == "inherited" {
            return;
        }
        let Some(since) = slot.last_use.as_ref().or(slot.creator.as_ref()) else {
            return;
        };
        let allocs = p.allocs() as i64 - slot.allocs_at_use as i64;
        let gap = match (end.and_then(|e| e.h.time), since.h.end()) {
            (Some(t), Some(s)) => Some(t - s),
            _ => None,
        };
        if allocs < self.held_allocs && gap.is_none_or(|g| g < self.held_seconds) {
            return;
        }
        st.held_total += 1;
        if st.held_reports >= self.held_max_reports {
            return;
        }
        st.held_reports += 1;
        let names = &self.names;
        let until = if at_exit {
            "the process ended".to_owned()
        } else {
            format!("it was closed by {}", short(names, end))
        };
        let mut msg = format!(
            "{} stayed open after its last use ({}) until {until}",
            slot.describe(names),
            short(names, Some(since))
        );
        let mut parts = Vec::new();
        if allocs != 0 {
            parts.push(format!("{allocs} allocation(s)"));
        }
        if let Some(g) = gap
            && g >= self.held_seconds
        {
            parts.push(format!("{g:.1} s"));
        }
        msg += &format!(
            ": {} later. An exported dma-buf fd held for a buffer's whole life costs one fd per \
             buffer; close it after the import",
            parts.join(" and ")
        );
        let made = slot.root.as_ref().or(slot.creator.as_ref());
        let mut ev = Vec::new();
        if let Some(m) = made {
            ev.push(Evidence::new("created by", m).with_note(site(m)));
        }
        if let Some(u) = &slot.last_use
            && !same(Some(u), slot.creator.as_ref())
        {
            ev.push(Evidence::new("last used by", u).with_note(site(u)));
        }
        if let Some(e) = end {
            ev.push(Evidence::new(
                if at_exit { "process end" } else { "closed by" },
                e,
            ));
        }
        let mut f = Finding::new(Rule::FdHeldOpen, msg, made.map(|e| &**e));
        f.subject.insert("kind".into(), json!("fd"));
        f.subject.insert("fd".into(), json!(slot.fd));
        f.subject
            .insert("fd_kind".into(), json!(slot.kind.as_str()));
        f.evidence = ev;
        f.key = vec!["held".into(), slot.root_origin.to_string()];
        f.details
            .insert("allocations_since_use".into(), json!(allocs));
        self.findings.push(f);
    }

    fn peak(&mut self, st: &ProcStats) {
        let Some(pe) = &st.peak_event else { return };
        if st.peak < self.peak_min {
            return;
        }
        let lv = &st.levels;
        let peak = st.peak as usize;
        let half = peak / 2;
        let a_peak = lv[peak - 1];
        let a_half = if half >= 1 { lv[half - 1] } else { 0 };
        let growth = (a_peak > a_half).then(|| (peak - half) as f64 / (a_peak - a_half) as f64);
        let early = (half >= 1 && lv[half - 1] != 0).then(|| half as f64 / lv[half - 1] as f64);
        let linear = match (growth, early) {
            (Some(g), Some(e)) => g >= 0.5 && (0.5..=2.0).contains(&(g / e)),
            _ => false,
        };
        if !linear {
            return;
        }
        let growth = growth.expect("linear");
        let names = &self.names;
        let mut msg = format!(
            "up to {peak} dma-buf fds were open at once in this process (peak at {}:{}), growing \
             by {growth:.2} fd per allocation ({a_peak} allocations by then): each allocation \
             keeps its exported dma-buf fd open for its whole life, the VMM fd-per-handle \
             design; at the default RLIMIT_NOFILE of 1024 it fails with EMFILE after ~1015 \
             allocations",
            names.file(pe),
            pe.h.line
        );
        if st.held_total > st.held_reports {
            msg += &format!(
                "; {} fds were held open long after their last use ({} reported individually)",
                st.held_total, st.held_reports
            );
        }
        let mut f = Finding::new(Rule::FdHeldOpen, msg, Some(pe));
        f.subject.insert("kind".into(), json!("process"));
        f.evidence = vec![Evidence::new("the peak was reached by", pe).with_note(site(pe))];
        f.key = vec!["peak".into(), "linear".into()];
        let rounded: f64 = format!("{growth:.3}").parse().unwrap_or(growth);
        f.details.insert("peak".into(), json!(peak));
        f.details
            .insert("fds_per_allocation".into(), json!(rounded));
        f.details.insert("allocations".into(), json!(a_peak));
        f.details.insert("held_open".into(), json!(st.held_total));
        self.findings.push(f);
    }
}

fn ioctl_or_export(ev: &Event) -> String {
    match &ev.kind {
        crate::events::Kind::Ioctl(io) => io.ioctl.unwrap_or("export").to_owned(),
        _ => "export".to_owned(),
    }
}

#[cfg(test)]
mod tests;
