//! Resolves the types a kernel's parameters name to what the source declares
//! them to be: `typedef` and `using` chains are followed to a C scalar, `void`,
//! a struct, union or enum of the source, or to a name the macro cannot
//! resolve (and says why).

use crate::cparse::{Base, Pos, Scalar, Types, is_keyword};

/// One name on the way from a written type to what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    /// The C name.
    pub(crate) name: String,
    /// What declares it (`typedef at line 3`).
    pub(crate) what: String,
}

/// What a type is, at the end of its chain of names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Final {
    /// A C scalar.
    Scalar(Scalar),
    /// `void`.
    Void,
    /// A struct, class or union of the source (an index into `Types::records`).
    Record(usize),
    /// An enum of the source (an index into `Types::enums`).
    Enum(usize),
    /// A name the macro cannot resolve (the last link), and why.
    Unresolved(String),
}

/// A value's type, or a pointer's element type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Elem {
    /// The names from the one written to the last (empty for a C keyword type).
    pub(crate) links: Vec<Link>,
    pub(crate) fin: Final,
    /// `const` (written, or from a typedef).
    pub(crate) constant: bool,
}

/// A pointer a typedef makes (`typedef float* fptr;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pointer {
    /// Its element is `const`.
    pub(crate) constant: bool,
    /// The typedef names that stand for the pointer type itself.
    pub(crate) links: Vec<Link>,
}

/// A type, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Set when the type is a pointer (through a typedef, or written).
    pub(crate) pointer: Option<Pointer>,
    /// The value's type, or the pointer's element type.
    pub(crate) elem: Elem,
}

impl Elem {
    /// The chain in words: "`real` (typedef at line 1) is `double`".
    pub(crate) fn describe(&self, types: &Types) -> String {
        let mut out = String::new();
        for (k, l) in self.links.iter().enumerate() {
            if self.fin == Final::Void && k + 1 == self.links.len() {
                break;
            }
            if k > 0 {
                out.push_str(", which is ");
            }
            out.push_str(&format!("`{}` ({})", l.name, l.what));
        }
        let last = match &self.fin {
            Final::Scalar(s) => format!("`{}`", s.c_name()),
            Final::Void => "`void`".into(),
            Final::Record(i) => {
                let r = &types.records[*i];
                if self.links.last().is_some_and(|l| l.name == r.name) {
                    return out;
                }
                format!("`{} {}` (line {})", r.keyword, r.name, r.pos.line)
            }
            Final::Enum(i) => {
                let e = &types.enums[*i];
                if self.links.last().is_some_and(|l| l.name == e.name) {
                    return out;
                }
                format!("`enum {}` (line {})", e.name, e.pos.line)
            }
            Final::Unresolved(_) => return out,
        };
        if out.is_empty() {
            last
        } else {
            format!("{out}, which is {last}")
        }
    }
}

/// Resolves `base` with `constant` and `stars` (0 or 1) applied.
pub(crate) fn resolve(
    types: &Types,
    base: &Base,
    constant: bool,
    stars: usize,
) -> Result<Resolved, String> {
    Resolver { types }.decl(base, constant, stars, &mut Vec::new())
}

/// The macro of this name the source defines, if any (with where).
pub(crate) fn macro_named<'t>(types: &'t Types, name: &str) -> Option<&'t Pos> {
    types
        .directives
        .macros
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| p)
}

struct Resolver<'t> {
    types: &'t Types,
}

fn lines(positions: &[Pos]) -> String {
    positions
        .iter()
        .map(|p| p.line.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Resolver<'_> {
    fn decl(
        &self,
        base: &Base,
        constant: bool,
        stars: usize,
        visiting: &mut Vec<String>,
    ) -> Result<Resolved, String> {
        let mut r = match base {
            Base::Scalar(s) => Resolved {
                pointer: None,
                elem: Elem {
                    links: Vec::new(),
                    fin: Final::Scalar(*s),
                    constant: false,
                },
            },
            Base::Named(n) => self.name(n, visiting)?,
        };
        if stars == 0 {
            if r.pointer.is_none() {
                r.elem.constant |= constant;
            }
            return Ok(r);
        }
        if stars > 1 || r.pointer.is_some() {
            let through = r
                .pointer
                .as_ref()
                .and_then(|p| p.links.first())
                .map(|l| format!(" (`{}` is a pointer type: {})", l.name, l.what))
                .unwrap_or_default();
            return Err(format!(
                "a pointer to a pointer{through} has no view type; pass a flat array and index it"
            ));
        }
        r.pointer = Some(Pointer {
            constant: constant || r.elem.constant,
            links: Vec::new(),
        });
        Ok(r)
    }

    fn unresolved(name: &str, why: String) -> Resolved {
        Resolved {
            pointer: None,
            elem: Elem {
                links: vec![Link {
                    name: name.to_string(),
                    what: "not resolved".into(),
                }],
                fin: Final::Unresolved(why),
                constant: false,
            },
        }
    }

    fn name(&self, n: &str, visiting: &mut Vec<String>) -> Result<Resolved, String> {
        let t = self.types;
        if let Some(pos) = macro_named(t, n) {
            return Ok(Self::unresolved(
                n,
                format!(
                    "`{n}` is a preprocessor macro (`#define {n}` at line {}), and the macro reads \
                     the source without running the preprocessor",
                    pos.line
                ),
            ));
        }
        if n == "void" {
            return Ok(Resolved {
                pointer: None,
                elem: Elem {
                    links: vec![Link {
                        name: "void".into(),
                        what: "C's `void`".into(),
                    }],
                    fin: Final::Void,
                    constant: false,
                },
            });
        }
        let aliases: Vec<_> = t.aliases.iter().filter(|a| a.name == n).collect();
        if !aliases.is_empty() && !visiting.iter().any(|v| v == n) {
            let a = aliases[0];
            let same = |x: &crate::cparse::Alias| match (&x.target, &a.target) {
                (Ok(p), Ok(q)) => {
                    (&p.base, p.constant, p.stars, &p.dims)
                        == (&q.base, q.constant, q.stars, &q.dims)
                }
                (Err(p), Err(q)) => p == q,
                _ => false,
            };
            if aliases.iter().any(|x| !same(x)) {
                let at: Vec<Pos> = aliases.iter().map(|x| x.pos).collect();
                return Ok(Self::unresolved(
                    n,
                    format!(
                        "`{n}` is declared {} times differently (lines {}); the preprocessor is \
                         not run, so every arm of an `#if` is read",
                        aliases.len(),
                        lines(&at)
                    ),
                ));
            }
            let what = format!("{} at line {}", a.how, a.pos.line);
            let target = a
                .target
                .as_ref()
                .map_err(|why| format!("`{n}` ({what}) is {why}, which has no Rust type here"))?;
            if let Some(w) = target.words.iter().find(|w| is_keyword(w)) {
                if let Some(p) = macro_named(t, w) {
                    return Err(format!(
                        "`{n}` ({what}) is written with `{w}`, which is a preprocessor macro \
                         (`#define {w}` at line {}); the macro does not run the preprocessor",
                        p.line
                    ));
                }
            }
            visiting.push(n.to_string());
            let r = self.decl(&target.base, target.constant, target.stars, visiting);
            visiting.pop();
            let mut r = r?;
            let link = Link {
                name: n.to_string(),
                what,
            };
            match &mut r.pointer {
                Some(p) => p.links.insert(0, link),
                None => r.elem.links.insert(0, link),
            }
            return Ok(r);
        }
        let records: Vec<(usize, _)> = t
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.name == n)
            .collect();
        let enums: Vec<(usize, _)> = t
            .enums
            .iter()
            .enumerate()
            .filter(|(_, e)| e.name == n)
            .collect();
        if !records.is_empty() && !enums.is_empty() {
            return Ok(Self::unresolved(
                n,
                format!("`{n}` is declared both as a struct and as an enum"),
            ));
        }
        if !records.is_empty() {
            let defined: Vec<&(usize, _)> =
                records.iter().filter(|(_, r)| r.body.is_some()).collect();
            if let Some(&&(i, first)) = defined.first() {
                if defined.iter().any(|(_, r)| r.body != first.body) {
                    let at: Vec<Pos> = defined.iter().map(|(_, r)| r.pos).collect();
                    return Ok(Self::unresolved(
                        n,
                        format!(
                            "`{n}` is defined {} times differently (lines {}); the preprocessor \
                             is not run, so every arm of an `#if` is read",
                            defined.len(),
                            lines(&at)
                        ),
                    ));
                }
                return Ok(Self::record(n, i, first.keyword, first.pos));
            }
            let (i, r) = records[0];
            return Ok(Self::record(n, i, r.keyword, r.pos));
        }
        if let Some(&(i, first)) = enums.first() {
            if enums.iter().any(|(_, e)| e.underlying != first.underlying) {
                let at: Vec<Pos> = enums.iter().map(|(_, e)| e.pos).collect();
                return Ok(Self::unresolved(
                    n,
                    format!(
                        "`{n}` is declared {} times differently (lines {})",
                        enums.len(),
                        lines(&at)
                    ),
                ));
            }
            return Ok(Resolved {
                pointer: None,
                elem: Elem {
                    links: vec![Link {
                        name: n.to_string(),
                        what: format!("enum at line {}", first.pos.line),
                    }],
                    fin: Final::Enum(i),
                    constant: false,
                },
            });
        }
        if visiting.iter().any(|v| v == n) {
            return Ok(Self::unresolved(
                n,
                format!("`{n}`'s typedef refers to itself"),
            ));
        }
        let includes = &t.directives.includes;
        let from = if includes.is_empty() {
            String::new()
        } else {
            format!(
                " (it may come from {}, which the macro does not read)",
                includes
                    .iter()
                    .map(|h| format!("`#include {h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Ok(Self::unresolved(
            n,
            format!(
                "`{n}` is not declared in the source as a `typedef`, `using`, `struct`, `class`, \
                 `union` or `enum`{from}"
            ),
        ))
    }

    fn record(n: &str, i: usize, keyword: &str, pos: Pos) -> Resolved {
        Resolved {
            pointer: None,
            elem: Elem {
                links: vec![Link {
                    name: n.to_string(),
                    what: format!("{keyword} at line {}", pos.line),
                }],
                fin: Final::Record(i),
                constant: false,
            },
        }
    }
}

#[cfg(test)]
mod tests;
