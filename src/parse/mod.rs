//! Text -> events.  tokens is the tokenizer the Python grammar calls too;
//! strace (with preload's `#` lines), syscalls, values and grammar are the
//! port of rocrtrace/parse/strace.py, syscalls.py and the rest of
//! tokens.py (issue 16).  The Python engine still parses for the product.

pub mod grammar;
pub mod preload;
pub mod strace;
pub mod syscalls;
pub mod tinygrad;
pub mod tokens;
pub mod values;
