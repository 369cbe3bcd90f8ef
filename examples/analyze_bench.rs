//! The whole engine on one trace, without Python: read, parse, replay and
//! collect the findings, as `rocrtrace analyze` does before it reports.
//! For instruction counts of the core alone (valgrind --tool=callgrind):
//!
//!     cargo build --release --example analyze_bench
//!     valgrind --tool=callgrind target/release/examples/analyze_bench LOG [JOBS]

use _engine::analyze::{Options, run};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: analyze_bench LOG [JOBS]");
    let jobs = args
        .next()
        .map_or(1, |j| j.parse().expect("JOBS is a number"));
    let o = Options {
        jobs,
        ..Options::default()
    };
    match run(&path, &o, None) {
        Ok(out) => println!("{} findings", out.findings.len()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
