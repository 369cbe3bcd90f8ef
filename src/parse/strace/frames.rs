//! `-k` stack frames: each ` > ` line goes to the event that is the
//! current target.

use super::*;

impl Parser {
    pub(super) fn module(&mut self, m: &[u8]) -> Arc<str> {
        if let Some(a) = self.modules.get(m) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(String::from_utf8_lossy(m).as_ref());
        if self.modules.len() < 4096 {
            self.modules.insert(m.to_vec(), a.clone());
        }
        a
    }

    pub(super) fn frame(&mut self, line: &[u8]) {
        self.info.has_stacks = true;
        let fr = if let Some(fm) = grammar::frame(line) {
            let mut sym = fm.sym;
            let mut off = None;
            if let Some(plus) = rfind(sym, b"+0x") {
                let hex = &sym[plus + 3..];
                if !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) {
                    off = Some(u64::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).ok());
                    sym = &sym[..plus];
                } else if hex.is_empty() {
                    sym = &sym[..plus];
                }
            }
            let Some(addr) = u64::from_str_radix(std::str::from_utf8(fm.addr).unwrap(), 16).ok()
            else {
                return;
            };
            let mut fr = Frame::new(self.module(fm.obj));
            fr.symbol = (!sym.is_empty()).then(|| String::from_utf8_lossy(sym).into());
            fr.sym_offset = off.flatten();
            fr.addr = Some(addr);
            if let Some((src, l)) = fm.src {
                fr.source = Some(String::from_utf8_lossy(src).into());
                fr.source_line = u32_of(l);
            }
            fr
        } else {
            let Some((obj, a)) = grammar::frame_bare(line) else {
                return;
            };
            let mut fr = Frame::new(self.module(obj));
            fr.addr = a.and_then(|a| u64::from_str_radix(std::str::from_utf8(a).unwrap(), 16).ok());
            fr
        };
        let Some(id) = self.target else { return };
        let ev = self
            .hold
            .iter_mut()
            .rev()
            .chain(self.out.iter_mut().rev())
            .chain(self.nopid.iter_mut().rev())
            .find(|e| e.h.seq == id);
        if let Some(ev) = ev {
            let ev = own(ev);
            let mut st = std::mem::take(&mut ev.h.stack).into_vec();
            st.push(fr);
            ev.h.stack = st.into_boxed_slice();
        }
    }
}
