//! Decompression by magic bytes, and opening paths and pipes.

use super::*;

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
fn zstd_decompresses_with_every_frame() {
    let r = open_reader("t.log", pieces(&zstd(TEXT), vec![2])).unwrap();
    assert_eq!(read_all(r).unwrap(), TEXT);
    // `zstd -T` and `cat a.zst b.zst` write several frames; a skippable
    // frame (magic 0x184D2A5?) between them carries no text
    let mut frames = zstd(b"1 a\n");
    frames.extend(b"\x50\x2a\x4d\x18\x03\x00\x00\x00xyz");
    frames.extend(zstd(b"2 b\n"));
    let r = open_reader("t.log", pieces(&frames, vec![3, 1, 7])).unwrap();
    assert_eq!(read_all(r).unwrap(), b"1 a\n2 b\n");
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
