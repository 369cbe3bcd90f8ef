//! Evidence by reference through the whole reading (read/evidence.rs):
//! each event's text read back from plain, compressed and pasted files
//! equals its line(s); a changed or gone input gives a note.

use crate::events::{Event, SPLIT_JOIN, Source};
use crate::parse::Builtin;
use crate::parse::detect::open_files;
use crate::parse::trace::Trace;
use crate::read::evidence::{Origin, fill, origins};
use std::fs;
use std::io::Write;

/// The byte order mark the reading drops before the first line.
const BOM: &[u8] = b"\xef\xbb\xbf";

const LONG: usize = 5000;

/// A double close whose creating call is a line longer than any cut.
fn lines() -> Vec<String> {
    let path = format!("/tmp/{}/x.bin", "d".repeat(LONG));
    vec![
        format!("100 1.000100 openat(AT_FDCWD, \"{path}\", O_RDONLY) = 3 <0.000010>"),
        "100 1.000200 close(3) = 0 <0.000001>".into(),
        "100 1.000300 ioctl(3, TCGETS <unfinished ...>".into(),
        "101 1.000350 close(9) = 0 <0.000001>".into(),
        format!(
            "100 1.000400 <... ioctl resumed>, {{{}}}) = 0",
            "c".repeat(LONG)
        ),
    ]
}

/// The events of `path` as a trace reads them.
fn events(path: &str) -> Vec<Event> {
    let files = open_files(path, None).unwrap();
    Trace::new(path, files, 1 << 20, Builtin)
        .events()
        .map(|r| std::rc::Rc::unwrap_or_clone(r.unwrap()))
        .collect()
}

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rocrtrace-evidence-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// Each event's text read back equals its line(s) in the file.
fn read_back_whole(bytes: &[u8], name: &str, want_lines: &[String]) {
    let d = dir(name);
    let p = d.join(name);
    fs::write(&p, bytes).unwrap();
    let path = p.to_str().unwrap();
    let mut evs = events(path);
    assert!(evs.iter().all(|e| e.h.src.by_reference()), "{name}");
    let origins = origins(&open_files(path, None).unwrap());
    fill(evs.iter_mut(), &origins);
    let open = evs.iter().find(|e| e.name == "openat").unwrap();
    assert_eq!(open.h.src.text(), want_lines[0].as_bytes(), "{name}");
    let split = evs.iter().find(|e| e.name == "ioctl").unwrap();
    let joined = format!("{}{SPLIT_JOIN}{}", want_lines[2], want_lines[4]);
    assert_eq!(split.h.src.text(), joined.as_bytes(), "{name}");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn plain_bom_crlf_and_compressed_inputs_read_back_whole() {
    let ls = lines();
    let plain = ls.join("\n") + "\n";
    read_back_whole(plain.as_bytes(), "plain.log", &ls);
    let bom = [BOM, plain.as_bytes()].concat();
    read_back_whole(&bom, "bom.log", &ls);
    read_back_whole(ls.join("\r\n").as_bytes(), "crlf.log", &ls);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(plain.as_bytes()).unwrap();
    read_back_whole(&gz.finish().unwrap(), "t.log.gz", &ls);
    #[cfg(feature = "zstd")]
    read_back_whole(
        &zstd::encode_all(plain.as_bytes(), 3).unwrap(),
        "t.log.zst",
        &ls,
    );
    // an indented paste: the text is the line without the indentation
    let indented: Vec<String> = ls.iter().map(|l| format!("    {l}")).collect();
    read_back_whole((indented.join("\n") + "\n").as_bytes(), "indented.log", &ls);
}

#[test]
fn a_changed_or_gone_input_gives_a_note_never_another_text() {
    let ls = lines();
    let d = dir("changed");
    let p = d.join("t.log");
    let path = p.to_str().unwrap().to_string();
    fs::write(&p, ls.join("\n") + "\n").unwrap();
    let evs = events(&path);
    let origins = origins(&open_files(&path, None).unwrap());
    let check = |why: &str| {
        let mut evs = evs.clone();
        fill(evs.iter_mut(), &origins);
        for e in &evs {
            let t = String::from_utf8_lossy(e.h.src.text()).into_owned();
            let want = format!("[line {} of {path} cannot be read back: {why}]", e.h.line);
            assert_eq!(t, want);
        }
    };
    // the same size, other bytes: the modification time tells
    let mut other = (ls.join("\n") + "\n").into_bytes();
    other[0] = b'9';
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(&p, &other).unwrap();
    check("it changed since it was read");
    // grown
    fs::write(&p, [&other[..], b"x\n"].concat()).unwrap();
    check("it changed since it was read");
    fs::remove_file(&p).unwrap();
    check("it is gone");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn an_input_read_once_keeps_the_text() {
    let o = [Origin {
        path: "-".into(),
        stamp: None,
    }];
    let mut e = Event::new(
        crate::events::Header {
            src: Source::kept(b"close(3) = 0"),
            ..Default::default()
        },
        crate::events::Kind::Exit(crate::events::Exit {
            whole: true,
            status: None,
            signal: None,
        }),
    );
    fill([&mut e], &o);
    assert_eq!(e.h.src.text(), b"close(3) = 0");
}
