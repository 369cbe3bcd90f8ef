use super::*;

fn call<'a>(name: &'a str, args: &[&'a str], ret: Option<i128>) -> Call<'a> {
    let mut c = Call::new(
        Cow::Borrowed(name),
        args.iter().map(|a| Cow::Borrowed(a.as_bytes())).collect(),
    );
    c.ret = ret;
    c
}

#[test]
fn open_dup_close() {
    let mut c = call(
        "openat",
        &["AT_FDCWD", "\"/dev/kfd\"", "O_RDWR|O_CLOEXEC"],
        Some(3),
    );
    let n = normalize(&mut c);
    let Kind::FdCreate(f) = n.kind else { panic!() };
    assert_eq!(f.fds, vec![3]);
    assert_eq!(f.paths, vec![Some(Text::from("/dev/kfd"))]);
    assert!(f.cloexec);
    let mut c = call("dup2", &["3", "10"], Some(10));
    let Kind::FdCreate(f) = normalize(&mut c).kind else {
        panic!()
    };
    assert_eq!((f.src_fd, f.new_fd, f.replace), (Some(3), Some(10), true));
    let mut c = call("close", &["3</dev/kfd>"], Some(0));
    let Kind::Close(f) = normalize(&mut c).kind else {
        panic!()
    };
    assert_eq!((f.fd, f.path), (3, Some(Text::from("/dev/kfd"))));
}

#[test]
fn ioctl_requests_and_svm() {
    let mut c = call(
        "ioctl",
        &[
            "3</dev/kfd>",
            "AMDKFD_IOC_SVM",
            "{start_addr=0x1000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=2, attrs=[{type=KFD_IOCTL_SVM_ATTR_SET_FLAGS, value=0x1}, {type=1, value=2}]}",
        ],
        Some(0),
    );
    let Kind::Ioctl(i) = normalize(&mut c).kind else {
        panic!()
    };
    assert_eq!(i.ioctl, Some("AMDKFD_IOC_SVM"));
    assert_eq!(i.size, Some(40));
    assert_eq!((i.type_, i.nr), (Some(0x4b), Some(0x20)));
    let attrs = i.arg.as_ref().unwrap().get("attrs").unwrap();
    assert_eq!(attrs.as_list().unwrap().len(), 2);
    let mut c = call("ioctl", &["5", "TCGETS", "0x7ffc"], Some(0));
    let Kind::Ioctl(i) = normalize(&mut c).kind else {
        panic!()
    };
    assert_eq!(i.ioctl, Some("TCGETS"));
    assert_eq!(i.request, None);
}

fn intent_of(name: &str, args: &[&str]) -> (Box<Intent>, bool) {
    let mut c = call(name, args, Some(0));
    let n = normalize(&mut c);
    let Kind::Intent(i) = n.kind else { panic!() };
    (i, c.malformed)
}

#[test]
fn intent_handles_read_the_same_in_struct_notation() {
    // SPEC 3.2: an HSA handle type as its value or as {handle=…}
    let plain = intent_of(
        "hsa_amd_vmem_handle_create",
        &["0x5613c0", "0x400000", "0", "0", "[0x7a010]"],
    );
    let structs = intent_of(
        "hsa_amd_vmem_handle_create",
        &[
            "{handle=0x5613c0}",
            "0x400000",
            "MEMORY_TYPE_NONE",
            "0",
            "[{handle=0x7a010}]",
        ],
    );
    assert!(!plain.1 && !structs.1);
    assert_eq!(plain.0.args, structs.0.args);
    assert_eq!(plain.0.outs, structs.0.outs);
    let plain = intent_of(
        "hsa_amd_memory_lock_to_pool",
        &[
            "0x7f00", "0x1000", "[0x1111]", "1", "0x2222", "0", "[0x7f80]",
        ],
    );
    let structs = intent_of(
        "hsa_amd_memory_lock_to_pool",
        &[
            "0x7f00",
            "0x1000",
            "[{handle=0x1111}]",
            "1",
            "{handle=0x2222}",
            "0",
            "[0x7f80]",
        ],
    );
    assert!(!plain.1 && !structs.1);
    assert_eq!(plain.0.args, structs.0.args);
    assert_eq!(plain.0.outs, structs.0.outs);
    let (r, bad) = intent_of("hsa_amd_vmem_handle_release", &["{handle=0x7a010}"]);
    assert!(!bad);
    assert_eq!(
        r.args,
        vec![(Cow::Borrowed("memory_handle"), Value::Int(0x7a010))]
    );
}

#[test]
fn clone_flags_of_forms() {
    let c = call(
        "clone",
        &["child_stack=NULL", "flags=CLONE_VM|CLONE_THREAD|SIGCHLD"],
        None,
    );
    assert_eq!(clone_flags(&c), 0x100 | 0x10000 | 17);
    let c = call(
        "clone3",
        &["{flags=CLONE_VM|CLONE_FILES, exit_signal=SIGCHLD}", "88"],
        None,
    );
    assert_eq!(clone_flags(&c), 0x500);
    let c = call("clone3", &["0x7ffc", "88"], None);
    assert_eq!(clone_flags(&c), THREAD_GUESS);
}

/// flags_of (the cache) gives parse_flags' value for each token and table,
/// also for one token asked of two tables, again and again, and for tokens
/// that share slots (more tokens than the cache has).
#[test]
fn flag_cache_is_parse_flags() {
    let tables = [
        None,
        Some(tables::MMAP_NAMES),
        Some(tables::CLOSE_RANGE_NAMES),
    ];
    let mut toks: Vec<String> = [
        "PROT_READ|PROT_WRITE",
        "MAP_PRIVATE|MAP_ANONYMOUS",
        "CLOSE_RANGE_CLOEXEC",
        "MAP_SHARED|0x100",
        "1<<3|PROT_EXEC",
        "NOT_A_FLAG",
        "PROT_READ /* comment */",
        "",
    ]
    .map(str::to_owned)
    .to_vec();
    toks.extend((0..200).map(|i| format!("MAP_FIXED|{i:#x}")));
    toks.push("PROT_READ|".repeat(40));
    for round in 0..3 {
        for t in &toks {
            for table in tables {
                assert_eq!(
                    flags_of(t.as_bytes(), table),
                    parse_flags(t.as_bytes(), table),
                    "{t:?} round {round}"
                );
            }
        }
    }
}

/// fd_text (the decoration cache, and fd_of's bare-number path) gives what
/// parse_fd gives for each token: decorations shared by several numbers,
/// numbers with no value, comments inside and after a decoration, `<<`,
/// `(deleted)`, signs, undecorated and empty tokens, again and again and
/// with more decorations than the cache has slots.
#[test]
fn fd_text_is_parse_fd() {
    let decos = [
        "</dev/kfd<char 238:0>>",
        "</dev/dri/renderD128<char 226:128>>",
        "</tmp/a b (deleted)>",
        "</tmp/x>(deleted)",
        "</tmp/c/*d*/e>",
        "</tmp/f> /* 0x10 */",
        "<<3",
        "<",
        "</no/end",
        "<anon_inode:[dmabuf]>",
        "<socket:[1234]>",
    ];
    let heads = [
        "3",
        "12",
        "-1",
        "0",
        "-0",
        "00",
        "007",
        "-",
        "",
        "999999999999999999",
        "-999999999999999999",
        "1000000000000000000",
        "99999999999999999999999999999999999999999",
        "0x10",
        "3a",
    ];
    let mut toks: Vec<String> = Vec::new();
    for d in decos {
        for h in heads {
            toks.push(format!("{h}{d}"));
        }
    }
    toks.extend(heads.iter().map(|h| (*h).to_owned()));
    toks.extend(
        [
            "3 /* fd */",
            "-1 /* x */",
            "/*3*/",
            "12<",
            "AT_FDCWD</work>",
        ]
        .map(str::to_owned),
    );
    toks.extend((0..200).map(|i| format!("{}</sys/nodes/{}/properties>", i % 7, i % 90)));
    for round in 0..3 {
        for t in &toks {
            let (fd, path) = parse_fd(&values::strip_comment(t.as_bytes()).0);
            let want = if comment_start(t.as_bytes()).is_some() {
                (fd, text(path))
            } else {
                let (fd, path) = parse_fd(t.as_bytes());
                (fd, text(path))
            };
            assert_eq!(fd_text(Some(t.as_bytes())), want, "{t:?} round {round}");
        }
    }
}
