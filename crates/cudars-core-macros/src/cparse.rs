//! A small reader of CUDA C++ source: finds the `extern "C" __global__`
//! functions and describes their parameters.
//!
//! It tokenizes (comments, preprocessor lines, string and character literals,
//! raw strings and numbers are understood and set aside), follows the brace
//! structure (`extern "C" { … }` and `namespace … { … }` blocks are entered,
//! every other body is skipped) and reads each declaration that names
//! `__global__`. It does not run the preprocessor: macros are not expanded and
//! conditional blocks are not chosen between (a kernel written under both arms
//! of an `#if` is seen twice and must then be declared the same way).
//!
//! The parts, in the order the text goes through them: [`lex`] (tokens, and the
//! preprocessor lines set aside), [`parser`] (the brace structure and the
//! `__global__` declarations), [`declarator`] (one declaration's type and name)
//! and [`types`] (the `typedef`s, `using`s, structs, unions and enums a
//! parameter's type may name). What they produce is [`model`]; this module reads
//! a source with them.

mod declarator;
mod lex;
mod model;
mod parser;
mod types;

pub(crate) use self::declarator::{QUALIFIERS, is_keyword};
pub(crate) use self::model::{
    Alias, Base, Body, Declarator, Directives, Enum, Field, Kernel, Param, ParamKind, ParseError,
    Pos, Record, Scalar, Skipped, Source, Types,
};

/// Reads `src`.
pub(crate) fn parse(src: &str) -> Result<Source, ParseError> {
    // A byte-order mark is not part of the source.
    let text = src.strip_prefix('\u{feff}').unwrap_or(src);
    let (tokens, directives) = lex::tokens(text)?;
    let mut source = parser::read(&tokens)?;
    source.types.directives = directives;
    Ok(source)
}

#[cfg(test)]
mod tests;
