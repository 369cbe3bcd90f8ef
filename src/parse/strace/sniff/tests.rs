//! The sniff's ASCII patterns find what its Unicode ones find on ASCII
//! lines (pytext::PyRegex), so detection is the same with either.

use super::*;
use crate::parse::fixtures::fixture_logs;
use crate::parse::tinygrad;
use crate::parse::tokens::props;
use proptest::prelude::*;
use std::path::Path;

fn patterns() -> [(&'static str, &'static PyRegex); 7] {
    [
        ("diag", &RE.diag),
        ("prefix", &RE.prefix),
        ("name", &RE.name),
        ("resumed", &RE.resumed),
        ("exited", &RE.exited),
        ("signal", &RE.signal),
        ("tinygrad", &tinygrad::SNIFF),
    ]
}

/// Each pattern on the line, its ANSI-cleaned text and the body after the
/// prefix: the same match both ways on ASCII text; the sniff the same as
/// with the Unicode patterns only.  Returns whether the line was ASCII.
fn check(line: &str) -> bool {
    let cleaned = ANSI.replace_all(line, "");
    let end = RE.prefix.find_unicode(&cleaned).map_or(0, |m| m.1);
    let ascii = line.is_ascii();
    for hay in [line, &cleaned, &cleaned[end..], cleaned.trim()] {
        if !hay.is_ascii() {
            continue;
        }
        for (what, re) in patterns() {
            assert_eq!(
                re.find_ascii(hay),
                re.find_unicode(hay),
                "{what} on {hay:?}"
            );
        }
    }
    assert_eq!(
        looks(line, PyRegex::find),
        looks(line, PyRegex::find_unicode),
        "{line:?}"
    );
    ascii
}

#[test]
fn sniff_ascii_agrees_on_fixtures() {
    let mut logs = fixture_logs();
    let tg = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tinygrad");
    for e in std::fs::read_dir(tg).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            logs.push(p);
        }
    }
    let (mut ascii, mut other, mut taken) = (0, 0, 0);
    for p in logs {
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        for line in text.lines() {
            // and the line with a non-ASCII space, digit or letter in it
            let spaced = line.replacen(' ', "\u{2003}", 1);
            let digit = line.replacen('1', "\u{661}", 1);
            let letter = line.replacen('e', "\u{e9}", 1);
            for l in [line, &spaced, &digit, &letter] {
                if check(l) {
                    ascii += 1;
                } else {
                    other += 1;
                }
            }
            taken += usize::from(sniff(line) || tinygrad::sniff(line));
        }
    }
    assert!(
        ascii > 2000 && other > 2000 && taken > 1500,
        "{ascii} {other} {taken}"
    );
}

/// Pieces of strace lines and of the sniff's other shapes, and characters
/// the ASCII and Unicode classes tell apart (a non-ASCII digit, letter and
/// space; the separators U+001C..U+001F).
const PIECES: &[&str] = &[
    "[pid ",
    "[pid\t",
    "123",
    "4567",
    "1764435600",
    ".123456",
    "12:34:56",
    " ",
    "  ",
    "\t",
    "<",
    ">",
    "]",
    "[",
    "(+",
    ")",
    "(",
    "?",
    "deadbeef",
    "0000aaaa",
    "strace: ",
    "strace-7.1: ",
    "Process ",
    "attached",
    "detached",
    " with 3 threads",
    " - interrupt to quit",
    "ioctl",
    "open",
    "<... ",
    " resumed>",
    "+++ ",
    "exited with ",
    "-1",
    "killed by ",
    "SIGKILL",
    " (core dumped)",
    " +++",
    "superseded by execve in pid ",
    "--- ",
    "stopped by ",
    "???",
    "_",
    "#",
    ":",
    ".",
    "+",
    "-",
    " ms",
    " ms : ",
    " ms +",
    "ioctl idir=",
    "\x1b[31m",
    "\x1b[0m",
    "a",
    "Z",
    "\x1c",
    "\x1f",
    "\x0b",
    "\u{a0}",
    "\u{2003}",
    "\u{85}",
    "é",
    "ж",
    "٣",
    "१",
    "\u{300}",
    "‿",
    "= 0",
    "% time",
    "calls",
];

fn pieced() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn sniff_ascii_agrees_on_pieces(line in pieced()) {
        check(&line);
    }

    #[test]
    fn sniff_ascii_agrees_on_lines(line in prop_oneof![props::lines(), props::mutated_lines()]) {
        check(&line);
    }
}
