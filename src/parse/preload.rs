//! The preload dialect's `#` lines (strace.Parser._meta and _continued):
//! the header, fd and map snapshots, exec/exit facts, and `#+` pieces of a
//! record too long for one write.

use crate::events::*;
use crate::parse::grammar;
use crate::parse::strace::{Parser, cut_text};
use crate::parse::values::{decoration_path, parse_int, split_ws, strip};
use std::borrow::Cow;

/// A preload log's header line (detection's test; the rest of the log is
/// strace's grammar with these `#` lines).
pub fn sniff(line: &str) -> bool {
    line.starts_with("# rocrtrace-log")
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `key=value` pairs as a dict: a repeated key keeps its first place,
/// the last value.
fn kv_dict(text: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out: Vec<(&[u8], &[u8])> = Vec::new();
    for (k, v) in grammar::key_values(text) {
        match out.iter_mut().find(|(x, _)| *x == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    out
}

fn get<'a>(kv: &[(&[u8], &'a [u8])], key: &[u8]) -> Option<&'a [u8]> {
    kv.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// `info.header[key] = value` (a dict: an existing key keeps its place).
fn set_header(info: &mut InputInfo, key: &[u8], value: &[u8]) {
    let key: Box<str> = s(key).into();
    match info.header.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = Text::from(value),
        None => info.header.push((key, Text::from(value))),
    }
}

impl Parser {
    fn fact(&self, lineno: u64, line: &[u8], kind: Kind) -> Event {
        Event::new(
            Header {
                file: self.file,
                line: lineno,
                pid: self.fixed_tgid,
                tid: self.fixed_tgid,
                time: self.last_time,
                text: cut_text(line),
                ..Default::default()
            },
            kind,
        )
    }

    pub(crate) fn meta(&mut self, lineno: u64, line: &[u8]) {
        if line.starts_with(b"#+ ") {
            return self.continued(lineno, line);
        }
        let st = strip(&line[1..]);
        if st.starts_with(b"rocrtrace-log") {
            let parts: Vec<&[u8]> = split_ws(st).collect();
            let v = if parts.len() > 1 {
                parts[parts.len() - 1]
            } else {
                b""
            };
            set_header(&mut self.info, b"version", v);
            return;
        }
        if st.starts_with(b"fd-snapshot") {
            self.flush_snapshot();
            let when = match split_ws(st).nth(1) {
                Some(b"exit") => When::Exit,
                _ => When::Start,
            };
            let ev = self.fact(
                lineno,
                line,
                Kind::FdSnapshot(FdSnapshot { when, fds: vec![] }),
            );
            self.snapshot = Some(ev);
            return;
        }
        if st.starts_with(b"fd ") {
            // s.split(None, 2)
            let mut it = split_ws(st);
            let _ = it.next();
            let fd = it.next().and_then(parse_int);
            let Some(fd) = fd.and_then(|f| i32::try_from(f).ok()) else {
                self.info.add_unparsed(lineno, line);
                return;
            };
            if self.snapshot.is_none() {
                let ev = self.fact(
                    lineno,
                    line,
                    Kind::FdSnapshot(FdSnapshot {
                        when: When::Start,
                        fds: vec![],
                    }),
                );
                self.snapshot = Some(ev);
            }
            let path = third_part(st).map(decoration_path).unwrap_or_default();
            if let Some(Event {
                kind: Kind::FdSnapshot(snap),
                ..
            }) = self.snapshot.as_mut()
            {
                let path = Text(path.into());
                match snap.fds.iter_mut().find(|(f, _)| *f == fd) {
                    Some(slot) => slot.1 = path,
                    None => snap.fds.push((fd, path)),
                }
            }
            return;
        }
        self.flush_snapshot();
        if st.starts_with(b"map ") {
            let Some((a, b, perms, off, module, build)) = grammar::map(line) else {
                self.info.add_unparsed(lineno, line);
                return;
            };
            let hex =
                |t: &[u8]| u64::from_str_radix(std::str::from_utf8(t).unwrap_or("x"), 16).ok();
            let (Some(start), Some(end_addr), Some(offset)) = (hex(a), hex(b), hex(off)) else {
                self.info.add_unparsed(lineno, line);
                return;
            };
            let ev = self.fact(
                lineno,
                line,
                Kind::ModuleMap(ModuleMap {
                    start,
                    end_addr,
                    offset,
                    perms: s(perms).into(),
                    module: Text::from(module),
                    build_id: build.map(|b| s(b).into()),
                }),
            );
            self.emit_event(ev);
            return;
        }
        if st.starts_with(b"exec") {
            let p = strip(&st[4..]);
            let mut ev = self.fact(
                lineno,
                line,
                Kind::Exec(Exec {
                    path: (!p.is_empty()).then(|| Text::from(p)),
                }),
            );
            ev.h.ret = Some(0);
            self.emit_event(ev);
            return;
        }
        if st.starts_with(b"exit") {
            let kv = kv_dict(st);
            let status = match get(&kv, b"status") {
                Some(v) => match parse_int(v) {
                    Some(x) => match i64::try_from(x) {
                        Ok(x) => Some(x),
                        Err(_) => {
                            self.info.add_unparsed(lineno, line);
                            return;
                        }
                    },
                    None => None,
                },
                None => None,
            };
            self.info.exit_seen = true;
            let sig = get(&kv, b"signal").map(|v| signal(&s(v)));
            let ev = self.fact(
                lineno,
                line,
                Kind::Exit(Exit {
                    whole: true,
                    status,
                    signal: sig,
                }),
            );
            self.emit_event(ev);
            return;
        }
        if st.starts_with(b"capture-window-lost") {
            // the program unmapped or mapped over the capture's log window:
            // no record after this line (a trace-incomplete reason)
            set_header(
                &mut self.info,
                b"window-lost",
                lineno.to_string().as_bytes(),
            );
            return;
        }
        if st.starts_with(b"lost") {
            // the count read as a number, kept in the header as its text
            let n = parse_int(strip(&st[4..])).unwrap_or(0);
            set_header(&mut self.info, b"lost", n.to_string().as_bytes());
            return;
        }
        let kv = kv_dict(st);
        if let Some(pv) = get(&kv, b"pid") {
            let pid = parse_int(pv).and_then(|p| u32::try_from(p).ok());
            for (k, v) in &kv {
                set_header(&mut self.info, k, v);
            }
            self.fixed_tgid = pid;
            if pid.is_some() {
                self.root = pid;
            }
            let t =
                get(&kv, b"start").and_then(|v| std::str::from_utf8(v).ok()?.parse::<f64>().ok());
            let ppid = get(&kv, b"ppid")
                .and_then(parse_int)
                .and_then(|p| u32::try_from(p).ok());
            let page_size = get(&kv, b"page_size")
                .and_then(parse_int)
                .filter(|&p| p != 0)
                .and_then(|p| u64::try_from(p).ok())
                .unwrap_or(4096);
            let ev = Event {
                h: Header {
                    file: self.file,
                    line: lineno,
                    pid,
                    tid: pid,
                    time: t,
                    text: cut_text(line),
                    ..Default::default()
                },
                name: Cow::Borrowed("process"),
                kind: Kind::ProcessInfo(ProcessInfo {
                    ppid,
                    exe: get(&kv, b"exe").map(Text::from),
                    page_size,
                }),
            };
            self.emit_event(ev);
            return;
        }
        for (k, v) in &kv {
            set_header(&mut self.info, k, v);
        }
    }

    /// `#+ TID K[+] TEXT`: piece K of a preload record too long for one
    /// write (`+`: more follows); the joined pieces are one event line.
    fn continued(&mut self, lineno: u64, line: &[u8]) {
        let Some((tid, k, more, end)) = grammar::cont(line) else {
            self.info.add_unparsed(lineno, line);
            return;
        };
        let k: u64 = std::str::from_utf8(k)
            .ok()
            .and_then(|k| k.parse().ok())
            .unwrap_or(u64::MAX);
        let text = &line[end..];
        let pos = self.cont.iter().position(|(t, _, _)| t == tid);
        let i = if k == 1 {
            match pos {
                Some(i) => {
                    let (_, first, parts) = &self.cont[i];
                    let joined = parts.concat();
                    let first = *first;
                    self.info.add_unparsed(first, &joined);
                    self.cont[i].1 = lineno;
                    self.cont[i].2.clear();
                    i
                }
                None => {
                    self.cont.push((tid.to_vec(), lineno, Vec::new()));
                    self.cont.len() - 1
                }
            }
        } else {
            match pos {
                Some(i) if self.cont[i].2.len() as u64 + 1 == k => i,
                _ => {
                    if let Some(i) = pos {
                        let (_, first, parts) = self.cont.remove(i);
                        self.info.add_unparsed(first, &parts.concat());
                    }
                    self.info.add_unparsed(lineno, line);
                    return;
                }
            }
        };
        self.cont[i].2.push(text.to_vec());
        if more {
            return;
        }
        let (_, first, parts) = self.cont.remove(i);
        self.flush_snapshot();
        let joined = parts.concat();
        if !self.line(first, &joined) {
            self.info.add_unparsed(first, &joined);
        }
    }
}

/// The third field of `s.split(None, 2)`: the rest after two fields.
fn third_part(st: &[u8]) -> Option<&[u8]> {
    let mut i = 0;
    for _ in 0..2 {
        i = crate::parse::values::skip(st, i, crate::parse::values::is_ws);
        if i >= st.len() {
            return None;
        }
        i = crate::parse::values::skip(st, i, |c| !crate::parse::values::is_ws(c));
    }
    let i = crate::parse::values::skip(st, i, crate::parse::values::is_ws);
    (i < st.len()).then(|| &st[i..])
}
