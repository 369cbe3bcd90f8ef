//! The bounded merge of many streams, and events spilled and read back.

use super::super::merge::{Key, Maker, Spill, Stream, bounded_merge};
use super::*;
use crate::events::*;
use std::io;

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
            Box::new(move || Box::new(v.into_iter().map(|(k, x)| Ok((k, Item(x))))) as Stream<Item>)
                as Maker<Item>
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
fn a_merge_of_many_holds_few_files_open() {
    // 600 streams, 4 at a time: round after round of spill files, each
    // closed once written (all of them used to stay open: 150 here)
    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
    }
    let s = streams(600);
    let base = open_fds();
    let most = std::rc::Rc::new(std::cell::Cell::new(0));
    let ms: Vec<Maker<Item>> = makers(&s)
        .into_iter()
        .map(|m| {
            let most = most.clone();
            Box::new(move || {
                most.set(most.get().max(open_fds()));
                m()
            }) as Maker<Item>
        })
        .collect();
    let mut flat: Vec<(Key, u64)> = s.concat();
    flat.sort_by_key(|a| a.0);
    let got: Vec<(Key, u64)> = bounded_merge(ms, 4)
        .map(|r| r.map(|(k, i)| (k, i.0)).unwrap())
        .collect();
    assert_eq!(got, flat);
    // (other tests run beside this one in the process: some slack)
    assert!(
        most.get() <= base + 4 + 16,
        "{} open, {base} before",
        most.get()
    );
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
        injected: true,
        ..Default::default()
    };
    let evs = vec![
        Event::new(
            h.clone(),
            Kind::Ioctl(Ioctl {
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
            }),
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
