//! A call's event as its text alone makes it: the arguments normalized
//! (syscalls.rs), the header filled, and what building it counts.

use super::*;

/// A call's event as its text alone makes it (no pid or tid yet), and what
/// building it counts into the file's info.  `E` is where the event is
/// placed: in its `Rc` on the parser's thread, by value on a worker's
/// (--jobs), whose batch crosses threads.
#[derive(Debug)]
pub struct Built<E = Rc<Event>> {
    pub ev: Option<E>,
    pub decorated: bool,
    pub unparsed: bool,
    pub intent: bool,
    pub decoded: bool,
    /// the argument list, emptied, for the next line's ([`tokens::reuse_args`])
    pub spare: Vec<Cow<'static, [u8]>>,
}

/// Where [`build_call`] puts the event it makes.
pub trait Place: Sized {
    /// The event of these parts, where it stays.
    fn place(h: Header, name: Name, kind: Kind) -> Self;
}

/// In its `Rc` at once: the parser's thread builds the event where it
/// stays, and the calls after it move a pointer.
impl Place for Rc<Event> {
    #[inline(always)]
    fn place(h: Header, name: Name, kind: Kind) -> Self {
        crate::events::rc_event(h, name, kind)
    }
}

/// A worker's (--jobs): in its `Rc` too, which the parser's thread takes.
impl Place for crate::events::Lone {
    #[inline(always)]
    fn place(h: Header, name: Name, kind: Kind) -> Self {
        crate::events::Lone::of_parts(h, name, kind)
    }
}

/// A call's event from its scanned parts; made with its (pid, tid) where
/// the parser knows them (its thread), not changed after.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn build_call<E: Place>(
    file: FileId,
    name: &str,
    mut args: Vec<Cow<'_, [u8]>>,
    ret: Option<i128>,
    err: Option<Name>,
    rpath: Option<Vec<u8>>,
    (line, end_line): (u64, Option<u64>),
    (pid, tid): (Option<u32>, Option<u32>),
    t: Option<f64>,
    dur: Option<f64>,
    text: &[u8],
    src: Source,
    partial: bool,
) -> Built<E> {
    let mut b = Built {
        ev: None,
        decorated: false,
        unparsed: false,
        intent: false,
        decoded: false,
        spare: Vec::new(),
    };
    let mut names = Vec::new();
    if !args.is_empty() {
        // only a word can be `name=` (the loop below takes no other)
        let named = |a: &[u8]| {
            a.first().is_some_and(u8::is_ascii_alphabetic)
                && crate::parse::lex::find_byte(a, b'=').is_some()
        };
        if args.iter().any(|a| named(a)) {
            for (i, a) in args.iter_mut().enumerate() {
                // (the first byte before the scan: a struct, an fd or a
                // number has no name)
                if named(a) {
                    let (k, v) = match a {
                        Cow::Borrowed(b) => {
                            let (k, v) = strip_name(b);
                            (k.map(Cow::Borrowed), Cow::Borrowed(v))
                        }
                        Cow::Owned(o) => {
                            let (k, v) = strip_name(o);
                            (k.map(|k| Cow::Owned(k.to_vec())), Cow::Owned(v.to_vec()))
                        }
                    };
                    if let Some(k) = k {
                        names.push((i, k));
                        *a = v;
                    }
                }
            }
        }
        let a0 = &args[0];
        if !a0.is_empty()
            && a0[0].is_ascii_digit()
            && crate::parse::lex::find_byte(a0, b'<').is_some()
        {
            b.decorated = true;
        }
    }
    let mut call = Call::new(Cow::Borrowed(name), args);
    call.ret = ret;
    call.err = err;
    call.ret_path = rpath;
    call.names = names;
    let n = syscalls::normalize(&mut call);
    // (lent to normalize, not copied: normalize reads it and leaves it)
    let err = call.err.take();
    b.spare = tokens::reuse_args(std::mem::take(&mut call.args));
    let mut overflow = call.overflow;
    let hret = match ret {
        None => None,
        Some(r) => match i64::try_from(r) {
            Ok(v) => Some(v),
            Err(_) => match u64::try_from(r) {
                Ok(u) => Some(u as i64),
                Err(_) => {
                    overflow = true;
                    None
                }
            },
        },
    };
    // the line is unparsed once, whichever of the two it is
    b.unparsed = call.malformed || overflow;
    if overflow {
        // a number no register or field of this call holds
        return b;
    }
    if name.starts_with("hsa_") {
        b.intent = true;
    } else if name == "ioctl"
        && let Kind::Ioctl(i) = &n.kind
        && i.arg.is_some()
    {
        b.decoded = true;
    }
    let h = Header {
        file,
        line,
        end_line,
        seq: 0,
        pid,
        tid,
        time: t,
        dur,
        ret: hret,
        err,
        stack: Box::new([]),
        // the fd model reads unshare's flags from its text (a rare call)
        src: if name == "unshare" && src.text.is_none() {
            Source {
                text: Some(Text::from(text)),
                ..src
            }
        } else {
            src
        },
        partial,
        injected: false,
    };
    b.ev = Some(E::place(h, n.name, n.kind));
    b
}
