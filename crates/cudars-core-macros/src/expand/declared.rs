//! A source given as an expression (`source KERNELS; declare "…";`): the macro
//! cannot read its text, so it reads the signatures from the declarations, and
//! checks at compile time, in a constant the generated code evaluates, that the
//! text holds each of them (whitespace aside). That search is textual (a comment
//! or an inactive `#if` arm holding the words satisfies it): it gives an early
//! error for a `declare` that drifted from the source; the proof is the
//! compiler's check the generated `compile` makes (`cudars_core::kernel_check`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

/// One declaration of `declare`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Declaration {
    /// As written, each run of whitespace one space.
    pub(super) shown: String,
    /// With its whitespace removed: what the source must hold.
    pub(super) needle: String,
}

/// The top-level declarations of `text` (split at `;` outside braces, comments
/// and preprocessor lines left out), without a leading `extern "C"` (a source
/// may declare its kernels inside an `extern "C" { … }` block).
pub(super) fn declarations(text: &str) -> Vec<Declaration> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    let mut line_start = true;
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                line_start = true;
                continue;
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                continue;
            }
            '#' if line_start => {
                // A preprocessor line (continued lines included).
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' && last != '\\' {
                        break;
                    }
                    last = c;
                }
                line_start = true;
                continue;
            }
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                push(&mut out, &cur);
                cur.clear();
                line_start = false;
                continue;
            }
            _ => {}
        }
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
        if !c.is_whitespace() {
            cur.push(c);
        } else if !cur.is_empty() && !cur.ends_with(' ') {
            cur.push(' ');
        }
    }
    push(&mut out, &cur);
    out
}

fn push(out: &mut Vec<Declaration>, decl: &str) {
    let decl = decl.trim();
    let decl = decl
        .strip_prefix("extern \"C\"")
        .or_else(|| decl.strip_prefix("extern\"C\""))
        .unwrap_or(decl)
        .trim();
    if !decl.is_empty() {
        out.push(Declaration {
            shown: decl.to_string(),
            needle: decl.chars().filter(|c| !c.is_whitespace()).collect(),
        });
    }
}

/// A constant that fails to evaluate, with a message naming the declaration,
/// when `ty::SOURCE` does not hold each of `decls` (whitespace aside).
pub(super) fn check(ty: &Ident, source: &str, decls: &[Declaration]) -> TokenStream {
    let asserts = decls.iter().map(|d| {
        let (shown, needle) = (&d.shown, &d.needle);
        let msg = format!(
            "`{ty}::SOURCE` ({source}) does not declare `{shown}` (compared with whitespace \
             left out): `declare` must repeat the source's declarations as written"
        )
        // A literal format string: braces stand for themselves.
        .replace('{', "{{")
        .replace('}', "}}");
        quote! {
            ::core::assert!(has(#ty::SOURCE.as_bytes(), #needle.as_bytes()), #msg);
        }
    });
    quote! {
        // The declarations the signatures were read from are the source's.
        const _: () = {
            /// Whether `hay`, its ASCII whitespace skipped, holds `needle` (which
            /// has none).
            const fn has(hay: &[u8], needle: &[u8]) -> bool {
                let mut start = 0;
                while start < hay.len() {
                    if hay[start] == needle[0] {
                        let (mut i, mut j) = (start, 0);
                        while i < hay.len() && j < needle.len() {
                            let c = hay[i];
                            if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
                                i += 1;
                            } else if c == needle[j] {
                                i += 1;
                                j += 1;
                            } else {
                                break;
                            }
                        }
                        if j == needle.len() {
                            return true;
                        }
                    }
                    start += 1;
                }
                false
            }
            #(#asserts)*
        };
    }
}
