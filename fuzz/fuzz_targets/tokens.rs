//! The tokenizer on arbitrary input: no panic, and every token of a line it
//! takes is a slice of that line, in order (the property tests in
//! src/parse/tokens/props.rs check the full re-join).
#![no_main]

use _engine::parse::tokens::{self, Builder};
use libfuzzer_sys::fuzz_target;

/// Byte offset of `part` within `whole`; panics (a finding) when it is not a slice of it.
fn offset(whole: &str, part: &str) -> usize {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    assert!(p >= w && p + part.len() <= w + whole.len());
    p - w
}

/// Checks what `bracketed` hands over, builds nothing.
struct Slices<'a>(&'a str);

impl<'a> Builder<'a> for Slices<'a> {
    type Value = ();
    type Error = ();
    fn scalar(&mut self, t: &'a str) -> Result<(), ()> {
        offset(self.0, t);
        Ok(())
    }
    fn general(&mut self, t: &'a str, _: isize) -> Result<(), ()> {
        offset(self.0, t);
        Ok(())
    }
    fn text(&mut self, t: &'a str) -> Result<(), ()> {
        offset(self.0, t);
        Ok(())
    }
    fn list(&mut self, items: impl ExactSizeIterator<Item = ()>) -> Result<(), ()> {
        items.for_each(drop);
        Ok(())
    }
    fn dict(&mut self, fields: impl Iterator<Item = (&'a str, ())>) -> Result<(), ()> {
        for (k, ()) in fields {
            offset(self.0, k);
        }
        Ok(())
    }
    fn pair(&mut self, _: (), _: ()) -> Result<(), ()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    let line = line.as_ref();
    if let Some(s) = tokens::scan_line(line) {
        let mut at = offset(line, s.name) + s.name.len();
        for a in &s.args {
            let k = offset(line, a);
            assert!(k >= at);
            at = k + a.len();
        }
        assert!(s.args_end >= at && s.args_end <= line.len());
        if let Some(o) = s.outcome {
            // after the closing ')', in order
            at = s.args_end + 1;
            for t in [o.ret.map(|n| n.text()), o.ret_path, o.err]
                .into_iter()
                .flatten()
            {
                let k = offset(line, t);
                assert!(k >= at);
                at = k + t.len();
            }
            let _ = o.ret.map(|n| n.value());
        }
        for a in &s.args {
            let _ = tokens::bracketed(a, 0, 64, &mut Slices(a));
        }
    }
    let _ = tokens::bracketed(line, 0, 64, &mut Slices(line));
});
