//! Text -> events.  dialect lists the dialects (each with its sniff beside
//! its parser) and detect picks a file's; trace runs a TRACE argument's
//! files through their parsers and merges the events.  tokens is the
//! tokenizer of the common line shapes; strace (with preload's `#` lines),
//! syscalls, values and grammar parse every other shape; tinygrad reads
//! tinygrad's `IOCTL=1` logs.

pub mod detect;
pub mod dialect;
pub mod grammar;
pub mod lex;
pub mod preload;
pub mod strace;
pub mod syscalls;
pub mod tinygrad;
pub mod tokens;
pub mod trace;
pub mod values;
