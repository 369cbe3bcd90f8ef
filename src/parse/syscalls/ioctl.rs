//! ioctl: the request (by number, `_IOC(…)` or name) decoded through the
//! KFD/DRM catalogue, and the argument struct checked and trimmed.

use super::*;
use crate::parse::kfd_args;
use crate::parse::lex::Short;

/// (request, dir, type, nr, size, hint, name) of a request argument.
type Request = (
    Option<u32>,
    Option<u8>,
    Option<u8>,
    Option<u8>,
    Option<i128>,
    Option<Vec<u8>>,
    Option<Name>,
);

fn decode_request(req_tok: &[u8], path: Option<&[u8]>) -> Request {
    let (rt, comment) = strip_comment(req_tok);
    let rt = strip(&rt);
    let mut request: Option<u32> = None;
    let (mut d, mut t, mut nr, mut size): (Option<u8>, Option<u8>, Option<u8>, Option<i128>) =
        (None, None, None, None);
    let mut hint: Option<Vec<u8>> = None;
    if let Some(v) = parse_int(rt) {
        request = Some((v & 0xFFFFFFFF) as u32);
        hint = comment.map(<[u8]>::to_vec);
    } else if rt.starts_with(b"_IOC(") {
        request = parse_ioc(rt);
    } else {
        hint = Some(rt.to_vec());
        let dev = kfd::device_of(path);
        for alt in memchr::memmem::find_iter(rt, b" or ")
            .chain(std::iter::once(rt.len()))
            .scan(0usize, |st, e| {
                let a = &rt[*st..e];
                *st = e + 4;
                Some(a)
            })
        {
            let a = strip(alt);
            if let Some(r) = std::str::from_utf8(a).ok().and_then(kfd::request_by_name) {
                d = Some(r.dir);
                t = Some(r.type_);
                nr = Some(r.nr);
                size = Some(r.size.into());
                let xdna = contains(alt, b"AMDXDNA");
                if dev == Some(kfd::Device::Accel) && xdna {
                    break;
                }
                if dev != Some(kfd::Device::Accel) && !xdna {
                    break;
                }
            }
        }
        if let (Some(d), Some(t), Some(nr), Some(size)) = (d, t, nr, size) {
            request = Some(kfd::ioc(d, t, nr, size as u16));
        }
    }
    if let Some(r) = request {
        let x = kfd::decode_request(r);
        d = Some(x.dir);
        t = Some(x.type_);
        nr = Some(x.nr);
        size = Some(x.size.into());
    }
    let hint_s = hint.as_deref().map(String::from_utf8_lossy);
    let mut name: Option<Name> = match (t, nr) {
        (Some(t), Some(nr)) => kfd::ioctl_name(t, nr, path, hint_s.as_deref()).map(Cow::Borrowed),
        _ => None,
    };
    if name.is_none()
        && let Some(h) = hint
            .as_deref()
            .filter(|h| !h.is_empty() && !h.starts_with(b"_IOC"))
    {
        let first = match find(h, b" or ") {
            Some(k) => &h[..k],
            None => h,
        };
        name = Some(Cow::Owned(
            String::from_utf8_lossy(strip(first)).into_owned(),
        ));
    }
    (request, d, t, nr, size, hint, name)
}

/// syscalls._ioctl_struct: (fields, malformed).  The decoded struct is
/// kept and trimmed in place (fields dropped, `attrs` entries turned into
/// pairs) rather than copied into a new one.
fn ioctl_struct(val: Option<Value>) -> (Option<Value>, bool) {
    let Some(Value::Struct(mut fields)) = val else {
        return (None, false);
    };
    let mut bad = false;
    fields.retain_mut(|(k, v)| {
        let keep = if k == "attrs" {
            attr_pairs(v)
        } else if k == "device_ids_array" {
            matches!(&*v, Value::List(x) if x.iter().all(is_int))
        } else {
            !kfd::INT_FIELDS.contains(&&**k) || is_int(v)
        };
        bad |= !keep;
        keep
    });
    (Some(Value::Struct(fields)), bad)
}

/// An `attrs` list of `{type=…, value=…}` structs with int members as the
/// list of their (type, value) pairs; false (the field is dropped) when it
/// is no list or an entry is not such a struct.
fn attr_pairs(v: &mut Value) -> bool {
    let Value::List(items) = v else {
        return false;
    };
    for a in items.iter_mut() {
        let pair = match (a.get("type"), a.get("value")) {
            // (get finds nothing in what is no struct)
            (Some(ty), Some(va)) if is_int(ty) && is_int(va) => {
                Value::Pair(Box::new((ty.clone(), va.clone())))
            }
            _ => return false,
        };
        *a = pair;
    }
    true
}

/// (arg, out, a field was dropped) of an ioctl's struct argument the
/// general way: the value tree, then trimmed by [`ioctl_struct`].
pub(crate) fn general_arg(atok: &[u8]) -> (Option<Value>, Option<Value>, bool) {
    let (arg, out) = match parse_value(atok) {
        Value::Pair(p) => {
            let (a, o) = *p;
            (Some(a), Some(o))
        }
        v => (Some(v), None),
    };
    let (a, bad_a) = ioctl_struct(arg);
    let (o, bad_o) = ioctl_struct(out);
    (a, o, bad_a || bad_o)
}

/// Whether an SVM struct's start_addr, size, op and nattr are ints (the
/// last member of each name, as `Value::get` finds it), and its nattr;
/// one pass over the members.
fn svm_ok(arg: &Value) -> (bool, Option<i128>) {
    let Value::Struct(fields) = arg else {
        return (false, None);
    };
    let mut last: [Option<&Value>; 4] = [None; 4];
    for (k, v) in fields {
        let at = match &**k {
            "start_addr" => 0,
            "size" => 1,
            "op" => 2,
            "nattr" => 3,
            _ => continue,
        };
        last[at] = Some(v);
    }
    let ok = last.iter().all(|v| v.is_some_and(is_int));
    (ok, last[3].and_then(Value::as_i128))
}

/// A decoded request: (request, dir, type, nr, size, named by a hint that
/// is no `_IOC(…)`, canonical name).
type Decoded = (
    Option<u32>,
    Option<u8>,
    Option<u8>,
    Option<u8>,
    Option<i128>,
    bool,
    Option<&'static str>,
);

/// Recent (request text, fd path) -> decoded request: a trace names a
/// handful of requests on a handful of fds millions of times.
type RequestCache = Vec<(Box<[u8]>, Option<Box<[u8]>>, Decoded)>;

thread_local! {
    static REQUESTS: std::cell::RefCell<RequestCache> = const { std::cell::RefCell::new(Vec::new()) };
}
const REQUEST_CACHE: usize = 64;

fn request_of(req_tok: &[u8], path: Option<&[u8]>) -> Decoded {
    if let Some(d) = REQUESTS.with(|c| {
        c.borrow()
            .iter()
            .find(|(r, p, _)| &r[..] == req_tok && p.as_deref() == path)
            .map(|x| x.2)
    }) {
        return d;
    }
    let (request, d, t, nr, size, hint, name) = decode_request(req_tok, path);
    let named = hint
        .as_deref()
        .is_some_and(|h| !h.is_empty() && !h.starts_with(b"_IOC"));
    let name = name.and_then(|n| match n {
        Cow::Borrowed(b) => Some(b),
        Cow::Owned(o) => kfd::static_name(&o),
    });
    let out = (request, d, t, nr, size, named, name);
    REQUESTS.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= REQUEST_CACHE {
            c.remove(0);
        }
        c.push((req_tok.into(), path.map(Into::into), out));
    });
    out
}

/// The struct the capture library writes for the ioctl whose fd and
/// request arguments are `fd_tok` and `req_tok` (the scan reads its third
/// argument with it: kfd_args::decode_ahead), when the typed decoders are on.
/// Remembered for recent pairs of texts (a log makes a handful of requests
/// on a handful of fds; finding the fd's path and the request again cost
/// some 280 instructions a line).
pub(crate) fn scan_layout(fd_tok: &[u8], req_tok: &[u8]) -> Option<&'static kfd::LogStruct> {
    let answer = || {
        let (_, path) = fd_text(Some(fd_tok));
        let (_, _, t, nr, _, _, name) = request_of(req_tok, path.as_ref().map(|p| &p.0[..]));
        kfd_args::layout(t, nr, name)
    };
    let (f, r) = (fd_tok.len(), req_tok.len());
    if f > LAYOUT_TEXT || r > LAYOUT_TEXT || r == 0 || !kfd_args::layout_on() {
        return answer();
    }
    // a cheap mix of the lengths and the request's last byte and middle one
    let mix =
        (r * 7 + f * 3 + usize::from(req_tok[r - 1]) + usize::from(req_tok[r / 2])) % LAYOUTS_KEPT;
    LAYOUTS.with(|t| {
        let mut t = t.borrow_mut();
        if t.is_empty() {
            t.resize(LAYOUTS_KEPT, None);
        }
        if let Some(e) = &t[mix]
            && e.fd.is(fd_tok)
            && e.req.is(req_tok)
        {
            return e.layout;
        }
        let layout = answer();
        if let (Some(fd), Some(req)) = (Short::new(fd_tok), Short::new(req_tok)) {
            t[mix] = Some(KeptLayout { fd, req, layout });
        }
        layout
    })
}

/// The longest fd or request text [`scan_layout`] remembers.
const LAYOUT_TEXT: usize = 48;
/// How many pairs [`scan_layout`] remembers.
const LAYOUTS_KEPT: usize = 16;

/// A pair of texts [`scan_layout`] remembers, with its answer.
#[derive(Clone, Copy)]
struct KeptLayout {
    fd: Short<LAYOUT_TEXT>,
    req: Short<LAYOUT_TEXT>,
    layout: Option<&'static kfd::LogStruct>,
}

thread_local! {
    /// (on the heap, made at the first call: see kfd_args' NAMES)
    static LAYOUTS: std::cell::RefCell<Vec<Option<KeptLayout>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

pub(super) fn ioctl(call: &mut Call<'_>) -> Kind {
    let (fd, path) = fd_text(call.arg(0));
    let (mut request, d, t, nr, mut size, named, ioctl) =
        request_of(call.arg_or_empty(1), path.as_ref().map(|p| &p.0[..]));
    let (mut arg, mut out) = (None, None);
    if let Some(atok) = call
        .arg(2)
        .filter(|a| a.starts_with(b"{") || a.starts_with(b"["))
    {
        // the capture library's struct of this ioctl, read against the
        // catalogue's labels, else the general way
        let typed = kfd_args::layout(t, nr, ioctl).and_then(|ls| kfd_args::decode(ls, atok));
        let bad;
        (arg, out, bad) = match typed {
            Some((a, o)) => (Some(a), o, false),
            None => general_arg(atok),
        };
        // a field of another subsystem's struct (GPIO's flags=A|B, a
        // udmabuf's memfd) that is no number where a KFD or DRM field of the
        // same name is one is dropped, not a bad line: the call stays an
        // ioctl on its fd with its result (issue 33)
        let ours = matches!(t, Some(kfd::TYPE_KFD | kfd::TYPE_DRM));
        if bad && ours {
            call.malformed = true;
        }
        let svm = (t, nr) == (Some(kfd::SVM.0), Some(kfd::SVM.1));
        let (ok, nattr) = match (&arg, svm) {
            (Some(a), true) => svm_ok(a),
            _ => (true, None),
        };
        if !ok {
            arg = None;
            out = None;
        }
        if svm
            && let Some(a) = &arg
            && matches!(a, Value::Struct(f) if !f.is_empty())
            && let Some(nattr) = nattr
            && named
        {
            let s = 24 + 8 * nattr;
            size = Some(s);
            request = Some(kfd::ioc(
                d.unwrap_or(3),
                t.unwrap_or(0),
                nr.unwrap_or(0),
                (s & 0x3FFF) as u16,
            ));
        }
    }
    let size = size.map(|s| call.u64(s));
    let fd = fd.map_or(-1, |f| call.fd(f));
    Kind::Ioctl(Ioctl {
        fd,
        path,
        request,
        dir: d,
        type_: t,
        nr,
        size,
        ioctl,
        arg,
        out,
    })
}
