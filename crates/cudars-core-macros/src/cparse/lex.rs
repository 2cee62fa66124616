//! The tokenizer: comments, preprocessor lines, string and character
//! literals, raw strings and numbers are understood and set aside; what is
//! left is identifiers, punctuation, strings and numbers, each with where it
//! is. The `#define`s and `#include`s seen are noted as [`Directives`].

use super::{Directives, ParseError, Pos};

/// The tokens of `text` (without a byte-order mark), and its preprocessor lines.
///
/// As the C preprocessor does, the lines are spliced first (a backslash and
/// the newline after it are removed, wherever they are: inside a name, a
/// `#define`, a comment), and then comments are read, each standing for a
/// space: `#def\⏎ine`, `#define/**/real double` and `#/**/define real double`
/// are the `#define` of `real` they are to the compiler. Positions are the
/// original text's.
pub(super) fn tokens(text: &str) -> Result<(Vec<Token>, Directives), ParseError> {
    let (spliced, map) = splice(text);
    let mut line_starts = vec![0];
    line_starts.extend(
        text.bytes()
            .enumerate()
            .filter(|&(_, b)| b == b'\n')
            .map(|(k, _)| k + 1),
    );
    Lexer {
        text: &spliced,
        src: spliced.as_bytes(),
        original: text.as_bytes(),
        map: &map,
        line_starts: &line_starts,
        i: 0,
        line_start: true,
        directives: Directives::default(),
    }
    .tokens()
}

/// `text` with its line splices (a backslash, an optional carriage return and
/// a newline) removed, and for each of its bytes (and its end) the offset of
/// that byte in `text`.
fn splice(text: &str) -> (String, Vec<usize>) {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut map = Vec::with_capacity(b.len() + 1);
    let mut k = 0;
    while k < b.len() {
        if b[k] == b'\\' {
            let n = if b.get(k + 1) == Some(&b'\r') { 2 } else { 1 };
            if b.get(k + n) == Some(&b'\n') {
                k += n + 1;
                continue;
            }
        }
        out.push(b[k]);
        map.push(k);
        k += 1;
    }
    map.push(b.len());
    // Only ASCII sequences were removed, so the text is still UTF-8.
    let spliced = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (spliced, map)
}

/// `directive` (a preprocessor line, spliced) with each comment one space, as
/// the preprocessor reads it (string and character literals kept).
fn without_comments(directive: &str) -> String {
    let b = directive.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        match b[k] {
            b'/' if b.get(k + 1) == Some(&b'/') => break,
            b'/' if b.get(k + 1) == Some(&b'*') => {
                k += 2;
                while k < b.len() && !(b[k] == b'*' && b.get(k + 1) == Some(&b'/')) {
                    k += 1;
                }
                k += 2;
                out.push(b' ');
            }
            q @ (b'"' | b'\'') => {
                out.push(q);
                k += 1;
                while k < b.len() && b[k] != q {
                    if b[k] == b'\\' && k + 1 < b.len() {
                        out.push(b[k]);
                        k += 1;
                    }
                    out.push(b[k]);
                    k += 1;
                }
                if k < b.len() {
                    out.push(q);
                    k += 1;
                }
            }
            c => {
                out.push(c);
                k += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Ident(String),
    Punct(char),
    Str(String),
    Char,
    Num(String),
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) pos: Pos,
    /// Whether whitespace or a comment came right before it.
    pub(super) spaced: bool,
}

impl Token {
    pub(super) fn is_punct(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
    pub(super) fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }
    pub(super) fn is_ident(&self, s: &str) -> bool {
        self.ident() == Some(s)
    }
}

struct Lexer<'a> {
    /// The source, spliced, as text (for the characters of punctuation) and as
    /// bytes.
    text: &'a str,
    src: &'a [u8],
    /// The source as written, where positions are counted.
    original: &'a [u8],
    /// For each byte of `src` (and its end), its offset in `original`.
    map: &'a [usize],
    /// Where each line of `original` starts.
    line_starts: &'a [usize],
    i: usize,
    /// Only whitespace since the start of the line (a `#` here starts a directive).
    line_start: bool,
    /// The `#define`s and `#include`s seen.
    directives: Directives,
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
        let at = self.map.get(self.i).copied().unwrap_or(self.original.len());
        let line = self.line_starts.partition_point(|&s| s <= at).max(1);
        let start = self.line_starts[line - 1];
        // Columns count characters, not UTF-8 continuation bytes.
        let col = self.original[start..at]
            .iter()
            .filter(|&&c| c & 0xC0 != 0x80)
            .count();
        Pos {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col + 1).unwrap_or(u32::MAX),
        }
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek(0) {
            self.i += 1;
            if c == b'\n' {
                self.line_start = true;
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
                // `%:` is `#` (a digraph).
                Some(b'#') if self.line_start => {
                    let from = self.i;
                    let pos = self.pos();
                    self.directive()?;
                    self.note_directive(from, pos);
                }
                Some(b'%') if self.line_start && self.peek(1) == Some(b':') => {
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

    /// A block comment: one space, so a line start before it is one after it
    /// (its newlines start no line).
    fn block_comment(&mut self) -> Result<(), ParseError> {
        let start = self.pos();
        let line_start = self.line_start;
        self.bump();
        self.bump();
        loop {
            match self.peek(0) {
                None => return Err(self.err(start, "a `/*` comment is never closed")),
                Some(b'*') if self.peek(1) == Some(b'/') => {
                    self.bump();
                    self.bump();
                    self.line_start = line_start;
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
                    // It may cross lines; the directive goes on.
                    self.block_comment()?;
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
        let text = without_comments(&String::from_utf8_lossy(&self.src[from..self.i]));
        let rest = text.trim_start();
        let rest = rest
            .strip_prefix('#')
            .or_else(|| rest.strip_prefix("%:"))
            .unwrap_or(rest)
            .trim_start();
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

pub(super) fn join(tokens: &[Token]) -> String {
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
