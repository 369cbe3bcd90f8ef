//! What the model tells besides findings: the `show --addr` history of the
//! watched pages, the counts and runtime behaviour the coverage section
//! shows, and the limits it states.

use super::*;

pub const LIMITS: [&str; 5] = [
    "SVM: without intent calls, two registrations with identical page ranges are \
     indistinguishable (they are one claim)",
    "SVM: a deregistration that issues no ioctl (the baseline runtime always; the fixed ones \
     when survivors cover the buffer or it holds no whole page) leaves its claim looking \
     alive until its pages are unmapped or revoked",
    "SVM: NO_ACCESS racing in-flight SDMA copies (clr #6724) needs copy-completion events, \
     which an ioctl trace does not have",
    "SVM: ranges created by GPU retry faults (XNACK on) appear without an ioctl; GET_ATTR \
     answers over them may differ from the model (svm-model-mismatch notes)",
    "SVM: a SET_ATTR that failed late (ENOMEM, migration errors) may have committed its \
     attributes; the model assumes it did not",
];

/// One `show --addr` row: the event, what the model did, its state after
/// (the pieces on the watched pages, empty: "no SVM range"; the claims on
/// them, empty: "none").
#[derive(Debug, Clone)]
pub struct HistoryRow {
    pub event: Ev,
    pub what: String,
    pub pieces: Vec<Row>,
    pub claims: Vec<String>,
}

impl SvmModel {
    pub const LIMITS: [&'static str; 5] = LIMITS;

    pub fn limits(&self) -> &'static [&'static str] {
        &LIMITS
    }

    pub fn history(&self) -> &[HistoryRow] {
        &self.sh.history
    }

    /// (`show` reads their events' texts back into them)
    pub fn history_mut(&mut self) -> &mut [HistoryRow] {
        &mut self.sh.history
    }

    pub fn counts(&self) -> Counts {
        self.sh.counts
    }

    /// The runtime behaviour the whole trace shows (every process's
    /// together), as the coverage section says it.
    pub fn behaviour(&self) -> Option<String> {
        let mut all = Seen::default();
        for s in &self.sh.seens {
            all.add(&s.borrow());
        }
        all.describe()
    }
}

impl Shared {
    pub(super) fn watched(&self, p: &Proc, s: u64, e: u64) -> bool {
        let Some((w0, w1)) = self.watch else {
            return false;
        };
        if let Some(wp) = self.watch_pid
            && p.pid != wp
        {
            return false;
        }
        let (ws, we) = watch_pages(w0, w1, p.shift);
        u128::from(s) < we && ws < u128::from(e)
    }

    pub(super) fn note(&mut self, p: &Proc, ev: &Ev, s: u64, e: u64, what: String) {
        if !self.watched(p, s, e) {
            return;
        }
        let (w0, w1) = self.watch.unwrap();
        let (ws, we) = watch_pages(w0, w1, p.shift);
        let (ws, we) = (
            u64::try_from(ws).unwrap_or(u64::MAX),
            u64::try_from(we).unwrap_or(u64::MAX),
        );
        let claims = p
            .cover
            .query(ws, we)
            .into_iter()
            .map(|c| {
                let b = c.b();
                let gpus = b.gpus.iter().map(|&g| hex(g)).collect::<Vec<_>>();
                let gpus = if gpus.is_empty() {
                    "none".to_owned()
                } else {
                    gpus.join(",")
                };
                format!(
                    "#{} {} gpus {gpus} flags {}",
                    c.id(),
                    b.label(p.shift),
                    flags_text(b.flags)
                )
            })
            .collect();
        self.history.push(HistoryRow {
            event: ev.clone(),
            what,
            pieces: p.map.describe(ws, we, p.shift),
            claims,
        });
    }
}

fn watch_pages(w0: u128, w1: u128, shift: u32) -> (u128, u128) {
    (w0 >> shift, w1.div_ceil(1u128 << shift))
}
