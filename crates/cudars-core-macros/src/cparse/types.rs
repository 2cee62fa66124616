//! The type declarations of a source (`typedef`, `using`, `struct`, `class`,
//! `union`, `enum`), in any namespace or `extern` block: what a parameter's
//! type name may resolve to (see `ctypes`).

use super::declarator::{
    QUALIFIERS, declarator, declarators, declared_names, group_end, is_type_word, lone_colon,
    parse_int, split_commas,
};
use super::lex::{Tok, Token, join};
use super::parser::Parser;
use super::{Alias, Base, Body, Declarator, Enum, Field, Pos, Record, Scalar};

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
    pub(super) fn type_declaration(&mut self, d: &[Token]) {
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
