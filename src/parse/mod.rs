//! Text -> tokens.  Only the tokenizer is compiled so far; the rest of the
//! grammar is still rocrtrace/parse/strace.py and tokens.py.

pub mod tinygrad;
pub mod tokens;
