//! The tokenizer's shapes and refusals, with the tokens written out (once
//! checked against the retired Python grammar); props.rs adds
//! the property tests.

use super::*;

fn scan(line: &str) -> Option<Scanned<'_>> {
    scan_line(line)
}

/// The arguments as text (a scanned line is ASCII).
fn strs<'a>(s: &'a Scanned<'_>) -> Vec<&'a str> {
    s.args
        .iter()
        .map(|a| std::str::from_utf8(a).expect("ASCII"))
        .collect()
}

fn outcome<'a>(s: &Scanned<'a>) -> Outcome<'a> {
    s.outcome.expect("a finished call has an outcome")
}

#[test]
fn complete_call_with_decorated_result_and_duration() {
    let line = r#"4242  1764435600.000026 openat(AT_FDCWD</work>, "/dev/kfd", O_RDWR) = 3</dev/kfd<char 238:0>> <0.000020>"#;
    let s = scan(line).unwrap();
    assert_eq!(s.kind, Kind::Call);
    assert_eq!(s.tid, 4242);
    assert_eq!(s.time, 1764435600.000026);
    assert_eq!(s.name, "openat");
    assert_eq!(strs(&s), ["AT_FDCWD</work>", "\"/dev/kfd\"", "O_RDWR"]);
    assert_eq!(&line[s.args_end..s.args_end + 1], ")");
    let o = outcome(&s);
    assert_eq!(o.ret.map(|n| n.value()), Some(Some(3)));
    assert_eq!(o.ret_path, Some("/dev/kfd"));
    assert_eq!(o.err, None);
    assert_eq!(o.dur, Some(0.00002));
}

#[test]
fn unfinished_call_with_time_of_day() {
    let s = scan("7 10:00:01.250 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>")
        .unwrap();
    assert_eq!(s.kind, Kind::Unfinished);
    assert_eq!(s.tid, 7);
    assert_eq!(s.time, 36001.25);
    assert_eq!(strs(&s), ["3</dev/kfd>", "AMDKFD_IOC_WAIT_EVENTS", "0x7f"]);
    assert_eq!(s.outcome, None);
}

#[test]
fn resumed_call_with_error_name() {
    let s = scan("7 1764435600.5 <... ioctl resumed>) = -1 EINTR (Interrupted) <0.5>").unwrap();
    assert_eq!(s.kind, Kind::Resumed);
    assert_eq!(s.name, "ioctl");
    assert!(s.args.is_empty());
    let o = outcome(&s);
    assert_eq!(o.ret.map(|n| n.text()), Some("-1"));
    assert_eq!(o.err, Some("EINTR"));
    assert_eq!(o.dur, Some(0.5));
    // the tail of a split list starts with an empty argument before its ','
    let s = scan("43 1764435600.2 <... ioctl resumed>, 0x2) = 0").unwrap();
    assert_eq!(strs(&s), ["", "0x2"]);
}

#[test]
fn argument_lists() {
    let args = |l: &str| -> Vec<String> {
        strs(&scan(l).unwrap())
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    assert!(args("1 1764435600.1 getpid() = 1").is_empty());
    assert!(args("1 1764435600.1 getpid( ) = 1").is_empty());
    assert_eq!(args("1 1764435600.1 f(, ) = 1"), ["", ""]);
    assert_eq!(
        args(r#"1 1764435600.1 write(1, "a, \"b\")"..., 5) = 5"#),
        ["1", r#""a, \"b\")"..."#, "5"]
    );
    assert_eq!(
        args("1 1764435600.1 ioctl(3, X, {a=[1, 2], b={c=3}} => {d=4}) = 0"),
        ["3", "X", "{a=[1, 2], b={c=3}} => {d=4}"]
    );
    assert_eq!(
        args("1 1764435600.1 f(1 /* a, b */, 2) = 0"),
        ["1 /* a, b */", "2"]
    );
    // six levels of brackets are the language; the seventh is the general grammar's
    let six = format!("{}{}", "[".repeat(6), "]".repeat(6));
    assert_eq!(
        args(&format!("1 1764435600.1 f({six}) = 0")),
        [six.as_str()]
    );
    let seven = format!("{}{}", "[".repeat(7), "]".repeat(7));
    assert_eq!(scan(&format!("1 1764435600.1 f({seven}) = 0")), None);
}

#[test]
fn results() {
    let o = |l| outcome(&scan(l).unwrap());
    assert_eq!(o("1 1764435600.1 f() = ?").ret, None);
    assert_eq!(o("1 1764435600.1 f() = ? <unavailable>").dur, None);
    assert_eq!(
        o("1 1764435600.1 f() = 0x10 <1.5>").ret.unwrap().value(),
        Some(16)
    );
    assert_eq!(o("1 1764435600.1 f() = 0 (Timeout) <1.>").dur, Some(1.0));
    assert_eq!(o("1 1764435600.1 f() = -00").ret.unwrap().value(), Some(0));
    assert_eq!(o("1 1764435600.1 f() = 3<>").ret_path, Some(""));
    assert_eq!(o("1 1764435600.1 f() =0").ret.unwrap().value(), Some(0));
    assert_eq!(o("1 1764435600.1 f()=  -1  E2BIG").err, Some("E2BIG"));
    assert_eq!(o("1 1764435600.1 f() = ? Z").err, None);
    assert_eq!(o("1 1764435600.1 f() = 1 <x>").dur, None);
    assert_eq!(o("1 1764435600.1 f() = 0x").ret.unwrap().text(), "0");
}

#[test]
fn refusals() {
    for line in [
        "7 1764435600.5 close(3) = -1 (errno 500)", // the general grammar names it
        "7 1764435600.5 close(3) = -1 eagain",
        "7 1764435600.5 close(3) = -1 E (one letter)",
        "[pid 7] close(3) = 0", // the general prefix
        "7 close(3) = 0",
        "12345678 1764435600.1 close(3) = 0", // tids are at most 7 digits
        "42  1764435600 close(3) = 0",
        "42 1:2:3.4 close(3) = 0",
        "7 1764435600.5 +++ exited with 0 +++",
        "7 1764435600.5 --- SIGCHLD {si_signo=SIGCHLD} ---",
        "7 1764435600.5 close(3 <detached ...>",
        "7 1764435600.5 <... x resumed> <unfinished ...>) = ?",
        "7 1764435600.5 close(3) = 7</x>(deleted)",
        "7 1764435600.5 close(3) = 7</x (deleted)>",
        "7 1764435600.5 close(3) = 0123", // int("0123", 0) refuses it
        "7 1764435600.5 close(3)",
        "7 1764435600.5 close(3",
        r#"7 1764435600.5 write(1, "abc) = 3"#,
        "7 1764435600.5 f(3</a->b>) = 0",
        "7 1764435600.5 f(3) = 3</a<b<c>>>",
        "7 1764435600.5 9bad(3) = 0",
        "7 1764435600.5 f(3) = 30x1f", // a number run into hex digits
        "7 1764435600.5 f(3) = -0x10",
        "7 1764435600.5 open(\"é\") = 3", // ASCII only
        "",
        "7",
        "7 ",
    ] {
        assert_eq!(scan(line), None, "{line:?}");
    }
}

#[test]
fn shifts_and_character_literals_are_atoms() {
    for (line, args) in [
        (
            "1 1764435600.1 ioctl(<<char 238:0>,>) = 0",
            &["<<char 238:0>", ">"][..],
        ),
        ("1 1764435600.1 f(1<<16|0, <a>) = 0", &["1<<16|0", "<a>"]),
        ("1 1764435600.1 ioctl(3, ',', 1) = 0", &["3", "','", "1"]),
        (
            "1 1764435600.1 f('\\'', '\\x2c', ')') = 0",
            &["'\\''", "'\\x2c'", "')'"],
        ),
        ("1 1764435600.1 f(', 1) = 0", &["'", "1"]), // a lone quote
    ] {
        assert_eq!(strs(&scan(line).unwrap()), args, "{line}");
    }
}

#[test]
fn numbers_of_any_size() {
    let digits = "9".repeat(10_000);
    let max = &digits[..super::MAX_DIGITS];
    let line = format!("1 1764435600.1 f() = {max} <0.{digits}>");
    let o = outcome(&scan(&line).unwrap());
    let ret = o.ret.unwrap();
    assert_eq!(ret.text(), max);
    assert_eq!(ret.value(), None); // past i128: the caller decides
    assert_eq!(o.dur, Some(1.0));
    // a longer number is none the general grammar reads: it decides
    assert_eq!(scan(&format!("1 1764435600.1 f() = {digits}")), None);
    assert_eq!(scan(&format!("1 1764435600.1 f() = 9{max}")), None);
    assert_eq!(scan(&format!("1 1764435600.1 f() = 0xf{max}")), None);
    let hex = format!("0x{}", "f".repeat(33));
    let line = format!("1 1764435600.1 f() = {hex}");
    assert_eq!(outcome(&scan(&line).unwrap()).ret.unwrap().value(), None);
    let line = format!("1 1764435600.1 f() = 0x7{}", "f".repeat(31));
    assert_eq!(
        outcome(&scan(&line).unwrap()).ret.unwrap().value(),
        Some(i128::MAX)
    );
    let line = format!("1 {digits}.5 f() = -{max}");
    let s = scan(&line).unwrap();
    assert_eq!(s.time, f64::INFINITY); // float("9" * 10000 + ".5") in Python too
    assert_eq!(outcome(&s).ret.unwrap().text().len(), 65);
}

/// A plain tree of what `bracketed` built, to compare whole values.
#[derive(Debug, PartialEq)]
enum V<'a> {
    Scalar(&'a str),
    General(&'a str, isize),
    Text(&'a str),
    List(Vec<V<'a>>),
    Dict(Vec<(&'a str, V<'a>)>),
    Pair(Box<V<'a>>, Box<V<'a>>),
}

struct Tree;

impl<'a> Builder<'a> for Tree {
    type Value = V<'a>;
    type Error = std::convert::Infallible;
    fn scalar(&mut self, t: &'a str) -> Result<V<'a>, Self::Error> {
        Ok(V::Scalar(t))
    }
    fn general(&mut self, t: &'a str, depth: isize) -> Result<V<'a>, Self::Error> {
        Ok(V::General(t, depth))
    }
    fn text(&mut self, t: &'a str) -> Result<V<'a>, Self::Error> {
        Ok(V::Text(t))
    }
    fn list(&mut self, items: impl ExactSizeIterator<Item = V<'a>>) -> Result<V<'a>, Self::Error> {
        Ok(V::List(items.collect()))
    }
    fn dict(
        &mut self,
        fields: impl Iterator<Item = (&'a str, V<'a>)>,
    ) -> Result<V<'a>, Self::Error> {
        Ok(V::Dict(fields.collect()))
    }
    fn pair(&mut self, a: V<'a>, b: V<'a>) -> Result<V<'a>, Self::Error> {
        Ok(V::Pair(Box::new(a), Box::new(b)))
    }
}

/// tokens.MAX_NESTING
const MAX_NESTING: isize = 64;

fn value(tok: &str, depth: isize) -> V<'_> {
    let Ok(v) = bracketed(tok, depth, MAX_NESTING, &mut Tree);
    v
}

#[test]
fn bracketed_structs() {
    use V::*;
    assert_eq!(
        value("{a=1, attrs=[{type=1, value=0x2}, ...]} => {b=2}", 0),
        Pair(
            Box::new(Dict(vec![
                ("a", Scalar("1")),
                (
                    "attrs",
                    List(vec![Dict(vec![
                        ("type", Scalar("1")),
                        ("value", Scalar("0x2"))
                    ])])
                ),
            ])),
            Box::new(Dict(vec![("b", Scalar("2"))])),
        )
    );
    // items that are not `name=value` are dropped from a struct, as in Python
    assert_eq!(
        value("{x, a=>1, b==2, c=3}", 0),
        Dict(vec![("c", Scalar("3"))])
    );
    let long = format!("{{{}=1, {}=2}}", "x".repeat(40), "y".repeat(41));
    assert_eq!(value(&long, 0), Dict(vec![(&long[1..41], Scalar("1"))]));
    assert_eq!(value(" [] ", 0), List(vec![]));
    assert_eq!(value("{a=1} tail", 0), Text("{a=1} tail"));
}

#[test]
fn bracketed_hands_the_rest_to_the_general_grammar() {
    use V::*;
    for tok in [
        "{a=1 /* c */}",
        "{a=\"x",
        "x{",
        "{a=1",
        " {a=(}",
        "{a=\"é\"}",
    ] {
        assert_eq!(value(tok, 3), General(tok, 3), "{tok:?}");
    }
    // deeper than the well-formed language: the whole token, at its depth
    let deep = format!("{}{}", "[".repeat(7), "]".repeat(7));
    assert_eq!(value(&deep, 0), General(&deep, 0));
    // any closer ends a group, as in the regex: the rest is trailing text
    assert_eq!(value("[1, 2) ]", 0), Text("[1, 2) ]"));
}

#[test]
fn depth_limit_of_64() {
    use V::*;
    // at MAX_NESTING the value is still built; its fields are one deeper,
    // past the limit, and stay text
    assert_eq!(
        value("{a={b=1}}", MAX_NESTING),
        Dict(vec![("a", Text("{b=1}"))])
    );
    assert_eq!(value("{a=1}", MAX_NESTING + 1), Text("{a=1}"));
    // each `=>` of a chain is one level: 70 links end in text at the limit
    let chain = "{a=1} => ".repeat(70) + "{}";
    let mut v = &value(&chain, 0);
    let mut entries = vec![];
    while let Pair(entry, exit) = v {
        entries.push(&**entry);
        v = exit;
    }
    assert_eq!(entries.len() as isize, MAX_NESTING + 1);
    assert_eq!(entries[0], &Dict(vec![("a", Scalar("1"))]));
    assert_eq!(entries[MAX_NESTING as usize - 1], entries[0]);
    assert_eq!(entries[MAX_NESTING as usize], &Text("{a=1}"));
    let Text(rest) = v else { panic!("{v:?}") };
    assert!(rest.starts_with("{a=1} => ") && rest.ends_with("{}"));
}

#[test]
fn deep_input_is_bounded() {
    // thousands of openers: no recursion beyond the language's six levels
    let tok = "{".repeat(20_000);
    assert_eq!(value(&tok, 0), V::General(&tok, 0));
    let line = format!("1 1764435600.1 f({}) = 0", "(".repeat(20_000));
    assert_eq!(scan(&line), None);
}

/// The next of a fixed sequence (Knuth's MMIX LCG): derandomized cases.
fn lcg(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

/// seconds() reads what from_str reads, for its texts and on the edges of
/// its exact case (2^53, 19 digits, 10^22), with text after the number.
#[test]
fn seconds_are_from_str() {
    let mut texts: Vec<String> = [
        "0",
        "0.",
        "1.",
        "00.000",
        "0.000020",
        "1764435600.000026",
        "1764435600.1",
        "9007199254740991",
        "9007199254740992",
        "9007199254740993",
        "900719925474099.3",
        "9.007199254740993",
        "1234567890123456789",
        "12345678901234567890",
        "0.0000000000000000000001",
        "0.00000000000000000000001",
        "1.2.3",
        "59.999999",
        "1764435600.123456789",
        "1764435600.000026>",
        "3.25 ",
        "0000000000000000000000001.5",
    ]
    .map(str::to_owned)
    .to_vec();
    // a deterministic spread of digit counts and dot positions
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let digits = (x % 24) as usize + 1;
        let mut d = x;
        let mut t: String = (0..digits)
            .map(|_| {
                d = lcg(d);
                char::from(b'0' + ((d >> 33) % 10) as u8)
            })
            .collect();
        let dot = ((x >> 40) as usize) % (digits + 1);
        if dot < digits {
            t.insert(dot + 1, '.');
        }
        texts.push(t);
    }
    // usec()'s shapes (`d.dddddd`, ten digits and six) with random digits
    // and what follows them, and their near misses (a digit more or less)
    let mut y: u64 = 7;
    for _ in 0..20000 {
        y = lcg(y);
        let mut d = y;
        let mut digits = |k: usize| -> String {
            (0..k)
                .map(|_| {
                    d = lcg(d);
                    char::from(b'0' + ((d >> 33) % 10) as u8)
                })
                .collect()
        };
        let int = [1, 10, 9, 11, 2][(y >> 5) as usize % 5];
        let frac = [6, 6, 6, 5, 7][(y >> 9) as usize % 5];
        let after = ["", " ", ">", "1", ".", "x"][(y >> 13) as usize % 6];
        texts.push(format!("{}.{}{after}", digits(int), digits(frac)));
    }
    for t in &texts {
        let b = t.as_bytes();
        let mut e = b.iter().take_while(|c| c.is_ascii_digit()).count();
        if b.get(e) == Some(&b'.') {
            e += 1 + b[e + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        }
        let want: Option<f64> = t[..e].parse().ok();
        let (got_e, got) = seconds(t, 0);
        assert_eq!(got_e, e, "{t:?}");
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{t:?}");
        assert!(want.is_some(), "{t:?}");
    }
}

/// digit_run reads every run of digits, ended anywhere in or past a
/// word of eight, by any byte.
#[test]
fn digit_runs_end_where_a_byte_is_no_digit() {
    let mut x: u64 = 12345;
    for _ in 0..100000 {
        x = lcg(x);
        let len = (x >> 59) as usize + 1;
        let mut b: Vec<u8> = (0..len)
            .map(|k| b'0' + ((x >> (k * 2 % 50)) % 10) as u8)
            .collect();
        let cut = (x >> 8) as usize % (len + 1);
        if cut < len {
            b[cut] = (x >> 16) as u8;
        }
        let i = (x >> 24) as usize % 3;
        let mut s = vec![b'7'; i];
        s.extend_from_slice(&b);
        let e = i + s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let want = (e - i <= 19).then(|| {
            std::str::from_utf8(&s[i..e])
                .unwrap()
                .parse::<u64>()
                .unwrap_or(0)
        });
        assert_eq!(digit_run(&s, i), (e, want), "{s:?} from {i}");
    }
}

/// eight_digits reads every run of eight digits and refuses a run with any
/// other byte in it.
#[test]
fn eight_digits_at_once() {
    let mut x: u64 = 12345;
    for _ in 0..100000 {
        x = lcg(x);
        let n = (x >> 20) % 100_000_000;
        let w: [u8; 8] = format!("{n:08}").into_bytes().try_into().unwrap();
        assert_eq!(eight_digits(w), Some(n), "{n}");
        let mut bad = w;
        bad[(x >> 8) as usize % 8] = (x >> 12) as u8;
        let want = bad
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(&bad).unwrap().parse::<u64>().unwrap());
        assert_eq!(eight_digits(bad), want, "{bad:?}");
    }
}

/// usec reads its two shapes as from_str does, and takes no other: a byte
/// other than a digit (or the dot) at any place of them, a seventh digit
/// after the dot, or text that ends early.
#[test]
fn usec_is_from_str_on_its_shapes_only() {
    let mut x: u64 = 99;
    for _ in 0..20000 {
        x = lcg(x);
        let width = if x & 1 == 0 { 1 } else { 10 };
        let mut d = x;
        let mut t: Vec<u8> = (0..width + 7)
            .map(|_| {
                d = lcg(d);
                b'0' + ((d >> 33) % 10) as u8
            })
            .collect();
        t[width] = b'.';
        t.extend_from_slice(b" <");
        let text = std::str::from_utf8(&t).unwrap();
        let want: f64 = text[..width + 7].parse().unwrap();
        let got = usec(&t, 0, width);
        if want < 9.0e9 {
            assert_eq!(
                got.map(|(e, v)| (e, v.to_bits())),
                Some((width + 7, want.to_bits())),
                "{text:?}"
            );
        }
        // one byte changed: no digit where one was, the dot moved or gone
        let k = (x >> 20) as usize % (width + 7);
        for bad in [b'x', b'.', b'/', b':', 0x80] {
            let mut u = t.clone();
            if u[k] == bad {
                continue;
            }
            u[k] = bad;
            assert_eq!(
                usec(&u, 0, width),
                None,
                "{:?}",
                String::from_utf8_lossy(&u)
            );
        }
        // a seventh digit, or the text cut short
        let mut u = t[..width + 7].to_vec();
        u.push(b'5');
        assert_eq!(usec(&u, 0, width), None);
        for cut in 0..width + 7 {
            assert_eq!(usec(&t[..cut], 0, width), None);
        }
    }
}

/// The sixteen-at-a-time checks are is_ascii and a search for ESC, a byte
/// past ASCII or an ESC anywhere in texts of every length up to past three
/// steps.
#[test]
fn ascii_and_esc_checks_are_the_byte_loops() {
    for len in 0..56 {
        let t: Vec<u8> = (0..len).map(|k| b' ' + (k * 7 % 90) as u8).collect();
        assert!(crate::parse::lex::ascii(&t), "{len}");
        assert!(!crate::parse::lex::has_esc(&t), "{len}");
        for k in 0..len {
            for bad in [0x80u8, 0xC3, 0xFF] {
                let mut u = t.clone();
                u[k] = bad;
                assert!(!crate::parse::lex::ascii(&u), "{len} {k}");
                assert!(!crate::parse::lex::has_esc(&u), "{len} {k}");
                u[k] = 0x1b;
                assert!(crate::parse::lex::has_esc(&u), "{len} {k}");
            }
        }
    }
}

/// find_byte is memchr and find_byte3 memchr3: each byte of texts of every length to past three
/// steps, found first where it first is, or not found.
#[test]
fn find_byte_is_memchr() {
    for len in 0..56 {
        let t: Vec<u8> = (0..len).map(|k| b'a' + (k * 5 % 26) as u8).collect();
        for b in [b'a', b'e', b'z', b'<', 0u8] {
            assert_eq!(
                crate::parse::lex::find_byte(&t, b),
                memchr::memchr(b, &t),
                "{len} {b}"
            );
            for (x, y) in [(b'b', b'c'), (b'<', b'>'), (b'z', b'a')] {
                assert_eq!(
                    crate::parse::lex::find_byte3(&t, b, x, y),
                    memchr::memchr3(b, x, y, &t),
                    "{len} {b} {x} {y}"
                );
            }
        }
        for k in 0..len {
            let mut u = t.clone();
            u[k] = b'<';
            assert_eq!(crate::parse::lex::find_byte(&u, b'<'), Some(k));
            u[len - 1] = b'<';
            assert_eq!(crate::parse::lex::find_byte(&u, b'<'), Some(k.min(len - 1)));
        }
    }
}
