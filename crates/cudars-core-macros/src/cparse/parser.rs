//! The brace structure of a source and its declarations: `extern "C" { … }`
//! and `namespace … { … }` blocks are entered, every other body is skipped;
//! each `__global__` declaration becomes a [`Kernel`] (or a [`Skipped`]) and
//! every other declaration goes to the type reader (`types`).

use super::declarator::declarator;
use super::lex::{Tok, Token, join};
use super::{Base, Kernel, Param, ParamKind, ParseError, Pos, Scalar, Skipped, Source};

/// The kernels and types of a source, from its tokens.
pub(super) fn read(tokens: &[Token]) -> Result<Source, ParseError> {
    let mut p = Parser {
        t: tokens,
        i: 0,
        out: Source::default(),
        namespaces: Vec::new(),
    };
    p.scope(false, None)?;
    Ok(p.out)
}

pub(super) struct Parser<'a> {
    pub(super) t: &'a [Token],
    pub(super) i: usize,
    pub(super) out: Source,
    /// The names of the namespaces around the current block (empty for an
    /// anonymous one).
    pub(super) namespaces: Vec<String>,
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
                        // `namespace a`, `inline namespace a`, `namespace a::b`,
                        // `namespace` (anonymous: names nothing).
                        let name = decl
                            .iter()
                            .filter_map(Token::ident)
                            .filter(|w| !matches!(*w, "namespace" | "inline"))
                            .collect::<Vec<_>>()
                            .join("::");
                        self.i += 1;
                        self.namespaces.push(name);
                        let r = self.scope(c_linkage, Some(pos));
                        self.namespaces.pop();
                        r?;
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
        let mut scope = String::from("::");
        for n in self.namespaces.iter().filter(|n| !n.is_empty()) {
            scope.push_str(n);
            scope.push_str("::");
        }
        let kernel = Kernel {
            name,
            scope,
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
