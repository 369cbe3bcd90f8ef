//! Property tests of the tokenizer: it never panics, and a line it takes is
//! the concatenation of its tokens and the text between them (the prefix, the
//! name, the arguments with only whitespace and one comma between each two,
//! the result).  PROPTEST_RNG_SEED fixes the examples (.ci/run sets it),
//! PROPTEST_CASES scales them.

use super::{self as tokens, Builder, Kind, Scanned};
use proptest::prelude::*;
use std::borrow::Cow;

/// Byte offset of `part` in `whole`, which it is a slice of.
fn offset(whole: &str, part: &str) -> usize {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    assert!(
        p >= w && p + part.len() <= w + whole.len(),
        "{part:?} is not in {whole:?}"
    );
    p - w
}

fn is_ws(c: char) -> bool {
    c.is_ascii_whitespace() || c == '\x0b' || ('\x1c'..='\x1f').contains(&c)
}

/// The line re-joins from the tokens: checks every token's place.
fn rejoins(line: &str, s: &Scanned<'_>) {
    let name = offset(line, s.name);
    let args_start = match s.kind {
        Kind::Resumed => {
            assert_eq!(&line[name - 5..name], "<... ");
            assert!(line[name + s.name.len()..].starts_with(" resumed>"));
            name + s.name.len() + 9
        }
        _ => {
            assert_eq!(&line[name + s.name.len()..name + s.name.len() + 1], "(");
            name + s.name.len() + 1
        }
    };
    // the prefix: tid, spaces, time, one space
    let prefix = &line[..if s.kind == Kind::Resumed {
        name - 5
    } else {
        name
    }];
    assert!(prefix.ends_with(' '));
    assert!(prefix.starts_with(&s.tid.to_string()));
    // the arguments and what lies between them
    let mut at = args_start;
    for (i, a) in s.args.iter().enumerate() {
        let Cow::Borrowed(a) = a else {
            panic!("argument {i} of {line:?} is not a slice of it")
        };
        let a = std::str::from_utf8(a).expect("a scanned line is ASCII");
        // (an empty argument is the empty slice where its text would start)
        let k = offset(line, a);
        let between = &line[at..k];
        let commas = between.matches(',').count();
        assert_eq!(
            commas,
            usize::from(i > 0),
            "{between:?} before argument {i} of {line:?}"
        );
        assert!(between.chars().all(|c| c == ',' || is_ws(c)), "{between:?}");
        assert_eq!(a.trim_matches(is_ws), a);
        at = k + a.len();
    }
    // after the last: whitespace, and in a list that never closes, perhaps
    // one comma (an empty tail is not an argument)
    let tail = &line[at..s.args_end];
    let open = !line[s.args_end..].starts_with(')');
    assert!(
        tail.matches(',').count() <= usize::from(open && !s.args.is_empty()),
        "{tail:?}"
    );
    assert!(
        tail.chars().all(|c| c == ',' || is_ws(c)),
        "{tail:?} after the arguments of {line:?}"
    );
    // the result, in order after the closing parenthesis
    match s.outcome {
        None => assert_eq!(s.kind, Kind::Unfinished),
        Some(o) => {
            assert_eq!(&line[s.args_end..s.args_end + 1], ")");
            let rest = &line[s.args_end + 1..];
            assert!(rest.trim_start_matches(is_ws).starts_with('='));
            let mut after = s.args_end;
            for t in [o.ret.map(|n| n.text()), o.ret_path, o.err]
                .into_iter()
                .flatten()
            {
                let k = offset(line, t);
                assert!(k >= after, "{t:?} out of order in {line:?}");
                after = k + t.len();
            }
        }
    }
}

fn check(line: &str) {
    if let Some(s) = tokens::scan_line(line) {
        rejoins(line, &s);
    }
}

const PREFIXES: &[&str] = &[
    "4242  1764435600.000013 ",
    "7 1764435600.5 ",
    "4242 12:34:56.789 ",
    "12345678 1764435600.1 ",
    "42  1764435600 ",
    "",
    "[pid 42] ",
    "42 1764435600.1  ",
];
const NAMES: &[&str] = &[
    "ioctl", "close", "openat", "mmap", "clone3", "x#y:z", "9bad", "getpid", "",
];
const PIECES: &[&str] = &[
    "\"",
    ",",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    "/*",
    "*/",
    "\\",
    "-",
    "->",
    "=",
    "=>",
    ".",
    "...",
    " ",
    "\t",
    "\n",
    "\x1c",
    "a",
    "0x1f",
    "3</dev/kfd>",
    "<char 238:0>",
    "\"a, b\"",
    "(deleted)",
    " <unfinished ...>",
    "<... ",
    " resumed>",
    " = ",
    " = -1 ",
    " <0.1>",
    "?",
    "EBADF",
    "é",
    "99999999999999999999999999999999999999999",
    "NULL",
];
const RESULTS: &[&str] = &[
    "",
    ") = 0",
    ") = 3</dev/kfd<char 238:0>>",
    ") = -1 EBADF (Bad fd)",
    ") = -1 (errno 123)",
    ") = ? <unavailable>",
    ") = 0x10 <1.5>",
    ") = 7</x>(deleted)",
    ") = 0123",
    " <unfinished ...>",
    " <detached ...>",
    ") = 1 <0.5>>",
    ") = 0x",
];

fn pick(xs: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(xs)
}

/// Argument text: strace's special characters and common tokens, shuffled.
fn args_text() -> impl Strategy<Value = String> {
    prop::collection::vec(pick(PIECES), 0..16).prop_map(|v| v.concat())
}

/// Lines of the shapes the tokenizer is for, and near misses (the
/// differential test of the two paths, strace/fast_path.rs, parses them too).
pub(crate) fn lines() -> impl Strategy<Value = String> {
    let call = (pick(PREFIXES), pick(NAMES), args_text(), pick(RESULTS))
        .prop_map(|(p, n, a, r)| format!("{p}{n}({a}{r}"));
    let resumed = (pick(PREFIXES), pick(NAMES), args_text(), pick(RESULTS))
        .prop_map(|(p, n, a, r)| format!("{p}<... {n} resumed>{a}{r}"));
    prop_oneof![call, resumed, any::<String>(), "[ -~]{0,80}"]
}

/// Common lines of each shape with a few of PIECES written over them.
pub(crate) fn mutated_lines() -> impl Strategy<Value = String> {
    let bases = pick(&[
        "4242  1764435600.000026 openat(AT_FDCWD</work>, \"/dev/kfd\", O_RDWR) = 3</dev/kfd<char 238:0>> <0.000020>",
        "7 10:00:01.250 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>",
        "7 1764435600.5 <... ioctl resumed>, {a=1, b=[2, 3]} => {c=4}) = -1 EINTR (Interrupted) <0.5>",
    ]);
    let edits = prop::collection::vec(
        (any::<prop::sample::Index>(), pick(PIECES), 0usize..4),
        1..5,
    );
    (bases, edits).prop_map(|(base, edits)| {
        let mut line = base.to_string();
        for (at, piece, cut) in edits {
            let mut i = at.index(line.len() + 1);
            while !line.is_char_boundary(i) {
                i -= 1;
            }
            let mut j = (i + cut).min(line.len());
            while !line.is_char_boundary(j) {
                j += 1;
            }
            line.replace_range(i..j, piece);
        }
        line
    })
}

/// Checks that every text `bracketed` hands over is a slice of the token.
struct Slices<'a>(&'a str);

impl<'a> Builder<'a> for Slices<'a> {
    type Value = ();
    type Error = ();
    fn scalar(&mut self, t: &'a str) -> Result<(), ()> {
        offset(self.0, t);
        assert!(!t.contains(['{', '[']));
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
    fn list(&mut self, _: impl ExactSizeIterator<Item = ()>) -> Result<(), ()> {
        Ok(())
    }
    fn dict(&mut self, fields: impl Iterator<Item = (&'a str, ())>) -> Result<(), ()> {
        for (k, _) in fields {
            offset(self.0, k);
            assert!(!k.is_empty() && k.len() <= 40);
        }
        Ok(())
    }
    fn pair(&mut self, _: (), _: ()) -> Result<(), ()> {
        Ok(())
    }
}

/// Renders what `bracketed` built, with where each text lies in the token,
/// to compare two walks.
struct Render<'a>(&'a str);

impl<'a> Builder<'a> for Render<'a> {
    type Value = String;
    type Error = ();
    fn scalar(&mut self, t: &'a str) -> Result<String, ()> {
        Ok(format!("S{}:{t:?}", offset(self.0, t)))
    }
    fn general(&mut self, t: &'a str, depth: isize) -> Result<String, ()> {
        Ok(format!("G{}@{depth}:{t:?}", offset(self.0, t)))
    }
    fn text(&mut self, t: &'a str) -> Result<String, ()> {
        Ok(format!("T{}:{t:?}", offset(self.0, t)))
    }
    fn list(&mut self, items: impl ExactSizeIterator<Item = String>) -> Result<String, ()> {
        Ok(format!("[{}]", items.collect::<Vec<_>>().join(" ")))
    }
    fn dict(&mut self, fields: impl Iterator<Item = (&'a str, String)>) -> Result<String, ()> {
        let f: Vec<String> = fields.map(|(k, v)| format!("{k}={v}")).collect();
        Ok(format!("{{{}}}", f.join(" ")))
    }
    fn pair(&mut self, a: String, b: String) -> Result<String, ()> {
        Ok(format!("({a} => {b})"))
    }
}

/// The two walks on one token, at a few depths and depth limits.
fn same_walk(tok: &str) {
    for (depth, max) in [(0, 64), (3, 64), (0, 2), (5, 4), (-1, 0), (63, 64)] {
        let one = tokens::bracketed(tok, depth, max, &mut Render(tok));
        let two = super::two_pass::bracketed_two_pass(tok, depth, max, &mut Render(tok));
        assert_eq!(one, two, "{tok:?} at depth {depth} of {max}");
    }
}

/// Struct-like text: fields, lists, pairs and strace's atoms, nested, with
/// the near misses of PIECES mixed in.
fn structs() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        pick(&[
            "1",
            "0x10",
            "x",
            "NULL",
            "\"a,b\"",
            "3</dev/kfd<char 238:0>>",
            "...",
            "",
            "A|B"
        ]),
        pick(PIECES),
    ]
    .prop_map(str::to_owned);
    leaf.prop_recursive(8, 96, 5, |inner| {
        prop_oneof![
            prop::collection::vec(
                (
                    pick(&["a=", "size=", "", "b==", "c=>", "x "]),
                    inner.clone()
                ),
                0..5
            )
            .prop_map(|v| format!(
                "{{{}}}",
                v.into_iter()
                    .map(|(k, x)| k.to_owned() + &x)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(", "))),
            (
                inner.clone(),
                pick(&[" => ", "=>", " ", " x "]),
                inner.clone()
            )
                .prop_map(|(a, m, b)| format!("{a}{m}{b}")),
            (inner.clone(), pick(PIECES), any::<prop::sample::Index>()).prop_map(|(x, p, i)| {
                let mut k = i.index(x.len() + 1);
                while !x.is_char_boundary(k) {
                    k -= 1;
                }
                format!("{}{p}{}", &x[..k], &x[k..])
            }),
        ]
    })
}

proptest! {
    // (no regression files: the failing input is in the test's output)
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn lines_rejoin(line in lines()) {
        check(&line);
    }

    #[test]
    fn mutated_common_lines_rejoin(line in mutated_lines()) {
        check(&line);
    }

    #[test]
    fn return_values_of_any_size(digits in "-?[0-9]{1,400}|0x[0-9a-f]{1,300}") {
        let line = format!("1 1764435600.1 f(3) = {digits} <0.5>");
        if let Some(s) = tokens::scan_line(&line) {
            rejoins(&line, &s);
            let n = s.outcome.unwrap().ret.unwrap();
            prop_assert_eq!(n.text(), digits.as_str());
            let magnitude = |d: &str| match d.trim_start_matches('0') {
                "" => "0".to_string(),
                m => m.to_string(),
            };
            if let Some(v) = n.value() {
                match digits.strip_prefix("0x") {
                    Some(hex) => prop_assert_eq!(format!("{v:x}"), magnitude(hex)),
                    None => {
                        let m = magnitude(digits.trim_start_matches('-'));
                        prop_assert_eq!(v.unsigned_abs().to_string(), m.clone());
                        prop_assert_eq!(v < 0, digits.starts_with('-') && m != "0");
                    }
                }
            } else {
                // i128::MAX has 39 decimal digits, 32 hex digits
                let m = match digits.strip_prefix("0x") {
                    Some(hex) => magnitude(hex).len() >= 32,
                    None => magnitude(digits.trim_start_matches('-')).len() >= 39,
                };
                prop_assert!(m, "{} fits an i128", digits);
            }
        } else {
            // Python's int(text, 0) refuses "0123"; a bare -1 is the
            // general grammar's to name, and so is a number longer than it
            // reads
            let d = digits.trim_start_matches('-');
            let zeros = d.len() > 1 && d.starts_with('0') && !d.starts_with("0x");
            let long = d.trim_start_matches("0x").len() > tokens::MAX_DIGITS;
            prop_assert!(zeros || long || digits == "-1", "{} refused", digits);
        }
    }

    /// The straight reading of the usual result gives what the long one
    /// gives, on tails of both shapes and near misses of them.
    #[test]
    fn plain_results_read_as_the_general_reading(
        tail in "( ?= ?| = )(0x[0-9a-fA-F]{0,20}|-?[0-9]{0,22}|\\?|0x)(<[^>]{0,6}>)?( ?<[0-9]{0,3}\\.?[0-9]{0,8}>?| <unavailable>| \\(INJECTED\\)| ENOENT \\(x\\)|[ x>]{0,2})",
    ) {
        let line = format!("f(3){tail}");
        if let Some(o) = tokens::plain_result(&line, 4, line.len()) {
            prop_assert_eq!(Some(o), tokens::result_general(&line, 4, line.len(), &mut ()), "{}", line);
        }
    }

    /// A result's decoration ends where the decorations seen say, as
    /// where deco_end says: asked afresh, and again once it was seen.
    #[test]
    fn results_read_alike_with_decorations_seen(
        fd in "[0-9]{1,3}",
        deco in "<[a-z/ <>:0-9-]{0,30}>(\\(deleted\\))?",
        tail in "( <0\\.[0-9]{6}>| ENOENT \\(x\\)|)",
    ) {
        let line = format!("f(3) = {fd}{deco}{tail}");
        let want = tokens::result_general(&line, 4, line.len(), &mut ());
        let mut seen = tokens::Seen::default();
        for _ in 0..2 {
            prop_assert_eq!(tokens::result_general(&line, 4, line.len(), &mut seen), want, "{}", line);
        }
    }

    /// The eight-at-a-time skip stops where the byte loop stops, for the
    /// classes it is used with, from any start.
    #[test]
    fn skip_table_is_the_byte_loop(
        text in "[ -~]{0,40}",
        start in any::<prop::sample::Index>(),
        deco in any::<bool>(),
    ) {
        let s = text.as_bytes();
        let i = start.index(s.len() + 1);
        let class = if deco { &tokens::DECO_PLAIN } else { &tokens::ARG_PLAIN };
        prop_assert_eq!(
            tokens::skip_table(s, i, class),
            tokens::skip(s, i, |c| class[c as usize])
        );
    }

    /// An argument scan that knows earlier lines' decorations ends where
    /// one that knows none ends, line after line.
    #[test]
    fn seen_decorations_change_no_scan(texts in prop::collection::vec(args_text(), 1..8)) {
        let mut seen = tokens::Seen::default();
        for t in &texts {
            let s = t.as_bytes();
            for j in 0..=s.len() {
                prop_assert_eq!(
                    tokens::well_formed_in(s, j, tokens::MAX_DEPTH, false, &mut seen),
                    tokens::well_formed(s, j, tokens::MAX_DEPTH, false),
                    "{:?} from {}", t, j
                );
            }
        }
    }

    /// The search for `<unfinished ...>)` from its `u` is memmem's.
    #[test]
    fn unfinished_close_from_its_u(
        text in prop::collection::vec(pick(&["<unfinished ...>)", "<unfinished ...>", "u", "<u", "x", "(", ")", " "]), 0..8),
    ) {
        let t = text.concat();
        prop_assert_eq!(
            tokens::has_unfinished_close(t.as_bytes()),
            memchr::memmem::find(t.as_bytes(), b"<unfinished ...>)").is_some()
        );
    }

    /// A return value's value read the short way is i128's parse of it.
    #[test]
    fn number_values_are_the_parse(digits in "-?[0-9]{1,40}|0x[0-9a-fA-F]{0,40}") {
        let parsed = match digits.strip_prefix("0x") {
            Some(h) => i128::from_str_radix(h, 16).ok(),
            None => digits.parse::<i128>().ok(),
        };
        prop_assert_eq!(tokens::Number(&digits).value(), parsed);
    }

    #[test]
    fn one_pass_walk_is_the_two_pass_walk(tok in structs()) {
        same_walk(&tok);
        same_walk(&format!(" {{a={tok}}} "));
    }

    #[test]
    fn one_pass_walk_is_the_two_pass_walk_on_soup(
        tok in prop::collection::vec(pick(PIECES), 0..24).prop_map(|v| v.concat())
    ) {
        same_walk(&tok);
        same_walk(&format!("{{a={tok}}}"));
        same_walk(&format!("[{tok}] => {{b={tok}}}"));
    }

    #[test]
    fn bracketed_never_panics(tok in prop::collection::vec(pick(PIECES), 0..24).prop_map(|v| v.concat()),
                              depth in -2isize..70) {
        let _ = tokens::bracketed(&tok, depth, 64, &mut Slices(&tok));
        let s = format!("{{a={tok}}}");
        let _ = tokens::bracketed(&s, depth, 64, &mut Slices(&s));
    }
}

#[test]
fn one_pass_walk_is_the_two_pass_walk_on_edges() {
    let deep = |n: usize| format!("{}1{}", "{a=".repeat(n), "}".repeat(n));
    for tok in [
        "{a=1, attrs=[{type=1, value=0x2}, ...]} => {b=2}",
        "{a=1 /* c */}",
        "{a=1} /* c */",
        "{a=\"x",
        "{a=\"x\"...}",
        "{a=<x>(deleted), b=<y<z>>}",
        "{a=<x<y<z>>>}",
        "{a=1} => {b=\"x} => {c=2}",
        "{a=1} => {b=2} => {c=3}",
        "[1, 2) ]",
        "[1, (2, 3], 4]",
        "{a=[}",
        "{a=1}, {b=2}",
        "} {a=1}",
        "[[[[[[1]]]]]]",
        "[[[[[[[1]]]]]]]",
        "[[[[[[1]]]]], [[[[[[2]]]]]]]",
        "{a=\"\\\n\"}",
        "{a=/**/}",
        "{a=1}/",
        "{a=1}/*",
        "[\"a\\\"b\", 'c']",
        // well_formed's character literals and shifts, which the one-pass
        // group scan once read as plain text (a comma, a closer, a decoration)
        "{a=',', b=1}",
        "{a='}', b=1}",
        "{a=''', b=1}",
        "{a=', b=1}",
        "[1<<16, 2]",
        "{a=1<<2, b=[1<<3]}",
        "[<<char 238:0>\"] => {b=<<char 238:0>\"}",
        &deep(5),
        &deep(6),
        &deep(7),
        &deep(70),
        &"{a=1} => ".repeat(70),
    ] {
        same_walk(tok);
    }
}
