//! The typed decoders against the general way: every fixture log parsed
//! with them and without them gives the same events and counts, and every
//! one-byte mutation of each struct the catalogue describes (and of each
//! argument the fixtures hold) that [`decode`] still answers is answered as
//! the general way answers it.

use super::*;
use crate::events::{Event, FileId, InputInfo, Kind, Text};
use crate::parse::fixtures::fixture_logs;
use crate::parse::strace::Parser;
use crate::parse::syscalls::{general_arg, scan_layout};
use std::path::Path;
use std::rc::Rc;

fn lines_of(p: &Path) -> Vec<String> {
    String::from_utf8_lossy(&std::fs::read(p).unwrap())
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The events and counts of `lines` through one parser.
fn parse(lines: &[String]) -> (Vec<Event>, InputInfo) {
    let mut p = Parser::new(
        FileId(0),
        InputInfo::new(Text::from("t.log")),
        None,
        None,
        None,
    );
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        p.feed_text(i as u64 + 1, l, &mut out);
    }
    p.finish(&mut out);
    (out.into_iter().map(Rc::unwrap_or_clone).collect(), p.info)
}

#[test]
fn fixtures_parse_alike_with_and_without_the_typed_decoders() {
    let before = taken();
    let mut ioctls = 0;
    for p in fixture_logs() {
        let lines = lines_of(&p);
        let typed = parse(&lines);
        let general = general_only(|| parse(&lines));
        let what = p.display();
        assert_eq!(typed.0.len(), general.0.len(), "{what}: events");
        for (k, (t, g)) in typed.0.iter().zip(&general.0).enumerate() {
            assert_eq!(t, g, "{what}: event {k}");
            ioctls += usize::from(matches!(t.kind, Kind::Ioctl(_)));
        }
        assert_eq!(typed.1, general.1, "{what}: counts");
    }
    // the comparison is worth something only if the decoders ran
    let n = taken() - before;
    assert!(n > 1000 && ioctls > 1000, "{n} of {ioctls} ioctls decoded");
}

/// The argument tokens of the fixtures' decoded ioctls, with the struct
/// each is of: the text from the third argument to the `)` before ` = `.
fn fixture_arguments() -> Vec<(&'static LogStruct, String)> {
    let mut out = Vec::new();
    for p in fixture_logs() {
        for l in lines_of(&p) {
            let Some(k) = l.find(" ioctl(") else { continue };
            let rest = &l[k + 7..];
            let Some(b) = rest.find(", {") else { continue };
            let Some(e) = rest.rfind(") = ") else {
                continue;
            };
            let Some(a) = rest[..b].rfind(", ") else {
                continue;
            };
            let name = &rest[a + 2..b];
            let Some(ls) = kfd::LOG_STRUCTS.iter().find(|x| x.name == name) else {
                continue;
            };
            if b + 2 < e {
                out.push((ls, rest[b + 2..e].to_owned()));
            }
        }
    }
    out
}

/// One argument of each struct, every member written the ways the capture
/// library writes it (and the ways it does not: a decorated fd anywhere,
/// flags with a number, a negative number, a bare name no table knows).
fn made_arguments() -> Vec<(&'static LogStruct, String)> {
    const SCALARS: &[&str] = &[
        "0x1a2b",
        "7",
        "-1",
        "KFD_IOCTL_SVM_OP_SET_ATTR",
        "KFD_IOC_ALLOC_MEM_FLAGS_VRAM|KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE|0x100",
        "9</dmabuf:>",
        "3</dev/dri/renderD128<char 226:128>>",
        "NULL",
        "NO_SUCH_NAME",
        "0xffffffffffffffff",
    ];
    let half = |members: &[LogField], k: usize| -> String {
        let body: Vec<String> = members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let v = SCALARS[(i + k) % SCALARS.len()];
                let v = match m.shape {
                    Shape::Scalar => v.to_owned(),
                    Shape::List => format!("[{v}, 0x2]"),
                    Shape::Structs(labels) => {
                        let e: Vec<String> = labels
                            .iter()
                            .enumerate()
                            .map(|(j, l)| format!("{l}={}", SCALARS[(j + 3) % 5]))
                            .collect();
                        format!("[{{{}}}, {{{}}}]", e.join(", "), e.join(", "))
                    }
                };
                format!("{}={v}", m.label)
            })
            .collect();
        format!("{{{}}}", body.join(", "))
    };
    let mut out = Vec::new();
    for ls in kfd::LOG_STRUCTS {
        for k in 0..SCALARS.len() {
            let mut t = half(ls.log_in, k);
            out.push((ls, t.clone()));
            if !ls.log_out.is_empty() {
                t.push_str(" => ");
                t.push_str(&half(ls.log_out, k + 1));
                out.push((ls, t));
            }
        }
    }
    out
}

/// `tok` and every text one byte away from it (a byte dropped, or one of
/// the bytes that matter to either way put in before it).
fn mutations(tok: &str) -> Vec<String> {
    const PUT: &[u8] = b" ,=|<>.{}[]-x0_\"/*(A";
    let b = tok.as_bytes();
    let mut out = vec![tok.to_owned()];
    for i in 0..=b.len() {
        if i < b.len() {
            let mut m = b.to_vec();
            m.remove(i);
            out.push(String::from_utf8_lossy(&m).into_owned());
        }
        for &c in PUT {
            let mut m = b.to_vec();
            m.insert(i, c);
            out.push(String::from_utf8_lossy(&m).into_owned());
        }
    }
    out
}

#[test]
fn mutated_arguments_decode_as_the_general_way() {
    let fixtures = fixture_arguments();
    assert!(fixtures.len() > 500, "{} fixture arguments", fixtures.len());
    // the fixtures' arguments repeat: one of each text
    let mut seen = std::collections::HashSet::new();
    let (mut answered, mut compared) = (0u64, 0u64);
    for (ls, tok) in made_arguments().into_iter().chain(fixtures) {
        if !seen.insert((ls.name, tok.clone())) {
            continue;
        }
        for m in mutations(&tok) {
            compared += 1;
            let Some((a, o)) = decode(ls, m.as_bytes()) else {
                continue;
            };
            answered += 1;
            assert_eq!(
                (Some(a), o, false),
                general_arg(m.as_bytes()),
                "{}: {m}",
                ls.name
            );
        }
    }
    eprintln!("{answered} of {compared} texts answered by the typed decoders");
    assert!(
        answered > 10_000 && answered * 4 < compared,
        "{answered} of {compared}"
    );
}

#[test]
fn the_usual_shapes_are_answered() {
    let svm = kfd::log_struct(kfd::SVM.0, kfd::SVM.1, "AMDKFD_IOC_SVM").unwrap();
    let tok = "{start_addr=0x7f3a005c6000, size=0x11000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=2, \
               attrs=[{type=KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, value=0x1a2b}, \
               {type=KFD_IOCTL_SVM_ATTR_SET_FLAGS, value=KFD_IOCTL_SVM_FLAG_COHERENT}]}";
    let (a, o) = decode(svm, tok.as_bytes()).unwrap();
    assert_eq!(o, None);
    assert_eq!(a.get("size"), Some(&Value::Int(0x11000)));
    let pair = |t: i64, v: i64| Value::Pair(Box::new((Value::Int(t), Value::Int(v))));
    assert_eq!(
        a.get("attrs"),
        Some(&Value::List(vec![pair(3, 0x1a2b), pair(5, 2)]))
    );
    let export = kfd::log_struct(
        kfd::EXPORT_DMABUF.0,
        kfd::EXPORT_DMABUF.1,
        "AMDKFD_IOC_EXPORT_DMABUF",
    )
    .unwrap();
    let tok = "{handle=0x1a2b00000001, flags=O_CLOEXEC} => {dmabuf_fd=9</dmabuf:>}";
    let (a, o) = decode(export, tok.as_bytes()).unwrap();
    assert_eq!(a.get("flags"), Some(&Value::Int(0o2000000)));
    assert_eq!(o.unwrap().get("dmabuf_fd"), Some(&Value::Int(9)));
    // what the general way keeps as text, or trims, is left to it
    for tok in [
        "{handle=0x1, flags=NO_SUCH_FLAG}",
        "{handle=0x1,flags=O_CLOEXEC}",
        "{flags=O_CLOEXEC, handle=0x1}",
        "{handle=\"x\", flags=0}",
        "{handle=0x1, flags=O_CLOEXEC} => {dmabuf_fd=9</dmabuf:>}x",
    ] {
        assert_eq!(decode(export, tok.as_bytes()), None, "{tok}");
    }
    // off: nothing is answered
    assert!(general_only(|| layout(Some(kfd::SVM.0), Some(kfd::SVM.1), Some(svm.name))).is_none());
    assert!(layout(Some(kfd::SVM.0), Some(kfd::SVM.1), Some(svm.name)).is_some());
}

#[test]
fn the_catalogue_names_are_bare_names() {
    // (Cursor::scalar looks a name up whole, as values::bare_name does)
    for &(n, _) in kfd::CONSTANT_NAMES {
        let b = n.as_bytes();
        assert!(b[0].is_ascii_alphabetic() || b[0] == b'_', "{n}");
        assert!(
            b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_'),
            "{n}"
        );
        assert_ne!(n, "NULL");
    }
}

#[test]
fn each_struct_names_its_members_once() {
    for ls in kfd::LOG_STRUCTS {
        for half in [ls.log_in, ls.log_out] {
            for (i, m) in half.iter().enumerate() {
                assert!(
                    half[..i].iter().all(|x| x.label != m.label),
                    "{}: {} twice",
                    ls.name,
                    m.label
                );
                if let Shape::Structs(labels) = m.shape {
                    for (j, l) in labels.iter().enumerate() {
                        assert!(
                            !labels[..j].contains(l),
                            "{}.{}: {l} twice",
                            ls.name,
                            m.label
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn remembered_constants_are_the_catalogues() {
    // every name of the catalogue, names one byte off (last, first, one
    // longer, one shorter) and the lengths around the kept ones, three
    // rounds in turn so that names evict each other from shared slots:
    // each answer is the catalogue's
    let mut names: Vec<Vec<u8>> = Vec::new();
    for &(n, _) in kfd::CONSTANT_NAMES {
        let b = n.as_bytes().to_vec();
        let mut last = b.clone();
        *last.last_mut().unwrap() ^= 1;
        let mut first = b.clone();
        first[0] ^= 0x20;
        let mut longer = b.clone();
        longer.push(b'X');
        names.extend([b.clone(), last, first, longer, b[..b.len() - 1].to_vec()]);
    }
    for len in [7, 8, 9, 47, 48, 49] {
        names.push(vec![b'A'; len]);
    }
    for _ in 0..3 {
        for n in &names {
            assert_eq!(
                constant(n),
                kfd::constant_bytes(n),
                "{}",
                String::from_utf8_lossy(n)
            );
        }
    }
}

/// The fd an ioctl of `ls` is made on in a line of the tests: one of the
/// device its request is of.
fn fd_of(ls: &LogStruct) -> &'static str {
    match ls.type_ {
        kfd::TYPE_KFD => "3</dev/kfd>",
        kfd::TYPE_DRM if ls.name.contains("AMDXDNA") => "5</dev/accel/accel0>",
        kfd::TYPE_DRM => "4</dev/dri/renderD128<char 226:128>>",
        _ => "6</dev/dma_heap/system>",
    }
}

#[test]
fn structs_read_while_scanning_scan_and_parse_as_the_general_walk() {
    // every argument of the tests above and each text one byte away from
    // it, as the third argument of an ioctl line: the scan that reads the
    // struct ahead (tokens::typed_arg) takes the line exactly as the
    // general walk takes it (the same arguments and result, or the same
    // refusal), and the lines give the same events and counts
    use crate::parse::tokens::scan_line;
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    let (mut ahead, mut compared) = (0u64, 0u64);
    for (ls, tok) in made_arguments().into_iter().chain(fixture_arguments()) {
        if !seen.insert((ls.name, tok.clone())) {
            continue;
        }
        let fd = fd_of(ls);
        // (asked twice: the second answer is the one remembered; and none
        // with the typed decoders off)
        for _ in 0..2 {
            let layout = scan_layout(fd.as_bytes(), ls.name.as_bytes());
            assert_eq!(layout.map(|l| l.name), Some(ls.name));
            assert!(general_only(|| scan_layout(fd.as_bytes(), ls.name.as_bytes())).is_none());
        }
        // (one text in sixteen of them, a different sixteenth of each argument's)
        let pick = seen.len() % 16;
        for (k, m) in mutations(&tok).into_iter().enumerate() {
            if k % 16 != pick {
                continue;
            }
            // (a space or another argument after it, now and then)
            let tail = [") = 0 <0.000010>", " ) = 0", ", 0x1) = 0 <0.000002>"][k % 3];
            let line = format!("5000  1764435600.000013 ioctl({fd}, {}, {m}{tail}", ls.name);
            KEPT.with(|k| k.borrow_mut().value = None);
            let typed = scan_line(&line);
            let general = general_only(|| scan_line(&line));
            assert_eq!(typed, general, "{line}");
            compared += 1;
            ahead += u64::from(KEPT.with(|k| {
                let k = k.borrow();
                k.value.is_some() && typed.as_ref().is_some_and(|t| *t.args[2] == k.text[..])
            }));
            lines.push(line);
        }
    }
    eprintln!("{ahead} of {compared} lines read their struct while scanning");
    assert!(
        ahead > 5_000 && ahead * 2 < compared,
        "{ahead} of {compared}"
    );
    let typed = parse(&lines);
    let general = general_only(|| parse(&lines));
    assert_eq!(typed.0.len(), general.0.len(), "events");
    for (t, g) in typed.0.iter().zip(&general.0) {
        assert_eq!(t, g);
    }
    assert_eq!(typed.1, general.1, "counts");
}

#[test]
fn a_value_read_ahead_answers_only_its_own_text() {
    let svm = kfd::log_struct(kfd::SVM.0, kfd::SVM.1, "AMDKFD_IOC_SVM").unwrap();
    let get = kfd::log_struct(kfd::TYPE_KFD, 0x21, "AMDKFD_IOC_SET_XNACK_MODE").unwrap();
    let one = "{start_addr=0x1000, size=0x2000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}";
    let two = "{start_addr=0x1000, size=0x3000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}";
    let line = format!("f({one}) = 0");
    let a = line.find('{').unwrap();
    let e = decode_ahead(svm, line.as_bytes(), a).unwrap();
    assert_eq!(&line[e..e + 1], ")");
    // another text, or the same text of another struct: read again
    let fresh = |ls, t: &str| general_only(|| decode_at(ls, t.as_bytes(), 0));
    assert_eq!(
        decode(svm, two.as_bytes()).unwrap().0,
        fresh(svm, two).unwrap().1
    );
    assert_eq!(decode(get, one.as_bytes()), None);
    // its own text: the value kept, once
    assert_eq!(
        decode(svm, one.as_bytes()).unwrap().0,
        fresh(svm, one).unwrap().1
    );
    assert!(KEPT.with(|k| k.borrow().value.is_none()));
    assert_eq!(
        decode(svm, one.as_bytes()).unwrap().0,
        fresh(svm, one).unwrap().1
    );
    // a struct followed by more than its end: not read ahead past it
    let more = format!("{one} x");
    let e = decode_ahead(svm, more.as_bytes(), 0).unwrap();
    assert_eq!(e, one.len());
}
