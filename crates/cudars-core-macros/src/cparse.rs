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

use std::fmt;

/// Where something is in the source (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) line: u32,
    pub(crate) col: u32,
}

/// A problem with the source, at a place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}:{}: {}",
            self.pos.line, self.pos.col, self.message
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Punct(char),
    Str(String),
    Char,
    Num(String),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    pos: Pos,
    /// Whether whitespace or a comment came right before it.
    spaced: bool,
}

impl Token {
    fn is_punct(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
    fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }
    fn is_ident(&self, s: &str) -> bool {
        self.ident() == Some(s)
    }
}

struct Lexer<'a> {
    /// The source, as text (for the characters of punctuation) and as bytes.
    text: &'a str,
    src: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
    /// Only whitespace since the start of the line (a `#` here starts a directive).
    line_start: bool,
    /// The `#define`s and `#include`s seen.
    directives: Directives,
}

/// What the preprocessor lines of a source say that matters to its types (the
/// preprocessor itself is not run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Directives {
    /// The names `#define` gives a meaning to, with where.
    pub(crate) macros: Vec<(String, Pos)>,
    /// What `#include` names (`<cuda_fp16.h>`, `"mine.h"`).
    pub(crate) includes: Vec<String>,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

impl<'a> Lexer<'a> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.src.get(self.i + k).copied()
    }

    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek(0) {
            self.i += 1;
            if c == b'\n' {
                self.line += 1;
                self.col = 1;
                self.line_start = true;
            } else if c & 0xC0 != 0x80 {
                // Columns count characters, not UTF-8 continuation bytes.
                self.col += 1;
            }
        }
    }

    fn err(&self, pos: Pos, message: impl Into<String>) -> ParseError {
        ParseError {
            pos,
            message: message.into(),
        }
    }

    /// Skips a backslash-newline (a line continuation) if one is here.
    fn continuation(&mut self) -> bool {
        if self.peek(0) == Some(b'\\') {
            let k = if self.peek(1) == Some(b'\r') { 2 } else { 1 };
            if self.peek(k) == Some(b'\n') {
                for _ in 0..=k {
                    self.bump();
                }
                return true;
            }
        }
        false
    }

    /// Skips whitespace, comments and preprocessor directives; whether any were.
    fn skip_trivia(&mut self) -> Result<bool, ParseError> {
        let mut skipped = false;
        loop {
            match self.peek(0) {
                Some(c) if c.is_ascii_whitespace() => {
                    self.bump();
                }
                Some(b'\\') if self.continuation() => {}
                Some(b'/') if self.peek(1) == Some(b'/') => self.line_comment(),
                Some(b'/') if self.peek(1) == Some(b'*') => self.block_comment()?,
                Some(b'#') if self.line_start => {
                    let from = self.i;
                    let pos = self.pos();
                    self.directive()?;
                    self.note_directive(from, pos);
                }
                _ => return Ok(skipped),
            }
            skipped = true;
        }
    }

    fn line_comment(&mut self) {
        while let Some(c) = self.peek(0) {
            if c == b'\n' {
                return;
            }
            if !self.continuation() {
                self.bump();
            }
        }
    }

    fn block_comment(&mut self) -> Result<(), ParseError> {
        let start = self.pos();
        self.bump();
        self.bump();
        loop {
            match self.peek(0) {
                None => return Err(self.err(start, "a `/*` comment is never closed")),
                Some(b'*') if self.peek(1) == Some(b'/') => {
                    self.bump();
                    self.bump();
                    return Ok(());
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// A preprocessor directive: to the end of its (continued) line. Comments in
    /// it are comments (a block comment may run past the line end).
    fn directive(&mut self) -> Result<(), ParseError> {
        while let Some(c) = self.peek(0) {
            match c {
                b'\n' => return Ok(()),
                b'\\' if self.continuation() => {}
                b'/' if self.peek(1) == Some(b'/') => {
                    self.line_comment();
                    return Ok(());
                }
                b'/' if self.peek(1) == Some(b'*') => {
                    self.block_comment()?;
                    // `block_comment` may have crossed lines; the directive goes on.
                    self.line_start = false;
                }
                b'"' | b'\'' => {
                    self.quoted(c)?;
                }
                _ => self.bump(),
            }
        }
        Ok(())
    }

    /// Notes a `#define`'s name or an `#include`'s header (`src[from..]` up
    /// to here is the directive).
    fn note_directive(&mut self, from: usize, pos: Pos) {
        let text = String::from_utf8_lossy(&self.src[from..self.i])
            .replace("\\\r\n", " ")
            .replace("\\\n", " ");
        let rest = text.trim_start_matches('#').trim_start();
        let word_end =
            |s: &str| s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'));
        let kw_len = word_end(rest).unwrap_or(rest.len());
        let (kw, rest) = rest.split_at(kw_len);
        let rest = rest.trim_start();
        match kw {
            "define" => {
                let n = word_end(rest).unwrap_or(rest.len());
                if n > 0 {
                    self.directives.macros.push((rest[..n].to_string(), pos));
                }
            }
            "include" => {
                let header = rest
                    .split("//")
                    .next()
                    .unwrap_or_default()
                    .split("/*")
                    .next()
                    .unwrap_or_default()
                    .trim();
                self.directives.includes.push(header.to_string());
            }
            _ => {}
        }
    }

    /// A string or character literal from its opening quote; its contents.
    fn quoted(&mut self, q: u8) -> Result<String, ParseError> {
        let start = self.pos();
        let from = self.i + 1;
        self.bump();
        loop {
            match self.peek(0) {
                None | Some(b'\n') => {
                    let what = if q == b'"' { "string" } else { "character" };
                    return Err(self.err(start, format!("a {what} literal is never closed")));
                }
                Some(b'\\') => {
                    if !self.continuation() {
                        self.bump();
                        self.bump();
                    }
                }
                Some(c) if c == q => {
                    let text = String::from_utf8_lossy(&self.src[from..self.i]).into_owned();
                    self.bump();
                    return Ok(text);
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// A raw string `R"delim( … )delim"`, from its opening quote.
    fn raw_string(&mut self) -> Result<String, ParseError> {
        let start = self.pos();
        self.bump();
        let d0 = self.i;
        while let Some(c) = self.peek(0) {
            if c == b'(' {
                break;
            }
            if c.is_ascii_whitespace() || c == b')' || c == b'\\' || self.i - d0 > 16 {
                return Err(self.err(start, "a raw string's delimiter is malformed"));
            }
            self.bump();
        }
        let delim = self.src[d0..self.i].to_vec();
        let mut close = vec![b')'];
        close.extend_from_slice(&delim);
        close.push(b'"');
        self.bump();
        let from = self.i;
        loop {
            if self.i >= self.src.len() {
                return Err(self.err(start, "a raw string literal is never closed"));
            }
            if self.src[self.i..].starts_with(&close) {
                let text = String::from_utf8_lossy(&self.src[from..self.i]).into_owned();
                for _ in 0..close.len() {
                    self.bump();
                }
                return Ok(text);
            }
            self.bump();
        }
    }

    /// A preprocessing number (digits, letters, `.`, exponent signs and `'`
    /// digit separators).
    fn number(&mut self) {
        self.bump();
        while let Some(c) = self.peek(0) {
            if is_ident_char(c) || c == b'.' {
                let exp = matches!(c, b'e' | b'E' | b'p' | b'P');
                self.bump();
                if exp && matches!(self.peek(0), Some(b'+' | b'-')) {
                    self.bump();
                }
            } else if c == b'\'' && self.peek(1).is_some_and(is_ident_char) {
                self.bump();
            } else {
                return;
            }
        }
    }

    fn tokens(mut self) -> Result<(Vec<Token>, Directives), ParseError> {
        let mut out = Vec::new();
        loop {
            let spaced = self.skip_trivia()?;
            let pos = self.pos();
            let Some(c) = self.peek(0) else {
                return Ok((out, self.directives));
            };
            self.line_start = false;
            let tok = if is_ident_start(c) {
                let from = self.i;
                while self.peek(0).is_some_and(is_ident_char) {
                    self.bump();
                }
                let word = String::from_utf8_lossy(&self.src[from..self.i]).into_owned();
                match (word.as_str(), self.peek(0)) {
                    ("R" | "u8R" | "uR" | "UR" | "LR", Some(b'"')) => Tok::Str(self.raw_string()?),
                    ("u8" | "u" | "U" | "L", Some(b'"')) => Tok::Str(self.quoted(b'"')?),
                    ("u8" | "u" | "U" | "L", Some(b'\'')) => {
                        self.quoted(b'\'')?;
                        Tok::Char
                    }
                    _ => Tok::Ident(word),
                }
            } else if c.is_ascii_digit()
                || (c == b'.' && self.peek(1).is_some_and(|d| d.is_ascii_digit()))
            {
                let from = self.i;
                self.number();
                Tok::Num(String::from_utf8_lossy(&self.src[from..self.i]).into_owned())
            } else if c == b'"' {
                Tok::Str(self.quoted(b'"')?)
            } else if c == b'\'' {
                self.quoted(b'\'')?;
                Tok::Char
            } else {
                // One character (a UTF-8 sequence counts as one).
                // (`get` is `None` off a character boundary: then one byte.)
                let ch = self
                    .text
                    .get(self.i..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('\u{FFFD}');
                for _ in 0..ch.len_utf8().max(1) {
                    self.bump();
                }
                Tok::Punct(ch)
            };
            out.push(Token { tok, pos, spaced });
        }
    }
}

/// A C scalar type a kernel parameter (or a pointer's element) can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// `char` (signed or not as the platform's `char`).
    CChar,
    /// `signed char`, `int8_t`.
    I8,
    /// `unsigned char`, `uint8_t`.
    U8,
    /// `short`, `int16_t`.
    I16,
    /// `unsigned short`, `uint16_t`.
    U16,
    /// `int`, `int32_t`.
    I32,
    /// `unsigned`, `uint32_t`.
    U32,
    /// `long` (the platform's: 64 bits on Linux, 32 on Windows).
    CLong,
    /// `unsigned long`.
    CULong,
    /// `long long`, `int64_t`.
    I64,
    /// `unsigned long long`, `uint64_t`, texture and surface objects.
    U64,
    /// `size_t`, `uintptr_t`.
    Usize,
    /// `ptrdiff_t`, `intptr_t`, `ssize_t`.
    Isize,
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `__half`, `half`.
    F16,
    /// `__nv_bfloat16`, `nv_bfloat16`.
    Bf16,
    /// `bool`.
    Bool,
}

impl Scalar {
    /// Whether it is an integer type (an enum's underlying type can be).
    pub(crate) fn is_integer(self) -> bool {
        !matches!(self, Self::F32 | Self::F64 | Self::F16 | Self::Bf16)
    }

    /// How C spells it.
    pub(crate) fn c_name(self) -> &'static str {
        match self {
            Self::CChar => "char",
            Self::I8 => "signed char",
            Self::U8 => "unsigned char",
            Self::I16 => "short",
            Self::U16 => "unsigned short",
            Self::I32 => "int",
            Self::U32 => "unsigned int",
            Self::CLong => "long",
            Self::CULong => "unsigned long",
            Self::I64 => "long long",
            Self::U64 => "unsigned long long",
            Self::Usize => "size_t",
            Self::Isize => "ptrdiff_t",
            Self::F32 => "float",
            Self::F64 => "double",
            Self::F16 => "__half",
            Self::Bf16 => "__nv_bfloat16",
            Self::Bool => "bool",
        }
    }
}

/// A parameter's type, or a pointer's element type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    /// A built-in scalar.
    Scalar(Scalar),
    /// Another type name (a struct, an enum, a typedef, `void`): the macro's
    /// input must name a Rust type for it.
    Named(String),
}

/// What a parameter is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// Passed by value.
    Value(Base),
    /// A pointer: `const` when the element is.
    Pointer { elem: Base, constant: bool },
}

/// One kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    /// Its name in the source, if it has one.
    pub(crate) name: Option<String>,
    pub(crate) kind: ParamKind,
    /// The declaration as written (tokens joined).
    pub(crate) decl: String,
    /// The identifiers of its type (keywords and qualifiers included), for the
    /// check against the source's macros.
    pub(crate) words: Vec<String>,
}

/// One `extern "C" __global__` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kernel {
    pub(crate) name: String,
    /// The parameters, or why one of them has no Rust type (an error only if
    /// the kernel is wanted).
    pub(crate) params: Result<Vec<Param>, ParseError>,
    /// The signature as written (tokens joined, attributes included).
    pub(crate) signature: String,
    pub(crate) pos: Pos,
}

/// A `__global__` function that has no C name (a template, or C++ linkage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) name: String,
    pub(crate) why: &'static str,
    pub(crate) pos: Pos,
}

/// What a source holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Source {
    /// The `extern "C"` kernels, in source order, each once.
    pub(crate) kernels: Vec<Kernel>,
    /// The `__global__` functions that are not `extern "C"`.
    pub(crate) skipped: Vec<Skipped>,
    /// The types the source declares, and its macros and includes.
    pub(crate) types: Types,
}

/// A `typedef` or `using` alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alias {
    pub(crate) name: String,
    /// What it names, or why the macro cannot say (an array or function type).
    pub(crate) target: Result<Declarator, String>,
    pub(crate) pos: Pos,
    /// `typedef` or `using`.
    pub(crate) how: &'static str,
}

/// One field of a struct or union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) ty: Declarator,
}

/// The fields of a struct or union, when the macro can read its layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    pub(crate) fields: Vec<Field>,
    /// `__align__(N)` or `alignas(N)` on the type.
    pub(crate) align: Option<u64>,
}

/// A `struct`, `class` or `union` the source declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) name: String,
    /// `struct`, `class` or `union`.
    pub(crate) keyword: &'static str,
    /// Its fields; `None` for a declaration without a body; `Err` says why its
    /// layout is not read (a bit-field, a base class, member functions, …).
    pub(crate) body: Option<Result<Body, String>>,
    pub(crate) pos: Pos,
}

/// An `enum` the source declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Enum {
    pub(crate) name: String,
    /// Its underlying type (fixed, or `int` for a scoped enum), or why it has
    /// none the macro knows.
    pub(crate) underlying: Result<Scalar, String>,
    pub(crate) pos: Pos,
}

/// Every type declaration the source makes (in any namespace or `extern`
/// block, under any `#if` arm), and its preprocessor lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Types {
    pub(crate) aliases: Vec<Alias>,
    pub(crate) records: Vec<Record>,
    pub(crate) enums: Vec<Enum>,
    pub(crate) directives: Directives,
}

/// Reads `src`.
pub(crate) fn parse(src: &str) -> Result<Source, ParseError> {
    // A byte-order mark is not part of the source.
    let text = src.strip_prefix('\u{feff}').unwrap_or(src);
    let tokens = Lexer {
        text,
        src: text.as_bytes(),
        i: 0,
        line: 1,
        col: 1,
        line_start: true,
        directives: Directives::default(),
    }
    .tokens()?;
    let (tokens, directives) = tokens;
    let mut p = Parser {
        t: &tokens,
        i: 0,
        out: Source::default(),
    };
    p.scope(false, None)?;
    p.out.types.directives = directives;
    Ok(p.out)
}

struct Parser<'a> {
    t: &'a [Token],
    i: usize,
    out: Source,
}

/// Function-like attributes that may stand between the return type and the name.
const ATTRIBUTES: &[&str] = &[
    "__launch_bounds__",
    "__cluster_dims__",
    "__maxnreg__",
    "__attribute__",
    "__declspec",
    "alignas",
    "__align__",
    "__nv_register_params__",
];

fn join(tokens: &[Token]) -> String {
    let mut s = String::new();
    for (k, t) in tokens.iter().enumerate() {
        let text = match &t.tok {
            Tok::Ident(w) => w.clone(),
            Tok::Punct(c) => c.to_string(),
            Tok::Str(x) => format!("\"{x}\""),
            Tok::Char => "'…'".into(),
            Tok::Num(n) => n.clone(),
        };
        let glue_left = matches!(
            t.tok,
            Tok::Punct('*' | '&' | ',' | ')' | ']' | '[' | ':' | '<' | '>')
        ) || (matches!(t.tok, Tok::Punct('(')) && !t.spaced)
            || (matches!(t.tok, Tok::Punct('.')) && !t.spaced);
        let after_open = k > 0
            && (matches!(tokens[k - 1].tok, Tok::Punct('(' | '[' | ':' | '<'))
                || (k > 1 && tokens[k - 1].is_punct('*') && tokens[k - 2].is_punct('(')));
        if k > 0 && !glue_left && !after_open {
            s.push(' ');
        }
        s.push_str(&text);
    }
    s
}

impl<'a> Parser<'a> {
    fn err(&self, pos: Pos, message: impl Into<String>) -> ParseError {
        ParseError {
            pos,
            message: message.into(),
        }
    }

    fn at(&self, k: usize) -> Option<&'a Token> {
        self.t.get(self.i + k)
    }

    /// Skips a balanced group from its opening token; the index after it.
    fn skip_group(&self, from: usize) -> Result<usize, ParseError> {
        let mut stack = Vec::new();
        let mut k = from;
        while let Some(t) = self.t.get(k) {
            match t.tok {
                Tok::Punct(c @ ('(' | '[' | '{')) => stack.push((c, t.pos)),
                Tok::Punct(c @ (')' | ']' | '}')) => {
                    let want = match c {
                        ')' => '(',
                        ']' => '[',
                        _ => '{',
                    };
                    match stack.pop() {
                        Some((open, _)) if open == want => {}
                        _ => return Err(self.err(t.pos, format!("an unmatched `{c}`"))),
                    }
                    if stack.is_empty() {
                        return Ok(k + 1);
                    }
                }
                _ => {}
            }
            k += 1;
        }
        let pos = stack.last().map_or(Pos { line: 1, col: 1 }, |s| s.1);
        Err(self.err(pos, "this bracket is never closed"))
    }

    /// Reads declarations until the end (or the `}` closing the block).
    /// `c_linkage`: the block's language linkage is C.
    fn scope(&mut self, c_linkage: bool, open: Option<Pos>) -> Result<(), ParseError> {
        let mut start = self.i;
        loop {
            let Some(t) = self.at(0) else {
                return match open {
                    Some(pos) => Err(self.err(pos, "this `{` is never closed")),
                    None => Ok(()),
                };
            };
            match &t.tok {
                Tok::Punct('}') => {
                    if open.is_none() {
                        return Err(self.err(t.pos, "an unmatched `}`"));
                    }
                    self.i += 1;
                    return Ok(());
                }
                Tok::Punct(';') => {
                    self.declaration(start, self.i, c_linkage)?;
                    self.i += 1;
                    start = self.i;
                }
                Tok::Ident(w) if w == "extern" && self.i == start => {
                    let lang = match self.at(1).map(|t| &t.tok) {
                        Some(Tok::Str(s)) => Some(s.as_str()),
                        _ => None,
                    };
                    match (lang, self.at(2)) {
                        (Some(lang), Some(b)) if b.is_punct('{') => {
                            let pos = b.pos;
                            self.i += 3;
                            self.scope(lang == "C", Some(pos))?;
                            start = self.i;
                        }
                        _ => self.i += 1,
                    }
                }
                Tok::Punct('(' | '[') => self.i = self.skip_group(self.i)?,
                Tok::Punct(')' | ']') => {
                    return Err(self.err(
                        t.pos,
                        format!("an unmatched `{}`", join(&self.t[self.i..=self.i])),
                    ));
                }
                Tok::Punct('{') => {
                    let decl = &self.t[start..self.i];
                    let first = decl
                        .iter()
                        .find(|t| !t.is_ident("inline"))
                        .and_then(Token::ident);
                    if first == Some("namespace") {
                        let pos = t.pos;
                        self.i += 1;
                        self.scope(c_linkage, Some(pos))?;
                        start = self.i;
                        continue;
                    }
                    let is_type = matches!(
                        first,
                        Some("struct" | "class" | "union" | "enum" | "typedef" | "using")
                    );
                    let mut depth = 0i32;
                    let mut initializer = false;
                    for t in decl {
                        match t.tok {
                            Tok::Punct('(' | '[') => depth += 1,
                            Tok::Punct(')' | ']') => depth -= 1,
                            Tok::Punct('=') if depth == 0 => initializer = true,
                            _ => {}
                        }
                    }
                    let function = !is_type && !initializer && decl.iter().any(|t| t.is_punct('('));
                    let end = self.skip_group(self.i)?;
                    if function {
                        // A function body: the declaration ends with it.
                        self.declaration(start, self.i, c_linkage)?;
                        self.i = end;
                        start = self.i;
                    } else {
                        self.i = end;
                    }
                }
                _ => self.i += 1,
            }
        }
    }

    /// Looks at one declaration (`t[from..to]`, without its `;` or body).
    fn declaration(&mut self, from: usize, to: usize, c_linkage: bool) -> Result<(), ParseError> {
        let d = &self.t[from..to];
        if !d.iter().any(|t| t.is_ident("__global__")) {
            self.type_declaration(d);
            return Ok(());
        }
        // Top-level tokens: attribute groups and `[[…]]` skipped; the name is
        // the last identifier before a top-level parenthesised group.
        let mut k = 0;
        let mut name_at = None;
        while k < d.len() {
            let t = &d[k];
            if t.is_punct('(') || t.is_punct('[') {
                let end = self.skip_group(from + k)? - from;
                if t.is_punct('(') && k > 0 {
                    // `name(`, or `name<…>(` (an explicit instantiation).
                    let mut n = k - 1;
                    if d[n].is_punct('>') {
                        let mut depth = 0;
                        while n > 0 {
                            if d[n].is_punct('>') {
                                depth += 1;
                            } else if d[n].is_punct('<') {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            n -= 1;
                        }
                        n = n.saturating_sub(1);
                    }
                    if let Some(w) = d[n].ident() {
                        if !ATTRIBUTES.contains(&w) {
                            name_at = Some((n, k, end));
                        }
                    }
                }
                k = end;
            } else {
                k += 1;
            }
        }
        let template = d.first().is_some_and(|t| t.is_ident("template"));
        let Some((n, open, close)) = name_at else {
            return Err(self.err(
                d[0].pos,
                "a `__global__` declaration without a parameter list",
            ));
        };
        let name = d[n].ident().unwrap_or_default().to_string();
        let pos = d[n].pos;
        let mut linkage_c = c_linkage;
        for w in d[..n].windows(2) {
            if w[0].is_ident("extern") {
                if let Tok::Str(s) = &w[1].tok {
                    linkage_c = s == "C";
                }
            }
        }
        if template {
            self.out.skipped.push(Skipped {
                name,
                why: "a template (templates have no C name; instantiate one in an `extern \"C\"` kernel)",
                pos,
            });
            return Ok(());
        }
        if !linkage_c {
            self.out.skipped.push(Skipped {
                name,
                why: "not `extern \"C\"` (its name is mangled)",
                pos,
            });
            return Ok(());
        }
        let params = self.params(&name, &d[open + 1..close - 1]);
        let signature = join(d);
        let kernel = Kernel {
            name,
            params,
            signature,
            pos,
        };
        if let Some(prev) = self.out.kernels.iter().find(|k| k.name == kernel.name) {
            let same = match (&prev.params, &kernel.params) {
                (Ok(a), Ok(b)) => {
                    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.kind == b.kind)
                }
                (Err(a), Err(b)) => a.message == b.message,
                _ => false,
            };
            if !same {
                return Err(self.err(
                    pos,
                    format!(
                        "kernel `{}` is declared again with other parameters (first at line {}); \
                         the preprocessor is not run, so both arms of an `#if` are read",
                        kernel.name, prev.pos.line
                    ),
                ));
            }
            return Ok(());
        }
        self.out.kernels.push(kernel);
        Ok(())
    }

    fn params(&self, kernel: &str, list: &[Token]) -> Result<Vec<Param>, ParseError> {
        if list.is_empty() || (list.len() == 1 && list[0].is_ident("void")) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut depth = 0i32;
        let mut from = 0;
        for (k, t) in list.iter().enumerate() {
            match t.tok {
                Tok::Punct('(' | '[' | '{' | '<') => depth += 1,
                Tok::Punct(')' | ']' | '}' | '>') => depth -= 1,
                Tok::Punct(',') if depth == 0 => {
                    out.push(self.param(kernel, out.len(), &list[from..k], t.pos)?);
                    from = k + 1;
                }
                _ => {}
            }
        }
        let end = list.last().map_or(Pos { line: 1, col: 1 }, |t| t.pos);
        out.push(self.param(kernel, out.len(), &list[from..], end)?);
        Ok(out)
    }

    fn param(
        &self,
        kernel: &str,
        index: usize,
        d: &[Token],
        near: Pos,
    ) -> Result<Param, ParseError> {
        let decl = join(d);
        let pos = d.first().map_or(near, |t| t.pos);
        let fail = |why: &str| {
            self.err(
                pos,
                format!("kernel `{kernel}`, parameter {index} (`{decl}`): {why}"),
            )
        };
        if d.is_empty() {
            return Err(fail("an empty parameter"));
        }
        if d.iter().any(|t| t.is_punct('.')) {
            return Err(fail("a variadic parameter list has no Rust counterpart"));
        }
        if d.iter().any(|t| t.is_punct('=')) {
            return Err(fail(
                "default arguments are not supported; pass every argument",
            ));
        }
        if d.iter().any(|t| t.is_punct('&')) {
            return Err(fail(
                "a reference cannot be a kernel parameter here; pass a pointer or the value",
            ));
        }
        if d.iter().any(|t| t.is_punct('<')) {
            return Err(fail(
                "a template type has no name to map; use a typedef's or a struct's name",
            ));
        }
        if d.iter().any(|t| t.is_punct('(')) {
            return Err(fail(
                "a function pointer or parenthesised declarator is not supported",
            ));
        }
        let dc = declarator(d, true).map_err(|why| fail(&why))?;
        let stars = dc.stars + dc.dims.len().min(1);
        if dc.dims.len() > 1 {
            return Err(fail(
                "a multi-dimensional array parameter is not supported; pass a flat pointer",
            ));
        }
        if dc.stars > 0 && !dc.dims.is_empty() {
            return Err(fail("an array of pointers is not supported"));
        }
        if stars > 1 {
            return Err(fail(
                "a pointer to a pointer has no view type; pass a flat array and index it",
            ));
        }
        let elem = dc.base;
        let kind = if stars == 1 {
            if elem == Base::Scalar(Scalar::Bool) {
                return Err(fail(
                    "a pointer to `bool` has no element type (not every byte is a valid bool); \
                     use `unsigned char*`",
                ));
            }
            ParamKind::Pointer {
                elem,
                constant: dc.constant,
            }
        } else {
            if elem == Base::Named("void".into()) {
                return Err(fail("a `void` parameter"));
            }
            ParamKind::Value(elem)
        };
        Ok(Param {
            name: dc.name,
            kind,
            decl,
            words: dc.words,
        })
    }
}

/// A declaration's type and name, as written (`const float* __restrict__ x`,
/// `real v[4]`, `unsigned long long`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declarator {
    /// The declared name, if there is one.
    pub(crate) name: Option<String>,
    /// The type the stars point to (or the type itself, without stars).
    pub(crate) base: Base,
    /// `const` applies to the base (`const T`, `T const`, `const T*`).
    pub(crate) constant: bool,
    /// How many `*`.
    pub(crate) stars: usize,
    /// The array dimensions (`[4]`: `Some(4)`; `[]` or `[N]`: `None`).
    pub(crate) dims: Vec<Option<u64>>,
    /// Every identifier of the type as written (keywords and qualifiers
    /// included, the name not), to be checked against the source's macros.
    pub(crate) words: Vec<String>,
}

/// Reads a declaration without initializer: `named` when it may end with a
/// name (a parameter, a field, a typedef), not for a `using`'s type.
fn declarator(d: &[Token], named: bool) -> Result<Declarator, String> {
    // Qualified names: `std::size_t`, `::uint32_t` are their last part when
    // that is a standard type; other qualified names are refused.
    let mut words: Vec<&Token> = Vec::new();
    let mut k = 0;
    while k < d.len() {
        let t = &d[k];
        if t.is_punct(':') {
            let qualifier = words
                .last()
                .and_then(|w| w.ident())
                .filter(|w| !QUALIFIERS.contains(w) && !is_type_word(w));
            let next = d.get(k + 2).and_then(Token::ident);
            let double = d.get(k + 1).is_some_and(|t| t.is_punct(':'));
            let std_ok = matches!(qualifier, None | Some("std"))
                && next.is_some_and(|n| standard_typedef(n).is_some());
            if !double || !std_ok {
                return Err("a qualified type name has no mapping; use an unqualified name".into());
            }
            if qualifier == Some("std") {
                words.pop();
            }
            k += 2;
            continue;
        }
        words.push(t);
        k += 1;
    }
    // Split at the pointer stars: identifiers before the first are the
    // element type (and, without a star, possibly the name last); after it,
    // the name.
    let mut stars = 0;
    let mut elem_const = false;
    let mut before: Vec<&str> = Vec::new();
    let mut after: Vec<&str> = Vec::new();
    let mut dims = Vec::new();
    let mut all: Vec<String> = Vec::new();
    let mut k = 0;
    while k < words.len() {
        let t = words[k];
        match &t.tok {
            Tok::Punct('*') => {
                if !dims.is_empty() {
                    return Err("an array of pointers is not supported".into());
                }
                stars += 1;
            }
            Tok::Punct('[') => {
                let mut inside = Vec::new();
                k += 1;
                while k < words.len() && !words[k].is_punct(']') {
                    inside.push(&words[k].tok);
                    k += 1;
                }
                dims.push(match inside.as_slice() {
                    [Tok::Num(n)] => parse_int(n),
                    _ => None,
                });
            }
            Tok::Ident(w) => {
                match w.as_str() {
                    "const" if stars == 0 => elem_const = true,
                    w if QUALIFIERS.contains(&w) => {}
                    _ if !dims.is_empty() => return Err("an unexpected word after `[]`".into()),
                    _ if stars == 0 => before.push(w),
                    _ => after.push(w),
                }
                all.push(w.clone());
            }
            _ => return Err("an unexpected token in a declaration".into()),
        }
        k += 1;
    }
    let name = if !named {
        if !after.is_empty() {
            return Err("cannot tell the type from the name".into());
        }
        None
    } else if stars > 0 {
        if after.len() > 1 {
            return Err("cannot tell the type from the name".into());
        }
        after.pop()
    } else if before.len() > 1 && !is_type_word(before[before.len() - 1]) {
        before.pop()
    } else {
        None
    };
    if let Some(n) = name {
        if let Some(at) = all.iter().rposition(|w| w == n) {
            all.remove(at);
        }
    }
    let base = base_type(&before)?;
    Ok(Declarator {
        name: name.map(str::to_string),
        base,
        constant: elem_const,
        stars,
        dims,
        words: all,
    })
}

/// An integer literal's value (`4`, `16u`, `0x10`), if it is one.
fn parse_int(n: &str) -> Option<u64> {
    let n = n.replace('\'', "");
    let n = n.trim_end_matches(['u', 'U', 'l', 'L', 'z', 'Z']);
    if let Some(h) = n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if n.len() > 1 && n.starts_with('0') {
        u64::from_str_radix(&n[1..], 8).ok()
    } else {
        n.parse().ok()
    }
}

/// Words in a parameter's declaration that do not change its Rust type.
pub(crate) const QUALIFIERS: &[&str] = &[
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
    "__grid_constant__",
    "struct",
    "class",
    "union",
    "enum",
    "register",
];

/// Whether `w` is a type keyword, `const`, `volatile` or an elaborating
/// keyword: a macro of that name would change the type (or the constness) every
/// signature using it says. (`__restrict__`, `__grid_constant__` and `register`
/// change neither, and are sometimes defined away for host compilers.)
pub(crate) fn is_keyword(w: &str) -> bool {
    is_type_word(w)
        || matches!(
            w,
            "const" | "volatile" | "struct" | "class" | "union" | "enum"
        )
}

/// Whether `w` is one of C's type keywords.
fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "signed"
            | "unsigned"
            | "short"
            | "long"
            | "int"
            | "char"
            | "float"
            | "double"
            | "bool"
            | "void"
    )
}

/// The scalar a standard typedef name stands for.
fn standard_typedef(w: &str) -> Option<Scalar> {
    Some(match w {
        "int8_t" => Scalar::I8,
        "uint8_t" => Scalar::U8,
        "int16_t" => Scalar::I16,
        "uint16_t" => Scalar::U16,
        "int32_t" => Scalar::I32,
        "uint32_t" => Scalar::U32,
        "int64_t" => Scalar::I64,
        "uint64_t" => Scalar::U64,
        "size_t" | "uintptr_t" => Scalar::Usize,
        "ptrdiff_t" | "intptr_t" | "ssize_t" => Scalar::Isize,
        "__half" | "half" => Scalar::F16,
        "__nv_bfloat16" | "nv_bfloat16" => Scalar::Bf16,
        "cudaTextureObject_t" | "cudaSurfaceObject_t" | "CUtexObject" | "CUsurfObject" => {
            Scalar::U64
        }
        _ => return None,
    })
}

/// The type the words of a declaration's base name (`unsigned long long`,
/// `float`, `Params`).
fn base_type(words: &[&str]) -> Result<Base, String> {
    let written = words.join(" ");
    if words.is_empty() {
        return Err("no type".into());
    }
    if words.len() == 1 && !is_type_word(words[0]) {
        let w = words[0];
        return Ok(standard_typedef(w).map_or_else(|| Base::Named(w.to_string()), Base::Scalar));
    }
    if let Some(w) = words.iter().find(|w| !is_type_word(w)) {
        return Err(format!("`{written}` mixes `{w}` with C type keywords"));
    }
    let count = |k: &str| words.iter().filter(|w| **w == k).count();
    let (signed, unsigned) = (count("signed"), count("unsigned"));
    let (short, long, int, char_) = (count("short"), count("long"), count("int"), count("char"));
    let (float, double, bool_, void) = (
        count("float"),
        count("double"),
        count("bool"),
        count("void"),
    );
    let bad = || format!("`{written}` is not a C type");
    if signed + unsigned > 1 || short > 1 || long > 2 || int > 1 || char_ > 1 || short * long > 0 {
        return Err(bad());
    }
    let sign = signed + unsigned > 0;
    if float + double + bool_ + void > 0 {
        if float + double + bool_ + void > 1 || sign || short + int + char_ > 0 {
            return Err(bad());
        }
        if double == 1 && long == 1 {
            return Err("`long double` has no Rust counterpart".into());
        }
        if long > 0 {
            return Err(bad());
        }
        return Ok(if float == 1 {
            Base::Scalar(Scalar::F32)
        } else if double == 1 {
            Base::Scalar(Scalar::F64)
        } else if bool_ == 1 {
            Base::Scalar(Scalar::Bool)
        } else {
            Base::Named("void".into())
        });
    }
    let u = unsigned == 1;
    let s = if char_ == 1 {
        if short + long + int > 0 {
            return Err(bad());
        }
        match (signed, unsigned) {
            (0, 0) => Scalar::CChar,
            (1, _) => Scalar::I8,
            _ => Scalar::U8,
        }
    } else if short == 1 {
        if u { Scalar::U16 } else { Scalar::I16 }
    } else if long == 2 {
        if u { Scalar::U64 } else { Scalar::I64 }
    } else if long == 1 {
        if u { Scalar::CULong } else { Scalar::CLong }
    } else if u {
        Scalar::U32
    } else {
        Scalar::I32
    };
    Ok(Base::Scalar(s))
}

/// The index after the group that opens at `d[k]` (`(`, `[` or `{`), if it closes.
fn group_end(d: &[Token], k: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in d.iter().enumerate().skip(k) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits `d` at the commas outside brackets.
fn split_commas(d: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut from = 0;
    for (k, t) in d.iter().enumerate() {
        match t.tok {
            Tok::Punct('(' | '[' | '{' | '<') => depth += 1,
            Tok::Punct(')' | ']' | '}' | '>') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                out.push(&d[from..k]);
                from = k + 1;
            }
            _ => {}
        }
    }
    out.push(&d[from..]);
    out
}

/// Whether `d[k]` is a lone `:` (not part of `::`).
fn lone_colon(d: &[Token], k: usize) -> bool {
    d[k].is_punct(':')
        && !d.get(k + 1).is_some_and(|t| t.is_punct(':'))
        && !(k > 0 && d[k - 1].is_punct(':'))
}

/// Reads the declarators of a `typedef` or of a field list that share the
/// specifiers of the first (`float a, *b, c[3]`).
fn declarators(d: &[Token]) -> Vec<Result<Declarator, String>> {
    let parts = split_commas(d);
    let Some(first) = parts.first() else {
        return Vec::new();
    };
    // The specifiers: up to the first `*` or `[`, else all but the name.
    let spec_end = first
        .iter()
        .position(|t| t.is_punct('*') || t.is_punct('[') || t.is_punct('('))
        .unwrap_or(first.len().saturating_sub(1));
    let spec = &first[..spec_end];
    parts
        .iter()
        .enumerate()
        .map(|(k, part)| {
            if part.iter().any(|t| t.is_punct('(')) {
                return Err("a function or function pointer type".to_string());
            }
            let tokens: Vec<Token> = if k == 0 {
                part.to_vec()
            } else {
                spec.iter().chain(part.iter()).cloned().collect()
            };
            let dc = declarator(&tokens, true)?;
            if dc.name.is_none() {
                return Err("a declaration without a name".to_string());
            }
            Ok(dc)
        })
        .collect()
}

/// The declared names of `declarators`' parts, where they can be found (for
/// an alias whose type the macro cannot read).
fn declared_names(d: &[Token]) -> Vec<(String, Pos)> {
    split_commas(d)
        .iter()
        .filter_map(|part| {
            // `(*name)(…)`: the identifier after `(*`; else the last identifier
            // before any `[` or `(` group that is not the first token.
            if let Some(k) = part
                .windows(3)
                .position(|w| w[0].is_punct('(') && w[1].is_punct('*') && w[2].ident().is_some())
            {
                let t = &part[k + 2];
                return t.ident().map(|n| (n.to_string(), t.pos));
            }
            let end = part
                .iter()
                .position(|t| t.is_punct('[') || t.is_punct('('))
                .unwrap_or(part.len());
            part[..end]
                .iter()
                .rev()
                .find_map(|t| t.ident().map(|n| (n.to_string(), t.pos)))
        })
        .collect()
}

/// The head of a struct, class or union (`struct __align__(16) Name : Base`):
/// its name, its alignment, and why its layout is not read, if it is not.
struct RecordHead {
    name: Option<(String, Pos)>,
    align: Option<u64>,
    unreadable: Option<String>,
}

fn record_head(head: &[Token]) -> Option<RecordHead> {
    let mut out = RecordHead {
        name: None,
        align: None,
        unreadable: None,
    };
    let mut k = 1;
    while k < head.len() {
        let t = &head[k];
        match &t.tok {
            Tok::Ident(w) if w == "__align__" || w == "alignas" => {
                let end = group_end(head, k + 1)?;
                match &head[k + 1..end] {
                    [
                        _,
                        Token {
                            tok: Tok::Num(n), ..
                        },
                        _,
                    ] => out.align = parse_int(n),
                    _ => out.unreadable = Some("its alignment is not a number".into()),
                }
                k = end;
                continue;
            }
            Tok::Ident(w) if w == "__attribute__" || w == "__declspec" => {
                out.unreadable = Some(format!("it has `{w}`, which may change its layout"));
                k = group_end(head, k + 1)?;
                continue;
            }
            Tok::Punct('[') => {
                k = group_end(head, k)?;
                continue;
            }
            Tok::Punct('(') => return None,
            Tok::Punct(':') if lone_colon(head, k) => {
                out.unreadable = Some("it derives from another type".into());
                return Some(out);
            }
            Tok::Ident(w) if w == "final" => {}
            Tok::Ident(w) if out.name.is_none() => out.name = Some((w.clone(), t.pos)),
            _ => {}
        }
        k += 1;
    }
    Some(out)
}

/// Reads the members of a struct's body for its layout.
fn record_body(body: &[Token]) -> Result<Vec<Field>, String> {
    let mut fields = Vec::new();
    let mut members: Vec<&[Token]> = Vec::new();
    let mut from = 0;
    let mut k = 0;
    while k < body.len() {
        let t = &body[k];
        match t.tok {
            Tok::Punct(';') => {
                members.push(&body[from..k]);
                k += 1;
                from = k;
            }
            Tok::Punct('(' | '[') => k = group_end(body, k).ok_or("an unclosed bracket")?,
            Tok::Punct('{') => {
                let end = group_end(body, k).ok_or("an unclosed brace")?;
                let m = &body[from..k];
                let kw = m.iter().find_map(Token::ident);
                if matches!(kw, Some("struct" | "class" | "union" | "enum")) {
                    return Err("it declares a nested type".into());
                }
                if m.iter().any(|t| t.is_punct('(')) {
                    // A function's body ends the member.
                    members.push(m);
                    from = end;
                }
                // Otherwise a brace initializer (`int a{5};`): the member goes on.
                k = end;
            }
            _ => k += 1,
        }
    }
    if body[from..].iter().any(|t| !t.is_punct(';')) {
        members.push(&body[from..]);
    }
    for m in members {
        let mut m = m;
        // Access specifiers.
        while m.len() >= 2
            && m[0]
                .ident()
                .is_some_and(|w| matches!(w, "public" | "private" | "protected"))
            && lone_colon(m, 1)
        {
            m = &m[2..];
        }
        if m.is_empty() {
            continue;
        }
        let first = m[0].ident().unwrap_or_default();
        if matches!(
            first,
            "static" | "friend" | "typedef" | "using" | "template"
        ) {
            continue;
        }
        if m.iter().any(|t| t.is_ident("virtual")) {
            return Err("it has virtual functions".into());
        }
        // A default member initializer (`= 1`, `{1}`) does not change the layout.
        let mut depth = 0i32;
        let mut cut = m.len();
        for (j, t) in m.iter().enumerate() {
            match t.tok {
                Tok::Punct('{') if depth == 0 => {
                    cut = j;
                    break;
                }
                Tok::Punct('(' | '[' | '{' | '<') => depth += 1,
                Tok::Punct(')' | ']' | '}' | '>') => depth -= 1,
                Tok::Punct('=') if depth == 0 => {
                    cut = j;
                    break;
                }
                _ => {}
            }
        }
        let m = &m[..cut];
        if m.iter().any(|t| {
            t.ident().is_some_and(|w| {
                matches!(w, "alignas" | "__align__" | "__attribute__" | "__declspec")
            })
        }) {
            return Err(format!(
                "a member has an alignment attribute (`{}`)",
                join(m)
            ));
        }
        if (0..m.len()).any(|j| lone_colon(m, j)) {
            return Err(format!("it has a bit-field (`{}`)", join(m)));
        }
        if let Some(p) = m.iter().position(|t| t.is_punct('(')) {
            let is_function = p > 0
                && m[p - 1]
                    .ident()
                    .is_some_and(|w| !is_type_word(w) && !QUALIFIERS.contains(&w))
                || m.iter().any(|t| t.is_ident("operator"));
            if is_function {
                continue;
            }
            return Err(format!("a member the macro does not read (`{}`)", join(m)));
        }
        for dc in declarators(m) {
            let dc = dc.map_err(|why| format!("a member (`{}`): {why}", join(m)))?;
            if dc.dims.iter().any(Option::is_none) {
                return Err(format!(
                    "an array member whose length is not a number (`{}`)",
                    join(m)
                ));
            }
            let name = dc.name.clone().unwrap_or_default();
            fields.push(Field { name, ty: dc });
        }
    }
    if fields.is_empty() {
        return Err("it has no fields (an empty struct is 1 byte in C++, 0 in Rust)".into());
    }
    Ok(fields)
}

/// Reads an enum's head (`enum class E : uint8_t`): its name and its
/// underlying type.
fn enum_head(head: &[Token]) -> (Option<(String, Pos)>, Result<Scalar, String>) {
    let scoped = head
        .get(1)
        .is_some_and(|t| t.is_ident("class") || t.is_ident("struct"));
    let mut name = None;
    let mut k = if scoped { 2 } else { 1 };
    while k < head.len() {
        let t = &head[k];
        if t.is_punct('[') {
            k = group_end(head, k).unwrap_or(head.len());
            continue;
        }
        if lone_colon(head, k) {
            let under = declarator(&head[k + 1..], false).and_then(|dc| match dc.base {
                Base::Scalar(s) if dc.stars == 0 && dc.dims.is_empty() && s.is_integer() => Ok(s),
                _ => Err("its underlying type is not an integer type the macro knows".to_string()),
            });
            return (name, under);
        }
        if let Some(w) = t.ident() {
            if name.is_none() {
                name = Some((w.to_string(), t.pos));
            }
        }
        k += 1;
    }
    let under = if scoped {
        Ok(Scalar::I32)
    } else {
        Err(
            "an unscoped enum without a fixed underlying type: its size is the compiler's \
             choice (`enum E : int { … }` fixes it)"
                .to_string(),
        )
    };
    (name, under)
}

impl Parser<'_> {
    /// Records a type declaration (`typedef`, `using`, `struct`, `union`,
    /// `class`, `enum`); anything else is left alone.
    fn type_declaration(&mut self, d: &[Token]) {
        let Some(first) = d.first() else {
            return;
        };
        match first.ident() {
            Some("typedef") => self.typedef(&d[1..], first.pos),
            Some("using") => {
                if let (Some(name), Some(eq)) = (d.get(1).and_then(Token::ident), d.get(2)) {
                    if eq.is_punct('=') {
                        let rest = &d[3..];
                        let target = if rest.iter().any(|t| t.is_punct('(')) {
                            Err("a function or function pointer type".to_string())
                        } else {
                            declarator(rest, false).and_then(|dc| {
                                if dc.dims.is_empty() {
                                    Ok(dc)
                                } else {
                                    Err("an array type".to_string())
                                }
                            })
                        };
                        self.out.types.aliases.push(Alias {
                            name: name.to_string(),
                            target,
                            pos: d[1].pos,
                            how: "using",
                        });
                    }
                }
            }
            Some("struct" | "class" | "union") => {
                self.tagged(d);
            }
            Some("enum") => {
                self.tagged(d);
            }
            _ => {}
        }
    }

    /// A `struct`/`class`/`union`/`enum` declaration or definition (`d[0]` is
    /// the keyword); the name it declares, if any.
    fn tagged(&mut self, d: &[Token]) -> Option<(String, Pos)> {
        let keyword: &'static str = match d.first()?.ident()? {
            "struct" => "struct",
            "class" => "class",
            "union" => "union",
            "enum" => "enum",
            _ => return None,
        };
        let open = d.iter().position(|t| t.is_punct('{'));
        let head = &d[..open.unwrap_or(d.len())];
        if keyword == "enum" {
            let (name, underlying) = enum_head(head);
            let (name, pos) = name?;
            // `enum E : int;` declares it fully; `enum E;` names it for a
            // variable only.
            if open.is_some() || head.iter().enumerate().any(|(k, _)| lone_colon(head, k)) {
                self.out.types.enums.push(Enum {
                    name: name.clone(),
                    underlying,
                    pos,
                });
            }
            return Some((name, pos));
        }
        let h = record_head(head)?;
        let body = match open {
            Some(b) => {
                let end = group_end(d, b)?;
                let fields = match h.unreadable {
                    Some(why) => Err(why),
                    None => record_body(&d[b + 1..end - 1]),
                };
                Some(fields.map(|fields| Body {
                    fields,
                    align: h.align,
                }))
            }
            // `struct P;` declares it; `struct P p;` is a variable.
            None if head.len() == 2 => None,
            None => return h.name,
        };
        let (name, pos) = h.name.clone().unwrap_or_else(|| (String::new(), d[0].pos));
        self.out.types.records.push(Record {
            name,
            keyword,
            body,
            pos,
        });
        h.name
    }

    /// A `typedef` (`d` without the keyword).
    fn typedef(&mut self, d: &[Token], pos: Pos) {
        if let Some(open) = d.iter().position(|t| t.is_punct('{')) {
            // `typedef struct [Tag] { … } Name, *PName;`
            let Some(end) = group_end(d, open) else {
                return;
            };
            let decls = &d[end..];
            let names = declared_names(decls);
            let before = self.out.types.records.len();
            let tag = self.tagged(&d[..end]);
            let (tag_name, anonymous) = match tag {
                Some((n, _)) => (n, false),
                None => match names.first() {
                    Some((n, _)) => (n.clone(), true),
                    None => return,
                },
            };
            if anonymous {
                // Name the anonymous record after its first typedef name.
                if let Some(r) = self.out.types.records.get_mut(before) {
                    r.name = tag_name.clone();
                }
                let enums = &mut self.out.types.enums;
                if d.first().is_some_and(|t| t.is_ident("enum")) {
                    let (_, underlying) = enum_head(&d[..open]);
                    enums.push(Enum {
                        name: tag_name.clone(),
                        underlying,
                        pos,
                    });
                }
            }
            for part in split_commas(decls) {
                let Some((name, npos)) = declared_names(part).into_iter().next() else {
                    continue;
                };
                let target = if part.iter().any(|t| t.is_punct('(') || t.is_punct('[')) {
                    Err("a function, function pointer or array type".to_string())
                } else {
                    let stars = part.iter().filter(|t| t.is_punct('*')).count();
                    let words: Vec<String> = part
                        .iter()
                        .filter_map(|t| t.ident().map(str::to_string))
                        .filter(|w| *w != name)
                        .collect();
                    Ok(Declarator {
                        name: Some(name.clone()),
                        base: Base::Named(tag_name.clone()),
                        constant: part
                            .iter()
                            .take_while(|t| !t.is_punct('*'))
                            .any(|t| t.is_ident("const")),
                        stars,
                        dims: Vec::new(),
                        words,
                    })
                };
                self.out.types.aliases.push(Alias {
                    name,
                    target,
                    pos: npos,
                    how: "typedef",
                });
            }
            return;
        }
        let names = declared_names(d);
        for (k, dc) in declarators(d).into_iter().enumerate() {
            let (name, npos) = match (&dc, names.get(k)) {
                (Ok(dc), Some((_, p))) => (dc.name.clone().unwrap_or_default(), *p),
                (Ok(dc), None) => (dc.name.clone().unwrap_or_default(), pos),
                (Err(_), Some((n, p))) => (n.clone(), *p),
                (Err(_), None) => continue,
            };
            let target = dc.and_then(|dc| {
                if dc.dims.is_empty() {
                    Ok(dc)
                } else {
                    Err("an array type".to_string())
                }
            });
            self.out.types.aliases.push(Alias {
                name,
                target,
                pos: npos,
                how: "typedef",
            });
        }
    }
}

#[cfg(test)]
mod tests;
