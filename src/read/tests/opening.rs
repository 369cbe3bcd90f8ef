//! A TRACE argument's files: globs, expansion errors, layout texts.

use super::super::open::{self, layout_text};
use super::super::pyglob::glob;
use super::*;

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
