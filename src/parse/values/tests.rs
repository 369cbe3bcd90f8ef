use super::*;

fn args(s: &str) -> (Vec<String>, Option<usize>) {
    let (a, c) = scan_args(s.as_bytes(), 0);
    (
        a.iter()
            .map(|x| String::from_utf8_lossy(x).into_owned())
            .collect(),
        c,
    )
}

#[test]
fn scan_args_like_python() {
    assert_eq!(
        args("3, \"a,b\", {x=1, y=[2, 3]}) = 0"),
        (
            vec!["3".into(), "\"a,b\"".into(), "{x=1, y=[2, 3]}".into()],
            Some(25)
        )
    );
    assert_eq!(args(")"), (vec![], Some(0)));
    assert_eq!(args(" , )"), (vec!["".into(), "".into()], Some(3)));
    assert_eq!(args("1, 2"), (vec!["1".into(), "2".into()], None));
    // a char literal holds a comma
    assert_eq!(args("',', 2)").0, vec!["','".to_string(), "2".into()]);
    // a shift is no decoration
    assert_eq!(args("1<<16, 2)").0, vec!["1<<16".to_string(), "2".into()]);
}

#[test]
fn ints_like_python() {
    // the digit sums are std's parse, at and past every width
    for d in [
        "0",
        "7",
        "0x",
        "0xfffffffffffffff",
        "0x10000000000000000",
        "0xFFff",
        "9999999999999999999",
        "18446744073709551616",
        "0777777777777777777777",
        "01777777777777777777777",
        "0x7fffffffffffffffffffffffffffffff",
        "0x80000000000000000000000000000000",
        "170141183460469231731687303715884105727",
        "170141183460469231731687303715884105728",
        "089",
        "-0x10",
        "-012",
        "+1",
        "1_0",
    ] {
        let t = d.trim_start_matches('-');
        let want = if let Some(h) = t.strip_prefix("0x") {
            (h.len() <= 64 && h.bytes().all(|c| c.is_ascii_hexdigit()))
                .then(|| i128::from_str_radix(h, 16).ok())
                .flatten()
        } else if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
            if t.len() > 1 && t.starts_with('0') {
                i128::from_str_radix(t, 8).or_else(|_| t.parse()).ok()
            } else {
                t.parse().ok()
            }
        } else {
            None
        };
        let want = want.map(|v: i128| if d.starts_with('-') { -v } else { v });
        assert_eq!(parse_int(d.as_bytes()), want, "{d}");
    }
    assert_eq!(parse_int(b"0644"), Some(0o644));
    assert_eq!(parse_int(b"09"), Some(9));
    assert_eq!(parse_int(b"-0x10"), Some(-16));
    assert_eq!(parse_int(b"0x"), None);
    assert_eq!(int0(b"1_000"), Some(1000));
    assert_eq!(int0(b"022"), None);
    assert_eq!(int0(b"00"), Some(0));
    assert_eq!(int0(b"0x_1f"), Some(31));
}

#[test]
fn fds_and_paths() {
    assert_eq!(
        parse_fd(b"3</dev/kfd<char 238:0>>"),
        (Some(3), Some(b"/dev/kfd".to_vec()))
    );
    assert_eq!(
        parse_fd(b"6</x>(deleted)"),
        (Some(6), Some(b"/x (deleted)".to_vec()))
    );
    assert_eq!(parse_fd(b"1<<16"), (None, None));
    assert_eq!(unescape(b"a\\x41\\101\\n\\q\\xff"), b"aAA\nq\\xff".to_vec());
}

#[test]
fn field_names_are_sorted() {
    assert!(
        FIELD_NAMES
            .windows(2)
            .all(|w| (w[0].len(), w[0]) < (w[1].len(), w[1]))
    );
    for n in FIELD_NAMES {
        assert!(matches!(field_name(n.as_bytes()), Cow::Borrowed(x) if x == *n));
    }
    assert!(matches!(field_name(b"start_addr"), Cow::Borrowed(_)));
    assert_eq!(field_name(b"zz_other"), "zz_other");
    assert_eq!(field_name(b"sizf"), "sizf");
    assert_eq!(field_name(b""), "");
}

#[test]
fn values() {
    let v = parse_value(
        b"{start_addr=0x1000, size=4096, op=KFD_IOCTL_SVM_OP_SET_ATTR, attrs=[{type=1, value=2}]}",
    );
    assert_eq!(v.get("size"), Some(&Value::Int(4096)));
    assert_eq!(v.get("op"), Some(&Value::Int(0)));
    assert_eq!(
        parse_value(b"A_UNKNOWN|1"),
        Value::Raw("A_UNKNOWN|1".into())
    );
    assert_eq!(parse_value(b"1<<4|1"), Value::Int(17));
    assert_eq!(
        parse_value(b"[1] => [2]"),
        Value::Pair(Box::new((
            Value::List(vec![Value::Int(1)]),
            Value::List(vec![Value::Int(2)])
        )))
    );
}
// Cases the retired Python parser's fast-path tests held, with the
// values it gave for them.
#[test]
fn scan_args_of_decorations_and_strings() {
    let (a, c) = args(r#"3</a<b>>, _IOC(1, 2), "x\"y"..., {a=[1, 2]}) = 0"#);
    assert_eq!(a, ["3</a<b>>", "_IOC(1, 2)", r#""x\"y"..."#, "{a=[1, 2]}"]);
    assert_eq!(c, Some(43));
    // a stray closer is text of its argument
    assert_eq!(
        args("a, ]b, c)"),
        (vec!["a".into(), "]b".into(), "c".into()], Some(8))
    );
    // "->" inside a decoration: a socket's peer, not its end
    assert_eq!(
        args("<TCP:[1->2]>, 3)"),
        (vec!["<TCP:[1->2]>".into(), "3".into()], Some(15))
    );
    assert_eq!(
        args("<x->1, y>, 3)"),
        (vec!["<x->1, y>".into(), "3".into()], Some(12))
    );
}

#[test]
fn split_top_and_matching() {
    let top = |s: &str| -> Vec<String> {
        split_top(s.as_bytes())
            .iter()
            .map(|x| String::from_utf8_lossy(x).into_owned())
            .collect()
    };
    assert_eq!(top("a=[1, 2], b={c=3}"), ["a=[1, 2]", "b={c=3}"]);
    assert_eq!(top(r#"x, "a,b", {1, 2}"#), ["x", r#""a,b""#, "{1, 2}"]);
    assert!(top("").is_empty());
    assert_eq!(matching(b"{a=[1}", 0), None);
    assert_eq!(matching(b"[a, (b]", 0), None);
    assert_eq!(matching(b"{a={b}}x", 0), Some(6));
}

#[test]
fn strip_name_takes_short_word_names() {
    let name = |s: &'static str| strip_name(s.as_bytes());
    assert_eq!(name("ab=1"), (Some(&b"ab"[..]), &b"1"[..]));
    assert_eq!(name("a=>1"), (None, &b"a=>1"[..]));
    assert_eq!(name("=1"), (None, &b"=1"[..]));
    assert_eq!(name("a b=1"), (None, &b"a b=1"[..]));
    let forty = format!("{}=1", "x".repeat(40));
    assert_eq!(
        strip_name(forty.as_bytes()).0,
        Some(&forty.as_bytes()[..40])
    );
}

#[test]
fn futex_op_shifts() {
    // FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_GT, 1) as strace 6.1 prints it
    const NAMES: Names = &[("FUTEX_OP_SET", 0), ("FUTEX_OP_CMP_GT", 4)];
    let op = b"FUTEX_OP_SET<<28|0<<12|FUTEX_OP_CMP_GT<<24|0x1";
    assert_eq!(parse_flags(op, Some(NAMES)), Some((4 << 24) | 1));
    assert_eq!(parse_flags(op, None), None); // names it does not know
    assert_eq!(parse_flags(b"1<<200", None), None);
}

/// Tokens around the edges of [`plain_int`]'s shape: every width of hex and
/// decimal digits up to past its limits, leading zeros, signs, cases,
/// whitespace, a comment, a name, a decoration.
fn number_like_tokens() -> Vec<String> {
    let mut toks: Vec<String> = [
        "",
        "0",
        "00",
        "0x",
        "0X1",
        "x1",
        "-0",
        "-1",
        "+1",
        " 1",
        "1 ",
        "0755",
        "0x0",
        "0xg",
        "0x1g",
        "1a",
        "NULL",
        "3</dev/kfd>",
        "1 /* one */",
        "0x1 /* x */",
        "1<<16",
        "[1]",
        "{a=1}",
        "\"1\"",
        "9223372036854775807",
        "18446744073709551615",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in 1..=20 {
        toks.push(format!("0x{}", "f".repeat(n)));
        toks.push(format!("0x{}", "A".repeat(n)));
        toks.push(format!("0x{}", "1".repeat(n)));
        toks.push("9".repeat(n));
        toks.push(format!("1{}", "0".repeat(n)));
        toks.push(format!("-{}", "7".repeat(n)));
        toks.push(format!("0{}", "1".repeat(n)));
    }
    toks
}

#[test]
fn plain_int_is_the_long_way() {
    // where the short reading answers, the long one answers the same, and
    // it answers for the usual numbers
    for t in number_like_tokens() {
        let b = t.as_bytes();
        if let Some(v) = plain_int(b) {
            assert_eq!(v, value_long(strip(b), 0), "{t:?}");
            assert_eq!(v, parse(b, 0), "{t:?}");
        }
    }
    for t in [
        "0",
        "1",
        "4096",
        "0x7f3a005c6010",
        "0xFFFF",
        "999999999999999999",
    ] {
        assert!(plain_int(t.as_bytes()).is_some(), "{t:?}");
    }
}

#[test]
fn plain_list_is_the_general_way() {
    let mut toks: Vec<String> = [
        "[]",
        "[ ]",
        "[0x1]",
        "[0x5612a0]",
        "[1, 2]",
        "[1,2]",
        "[1,  2]",
        "[1, 2,]",
        "[, 1]",
        "[1, ...]",
        "[...]",
        "[ 1]",
        "[1 ]",
        "[[1]]",
        "[1] ",
        " [1]",
        "[0x1, 0755]",
        "[NULL]",
        "[3</dev/kfd>]",
        "[1 /* x */]",
        "[-1]",
        "[1, -2]",
        "{1}",
        "[1}",
        "[1, [2]]",
        "[1<<2]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for t in number_like_tokens() {
        toks.push(format!("[{t}]"));
        toks.push(format!("[{t}, 0x1]"));
        toks.push(format!("[1, {t}]"));
    }
    for t in toks {
        if let Some(v) = plain_list(t.as_bytes()) {
            assert_eq!(v, parse(t.as_bytes(), 0), "{t:?}");
            assert_eq!(v, quick::quick(t.as_bytes()).unwrap(), "{t:?}");
        }
    }
    assert!(plain_list(b"[0x5612a0]").is_some());
    assert!(plain_list(b"[1, 0x2, 3]").is_some());
}

#[test]
fn plain_numbers_are_every_readers() {
    // parse_int and int0 answer as their long ways where the usual number
    // (signed or not) answers, and a value reads it as parse_int does
    for t in number_like_tokens() {
        let b = t.as_bytes();
        if let Some(v) = plain_signed(b) {
            assert_eq!(Some(v), parse_int_long(b), "{t:?}");
            assert_eq!(Some(v), int0_long(b), "{t:?}");
        }
        assert_eq!(parse_int(b), parse_int_long(b), "{t:?}");
        assert_eq!(int0(b), int0_long(b), "{t:?}");
    }
    assert_eq!(plain_signed(b"-1"), Some(-1));
    assert_eq!(plain_signed(b"-0x10"), Some(-16));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..Default::default() })]
    #[test]
    fn plain_int_agrees(t in "(0x)?[0-9a-fA-Fx -]{0,20}") {
        if let Some(v) = plain_int(t.as_bytes()) {
            proptest::prop_assert_eq!(v, value_long(strip(t.as_bytes()), 0));
        }
    }

    #[test]
    fn plain_signed_agrees(t in "-?(0x)?[0-9a-fA-Fx_ +-]{0,20}") {
        let b = t.as_bytes();
        proptest::prop_assert_eq!(parse_int(b), parse_int_long(b));
        proptest::prop_assert_eq!(int0(b), int0_long(b));
    }

    #[test]
    fn plain_list_agrees(t in r"\[((0x)?[0-9a-fA-F]{0,17}[, ]{0,3}){0,4}\]") {
        if let Some(v) = plain_list(t.as_bytes()) {
            proptest::prop_assert_eq!(v, parse(t.as_bytes(), 0));
        }
    }
}
