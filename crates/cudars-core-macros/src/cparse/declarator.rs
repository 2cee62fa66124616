//! One declaration's type and name (`const float* __restrict__ x`, `real
//! v[4]`, `unsigned long long`): qualifiers, stars, array dimensions, and the
//! C scalar or type name at the bottom; and the token-level helpers the type
//! reader shares (groups, commas, declared names).

use super::lex::{Tok, Token};
use super::{Base, Declarator, Pos, Scalar};

/// Reads a declaration without initializer: `named` when it may end with a
/// name (a parameter, a field, a typedef), not for a `using`'s type.
pub(super) fn declarator(d: &[Token], named: bool) -> Result<Declarator, String> {
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
pub(super) fn parse_int(n: &str) -> Option<u64> {
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
pub(super) fn is_type_word(w: &str) -> bool {
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
pub(super) fn group_end(d: &[Token], k: usize) -> Option<usize> {
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
pub(super) fn split_commas(d: &[Token]) -> Vec<&[Token]> {
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
pub(super) fn lone_colon(d: &[Token], k: usize) -> bool {
    d[k].is_punct(':')
        && !d.get(k + 1).is_some_and(|t| t.is_punct(':'))
        && !(k > 0 && d[k - 1].is_punct(':'))
}

/// Reads the declarators of a `typedef` or of a field list that share the
/// specifiers of the first (`float a, *b, c[3]`).
pub(super) fn declarators(d: &[Token]) -> Vec<Result<Declarator, String>> {
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
pub(super) fn declared_names(d: &[Token]) -> Vec<(String, Pos)> {
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
