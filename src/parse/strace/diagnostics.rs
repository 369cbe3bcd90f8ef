//! strace's own messages (attach/detach, `-c` summaries) and the trace
//! lines they cut: a fragment waits for its continuation, and an ioctl
//! line that does not parse is salvaged.

use super::*;

impl Parser {
    /// An ioctl line whose argument does not parse (a struct strace cut or
    /// garbled) is still an ioctl on its fd, with its request and result:
    /// the line is counted unparsed, the call is kept (issue 33).
    pub(super) fn salvage(&mut self, lineno: u64, line: &[u8]) {
        let m = grammar::prefix(line);
        let body = &line[m.end..];
        let Some(rest) = body.strip_prefix(b"ioctl(") else {
            return;
        };
        // the result: after the last `) = ` of the line
        let Some(close) = rfind(rest, b") = ") else {
            return;
        };
        let mut args = rest[..close].splitn(3, |&c| c == b',');
        let (Some(fd), Some(req)) = (args.next(), args.next()) else {
            return;
        };
        let (fd, req) = (strip(fd), strip(req));
        let plain = |t: &[u8]| {
            !t.is_empty()
                && t.iter()
                    .all(|&c| !matches!(c, b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'"'))
        };
        if !plain(req) || fd.is_empty() || memchr::memchr3(b'(', b'{', b'"', fd).is_some() {
            return;
        }
        let mut fixed = line[..m.end].to_vec();
        fixed.extend_from_slice(b"ioctl(");
        fixed.extend_from_slice(fd);
        fixed.extend_from_slice(b", ");
        fixed.extend_from_slice(req);
        fixed.extend_from_slice(b", ");
        // the argument as strace prints an address it could not read
        fixed.extend_from_slice(b"0");
        fixed.extend_from_slice(&rest[close..]);
        // counted once, as the line it is
        let (n, k) = (self.info.unparsed, self.info.unparsed_samples.len());
        let had_fragment = self.fragment.is_some();
        self.line(lineno, &fixed);
        if !had_fragment && self.fragment.take().is_some() {
            // the rebuilt line is no call either: nothing to keep
            self.fragment_detached = false;
        }
        self.info.unparsed = n;
        self.info.unparsed_samples.truncate(k);
    }

    /// strace's own stderr messages; a diagnostic glued to the end of a cut
    /// trace line leaves the front part as a fragment.
    pub(super) fn diagnostic(&mut self, lineno: u64, line: &[u8]) -> bool {
        let s = strip(line);
        if self.in_summary {
            if grammar::summary_row(line) || s.is_empty() {
                return true;
            }
            self.in_summary = false;
        }
        if (s.starts_with(b"%") && contains(s, b"calls") && contains(s, b"syscall"))
            || grammar::summary_header(s)
        {
            self.in_summary = true;
            return true;
        }
        if s.starts_with(b"System call usage summary for ") {
            // -c on a multi-personality run: one table per personality
            return true;
        }
        if let Some(((_, pid, attached), at)) = grammar::diag_match(line) {
            self.diag_pid(pid, attached);
            let front = &line[..at];
            if !strip(front).is_empty() {
                if self.fragment.is_none() {
                    self.fragment = Some((lineno, front.to_vec()));
                    self.fragment_detached = !attached;
                } else {
                    return false;
                }
            }
            return true;
        }
        if grammar::diag_prefix(line)
            || s.starts_with(b"strace: ")
            || s.starts_with(b"[ Process PID=")
        {
            return true;
        }
        s.starts_with(b"<detached ...>") || s.starts_with(b"<unfinished ...>")
    }

    pub(super) fn diag_pid(&mut self, pid: &[u8], attached: bool) {
        // \d{1,10}: a pid past u32 is no process this log can name
        if let Some(p) = u32_of(pid) {
            if attached {
                self.live.insert(p);
            } else {
                self.live.remove(&p);
            }
        }
    }

    /// Join a cut line with its continuation; true when consumed.
    pub(super) fn join_fragment(&mut self, lineno: u64, line: &[u8]) -> bool {
        let st = lstrip(line);
        if grammar::diag_prefix(st)
            || (st.starts_with(b"Process ") && grammar::diag(line).is_some())
        {
            if let Some((_, pid, a)) = grammar::diag(line) {
                self.diag_pid(pid, a);
                self.fragment_detached |= !a;
            }
            return true; // the fragment waits for its continuation
        }
        let mut cont = matches!(line[0], b' ' | b')' | b',');
        if !cont {
            let pm = grammar::prefix(line);
            let body = &line[pm.end..];
            cont = !(grammar::name(body).is_some()
                || body.starts_with(b"<... ")
                || body.starts_with(b"+++")
                || body.starts_with(b"---"));
        }
        let (fl, ftext) = self.fragment.take().unwrap();
        self.fragment_detached = false;
        if !cont {
            self.info.add_unparsed(fl, &ftext);
            self.salvage(fl, &ftext);
            return false;
        }
        let joined = if line.starts_with(b" <") {
            let mut j = rstrip(&ftext).to_vec();
            j.push(b' ');
            j.extend_from_slice(lstrip(line));
            j
        } else {
            let mut j = ftext.clone();
            j.extend_from_slice(line);
            j
        };
        if !self.line(fl, &joined) {
            self.info.add_unparsed(fl, &ftext);
            self.info.add_unparsed(lineno, line);
            self.salvage(fl, &joined);
        }
        true
    }
}
