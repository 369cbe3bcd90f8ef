//! A file's layout: preamble, indentation and quoting, found and removed.

use super::*;

/// A stand-in for `detect::kind`: a syscall-looking line, after an
/// optional pid and time.
fn is_trace(line: &str) -> bool {
    let l = line.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ' ');
    let name: String = l.chars().take_while(|c| c.is_ascii_lowercase()).collect();
    !name.is_empty() && l[name.len()..].starts_with('(') && !line.starts_with([' ', '\t', '>'])
}

#[test]
fn common_prefix_of_the_least_and_greatest_line() {
    assert_eq!(layout::common_prefix(&["  ab", "  ac", "  a"]), "  a");
    assert_eq!(layout::common_prefix::<&str>(&[]), "");
    assert_eq!(layout::common_prefix(&["é1", "é2"]), "é");
}

#[test]
fn relative_times_are_right_aligned_in_six_columns() {
    assert!(layout::relative_times(&[
        "     0.000123 open(",
        "    12.5 close(",
        "x"
    ]));
    assert!(!layout::relative_times(&["  0.1 open("]));
    assert!(!layout::relative_times(&[
        "     0.000123 open(",
        "  1 close("
    ]));
    assert!(!layout::relative_times(&["open(", "x"]));
    // a number not followed by a space is no timestamp
    assert!(layout::relative_times(&["     0.000123 open(", "  1x"]));
}

#[test]
fn find_prefix_takes_indentation_and_quoting() {
    assert_eq!(
        layout::find_prefix(&["    open(", "", "    close("]),
        ("    ".to_string(), false)
    );
    assert_eq!(
        layout::find_prefix(&["\topen(", "\tclose("]),
        ("\t".to_string(), false)
    );
    assert_eq!(
        layout::find_prefix(&["> open(", ">", "> > x", "> close("]),
        ("> ".to_string(), true)
    );
    assert_eq!(
        layout::find_prefix(&["     0.000123 open(", "     0.000200 close("]),
        (String::new(), false)
    );
    assert_eq!(
        layout::find_prefix(&["open(", "  x"]),
        (String::new(), false)
    );
    assert_eq!(layout::find_prefix(&["", " \x1c"]), (String::new(), false));
}

#[test]
fn layout_finds_the_preamble_and_the_prefix() {
    let lines = [
        "$ strace -o t.log ./a",
        "# a comment",
        "1 open(\"a\") = 3",
        "1 close(3) = 0",
    ];
    let lay = layout::layout(&lines, &is_trace);
    assert_eq!(
        lay,
        Layout {
            first: 3,
            prefix: String::new(),
            quote: false
        }
    );
    let lines = [
        "Here is my trace:",
        "",
        "    1 open(\"a\") = 3",
        "    1 close(3) = 0",
    ];
    let lay = layout::layout(&lines, &is_trace);
    assert_eq!(
        lay,
        Layout {
            first: 3,
            prefix: "    ".into(),
            quote: false
        }
    );
    let lines = ["> 1 open(\"a\") = 3", ">", "> 1 close(3) = 0"];
    let lay = layout::layout(&lines, &is_trace);
    assert_eq!(
        lay,
        Layout {
            first: 1,
            prefix: "> ".into(),
            quote: true
        }
    );
    assert_eq!(lay.unprefix(">"), "");
    // as in Python: "> " is stripped first, a blank rest stays
    assert_eq!(lay.unprefix(">  "), " ");
    assert_eq!(lay.unprefix("> >"), ">");
    assert_eq!(lay.unprefix("x"), "x");
    assert!(layout::layout(&["1 open(", "1 close("], &is_trace).plain());
}

#[test]
fn layout_of_bytes_drops_an_unfinished_last_line_and_crs() {
    let head = b"note\r\n  1 open(\"a\") = 3\r\n  1 clo";
    let lay = layout::layout_of(head, false, &is_trace);
    assert_eq!(
        lay,
        Layout {
            first: 2,
            prefix: "  ".into(),
            quote: false
        }
    );
    let lay = layout::layout_of(b"note\n1 open(", true, &is_trace);
    assert_eq!(lay.first, 2);
    assert_eq!(
        layout::layout_of(b"note\n1 open(", false, &is_trace).first,
        1
    );
}

#[test]
fn clean_drops_the_preamble_and_the_prefix() {
    let lay = Layout {
        first: 3,
        prefix: "  ".into(),
        quote: false,
    };
    let mut lr = LineReader::new(
        Cursor::new(format!("hdr\n{}\n  1 open(\n x\n", "h".repeat(50))),
        ReadInfo::new("t"),
        10,
    );
    let mut got = Vec::new();
    while let Some((n, l)) = lr.next_line().unwrap() {
        got.push(lay.clean(&mut lr.info, n, l));
    }
    assert_eq!(
        got,
        vec![
            Cleaned::Preamble,
            Cleaned::Preamble,
            Cleaned::Line(Some("1 open(".into())),
            Cleaned::Line(Some(" x".into()))
        ]
    );
    // the over-long preamble line is no longer unparsed
    assert_eq!(
        (
            lr.info.preamble,
            lr.info.lines,
            lr.info.too_long,
            lr.info.unparsed
        ),
        (2, 2, 0, 0)
    );
    assert!(lr.info.unparsed_samples.is_empty());
}
