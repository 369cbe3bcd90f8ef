//! Buffer identities: one per buffer object, however many handles and fds
//! name it.  The handle model makes and merges them, an fd's slot points at
//! its buffer, and the dma-buf tracker counts exports on them.

use super::common::{Ev, Pid};
use std::cell::RefCell;
use std::rc::Rc;

/// One buffer object, however many handles and fds name it.
#[derive(Debug)]
pub struct Buffer {
    /// "KFD handle 0x66a400000013" ...
    pub label: String,
    /// the handle in hex, for the finding's subject
    pub handle: String,
    pub owner_pid: Pid,
    pub created: Option<Ev>,
    pub exports: u64,
    pub first_export: Option<Ev>,
    pub last_export: Option<Ev>,
    /// index of its dmabuf-reexport finding in the handle model's findings
    pub finding: Option<usize>,
    /// merged into another identity
    pub alias: Option<BufRef>,
}

pub type BufRef = Rc<RefCell<Buffer>>;

impl Buffer {
    pub fn new(label: String, handle: String, owner_pid: Pid, created: Option<Ev>) -> BufRef {
        Rc::new(RefCell::new(Buffer {
            label,
            handle,
            owner_pid,
            created,
            exports: 0,
            first_export: None,
            last_export: None,
            finding: None,
            alias: None,
        }))
    }
}

pub fn resolve(b: &BufRef) -> BufRef {
    let mut b = b.clone();
    loop {
        let next = b.borrow().alias.clone();
        match next {
            Some(n) => b = n,
            None => return b,
        }
    }
}

/// The same buffer reached by two routes: one identity, exports counted
/// together.
pub fn merge(a: Option<&BufRef>, b: Option<&BufRef>) -> Option<BufRef> {
    let Some(a) = a else {
        return b.map(resolve);
    };
    let Some(b) = b else {
        return Some(resolve(a));
    };
    let (a, b) = (resolve(a), resolve(b));
    if Rc::ptr_eq(&a, &b) {
        return Some(a);
    }
    {
        let mut am = a.borrow_mut();
        let bb = b.borrow();
        am.exports += bb.exports;
        if let Some(bf) = &bb.first_export
            && am
                .first_export
                .as_ref()
                .is_none_or(|af| bf.h.seq < af.h.seq)
        {
            am.first_export = Some(bf.clone());
        }
        if am.finding.is_none() {
            am.finding = bb.finding;
        }
    }
    b.borrow_mut().alias = Some(a.clone());
    Some(a)
}
