//! The tinygrad line shapes on examples whose events are written out; the
//! fixtures and generated lines read back to what the generator wrote are
//! tests/test_engine_read.py.

use super::*;

fn run(lines: &[&str]) -> (Vec<Event>, InputInfo) {
    let mut p = Parser::new(FileId(0), InputInfo::new(Text::from("t.log")));
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        p.feed(i as u64 + 1, l, &mut out);
    }
    p.finish(&mut out);
    (out.into_iter().map(Rc::unwrap_or_clone).collect(), p.info)
}

fn io(ev: &Event) -> &Ioctl {
    match &ev.kind {
        Kind::Ioctl(i) => i,
        _ => panic!("not an ioctl"),
    }
}

#[test]
fn named_line_splits_inputs_and_outputs() {
    let (evs, info) = run(&[
        "  12.500 ms +   0.020 ms : 0 = AMDKFD_IOC_ALLOC_MEMORY_OF_GPU va_addr:0x1000 size:0x2000 handle:0x7 mmap_offset:0x9 gpu_id:0x1",
    ]);
    assert_eq!(evs.len(), 1);
    let e = &evs[0];
    assert_eq!(e.h.time, Some(0.0125));
    assert_eq!(e.h.dur, Some(0.00002));
    let i = io(e);
    assert_eq!(i.ioctl, Some("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU"));
    assert_eq!(i.arg.as_ref().unwrap().get("gpu_id"), Some(&Value::Int(1)));
    assert_eq!(i.arg.as_ref().unwrap().get("handle"), None);
    assert_eq!(i.out.as_ref().unwrap().get("handle"), Some(&Value::Int(7)));
    assert_eq!(i.fd, -1);
    assert_eq!(
        (info.events, info.unparsed, info.decoded_structs),
        (1, 0, true)
    );
}

#[test]
fn svm_collects_its_attributes_and_marks_a_short_list() {
    let (evs, _) = run(&[
        "1.0 ms +0.1 ms : 0 = AMDKFD_IOC_SVM start_addr:0x1000 size:0x1000 op:0x1 nattr:0x2",
        "0: KFD_IOCTL_SVM_ATTR_ACCESS: 0x3",
        "1: 5: 17",
        "1.0 ms +0.1 ms : 0 = AMDKFD_IOC_SVM start_addr:0x1000 size:0x1000 op:0x0 nattr:0x2",
        "0: KFD_IOCTL_SVM_ATTR_ACCESS: 012",
    ]);
    assert_eq!(evs.len(), 2);
    let a = io(&evs[0]);
    let want = Value::List(vec![
        Value::List(vec![Value::Int(2), Value::Int(3)]),
        Value::List(vec![Value::Int(5), Value::Int(17)]),
    ]);
    assert_eq!(a.arg.as_ref().unwrap().get("attrs"), Some(&want));
    assert_eq!(a.out.as_ref().unwrap().get("attrs"), Some(&want));
    assert_eq!(a.size, Some(40));
    assert!(!evs[0].h.partial);
    // "012" is no attr value (int(x, 0) refuses it): the call lost its attrs
    assert!(evs[1].h.partial);
    assert_eq!(io(&evs[1]).out, None);
}

#[test]
fn generic_lines_and_bounds() {
    let (evs, info) = run(&[
        "ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd",
        "  1.5 ms +  0.5 ms : ioctl idir=2 size=8 itype=100 nr=0 fd=5 ret=-1 /dev/dri/renderD128",
        "ioctl idir=4 size=24 itype=75 nr=32 fd=3 ret=0",
        "ioctl idir=3 size=24 itype=75 nr=32 fd=99999999999 ret=0",
        "hello from the program",
    ]);
    assert_eq!(evs.len(), 2);
    assert_eq!(io(&evs[0]).ioctl, Some("AMDKFD_IOC_SVM"));
    assert_eq!(io(&evs[0]).request, Some(kfd::ioc(3, 75, 32, 24)));
    assert_eq!(evs[1].h.err.as_deref(), Some("EUNKNOWN"));
    assert_eq!(evs[1].h.time, Some(0.0015));
    assert_eq!(
        (info.unparsed, info.lines, info.has_decorations),
        (3, 5, true)
    );
    assert_eq!(info.unparsed_samples[2].0, 5);
}

#[test]
fn unicode_digits_read_as_python_reads_them() {
    let (evs, _) = run(&["ioctl idir=٣ size=24 itype=75 nr=32 fd=3 ret=0"]);
    assert_eq!(io(&evs[0]).dir, Some(3));
}

#[test]
fn unknown_names_keep_the_logs_name() {
    let (evs, _) = run(&[
        "1 ms +1 ms : 0 = AMDKFD_IOC_NEW_THING x:0x1 y:<c_ulong_Array_2 object at 0x7f> z:oops",
    ]);
    let i = io(&evs[0]);
    assert_eq!(i.ioctl, Some("AMDKFD_IOC_NEW_THING"));
    assert_eq!((i.request, i.nr, i.dir), (None, None, None));
    assert_eq!(
        i.arg,
        Some(Value::Struct(vec![("x".into(), Value::Int(1))]))
    );
}
