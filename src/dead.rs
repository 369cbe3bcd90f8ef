//! Events the parsing thread is done with, freed on a `--jobs` worker: the
//! models [`bury`] the events they drop, and while a chunked parse runs on
//! the thread ([`collect`]), those whose last handle that was wait in a
//! thread-local list that the parse hands to its workers with the next
//! batch ([`take`]).  The serial part is shorter by each free, ~200
//! instructions an event on a strace log, most of them mimalloc's for
//! memory another thread (the worker that built the event) allocated.
//! Without a chunked parse, `bury` is a plain drop.

use crate::events::Event;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An event no one else holds, on its way to the thread that frees it.
pub struct Dead(#[allow(dead_code)] Rc<Event>);

// SAFETY: a Dead holds the only handle to its Rc (`bury` checks the strong
// count is 1 and no weak one exists, and takes that handle), so moving it
// to another thread moves the whole ownership, as moving a Box<Event>
// would (events::Lone's argument); Event itself is Send.
unsafe impl Send for Dead {}

/// Threads collecting (a load of it is all a bury costs a run without
/// --jobs, instead of a thread-local's lookup).
static COLLECTING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The events buried on this thread while a chunked parse runs on it
    /// (None: none does).
    static DEAD: RefCell<Option<Vec<Dead>>> = const { RefCell::new(None) };
}

/// Drop an event the caller is done with: while this thread collects
/// ([`collect`]) and this was its last handle, it waits to be freed
/// elsewhere.
#[inline]
pub fn bury(ev: Rc<Event>) {
    if COLLECTING.load(Ordering::Relaxed) > 0
        && Rc::strong_count(&ev) == 1
        && Rc::weak_count(&ev) == 0
    {
        last(ev)
    } // else a count decremented, or a plain drop
}

#[inline(never)]
fn last(ev: Rc<Event>) {
    DEAD.with_borrow_mut(|d| match d {
        Some(v) => v.push(Dead(ev)),
        None => drop(ev),
    });
}

/// [`bury`] an optional event.
#[inline]
pub fn bury_opt(ev: Option<Rc<Event>>) {
    if let Some(ev) = ev {
        bury(ev)
    }
}

/// Collect what this thread buries from now on (true), or stop and free
/// what waits (false).  Returns whether this call started the collecting
/// (a second chunked parse on the thread leaves it to the first).
pub fn collect(on: bool) -> bool {
    DEAD.with_borrow_mut(|d| {
        if on {
            let start = d.is_none();
            if start {
                *d = Some(Vec::new());
                COLLECTING.fetch_add(1, Ordering::Relaxed);
            }
            start
        } else {
            if d.take().is_some() {
                COLLECTING.fetch_sub(1, Ordering::Relaxed);
            }
            false
        }
    })
}

/// The events buried since the last call (none when not collecting).
pub fn take() -> Vec<Dead> {
    DEAD.with_borrow_mut(|d| d.as_mut().map(std::mem::take).unwrap_or_default())
}
