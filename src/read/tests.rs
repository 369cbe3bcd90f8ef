//! Opening, decompression, line splitting and layout against what inputs.py
//! does on the same bytes.  PROPTEST_RNG_SEED fixes the examples (.ci/run
//! sets it), PROPTEST_CASES scales them.

use super::layout::{self, Cleaned, Layout};
use super::lines::{LineReader, ReadInfo, decode};
use super::*;
use proptest::prelude::*;
use std::io::{Cursor, Read, Write};

type Out = (Vec<(u64, Option<String>)>, ReadInfo);

fn lines_of(r: impl Read, max_line: usize, chunk: usize) -> Out {
    let mut lr = LineReader::new(r, ReadInfo::new("t.log"), max_line).chunk_size(chunk);
    let mut out = Vec::new();
    while let Some(l) = lr.next_line().unwrap() {
        out.push(l);
    }
    (out, lr.info)
}

fn lines(data: &[u8], max_line: usize) -> Out {
    lines_of(Cursor::new(data.to_vec()), max_line, 1 << 20)
}

fn texts(out: &Out) -> Vec<Option<&str>> {
    out.0.iter().map(|(_, t)| t.as_deref()).collect()
}

/// A reader handing out its bytes in the given piece sizes (a pipe).
struct Pieces {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    k: usize,
}

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = if self.sizes.is_empty() {
            1
        } else {
            self.sizes[self.k % self.sizes.len()]
        };
        self.k += 1;
        let n = want.max(1).min(buf.len()).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn pieces(data: &[u8], sizes: Vec<usize>) -> Pieces {
    Pieces {
        data: data.to_vec(),
        at: 0,
        sizes,
        k: 0,
    }
}

fn read_all(mut r: Box<dyn Read>) -> Result<Vec<u8>, InputError> {
    let mut out = Vec::new();
    r.read_to_end(&mut out)
        .map_err(|e| input_error("t.log", &format!("read error: {}", why(&e))))?;
    Ok(out)
}

const TEXT: &[u8] = b"1 open(\"/dev/kfd\", O_RDWR) = 3\n2 close(3) = 0\n";

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = ::bzip2::write::BzEncoder::new(Vec::new(), ::bzip2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[cfg(feature = "zstd")]
fn zstd(data: &[u8]) -> Vec<u8> {
    ::zstd::stream::encode_all(data, 3).unwrap()
}

// --- compression ------------------------------------------------------------

#[test]
fn magic_bytes_name_the_compression() {
    assert_eq!(compression_of(b"\x1f\x8b\x08"), Some(Compression::Gzip));
    assert_eq!(compression_of(b"\xfd7zXZ\x00\x00"), Some(Compression::Xz));
    assert_eq!(compression_of(b"BZh9"), Some(Compression::Bzip2));
    assert_eq!(
        compression_of(b"\x28\xb5\x2f\xfd\x00"),
        Some(Compression::Zstd)
    );
    // a partial magic is no magic; a text starting "BZh" is bzip2, as in Python
    assert_eq!(compression_of(b"\xfd7zX"), None);
    assert_eq!(compression_of(b"\x1f"), None);
    assert_eq!(compression_of(b""), None);
    assert_eq!(compression_of(b"open("), None);
    assert_eq!(Compression::Zstd.name(), "zstd");
}

#[test]
fn plain_bytes_pass_through_with_their_head_replayed() {
    // read a byte at a time: the head is assembled over many reads
    let r = open_reader("t.log", pieces(TEXT, vec![1])).unwrap();
    assert_eq!(read_all(r).unwrap(), TEXT);
    let r = open_reader("t.log", pieces(b"ab", vec![1])).unwrap();
    assert_eq!(read_all(r).unwrap(), b"ab");
}

#[test]
fn gzip_decompresses_with_every_member() {
    let mut two = gzip(b"1 a\n");
    two.extend(gzip(b"2 b\n"));
    let r = open_reader("t.log", pieces(&two, vec![3, 1, 7])).unwrap();
    assert_eq!(read_all(r).unwrap(), b"1 a\n2 b\n");
}

#[test]
fn xz_decompresses() {
    let r = open_reader("t.log", Cursor::new(xz(TEXT))).unwrap();
    assert_eq!(read_all(r).unwrap(), TEXT);
}

#[test]
fn bzip2_decompresses() {
    let r = open_reader("t.log", Cursor::new(bzip2(TEXT))).unwrap();
    assert_eq!(read_all(r).unwrap(), TEXT);
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_decompresses() {
    let r = open_reader("t.log", pieces(&zstd(TEXT), vec![2])).unwrap();
    assert_eq!(read_all(r).unwrap(), TEXT);
}

#[test]
fn a_pipe_is_read_once_and_decompressed() {
    let (rd, mut wr) = std::io::pipe().unwrap();
    let data = gzip(&TEXT.repeat(1000));
    let writer = std::thread::spawn(move || wr.write_all(&data).unwrap());
    let out = lines_of(open_reader("-", rd).unwrap(), 1 << 20, 4096);
    writer.join().unwrap();
    assert_eq!(out.0.len(), 2000);
    assert_eq!(out.0[1999], (2000, Some("2 close(3) = 0".to_string())));
}

#[test]
fn corrupt_and_truncated_streams_are_one_line_input_errors() {
    let mut bad = gzip(TEXT);
    let n = bad.len();
    bad[12..n - 8].fill(0xff);
    let truncated = {
        let x = xz(&TEXT.repeat(100));
        x[..x.len() / 2].to_vec()
    };
    let cut = |c: Vec<u8>| c[..c.len() - 5].to_vec();
    let broken = [
        bad,
        truncated,
        bzip2(TEXT)[..20].to_vec(),
        cut(gzip(TEXT)),
        cut(bzip2(TEXT)),
    ];
    #[cfg(feature = "zstd")]
    let broken = [
        &broken[..],
        &[
            b"\x28\xb5\x2f\xfd\xff\xff".to_vec(),
            cut(zstd(&TEXT.repeat(50))),
        ],
    ]
    .concat();
    for data in broken {
        let r = open_reader("t.log", Cursor::new(data)).unwrap();
        let mut lr = LineReader::new(r, ReadInfo::new("t.log"), 1 << 20);
        let err = loop {
            match lr.next_line() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("a broken stream read to its end"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(err.starts_with("rocrtrace: t.log: read error: "), "{err}");
        assert!(!err.contains('\n') && err.len() < 260, "{err}");
    }
}

#[cfg(not(feature = "zstd"))]
#[test]
fn zstd_without_the_feature_is_a_one_line_input_error() {
    let err = open_reader("t.zst", Cursor::new(b"\x28\xb5\x2f\xfd\x04\x00".to_vec()))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "rocrtrace: t.zst: zstd-compressed, but this rocrtrace is built without zstd (decompress it first)"
    );
}

#[test]
fn a_missing_file_is_named_with_the_os_reason() {
    let err = open_path("/nonexistent/x.log").err().unwrap();
    assert_eq!(
        err.to_string(),
        "rocrtrace: /nonexistent/x.log: No such file or directory"
    );
    let err = open_path("/").err().unwrap();
    assert_eq!(err.to_string(), "rocrtrace: /: Is a directory");
}

#[cfg(feature = "zstd")]
#[test]
fn a_compressed_file_on_disk_opens_by_path() {
    let dir = std::env::temp_dir().join(format!("rocrtrace-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.log.zst");
    std::fs::write(&p, zstd(TEXT)).unwrap();
    let out = lines_of(open_path(p.to_str().unwrap()).unwrap(), 1 << 20, 16);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        texts(&out),
        vec![
            Some("1 open(\"/dev/kfd\", O_RDWR) = 3"),
            Some("2 close(3) = 0")
        ]
    );
}

// --- lines ----------------------------------------------------------------------

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

// --- layout -----------------------------------------------------------------------

/// A stand-in for inputs.py `_kind`: a syscall-looking line, after an
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

// --- detection, glob, merge, spill (the parts wired into open/trace) ----------

mod wired {
    use super::super::detect::{detect, kind, show};
    use super::super::merge::{Key, Maker, Spill, Stream, bounded_merge};
    use super::super::open::{self, layout_text};
    use super::super::pyglob::glob;
    use super::super::trace::parents_first;
    use super::super::{InputError, Layout};
    use crate::events::*;
    use std::collections::HashMap;
    use std::io::{self, Read, Write};

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
    fn show_escapes_as_unicode_escape() {
        assert_eq!(
            show("a\\b\t\u{7f}é\u{2003}\u{1F600}"),
            "a\\\\b\\t\\x7f\\xe9\\u2003\\U0001f600"
        );
        assert_eq!(show(&"x".repeat(100)).len(), 60);
    }

    #[test]
    fn layout_texts() {
        let l = |p: &str, q| Layout {
            first: 1,
            prefix: p.into(),
            quote: q,
        };
        assert_eq!(layout_text(&l("", false)), "");
        assert_eq!(layout_text(&l("    ", false)), "indented by 4 column(s)");
        assert_eq!(layout_text(&l("\t\t", false)), "indented by 2 tab(s)");
        assert_eq!(layout_text(&l("> > ", true)), "quoted with '> >'");
    }

    #[test]
    fn globs_as_python() {
        let d = std::env::temp_dir().join(format!("rocrtrace-glob-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        for n in ["tr.1", "tr.2", ".tr.3", "a[b", "x-y"] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
        let ds = d.to_str().unwrap();
        let g = |p: &str| {
            let mut v = glob(&format!("{ds}/{p}"));
            v.sort();
            v.into_iter()
                .map(|x| x[ds.len() + 1..].to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(g("tr.*"), ["tr.1", "tr.2"]);
        assert_eq!(g(".tr*"), [".tr.3"]);
        assert_eq!(g("tr.[!1]"), ["tr.2"]);
        assert_eq!(g("a[b"), ["a[b"]);
        assert_eq!(g("[w-z]-?"), ["x-y"]);
        assert_eq!(g("s*/"), ["sub/"]);
        assert_eq!(g("*"), ["a[b", "sub", "tr.1", "tr.2", "x-y"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn expansion_errors() {
        assert_eq!(
            open::expand("/nonexistent/x").unwrap_err().0,
            "rocrtrace: /nonexistent/x: no such file or directory"
        );
        assert_eq!(
            open::expand("/nonexistent/*.log").unwrap_err().0,
            "rocrtrace: /nonexistent/*.log: no files match"
        );
    }

    #[derive(Debug, PartialEq)]
    struct Item(u64);

    impl Spill for Item {
        fn spill(&self, w: &mut dyn Write) -> io::Result<()> {
            w.write_all(&self.0.to_le_bytes())
        }
        fn unspill(r: &mut dyn Read) -> io::Result<Option<Self>> {
            let mut b = [0; 8];
            match r.read_exact(&mut b) {
                Ok(()) => Ok(Some(Item(u64::from_le_bytes(b)))),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
                Err(e) => Err(e),
            }
        }
    }

    fn streams(n: usize) -> Vec<Vec<(Key, u64)>> {
        (0..n)
            .map(|i| {
                let mut last = f64::NEG_INFINITY;
                (0..(i * 7 % 5 + 1) as u64)
                    .map(|k| {
                        let t = ((i as u64 * 31 + k * 17) % 23) as f64;
                        last = last.max(t);
                        (
                            Key {
                                last,
                                idx: i as u32,
                                n: k + 1,
                            },
                            i as u64 * 100 + k,
                        )
                    })
                    .collect()
            })
            .collect()
    }

    fn makers(s: &[Vec<(Key, u64)>]) -> Vec<Maker<Item>> {
        s.iter()
            .map(|v| {
                let v = v.clone();
                Box::new(move || {
                    Box::new(v.into_iter().map(|(k, x)| Ok((k, Item(x))))) as Stream<Item>
                }) as Maker<Item>
            })
            .collect()
    }

    #[test]
    fn bounded_merge_is_one_flat_merge_whatever_max_open() {
        let s = streams(13);
        let mut flat: Vec<(Key, u64)> = s.concat();
        flat.sort_by_key(|a| a.0);
        for max_open in [2, 3, 5, 64] {
            let got: Vec<(Key, u64)> = bounded_merge(makers(&s), max_open)
                .map(|r| r.map(|(k, i)| (k, i.0)).unwrap())
                .collect();
            assert_eq!(got, flat, "max_open {max_open}");
        }
    }

    #[test]
    fn an_error_in_a_stream_ends_the_merge() {
        let mut m = makers(&streams(3));
        m.push(Box::new(|| {
            Box::new(std::iter::once(Err(InputError("rocrtrace: x: bad".into())))) as Stream<Item>
        }));
        let got: Vec<_> = bounded_merge(m, 2).collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap_err().0, "rocrtrace: x: bad");
    }

    #[test]
    fn events_come_back_from_a_spill_file_equal() {
        let h = Header {
            file: FileId(3),
            line: 7,
            end_line: Some(9),
            pid: Some(5),
            time: Some(1.5),
            ret: Some(-2),
            err: Some(errno("ENOENT")),
            text: Text::from("x"),
            stack: vec![Frame::new("libc.so".into())].into(),
            ..Default::default()
        };
        let evs = vec![
            Event::new(
                h.clone(),
                Kind::Ioctl(Box::new(Ioctl {
                    fd: 3,
                    path: Some(Text::from("/dev/kfd")),
                    request: Some(7),
                    dir: Some(3),
                    type_: Some(75),
                    nr: Some(32),
                    size: Some(40),
                    ioctl: Some("AMDKFD_IOC_SVM"),
                    arg: Some(Value::Struct(vec![(
                        "attrs".into(),
                        Value::List(vec![Value::List(vec![
                            Value::Int(2),
                            Value::UInt(u64::MAX),
                        ])]),
                    )])),
                    out: None,
                })),
            ),
            Event::new(
                h.clone(),
                Kind::FdSnapshot(FdSnapshot {
                    when: When::Exit,
                    fds: vec![(3, Text::from("/dev/kfd"))],
                }),
            ),
            Event::new(
                h,
                Kind::Exit(Exit {
                    whole: true,
                    status: Some(1),
                    signal: None,
                }),
            ),
        ];
        let mut buf = Vec::new();
        for e in &evs {
            e.spill(&mut buf).unwrap();
        }
        let mut r: &[u8] = &buf;
        let mut back = Vec::new();
        while let Some(e) = Event::unspill(&mut r).unwrap() {
            back.push(e);
        }
        assert_eq!(back, evs);
    }

    #[test]
    fn parents_come_first_and_a_cycle_stops() {
        let spec = |tid| open::FileSpec {
            path: format!("t.{tid}"),
            format: Format::Strace,
            tid: Some(tid),
            layout: Layout::default(),
            layout_text: String::new(),
            stream: None,
        };
        let files = vec![spec(10000), spec(9999), spec(5), spec(6)];
        let mut parent = HashMap::new();
        parent.insert(10000, (9999, false));
        parent.insert(5, (6, true));
        parent.insert(6, (5, true));
        assert_eq!(parents_first(&files, &parent), [1, 0, 3, 2]);
    }
}

/// -ff knowledge through a stand-in dialect (the strace parser is ported
/// elsewhere): `clone N thread|process` lines make Clone events.
mod ff {
    use super::super::open::FileSpec;
    use super::super::open::open_files;
    use super::super::trace::{Dialect, Dialects, Threads, ff_threads, parents_first};
    use crate::events::*;

    struct Clones(InputInfo);

    impl Dialect for Clones {
        fn feed(&mut self, lineno: u64, line: &str, out: &mut Vec<Event>) {
            self.0.lines += 1;
            let w: Vec<&str> = line.split(' ').collect();
            if let ["clone", n, how] = w[..] {
                let h = Header {
                    line: lineno,
                    ret: n.parse().ok(),
                    ..Default::default()
                };
                out.push(Event::new(
                    h,
                    Kind::Clone(Clone {
                        child: n.parse().ok(),
                        thread: how == "thread",
                        share_files: false,
                        flags: 0,
                    }),
                ));
                self.0.events += 1;
            }
        }
        fn finish(&mut self, _: &mut Vec<Event>) {}
        fn info(&mut self) -> &mut InputInfo {
            &mut self.0
        }
    }

    struct Fake;

    impl Dialects for Fake {
        fn parser(
            &self,
            _: &FileSpec,
            _: FileId,
            info: InputInfo,
            _: Option<&Threads>,
        ) -> Option<Box<dyn Dialect>> {
            Some(Box::new(Clones(info)))
        }
    }

    #[test]
    fn threads_find_their_process_and_children_follow_parents() {
        let d = std::env::temp_dir().join(format!("rocrtrace-ff-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let w = |n: &str, s: &str| std::fs::write(d.join(n), s).unwrap();
        // 100 makes thread 101 and process 9999; 101 makes thread 102;
        // 9999 makes thread 10000; 7 and 8 name each other (a cycle)
        w(
            "t.100",
            "close(3) = 0\nclone 101 thread\nclone 9999 process\n",
        );
        w("t.101", "clone 102 thread\n");
        w("t.102", "close(1) = 0\n");
        w("t.10000", "close(1) = 0\n");
        // (a first line that is no trace line would be a preamble)
        w(
            "t.9999",
            "close(0) = 0\nclone 10000 thread\nexecve(\"/x\") = 0 <pid changed to 9999 ...>\n",
        );
        w("t.7", "clone 8 thread\n");
        w("t.8", "clone 7 thread\n");
        let files = open_files(&format!("{}/t.*", d.display()), Some("strace")).unwrap();
        let names: Vec<u32> = files.iter().map(|f| f.tid.unwrap()).collect();
        assert_eq!(names, [100, 10000, 101, 102, 7, 8, 9999]);
        let t = ff_threads(&files, 1 << 20, &Fake).unwrap();
        let tg = |x: u32| t.tgid_of[&x];
        assert_eq!((tg(100), tg(101), tg(102)), (100, 100, 100));
        assert_eq!((tg(9999), tg(10000)), (9999, 9999));
        assert!(tg(7) == 7 || tg(7) == 8, "a cycle stops: {}", tg(7));
        assert_eq!(t.handover[&9999].0, 3);
        assert_eq!(t.parent[&9999], (100, false));
        let order: Vec<u32> = parents_first(&files, &t.parent)
            .into_iter()
            .map(|i| files[i].tid.unwrap())
            .collect();
        assert_eq!(order, [100, 9999, 10000, 101, 102, 8, 7]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// --jobs on one file: the chunked reading gives the sequential parse
/// whatever the cut points (src/read/chunked.rs).
mod chunked {
    use super::super::open::open_files;
    use super::super::trace::{Builtin, Trace};
    use crate::events::*;
    use proptest::prelude::*;

    /// Lines that meet every case a cut can fall into.
    const STRACE: &[&str] = &[
        "strace: Process 42 attached",
        "42 1764435600.100000 openat(AT_FDCWD, \"/dev/kfd\", O_RDWR) = 3</dev/kfd> <0.000010>",
        "42 1764435600.110000 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>",
        "43 1764435600.120000 close(5) = 0",
        " > /lib/libc.so.6(close+0x14) [0x1234]",
        " > /lib/libc.so.6(__libc_start_main+0x80) [0x29d90]",
        "42 1764435600.130000 <... ioctl resumed>) = 0",
        "43 1764435600.140000 read(3</dev/kfd>, \"abc\", 3) = 3",
        "44 1764435600.150000 write(1, \"x\", 1strace: Process 45 attached",
        ") = 1",
        "45 1764435600.160000 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD|CLONE_SIGHAND) = 46",
        "46 1764435600.170000 close(7) = -1 EBADF (Bad file descriptor)",
        "43 1764435600.180000 \x1b[31mclose(9) = 0\x1b[0m",
        "43 1764435600.190000 <... write resumed>) = 1",
        "garbage that parses as nothing",
        "",
        "42 1764435600.200000 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</dev/kfd>, 0x1000) = 0x7f0000",
        "42 1764435600.210000 exit_group(0) = ?",
        " > /lib/libc.so.6(_exit+0x1) [0x10]",
        "46 1764435600.220000 +++ exited with 0 +++",
        "42 1764435600.230000 +++ exited with 0 +++",
        "% time     seconds  usecs/call     calls    errors syscall",
        "100.00    0.000010           1        10           close",
    ];

    const PRELOAD: &[&str] = &[
        "# rocrtrace-log 2",
        "# pid=4242 ppid=1 exe=/bin/app page_size=4096 start=1764435600.0",
        "# fd-snapshot start",
        "# fd 3 /dev/kfd",
        "# fd 4 /dev/dri/renderD128",
        "# map 7f00-8f00 r-xp 0 /lib/libhsa.so build-id=abcd",
        "#+ 4242 1+ 4242 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, ",
        "4242 1764435600.15 close(8) = 0",
        "#+ 4242 2 size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
        "4242 1764435600.2 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x2000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
        "4243 1764435600.3 close(3) = 0",
        "# exit status=0",
    ];

    fn run(
        path: &str,
        jobs: usize,
        batch: usize,
        max_line: usize,
    ) -> (Vec<Event>, Vec<InputInfo>, u64) {
        let files = open_files(path, None).unwrap();
        let mut t = Trace::new(path, files, max_line, Builtin);
        t.jobs = jobs;
        t.batch_lines = batch;
        t.min_bytes = 0;
        let infos = t.infos.clone();
        let chunks = t.chunks.clone();
        let evs: Vec<Event> = t.events().map(|r| r.unwrap()).collect();
        let infos = infos.borrow().clone();
        (evs, infos, chunks.get())
    }

    fn write(name: &str, data: &[u8]) -> String {
        let d = std::env::temp_dir().join(format!("rocrtrace-chunked-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, data).unwrap();
        p.display().to_string()
    }

    fn same_at_every_cut(path: &str, max_line: usize) {
        let (a, ai, n1) = run(path, 1, 4096, max_line);
        assert_eq!(n1, 0, "--jobs 1 does not chunk");
        assert!(!a.is_empty());
        for batch in [1, 2, 3, 5, 7, 4096] {
            for jobs in [2, 3] {
                let (b, bi, n) = run(path, jobs, batch, max_line);
                assert!(n > 0, "the chunked path ran");
                assert_eq!(a, b, "{path}: batch {batch} jobs {jobs}");
                assert_eq!(ai, bi, "{path}: batch {batch} jobs {jobs}");
            }
        }
    }

    #[test]
    fn strace_cuts_anywhere() {
        let p = write("s.log", (STRACE.join("\n") + "\n").as_bytes());
        same_at_every_cut(&p, 1 << 20);
        // over-long lines (counted while reading) among the parser's
        // unparsed ones, in line order
        same_at_every_cut(&p, 60);
    }

    #[test]
    fn preload_cuts_anywhere() {
        let p = write("p.log", PRELOAD.join("\n").as_bytes());
        same_at_every_cut(&p, 1 << 20);
    }

    #[test]
    fn crlf_bad_bytes_and_a_preamble_cut_anywhere() {
        let mut data = b"some banner\r\nmore banner\r\n".to_vec();
        for l in STRACE {
            data.extend_from_slice(l.as_bytes());
            data.extend_from_slice(b"\xff\r\n");
        }
        data.extend_from_slice(b"42 1764435600.3 close(1) = 0");
        let p = write("c.log", &data);
        same_at_every_cut(&p, 1 << 20);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn any_lines_any_cuts(
            picks in prop::collection::vec(0usize..(STRACE.len() + PRELOAD.len()), 1..40),
            batch in 1usize..6,
            max_line in prop_oneof![Just(1usize << 20), Just(70)],
        ) {
            let all: Vec<&str> = STRACE.iter().chain(PRELOAD).copied().collect();
            let text: Vec<&str> = picks.iter().map(|&i| all[i]).collect();
            let p = write("any.log", (text.join("\n") + "\n").as_bytes());
            let seq = {
                let files = open_files(&p, Some("strace")).unwrap();
                let mut t = Trace::new(&p, files, max_line, Builtin);
                t.min_bytes = 0;
                let infos = t.infos.clone();
                let evs: Vec<Result<Event, _>> = t.events().collect();
                let i = infos.borrow().clone();
                (evs, i)
            };
            let files = open_files(&p, Some("strace")).unwrap();
            let mut t = Trace::new(&p, files, max_line, Builtin);
            t.jobs = 2;
            t.batch_lines = batch;
            t.min_bytes = 0;
            let infos = t.infos.clone();
            let evs: Vec<Result<Event, _>> = t.events().collect();
            let i = infos.borrow().clone();
            prop_assert_eq!(&seq.0, &evs);
            prop_assert_eq!(&seq.1, &i);
        }
    }
}
