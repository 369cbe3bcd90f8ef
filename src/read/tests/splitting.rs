//! Splitting bytes into decoded lines: newlines, CRLF, bad bytes, over-long lines.

use super::*;

#[test]
fn splits_on_newline_only() {
    let out = lines(b"a\x0bb\x0cc\n\nd\x1ce\n", 100);
    assert_eq!(
        texts(&out),
        vec![Some("a\x0bb\x0cc"), Some(""), Some("d\x1ce")]
    );
    assert_eq!(out.0.iter().map(|l| l.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(!out.1.ends_mid_line && !out.1.crlf);
}

#[test]
fn a_last_line_without_newline_is_flagged() {
    let out = lines(b"a\nb", 100);
    assert_eq!(texts(&out), vec![Some("a"), Some("b")]);
    assert!(out.1.ends_mid_line);
    assert!(!lines(b"a\nb\n", 100).1.ends_mid_line);
    let empty = lines(b"", 100);
    assert!(empty.0.is_empty() && !empty.1.ends_mid_line);
}

#[test]
fn crlf_loses_one_carriage_return_before_the_newline() {
    let out = lines(b"a\r\nb\r\r\nc\rd\ne\r", 100);
    assert_eq!(
        texts(&out),
        vec![Some("a"), Some("b\r"), Some("c\rd"), Some("e")]
    );
    assert!(out.1.crlf && out.1.ends_mid_line);
    // a lone \r inside a line is no CRLF
    assert!(!lines(b"c\rd\n", 100).1.crlf);
}

#[test]
fn bytes_that_are_not_utf8_are_written_as_hex_escapes() {
    assert_eq!(decode(b"a\xffb\xc3\xa9\xe2\x82"), "a\\xffb\u{e9}\\xe2\\x82");
    // an encoded surrogate is not UTF-8 for Python either
    assert_eq!(decode(b"\xed\xa0\x80"), "\\xed\\xa0\\x80");
    let out = lines(b"\xff\n", 100);
    assert_eq!(texts(&out), vec![Some("\\xff")]);
}

#[test]
fn over_long_lines_are_counted_and_sampled() {
    let long = "x".repeat(1000);
    let data = format!("a\n{long}\nb\n{long}");
    let out = lines(data.as_bytes(), 999);
    assert_eq!(texts(&out), vec![Some("a"), None, Some("b"), None]);
    assert_eq!(
        out.0.iter().map(|l| l.0).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(out.1.too_long, 2);
    assert_eq!(out.1.unparsed, 2);
    assert_eq!(
        out.1.unparsed_samples,
        vec![(2, "x".repeat(200)), (4, "x".repeat(200))]
    );
    assert!(out.1.ends_mid_line);
    // max_line itself is kept; the \r of a CRLF does not count
    let out = lines(format!("{long}\r\n").as_bytes(), 1000);
    assert_eq!(texts(&out), vec![Some(long.as_str())]);
}

#[test]
fn an_over_long_line_is_skipped_without_holding_it() {
    let big = vec![b'y'; 5 << 20];
    let mut data = b"a\n".to_vec();
    data.extend(&big);
    data.extend(b"\r\nb\n");
    let mut lr = LineReader::new(Cursor::new(data), ReadInfo::new("t"), 1000).chunk_size(4096);
    let mut got = Vec::new();
    while let Some(l) = lr.next_line().unwrap() {
        got.push(l);
    }
    assert_eq!(
        got,
        vec![(1, Some("a".into())), (2, None), (3, Some("b".into()))]
    );
    assert!(lr.info.crlf && !lr.info.ends_mid_line);
    // a skipped last line without newline ends mid-line
    let out = lines_of(Cursor::new(big), 1000, 4096);
    assert_eq!(texts(&out), vec![None]);
    assert!(out.1.ends_mid_line);
}

#[test]
fn escapes_count_four_characters_towards_max_line() {
    // 3 bytes, 12 characters once decoded, as Python measures it
    let out = lines(b"\xff\xff\xff\n\xc3\xa9\xc3\xa9\n", 11);
    assert_eq!(texts(&out), vec![None, Some("\u{e9}\u{e9}")]);
    assert_eq!(
        out.1.unparsed_samples,
        vec![(1, "\\xff\\xff\\xff".to_string())]
    );
}

#[test]
fn numbering_starts_after_start_line_and_samples_stop_at_twenty() {
    let data = "zz\n".repeat(30);
    let mut lr = LineReader::new(Cursor::new(data), ReadInfo::new("t"), 1).start_line(100);
    let got: Vec<_> = lr.by_ref().map(Result::unwrap).collect();
    assert_eq!(got.first(), Some(&(101, None)));
    assert_eq!(got.last(), Some(&(130, None)));
    assert_eq!(lr.info.unparsed, 30);
    assert_eq!(lr.info.unparsed_samples.len(), 20);
    assert_eq!(lr.info.unparsed_samples[19], (120, "zz".to_string()));
}

#[test]
fn a_read_error_names_the_file() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(5))
        }
    }
    let mut lr = LineReader::new(Broken, ReadInfo::new("x.log"), 10);
    assert_eq!(
        lr.next_line().unwrap_err().to_string(),
        "rocrtrace: x.log: read error: Input/output error"
    );
}

/// Bytes from a few symbols that meet every case: newline, CR, multi-byte
/// UTF-8 (whole and cut), bytes that are not UTF-8.
fn bytes_strategy() -> impl Strategy<Value = Vec<u8>> {
    let sym = prop_oneof![
        Just(&b"a"[..]),
        Just(&b"\n"[..]),
        Just(&b"\r"[..]),
        Just(&b"\r\n"[..]),
        Just(&b"\xc3\xa9"[..]),
        Just(&b"\xe2"[..]),
        Just(&b"\xff"[..]),
        Just(&b"bbbbbbbbbb"[..]),
    ];
    prop::collection::vec(sym, 0..80).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn split_then_join_gives_the_input_back(
        parts in prop::collection::vec("[a-z é\t]{0,12}", 0..20),
        end in any::<bool>(),
    ) {
        let mut input = parts.join("\n");
        if end && !input.is_empty() {
            input.push('\n');
        }
        let out = lines(input.as_bytes(), 1 << 20);
        let got: Vec<String> = out.0.iter().map(|(_, t)| t.clone().unwrap()).collect();
        let mut back = got.join("\n");
        if !out.1.ends_mid_line && !got.is_empty() {
            back.push('\n');
        }
        prop_assert_eq!(back, input);
    }

    #[test]
    fn any_chunking_gives_the_same_lines(
        data in bytes_strategy(),
        sizes in prop::collection::vec(1usize..9, 0..6),
        chunk in 1usize..12,
        max_line in 0usize..14,
    ) {
        let whole = lines(&data, max_line);
        let split = lines_of(pieces(&data, sizes), max_line, chunk);
        prop_assert_eq!(&split, &whole);
        // and what is kept is each line decoded, less one \r before \n
        let mut raw: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        if data.last().is_none_or(|&b| b == b'\n') {
            raw.pop();
        }
        prop_assert_eq!(whole.0.len(), raw.len());
        for ((_, t), r) in whole.0.iter().zip(raw) {
            let r = r.strip_suffix(b"\r").unwrap_or(r);
            let d = decode(r);
            let long = d.chars().count() > max_line;
            prop_assert_eq!(t.clone(), (!long).then_some(d));
        }
    }

    #[test]
    fn long_lines_over_the_sample_size_chunk_the_same(
        n in 780usize..840,
        max_line in prop_oneof![Just(5usize), Just(799), Just(800), Just(801)],
        chunk in 1usize..300,
    ) {
        let mut data = "é".repeat(n).into_bytes();
        data.extend(b"\r\nok\n");
        prop_assert_eq!(lines_of(Cursor::new(data.clone()), max_line, chunk), lines(&data, max_line));
    }
}
