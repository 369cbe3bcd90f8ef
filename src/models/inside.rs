//! The runtime call a finding's event ran inside: an fd or buffer finding
//! whose call lies in the window of an intent call on its thread (the
//! `hsa_amd_*` call the runtime was executing when it closed, used or freed
//! something) names that call, in its message, its details and its
//! evidence.  Intent lines are written when the call returns, so in
//! completion order an intent comes after the calls inside it: each intent
//! looks back over the findings made since, newest first.

use serde_json::json;

use crate::events::Kind;
use crate::findings::{Evidence, Finding};
use crate::models::common::{Ev, Names, short, site};
use crate::models::svm;

/// How many findings an intent looks back over at most, and how far back
/// in time (the models' reorder horizon): the findings inside an intent's
/// window are the most recent ones when it completes.
const LOOK_BACK: usize = 64;
const HORIZON_SECS: f64 = 1.0;

/// Name `intent` in every finding among `recent` (newest first) whose event
/// ran inside its window on its thread and names no runtime call yet.
pub fn name_runtime_call<'a>(
    recent: impl Iterator<Item = &'a mut Finding>,
    intent: &Ev,
    names: &Names,
) {
    if !matches!(intent.kind, Kind::Intent(_)) {
        return;
    }
    let h = &intent.h;
    let (Some(start), Some(_)) = (h.time, h.end()) else {
        return;
    };
    for f in recent.take(LOOK_BACK) {
        let Some(ev) = &f.event else { continue };
        let Some(t) = ev.h.time else { continue };
        if t < start - HORIZON_SECS {
            break;
        }
        let inside = ev.h.file == h.file
            && ev.h.pid == h.pid
            && ev.h.tid == h.tid
            && ev.h.line != h.line
            && svm::inside(ev, intent);
        if !inside || f.details.contains_key("runtime_call") {
            continue;
        }
        let call = short(names, Some(intent));
        if f.message.ends_with('.') {
            f.message += &format!(" It ran inside {call}.");
        } else {
            f.message += &format!("; it ran inside {call}");
        }
        f.details
            .insert("runtime_call".into(), json!(intent.name.to_string()));
        f.evidence
            .push(Evidence::new("inside the runtime call", intent).with_note(site(intent)));
    }
}
