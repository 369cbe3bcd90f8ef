//! What the SVM model records and its findings are built from: attribute
//! effects, claims and their grants, SET_ATTR records, findings not yet
//! built (`Raw`) and the runtime behaviour a process shows (`Seen`); with
//! the formatting of addresses and attribute shapes they share.  The replay
//! (svm/) makes these records, svm_build.rs builds findings from them;
//! neither is needed here.

// Claims (CRef) sit in ordered sets keyed by their id, which never changes;
// what is mutable behind the RefCell is not part of the order.
#![allow(clippy::mutable_key_type)]

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

use crate::events::Event;
use crate::kfd;
use crate::models::common::hex;
use crate::models::svm_map::{Attr, NO_ACCESS};

pub(crate) const REG_FLAGS: u32 = kfd::FLAG_HOST_ACCESS
    | kfd::FLAG_COHERENT
    | kfd::FLAG_EXT_COHERENT
    | kfd::FLAG_GPU_ALWAYS_MAPPED;
pub(crate) const COH_FLAGS: u32 = kfd::FLAG_COHERENT | kfd::FLAG_EXT_COHERENT;
pub(crate) const EPS: f64 = 1e-7;

/// The resolution of a logged time: a call logged at t began in [t, t+1us).
pub(crate) const CLOCK_RES: f64 = 1e-6;

/// An event the model keeps: shared, so that "the same event" is pointer
/// identity.
pub type Ev = Rc<Event>;

pub(crate) fn same_ev(a: &Ev, b: &Ev) -> bool {
    Rc::ptr_eq(a, b)
}

pub(crate) fn opt_same(a: Option<&Ev>, b: Option<&Ev>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Rc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// GPU ids, sorted, no duplicates (a set).
pub type Gpus = Vec<u32>;

pub(crate) fn g_union(a: &[u32], b: &[u32]) -> Gpus {
    let mut out: Gpus = a.iter().chain(b).copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}

pub(crate) fn g_inter(a: &[u32], b: &[u32]) -> Gpus {
    a.iter().copied().filter(|g| b.contains(g)).collect()
}

pub(crate) fn g_minus(a: &[u32], b: &[u32]) -> Gpus {
    a.iter().copied().filter(|g| !b.contains(g)).collect()
}

/// A page number shifted back to bytes (may pass 2^64).
pub(crate) fn page_hex(page: u64, shift: u32) -> String {
    format!("{:#x}", u128::from(page) << shift)
}

pub(crate) fn flags_text(v: u32) -> String {
    kfd::flag_names(v.into(), crate::models::svm_map::FLAG_SHORT)
}

pub(crate) fn attr_short(t: u32) -> Option<&'static str> {
    kfd::attr_name(t).map(|n| &n["KFD_IOCTL_SVM_ATTR_".len()..])
}

/// The attribute shape as messages and histories print it, with the
/// multiplier `stats` and `diff` use: `NO_ACCESS×2+CLR_FLAGS(COHERENT)`.
pub fn shape_text(attrs: &[Attr]) -> String {
    shape_of(attrs).replace('*', "×")
}

/// Run-independent attribute shape, e.g. `NO_ACCESS*2+CLR_FLAGS(COHERENT)`:
/// a fingerprint ingredient (kept as it is so baselines keep matching).
pub fn shape_of(attrs: &[Attr]) -> String {
    let mut parts: Vec<(String, u32)> = Vec::new();
    for a in attrs {
        let mut name = attr_short(a.ty).map_or_else(|| hex(a.ty), str::to_owned);
        if a.ty == kfd::ATTR_SET_FLAGS || a.ty == kfd::ATTR_CLR_FLAGS {
            name = format!("{name}({})", flags_text(a.value));
        }
        match parts.last_mut() {
            Some(last) if last.0 == name => last.1 += 1,
            _ => parts.push((name, 1)),
        }
    }
    if parts.is_empty() {
        return "none".to_owned();
    }
    parts
        .iter()
        .map(|(n, k)| {
            if *k > 1 {
                format!("{n}*{k}")
            } else {
                n.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("+")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffKind {
    Registration,
    Revoke,
    Application,
    None,
}

impl EffKind {
    pub fn name(self) -> &'static str {
        match self {
            EffKind::Registration => "registration",
            EffKind::Revoke => "revoke",
            EffKind::Application => "application",
            EffKind::None => "none",
        }
    }
}

/// Net effect of an attribute array (array order, later entries win).
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    /// gpus left NO_ACCESS
    pub taken: Gpus,
    /// gpus left ACCESS / ACCESS_IN_PLACE
    pub granted: Gpus,
    /// COHERENT/EXT_COHERENT left clear
    pub cleared: u32,
    /// flag bits left set
    pub set_: u32,
    /// locations, granularity
    pub other: bool,
    pub kind: EffKind,
}

pub fn effect_of(attrs: &[Attr]) -> Effect {
    let mut access: Vec<(u32, u32)> = Vec::new();
    let (mut bits_set, mut bits_clr) = (0u32, 0u32);
    let mut other = false;
    let mut reg_shape = !attrs.is_empty();
    let mut has_no = false;
    let mut revoke_shape = !attrs.is_empty();
    for a in attrs {
        let (t, v) = (a.ty, a.value);
        if t == kfd::ATTR_ACCESS || t == kfd::ATTR_ACCESS_IN_PLACE || t == NO_ACCESS {
            match access.iter_mut().find(|x| x.0 == v) {
                Some(x) => x.1 = t,
                None => access.push((v, t)),
            }
            has_no |= t == NO_ACCESS;
        }
        if t == kfd::ATTR_SET_FLAGS {
            bits_set |= v;
            bits_clr &= !v;
        } else if t == kfd::ATTR_CLR_FLAGS {
            bits_clr |= v;
            bits_set &= !v;
        } else if t == kfd::ATTR_PREFERRED_LOC
            || t == kfd::ATTR_PREFETCH_LOC
            || t == kfd::ATTR_GRANULARITY
        {
            other = true;
        }
        let flag_attr = t == kfd::ATTR_SET_FLAGS || t == kfd::ATTR_CLR_FLAGS;
        if !(t == kfd::ATTR_ACCESS_IN_PLACE || (flag_attr && v & !REG_FLAGS == 0)) {
            reg_shape = false;
        }
        if t != NO_ACCESS && t != kfd::ATTR_CLR_FLAGS {
            revoke_shape = false;
        }
    }
    let mut taken: Gpus = access
        .iter()
        .filter(|x| x.1 == NO_ACCESS)
        .map(|x| x.0)
        .collect();
    let mut granted: Gpus = access
        .iter()
        .filter(|x| x.1 != NO_ACCESS)
        .map(|x| x.0)
        .collect();
    taken.sort_unstable();
    granted.sort_unstable();
    let kind = if revoke_shape && has_no {
        EffKind::Revoke
    } else if reg_shape {
        EffKind::Registration
    } else if !granted.is_empty() || bits_set != 0 || other {
        EffKind::Application
    } else {
        EffKind::None
    };
    Effect {
        taken,
        granted,
        cleared: bits_clr & COH_FLAGS,
        set_: bits_set,
        other,
        kind,
    }
}

#[derive(Debug)]
pub struct Grant {
    pub event: Ev,
    pub gpus: Gpus,
    pub flags: u32,
}

pub type GrantRef = Rc<Grant>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClaimKind {
    Registration,
    Application,
    Explicit,
}

impl ClaimKind {
    pub fn name(self) -> &'static str {
        match self {
            ClaimKind::Registration => "registration",
            ClaimKind::Application => "application",
            ClaimKind::Explicit => "explicit",
        }
    }
}

/// Who relies on which pages.
#[derive(Debug)]
pub struct Claim {
    pub kind: ClaimKind,
    /// identity: the exact page range
    pub start: u64,
    pub end: u64,
    /// live [s, e) parts
    pub pages: Vec<(u64, u64)>,
    pub grants: Vec<GrantRef>,
    pub gpus: Gpus,
    pub flags: u32,
    pub born: Option<Ev>,
    pub live: bool,
    pub ended_by: Option<Ev>,
    /// when the trace shows its release began: at the latest the entry of
    /// the unlock, revoke or unmap that ended it ...
    pub release_began: Option<f64>,
    /// ... and at the earliest: a revoke issued without intent calls was
    /// computed after its thread's previous call ended (None: unknown)
    pub release_after: Option<f64>,
    /// the page range of the revoke that released it: what the runtime
    /// still counted when it computed that revoke
    pub release_range: Option<(u64, u64)>,
    /// (earliest computation, seq) of the calls that may have been its
    /// release though the model gave them to none of it (revokes inside
    /// its range given to another claim while it lived; a registration
    /// after which others covered all its pages, so its own revoke may
    /// have been empty), the two computed earliest
    pub maybe_release: Vec<(f64, u64)>,
    /// the grant of the SET_ATTR that made it (its gpus and flags: the
    /// shape), how many SET_ATTRs of that shape registered its range while
    /// it lived (identical grants replace each other in `grants`), and when
    /// the latest one began
    pub born_shape: Option<GrantRef>,
    /// explicit claims: locks that joined it (refcount > 1) with their
    /// entry time and the grants of their window, kept while it is locked
    /// (at most [`JOINS_KEPT`], the newest; see SvmModel::unlock) ...
    pub joins: Vec<(f64, Ev, Vec<GrantRef>)>,
    /// ... and the unlocks seen meanwhile: an unlock's line comes at its
    /// return, so one seen later may have begun before them
    pub unlocks: Vec<Ev>,
    /// explicit claims: its last unlock has been seen (nothing revives it)
    pub unlocked: bool,
    pub registrations: u32,
    pub last_registered: Option<f64>,
    /// explicit claims
    pub ptr: Option<u64>,
    pub byte_end: Option<u128>,
    pub lock: Option<Ev>,
    pub refcount: i64,
    pub stale_gpus: Gpus,
    pub getattr_seen: Vec<Ev>,
    /// merged into another claim at adoption
    pub alias: Option<CRef>,
}

/// The joins and the unlocks an explicit claim keeps at most.
pub const JOINS_KEPT: usize = 16;

#[derive(Debug)]
pub struct ClaimCell {
    pub id: u64,
    c: RefCell<Claim>,
}

/// A shared claim, ordered and compared by its id (unique: identity).
#[derive(Debug, Clone)]
pub struct CRef(pub Rc<ClaimCell>);

impl PartialEq for CRef {
    fn eq(&self, o: &Self) -> bool {
        self.0.id == o.0.id
    }
}
impl Eq for CRef {}
impl PartialOrd for CRef {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for CRef {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.id.cmp(&o.0.id)
    }
}

impl CRef {
    pub(crate) fn new(id: u64, c: Claim) -> Self {
        CRef(Rc::new(ClaimCell {
            id,
            c: RefCell::new(c),
        }))
    }
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn b(&self) -> Ref<'_, Claim> {
        self.0.c.borrow()
    }
    pub fn m(&self) -> RefMut<'_, Claim> {
        self.0.c.borrow_mut()
    }
    pub fn real(&self) -> CRef {
        let mut c = self.clone();
        loop {
            let next = c.b().alias.clone();
            match next {
                Some(n) => c = n,
                None => return c,
            }
        }
    }
}

impl Claim {
    /// A call (`seq`) computed at `after` at the earliest may have been
    /// its release: kept if among the two earliest.
    pub fn may_be_released(&mut self, after: f64, seq: u64) {
        let m = &mut self.maybe_release;
        m.push((after, seq));
        m.sort_by(|x, y| x.0.total_cmp(&y.0));
        m.truncate(2);
    }

    /// Count grant `g` as another registration of the claim's range when
    /// it has the shape of the one that made it (no copy of its gpus).
    pub fn count_registration(&mut self, g: &Grant) {
        if self
            .born_shape
            .as_ref()
            .is_some_and(|b| b.gpus == g.gpus && b.flags == g.flags)
        {
            self.registrations += 1;
            self.last_registered = match (self.last_registered, g.event.h.time) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }

    pub(crate) fn new(kind: ClaimKind, s: u64, e: u64, born: Option<Ev>) -> Self {
        Claim {
            kind,
            start: s,
            end: e,
            pages: vec![(s, e)],
            grants: Vec::new(),
            gpus: Vec::new(),
            flags: 0,
            born,
            live: true,
            ended_by: None,
            release_began: None,
            release_after: None,
            release_range: None,
            maybe_release: Vec::new(),
            born_shape: None,
            joins: Vec::new(),
            unlocks: Vec::new(),
            unlocked: false,
            registrations: 0,
            last_registered: None,
            ptr: None,
            byte_end: None,
            lock: None,
            refcount: 0,
            stale_gpus: Vec::new(),
            getattr_seen: Vec::new(),
            alias: None,
        }
    }

    /// Add a grant; one that gives exactly what an earlier grant gave
    /// replaces it (the newest call is the evidence), so a range set again
    /// and again keeps its current effect, not its history (work per
    /// SET_ATTR bounded by the distinct grants, not by the trace).
    pub fn add_grant(&mut self, g: GrantRef) {
        if let Some(i) = self
            .grants
            .iter()
            .position(|x| x.gpus == g.gpus && x.flags == g.flags)
        {
            self.grants.remove(i);
        }
        self.grants.push(g);
    }

    /// `gpus` and `flags`: the union of the grants' (in the room `gpus`
    /// had).
    pub fn recompute(&mut self) {
        let mut g = std::mem::take(&mut self.gpus);
        g.clear();
        let mut f = 0;
        for gr in &self.grants {
            g.extend_from_slice(&gr.gpus);
            f |= gr.flags;
        }
        g.sort_unstable();
        g.dedup();
        self.gpus = g;
        self.flags = f;
    }

    pub fn label(&self, shift: u32) -> String {
        let rng = format!(
            "[{}, {})",
            page_hex(self.start, shift),
            page_hex(self.end, shift)
        );
        if self.kind == ClaimKind::Explicit {
            return format!("lock({}) pages {rng}", hex(self.ptr.unwrap_or(0)));
        }
        format!("{} {rng}", self.kind.name())
    }
}

pub(crate) fn grant_in(gs: &[GrantRef], g: &GrantRef) -> Option<usize> {
    gs.iter().position(|x| Rc::ptr_eq(x, g))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Loss {
    pub gpus: Gpus,
    pub flags: u32,
    pub lo: u64,
    pub hi: u64,
    pub npages: u64,
}

/// What `_still_stale` found: (gpus, lo, hi).
pub type StaleRes = (Gpus, u64, u64);

/// One SET_ATTR as the model saw it.
#[derive(Debug)]
pub struct RecData {
    pub event: Ev,
    pub attrs: Rc<[Attr]>,
    pub eff: Rc<Effect>,
    pub s: u64,
    pub e: u64,
    pub claim: Option<CRef>,
    pub grant: Option<GrantRef>,
    pub released: Vec<CRef>,
    pub losses: Vec<(CRef, Loss)>,
    /// judged before the ending revoke applied; absent: "now"
    pub stale_pre: Vec<(CRef, Option<StaleRes>)>,
    pub unlock: Option<Ev>,
    /// the end of its thread's previous call (None: none seen): the
    /// runtime computed this SET_ATTR after it
    pub quiet_from: Option<f64>,
    /// registrations containing this revoke that it may have released
    /// (its range minus what others covered) though the model gave it to
    /// the claim of exactly its range another thread awaited: not proven
    /// live against it
    pub ambiguous: Vec<CRef>,
}

pub struct RecCell {
    pub id: u64,
    pub r: RefCell<RecData>,
}

pub type RecRef = Rc<RecCell>;

impl RecData {
    pub(crate) fn pre(&self, c: &CRef) -> Pre {
        match self.stale_pre.iter().find(|x| x.0 == *c) {
            Some((_, r)) => Pre::Was(r.clone()),
            None => Pre::Now,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Pre {
    Now,
    Was(Option<StaleRes>),
}

/// A finding not yet built: its claims may still change identity.
pub(crate) enum RawKind {
    Victim {
        over: bool,
        rec: RecRef,
        claim: CRef,
        loss: Loss,
        shift: u32,
        /// the process's runtime behaviour, read when the finding is built
        seen: Rc<RefCell<Seen>>,
        /// another live registration of another range began on the
        /// victim's first page when the call ran (see `Seen::grown`)
        keyed: bool,
    },
    Stale {
        claim: CRef,
        res: StaleRes,
        shift: u32,
    },
    Unmap {
        claim: CRef,
        event: Ev,
        shift: u32,
        locked: bool,
        s: u64,
        e: u64,
        pages: u64,
    },
    Bad {
        event: Ev,
        why: String,
    },
    Mismatch {
        event: Ev,
        diffs: Vec<(u32, u32, u32, u32, u32, u32)>,
        s: u64,
        e: u64,
        shift: u32,
    },
}

pub(crate) struct Raw {
    pub kind: RawKind,
    pub dead: bool,
}

/// The runtime's registration behaviour as one process's trace shows it:
/// the shapes of its SET_ATTRs, whether its deregistrations
/// show as revokes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// registration-shaped SET_ATTRs with flags only (#6699 and the
    /// baseline register)
    pub reg_flags: u64,
    /// ACCESS_IN_PLACE alone (their map)
    pub map_in_place: u64,
    /// ACCESS_IN_PLACE with flags in one call (the relands' register)
    pub reg_combined: u64,
    /// SET_ATTRs of those shapes the model read as the program's own
    /// (the runtime's shapes being the split ones)
    pub app_combined: u64,
    /// revokes that released a registration, with and without CLR_FLAGS
    pub release_clr: u64,
    pub release_plain: u64,
    /// release revokes that left out pages of the registration they
    /// released: the runtime subtracts the registrations it still counts
    pub subtracts: u64,
    /// registrations made on pages a live registration still held
    pub reused: u64,
    /// intent calls (lock/unlock) seen
    pub intents: u64,
    /// release revokes reaching past every registration they released:
    /// the runtime keys registrations by their first page and grows one
    /// entry's extent (#6699), so a registration sharing its first page
    /// with another joins its entry, and its deregistration issues nothing
    /// while the other holds it
    pub grown: u64,
}

impl Seen {
    pub(crate) fn add(&mut self, o: &Seen) {
        self.reg_flags += o.reg_flags;
        self.map_in_place += o.map_in_place;
        self.reg_combined += o.reg_combined;
        self.app_combined += o.app_combined;
        self.release_clr += o.release_clr;
        self.release_plain += o.release_plain;
        self.subtracts += o.subtracts;
        self.reused += o.reused;
        self.intents += o.intents;
        self.grown += o.grown;
    }

    /// A runtime whose deregistrations issue nothing: registrations come
    /// and go on reused pages and no revoke ever released one.  Its
    /// claims' ends are invisible, so no victim is proven live.
    pub fn silent(&self) -> bool {
        self.release_clr + self.release_plain == 0 && self.reused > 0 && self.intents == 0
    }

    /// The runtime registers with flags only and maps with ACCESS_IN_PLACE
    /// alone: a call combining the two is not one of its own.
    pub(crate) fn split(&self) -> bool {
        self.reg_flags > 0
    }

    /// What the coverage section says of the runtime's behaviour, or None
    /// when the trace shows no registration.
    pub fn describe(&self) -> Option<String> {
        let reg = if self.reg_flags > 0 {
            "register = flags only, map = ACCESS_IN_PLACE"
        } else if self.reg_combined > 0 {
            "register = ACCESS_IN_PLACE + flags"
        } else if self.map_in_place > 0 {
            "map = ACCESS_IN_PLACE"
        } else {
            return None;
        };
        let rev = if self.release_clr + self.release_plain == 0 {
            if self.reused > 0 {
                "no deregistration revokes although registrations come and go on reused \
                 pages"
            } else {
                "no deregistration revokes"
            }
        } else if self.release_plain == 0 {
            "revokes with CLR_FLAGS"
        } else if self.release_clr == 0 {
            "revokes without CLR_FLAGS"
        } else {
            "revokes with and without CLR_FLAGS"
        };
        let who = match (
            self.reg_flags > 0,
            self.release_clr + self.release_plain > 0,
        ) {
            (true, true) if self.release_clr > 0 => ": the #6699 behaviour",
            (true, false) if self.reused > 0 => {
                ": the baseline behaviour (deregistration issues no ioctl)"
            }
            (false, true) if self.reg_combined > 0 => ": the relands' behaviour",
            _ => "",
        };
        let mut out = format!("this trace shows {reg}, {rev}{who}");
        if self.app_combined > 0 {
            out += &format!(
                "; {} SET_ATTR(s) of another shape read as the program's own ranges",
                self.app_combined
            );
        }
        if self.grown > 0 {
            out += &format!(
                "; {} revoke(s) reached past the registrations they released (the runtime \
                 grows one entry per first page: a registration's end is not seen while \
                 another of its first page holds it)",
                self.grown
            );
        }
        if self.subtracts > 0 {
            out += &format!(
                "; {} revoke(s) left out pages other registrations still covered (the runtime \
                 counts its registrations when it computes a revoke)",
                self.subtracts
            );
        }
        if self.silent() {
            out += "; victims of registrations are notes (their liveness is not proven)";
        }
        Some(out)
    }
}

pub(crate) fn overlap(a: (Option<f64>, Option<f64>), b: (Option<f64>, Option<f64>)) -> bool {
    match (a, b) {
        ((Some(a0), Some(a1)), (Some(b0), Some(b1))) => a0 < b1 - EPS && b0 < a1 - EPS,
        _ => false,
    }
}

pub(crate) fn win(ev: &Event) -> (Option<f64>, Option<f64>) {
    (ev.h.time, ev.h.end())
}

pub(crate) fn windows_overlap(a: &Event, b: &Event) -> bool {
    overlap(win(a), win(b))
}
