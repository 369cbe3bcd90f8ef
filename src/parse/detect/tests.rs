//! Detection: each line to its dialect's sniff, a file to the dialect that
//! claims it.

use super::*;
use crate::parse::kind;

#[test]
fn kinds_of_lines() {
    assert_eq!(kind("# rocrtrace-log 1"), Some(Format::Preload));
    assert_eq!(
        kind("  1.0 ms +  0.5 ms : 0 = AMDKFD_IOC_X"),
        Some(Format::Tinygrad)
    );
    assert_eq!(kind("ioctl idir=3"), Some(Format::Tinygrad));
    assert_eq!(kind("100   close(3) = 0"), Some(Format::Strace));
    assert_eq!(
        kind("[pid  7] 12:00:01.5 <... read resumed>) = 1"),
        Some(Format::Strace)
    );
    assert_eq!(kind("+++ exited with 0 +++"), Some(Format::Strace));
    assert_eq!(kind("\x1b[1mclose(3) = 0"), Some(Format::Strace));
    assert_eq!(kind("# close(3) = 0"), None);
    assert_eq!(kind("hello world"), None);
    assert_eq!(kind("strace: Process 5 attached"), Some(Format::Strace));
}

#[test]
fn detection_needs_a_third_of_the_lines() {
    let lay = Layout::default();
    let ok = ["close(3) = 0", "junk", "junk"];
    assert_eq!(detect("f", &ok, &lay), Ok(Format::Strace));
    let bad = ["close(3) = 0", "junk", "junk", "junk"];
    assert_eq!(
        detect("f", &bad, &lay).unwrap_err().0,
        "rocrtrace: f: not an strace, preload or tinygrad log (first line: close(3) = 0)"
    );
    assert_eq!(
        detect::<&str>("f", &["", " "], &lay).unwrap_err().0,
        "rocrtrace: f: empty (no lines)"
    );
}

#[test]
fn a_summary_table_alone_is_a_strace_log() {
    // `strace -c -U calls,name -o log` writes only the table
    let lay = Layout::default();
    let table = [
        "    calls syscall",
        "--------- ----------------",
        "        1 read",
        "        8 mmap",
        "--------- ----------------",
        "       36 total",
    ];
    assert_eq!(detect("f", &table, &lay), Ok(Format::Strace));
    // rows without their header are no strace lines
    assert!(detect("f", &table[2..], &lay).is_err());
}

#[test]
fn show_escapes_as_unicode_escape() {
    assert_eq!(
        show("a\\b\t\u{7f}é\u{2003}\u{1F600}"),
        "a\\\\b\\t\\x7f\\xe9\\u2003\\U0001f600"
    );
    assert_eq!(show(&"x".repeat(100)).len(), 60);
}
