//! Text -> events.  tokens is the tokenizer of the common line shapes;
//! strace (with preload's `#` lines), syscalls, values and grammar parse
//! every other shape; kfd_args reads the ioctl structs the capture library
//! writes against the catalogue's labels; tinygrad reads tinygrad's
//! `IOCTL=1` logs.

#[cfg(test)]
pub(crate) mod fixtures;
pub mod grammar;
pub mod kfd_args;
pub mod lex;
pub mod preload;
pub mod strace;
pub mod syscalls;
pub mod tinygrad;
pub mod tokens;
pub mod values;
