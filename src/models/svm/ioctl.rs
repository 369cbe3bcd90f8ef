//! The SVM ioctl: SET_ATTR and GET_ATTR as the kernel saw them, retries
//! of interrupted calls and ranges the kernel refuses (svm-bad-range).

use super::*;

const RETRY_ERRNOS: [&str; 5] = [
    "EINTR",
    "EAGAIN",
    "ERESTARTSYS",
    "ERESTARTNOINTR",
    "ERESTARTNOHAND",
];

impl SvmModel {
    pub(super) fn svm(&mut self, ev: &Event) {
        let Kind::Ioctl(io) = &ev.kind else { return };
        let Some(arg) = io.arg.as_ref() else { return };
        let Value::Struct(fields) = arg else { return };
        // the members read, in one pass (the last of a name, as `get` finds)
        let (mut op, mut start, mut size, mut list) = (None, None, None, None);
        for (k, v) in fields {
            match &**k {
                "op" => op = Some(v),
                "start_addr" => start = Some(v),
                "size" => size = Some(v),
                "attrs" => list = Some(v),
                _ => {}
            }
        }
        let Some(op) = op else {
            return; // strace: no struct, nothing to replay
        };
        let op = op.as_i128();
        let start = int_of(start).unwrap_or(Some(0));
        let size = int_of(size).unwrap_or(Some(0));
        // (in the room the last call left: given back at the end)
        let mut attrs = std::mem::take(&mut self.attrs_room);
        let whole = attrs_into(list, &mut attrs);
        self.svm_call(ev, io, op, start, size, whole.then_some(&attrs));
        attrs.clear();
        self.attrs_room = attrs;
    }

    /// The SVM call `ev` (`op`, `start`, `size` and `attrs` read from its
    /// argument; None: not a number, not pairs of u32s).
    fn svm_call(
        &mut self,
        ev: &Event,
        io: &Ioctl,
        op: Option<i128>,
        start: Option<i128>,
        size: Option<i128>,
        attrs: Option<&Vec<Attr>>,
    ) {
        let pid = ev.h.pid;
        self.proc(pid);
        let (Some(start), Some(size), Some(attrs)) = (start, size, attrs) else {
            return; // no kernel SVM call: not a replayable one
        };
        if start < 0 || size < 0 {
            return;
        }
        let (start, size) = (start as u128, size as u128);
        let p = &mut self.procs.get_mut(&pid).unwrap().1;
        let sh = &mut self.sh;
        let mask = (1u128 << p.shift) - 1;
        if op == Some(kfd::SVM_OP_GET_ATTR.into()) {
            sh.counts.get_attr += 1;
            let out = io.out.as_ref().and_then(|o| o.get("attrs"));
            if ev.h.ok()
                && out.and_then(Value::as_list).is_some_and(|l| !l.is_empty())
                && size != 0
                && (start | size) & mask == 0
                && let Some(answered) = attrs_of(out)
            {
                let s = (start >> p.shift) as u64;
                let e = ((start + size) >> p.shift) as u64;
                sh.get_attr(p, &rc(&mut self.cur, ev), s, e, attrs, &answered);
            }
            return;
        }
        if op != Some(kfd::SVM_OP_SET_ATTR.into()) {
            return;
        }
        sh.counts.set_attr += 1;
        let tid = ev.h.tid;
        let evr = rc(&mut self.cur, ev);
        if let Some(i) = p.retry.iter().position(|x| x.0 == tid) {
            let (_, prev) = p.retry.remove(i);
            let prev_arg = match &prev.kind {
                Kind::Ioctl(pio) => pio.arg.as_ref(),
                _ => None,
            };
            if prev_arg != io.arg.as_ref() {
                let why = format!(
                    "failed with {} and was not retried",
                    prev.h.err.as_deref().unwrap_or("None")
                );
                sh.bad(p, &prev, &why);
            }
        }
        if !ev.h.ok() {
            match ev.h.err.as_deref() {
                Some(err) if RETRY_ERRNOS.contains(&err) => {
                    // a retry with the same arguments is not a finding
                    p.retry.push((tid, evr));
                }
                Some(err) => {
                    let why = format!("failed with {err}");
                    sh.bad(p, &evr, &why);
                }
                None => {}
            }
            return;
        }
        if size == 0 || start & mask != 0 || size & mask != 0 {
            let why = if size == 0 {
                "zero size"
            } else if start & mask != 0 {
                "unaligned start"
            } else {
                "unaligned size"
            };
            sh.bad(p, &evr, &format!("{why} (the kernel answers EINVAL)"));
            return;
        }
        let s = (start >> p.shift) as u64;
        let e = ((start + size) >> p.shift) as u64;
        sh.set_attr(p, evr, s, e, attrs);
    }
}

impl Shared {
    pub(super) fn bad(&mut self, p: &Proc, ev: &Ev, why: &str) {
        self.raws.push(Raw {
            kind: RawKind::Bad {
                event: ev.clone(),
                why: why.to_owned(),
            },
            dead: false,
        });
        if self.watch.is_none() {
            return;
        }
        let (start, size) = match &ev.kind {
            Kind::Ioctl(io) => (
                io.arg
                    .as_ref()
                    .and_then(|a| a.get("start_addr"))
                    .and_then(Value::as_i128)
                    .unwrap_or(0),
                io.arg
                    .as_ref()
                    .and_then(|a| a.get("size"))
                    .and_then(Value::as_i128)
                    .unwrap_or(0),
            ),
            _ => (0, 0),
        };
        let s = (start.max(0) >> p.shift) as u64;
        let n = ((size.max(0) >> p.shift) as u64).max(1);
        self.note(
            p,
            ev,
            s,
            s.saturating_add(n),
            format!("svm-bad-range: SET_ATTR {why}"),
        );
    }

    fn get_attr(
        &mut self,
        p: &mut Proc,
        ev: &Ev,
        s: u64,
        e: u64,
        asked: &[Attr],
        answered: &[Attr],
    ) {
        let pred = p.map.predict(s, e, asked, p.xnack);
        let mut diffs = Vec::new();
        for ((a_in, a_out), pr) in asked.iter().zip(answered).zip(&pred) {
            let (t_in, v_in, t_out, v_out) = (a_in.ty, a_in.value, a_out.ty, a_out.value);
            if t_in == kfd::ATTR_ACCESS && t_out == NO_ACCESS {
                for c in p.cover.query(s, e) {
                    let mut b = c.m();
                    if b.stale_gpus.contains(&v_in) && b.getattr_seen.len() < 3 {
                        b.getattr_seen.push(ev.clone());
                    }
                }
            }
            let Some((pt, pv, known)) = *pr else { continue };
            if pt != t_out || (pv ^ v_out) & known != 0 {
                diffs.push((t_in, v_in, pt, pv, t_out, v_out));
            }
        }
        let n = diffs.len();
        if n > 0 {
            self.raws.push(Raw {
                kind: RawKind::Mismatch {
                    event: ev.clone(),
                    diffs,
                    s,
                    e,
                    shift: p.shift,
                },
                dead: false,
            });
        }
        if self.watch.is_some() && self.watched(p, s, e) {
            let parts: Vec<String> = answered
                .iter()
                .map(|a| {
                    let name = attr_short(a.ty).map_or_else(|| a.ty.to_string(), str::to_owned);
                    let val = match a.ty {
                        kfd::ATTR_ACCESS => "ACCESS".to_owned(),
                        kfd::ATTR_ACCESS_IN_PLACE => "ACCESS_IN_PLACE".to_owned(),
                        NO_ACCESS => "NO_ACCESS".to_owned(),
                        _ => hex(a.value),
                    };
                    format!("{name}={val}")
                })
                .collect();
            let mut desc = format!("GET_ATTR {}", parts.join(", "));
            if n > 0 {
                desc += &format!("; differs from the model on {n} attribute(s)");
            }
            self.note(p, ev, s, e, desc);
        }
    }
}
