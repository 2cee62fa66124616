//! What every generator of checked-in files shares: writing a file only when its
//! contents change (or, with `--check`, failing with the command that fixes it),
//! formatting token streams, and the `// SAFETY:` comments a token stream cannot
//! carry.
//!
//! Generators build Rust as `quote!` token streams and format them with
//! `prettyplease` (pinned by `Cargo.lock`, so the text does not depend on the
//! installed rustfmt). Comments are not tokens, so an `unsafe` block's
//! `// SAFETY:` comment travels through formatting as a marker statement
//! ([`SafetyComments::marker`]) that [`SafetyComments::place`] turns back into
//! the comment; it counts what it placed and then checks the formatted file
//! ([`check_safety_comments`]), failing when any `unsafe` block is left without
//! its comment.

use std::io;
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{format_ident, quote};

use crate::util::workspace_root;

/// A generator of checked-in files, and the command that reruns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Generator {
    /// `cargo xtask regen-bindings`: the bindings of `cudars-bindings`.
    Bindings,
    /// `cargo xtask codegen`: the pathfinder's catalogue.
    Catalog,
    /// `cargo xtask codegen`: the generated table of `docs/adding-a-library.md`.
    LibraryDocs,
    /// `cargo xtask codegen`: the `Send`/`Sync` assertions of
    /// `tests/tests/auto_traits.rs`, from docs/architecture.md's table.
    AutoTraits,
    /// `cargo xtask codegen`: the conformance-test column of `docs/parity.md`.
    ParityIndex,
}

impl Generator {
    /// The command that brings this generator's files up to date.
    pub(crate) fn command(self) -> &'static str {
        match self {
            Generator::Bindings => "cargo xtask fetch-headers && cargo xtask regen-bindings",
            Generator::Catalog
            | Generator::LibraryDocs
            | Generator::AutoTraits
            | Generator::ParityIndex => "cargo xtask codegen",
        }
    }
}

/// Why a generated file could not be brought up to date (or, in check mode, is not).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    /// `--check`: the file on disk differs from what the generator makes.
    #[error("{} is stale: run `{}` and commit the result", rel(.path), .generator.command())]
    Stale {
        /// The file.
        path: PathBuf,
        /// Who generates it.
        generator: Generator,
    },
    /// `--check`: a file in a generated folder that the generator no longer makes.
    #[error("{} is no longer generated: run `{}` (it removes the file) and commit the result", rel(.path), .generator.command())]
    Orphan {
        /// The file.
        path: PathBuf,
        /// Who generated it.
        generator: Generator,
    },
    /// Reading, writing or removing a file or folder failed.
    #[error("{what} {}", rel(.path))]
    Io {
        /// `reading`, `writing`, `creating`, `removing`.
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// `path` relative to the workspace root when it lies inside it.
fn rel(path: &Path) -> String {
    let root = workspace_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// What [`ensure_file_contents`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The file already held these contents.
    Unchanged,
    /// The file was written (it was missing or differed).
    Written,
}

/// Makes `path` hold `contents`: with `check`, fails ([`FileError::Stale`],
/// naming the file and the command that fixes it) when it does not; otherwise
/// writes it, only when it differs (line endings aside), creating its folder.
pub(crate) fn ensure_file_contents(
    generator: Generator,
    path: &Path,
    contents: &str,
    check: bool,
) -> Result<Outcome, FileError> {
    let io_err = |what: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| FileError::Io {
            what,
            path: p,
            source,
        }
    };
    match std::fs::read_to_string(path) {
        Ok(old) if normalize_newlines(&old) == normalize_newlines(contents) => {
            return Ok(Outcome::Unchanged);
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("reading", path)(e)),
    }
    if check {
        return Err(FileError::Stale {
            path: path.to_path_buf(),
            generator,
        });
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err("creating", dir))?;
    }
    std::fs::write(path, contents).map_err(io_err("writing", path))?;
    eprintln!("{}: updated {}", generator.command_name(), rel(path));
    Ok(Outcome::Written)
}

impl Generator {
    /// The xtask command alone (`regen-bindings`), for progress lines.
    fn command_name(self) -> &'static str {
        match self {
            Generator::Bindings => "regen-bindings",
            Generator::Catalog
            | Generator::LibraryDocs
            | Generator::AutoTraits
            | Generator::ParityIndex => "codegen",
        }
    }
}

fn normalize_newlines(s: &str) -> String {
    s.replace("\r\n", "\n")
}

/// Removes every file under `dir` whose path (relative to `dir`) is not in
/// `keep`, and the folders that leaves empty; with `check`, removes nothing and
/// returns each such file as [`FileError::Orphan`].
pub(crate) fn prune_dir(
    generator: Generator,
    dir: &Path,
    keep: &std::collections::BTreeSet<PathBuf>,
    check: bool,
) -> Result<Vec<FileError>, FileError> {
    let mut orphans = Vec::new();
    prune_walk(generator, dir, Path::new(""), keep, check, &mut orphans)?;
    Ok(orphans)
}

fn prune_walk(
    generator: Generator,
    dir: &Path,
    sub: &Path,
    keep: &std::collections::BTreeSet<PathBuf>,
    check: bool,
    orphans: &mut Vec<FileError>,
) -> Result<(), FileError> {
    let here = dir.join(sub);
    let entries = match std::fs::read_dir(&here) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(FileError::Io {
                what: "reading",
                path: here,
                source,
            });
        }
    };
    let mut names: Vec<PathBuf> = Vec::new();
    for e in entries {
        let e = e.map_err(|source| FileError::Io {
            what: "reading",
            path: here.clone(),
            source,
        })?;
        names.push(sub.join(e.file_name()));
    }
    names.sort();
    for relp in names {
        let full = dir.join(&relp);
        if full.is_dir() {
            prune_walk(generator, dir, &relp, keep, check, orphans)?;
            if !check && dir_is_empty(&full) {
                std::fs::remove_dir(&full).map_err(|source| FileError::Io {
                    what: "removing",
                    path: full.clone(),
                    source,
                })?;
            }
        } else if !keep.contains(&relp) {
            if check {
                orphans.push(FileError::Orphan {
                    path: full,
                    generator,
                });
            } else {
                std::fs::remove_file(&full).map_err(|source| FileError::Io {
                    what: "removing",
                    path: full.clone(),
                    source,
                })?;
                eprintln!("{}: removed {}", generator.command_name(), rel(&full));
            }
        }
    }
    Ok(())
}

fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut rd| rd.next().is_none())
}

/// `tokens` (a whole file) formatted by `prettyplease`, after `banner` (plain
/// `//` comment lines).
pub(crate) fn reformat(what: &str, banner: &str, tokens: TokenStream) -> Result<String, String> {
    let file: syn::File = syn::parse2(tokens)
        .map_err(|e| format!("the generated {what} does not parse as Rust: {e}"))?;
    let mut out = String::from(banner);
    out.push_str(&prettyplease::unparse(&file));
    Ok(out)
}

/// One `#[doc = " line"]` attribute per line of `text`, which `prettyplease`
/// prints as `/// line`.
pub(crate) fn doc_lines(text: &str) -> TokenStream {
    let attrs = doc_values(text).map(|l| quote! { #[doc = #l] });
    quote! { #(#attrs)* }
}

/// Like [`doc_lines`], as inner attributes (`//! line`).
pub(crate) fn inner_doc_lines(text: &str) -> TokenStream {
    let attrs = doc_values(text).map(|l| quote! { #![doc = #l] });
    quote! { #(#attrs)* }
}

/// Each line of `text` as a doc attribute's value: a space before it, as
/// `///` comments have, unless it is empty.
fn doc_values(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines().map(|l| {
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    })
}

/// The name of the marker macro; a marker that survived into a file would not
/// compile, since no such macro exists.
const MARKER: &str = "__cuda_rs_safety_comment";

/// Why the `// SAFETY:` comments of a generated file could not all be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SafetyCommentError {
    /// Fewer or more markers came out of formatting than went in.
    #[error(
        "{what}: {placed} `// SAFETY:` comments could be placed after formatting, but {expected} unsafe blocks were generated with one each"
    )]
    MarkerCount {
        /// The file being generated.
        what: String,
        /// How many markers were found on lines of their own.
        placed: usize,
        /// How many were emitted.
        expected: usize,
    },
    /// A marker that is not a statement on its own line after formatting.
    #[error(
        "{what}, line {line}: a `// SAFETY:` marker is not on a line of its own after formatting: {text}"
    )]
    Unplaced {
        /// The file being generated.
        what: String,
        /// 1-based.
        line: usize,
        /// The line.
        text: String,
    },
    /// A marker whose number names no comment text.
    #[error("{what}, line {line}: the `// SAFETY:` marker {index} names no comment")]
    UnknownMarker {
        /// The file being generated.
        what: String,
        /// 1-based.
        line: usize,
        /// The marker's number.
        index: usize,
    },
    /// An `unsafe` block whose line is not directly after a `// SAFETY:` comment.
    #[error(
        "{what}, line {line}: this `unsafe` block has no `// SAFETY:` comment on the line above: {text}"
    )]
    Missing {
        /// The file.
        what: String,
        /// 1-based.
        line: usize,
        /// The line.
        text: String,
    },
    /// Several `unsafe` blocks open on one line, so one comment cannot serve each.
    #[error(
        "{what}, line {line}: several `unsafe` blocks open on this line; each needs its own `// SAFETY:` comment: {text}"
    )]
    Crowded {
        /// The file.
        what: String,
        /// 1-based.
        line: usize,
        /// The line.
        text: String,
    },
    /// The lines opening `unsafe` blocks do not account for every block the
    /// parser sees (two on one line, or one spread over lines).
    #[error(
        "{what}: {blocks} unsafe blocks, but {lines} lines open one; each must open on its own line after its `// SAFETY:` comment"
    )]
    BlockCount {
        /// The file.
        what: String,
        /// Unsafe blocks, counted on the tokens.
        blocks: usize,
        /// Lines with `unsafe {`, counted on the text.
        lines: usize,
    },
    /// The text does not tokenize.
    #[error("{what} does not tokenize as Rust: {message}")]
    Lex {
        /// The file.
        what: String,
        /// The lexer's message.
        message: String,
    },
}

/// The `// SAFETY:` comments of one generated file: each [`marker`](Self::marker)
/// stands for one comment until [`place`](Self::place) writes them.
pub(crate) struct SafetyComments {
    texts: &'static [&'static str],
    emitted: usize,
}

impl SafetyComments {
    /// Markers will name one of `texts` (each the text after `// SAFETY: `).
    pub(crate) fn new(texts: &'static [&'static str]) -> Self {
        Self { texts, emitted: 0 }
    }

    /// A statement standing for `// SAFETY: <texts[index]>`, to put directly
    /// before the statement or tail expression that holds one `unsafe` block.
    pub(crate) fn marker(&mut self, index: usize) -> TokenStream {
        self.emitted += 1;
        let mac = format_ident!("{}", MARKER);
        let index = proc_macro2::Literal::usize_unsuffixed(index);
        quote! { #mac!(#index); }
    }

    /// Replaces every marker line of the formatted `text` by its comment, at
    /// the same indentation, then checks the result with
    /// [`check_safety_comments`]: every marker placed, none left, every
    /// `unsafe` block commented.
    pub(crate) fn place(&self, what: &str, text: &str) -> Result<String, SafetyCommentError> {
        let mut out = String::with_capacity(text.len() + self.emitted * 80);
        let mut placed = 0usize;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if !line.contains(MARKER) {
                out.push_str(line);
                out.push('\n');
                continue;
            }
            let indent = &line[..line.len() - trimmed.len()];
            let index = trimmed
                .strip_prefix(MARKER)
                .and_then(|r| r.strip_prefix("!("))
                .and_then(|r| r.strip_suffix(");"))
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| SafetyCommentError::Unplaced {
                    what: what.to_string(),
                    line: i + 1,
                    text: line.to_string(),
                })?;
            let comment = self
                .texts
                .get(index)
                .ok_or(SafetyCommentError::UnknownMarker {
                    what: what.to_string(),
                    line: i + 1,
                    index,
                })?;
            out.push_str(indent);
            out.push_str("// SAFETY: ");
            out.push_str(comment);
            out.push('\n');
            placed += 1;
        }
        if placed != self.emitted {
            return Err(SafetyCommentError::MarkerCount {
                what: what.to_string(),
                placed,
                expected: self.emitted,
            });
        }
        let blocks = check_safety_comments(what, &out)?;
        if blocks != self.emitted {
            return Err(SafetyCommentError::MarkerCount {
                what: what.to_string(),
                placed: blocks,
                expected: self.emitted,
            });
        }
        Ok(out)
    }
}

/// Checks that every `unsafe` block of `text` opens on a line of its own
/// (`unsafe {` once on it) directly after a `// SAFETY:` comment line, and
/// that those lines account for every `unsafe` block in the tokens. Returns
/// how many blocks there are.
pub(crate) fn check_safety_comments(what: &str, text: &str) -> Result<usize, SafetyCommentError> {
    let tokens: TokenStream =
        text.parse()
            .map_err(|e: proc_macro2::LexError| SafetyCommentError::Lex {
                what: what.to_string(),
                message: e.to_string(),
            })?;
    let blocks = count_unsafe_blocks(tokens);
    let mut lines = 0usize;
    let mut prev = "";
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with("//") {
            let here = trimmed.matches("unsafe {").count();
            if here > 1 {
                return Err(SafetyCommentError::Crowded {
                    what: what.to_string(),
                    line: i + 1,
                    text: line.to_string(),
                });
            }
            if here == 1 {
                if !prev.trim_start().starts_with("// SAFETY: ") {
                    return Err(SafetyCommentError::Missing {
                        what: what.to_string(),
                        line: i + 1,
                        text: line.to_string(),
                    });
                }
                lines += 1;
            }
        }
        prev = line;
    }
    if lines != blocks {
        return Err(SafetyCommentError::BlockCount {
            what: what.to_string(),
            blocks,
            lines,
        });
    }
    Ok(blocks)
}

/// `unsafe` followed by a brace group, at any depth.
fn count_unsafe_blocks(tokens: TokenStream) -> usize {
    let mut n = 0;
    let mut prev_unsafe = false;
    for t in tokens {
        match &t {
            TokenTree::Group(g) => {
                if prev_unsafe && g.delimiter() == Delimiter::Brace {
                    n += 1;
                }
                n += count_unsafe_blocks(g.stream());
                prev_unsafe = false;
            }
            TokenTree::Ident(i) => prev_unsafe = i == "unsafe",
            _ => prev_unsafe = false,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: &[&str] = &["first reason.", "second reason."];

    fn sample(c: &mut SafetyComments) -> TokenStream {
        let m0 = c.marker(0);
        let m1 = c.marker(1);
        quote! {
            /// Doc.
            pub unsafe fn f(p: *const u8) -> u8 {
                #m0
                let q = unsafe { p.add(1) };
                #m1
                unsafe { *q }
            }
        }
    }

    #[test]
    fn markers_become_comments_above_each_unsafe_block() {
        let mut c = SafetyComments::new(TEXTS);
        let text = reformat("sample", "// banner\n", sample(&mut c)).unwrap();
        let placed = c.place("sample", &text).unwrap();
        assert!(!placed.contains(MARKER), "{placed}");
        assert!(placed.starts_with("// banner\n"), "{placed}");
        let lines: Vec<&str> = placed.lines().map(str::trim).collect();
        let first = lines
            .iter()
            .position(|l| l.starts_with("let q = unsafe {"))
            .unwrap();
        assert_eq!(lines[first - 1], "// SAFETY: first reason.");
        let second = lines
            .iter()
            .position(|l| l.starts_with("unsafe { *q }"))
            .unwrap();
        assert_eq!(lines[second - 1], "// SAFETY: second reason.");
        assert_eq!(check_safety_comments("sample", &placed), Ok(2));
    }

    #[test]
    fn a_marker_lost_in_formatting_fails_loudly() {
        let mut c = SafetyComments::new(TEXTS);
        let text = reformat("sample", "", sample(&mut c)).unwrap();
        // Formatting that dropped the first marker's line.
        let lost: String = text
            .lines()
            .filter(|l| !l.contains(&format!("{MARKER}!(0)")))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = c.place("sample", &lost).unwrap_err();
        assert_eq!(
            err,
            SafetyCommentError::MarkerCount {
                what: "sample".into(),
                placed: 1,
                expected: 2
            }
        );
    }

    #[test]
    fn an_unsafe_block_without_a_marker_fails_loudly() {
        let mut c = SafetyComments::new(TEXTS);
        let m0 = c.marker(0);
        let tokens = quote! {
            pub unsafe fn f(p: *const u8) -> u8 {
                #m0
                let q = unsafe { p.add(1) };
                unsafe { *q }
            }
        };
        let text = reformat("sample", "", tokens).unwrap();
        let err = c.place("sample", &text).unwrap_err();
        assert!(
            matches!(err, SafetyCommentError::Missing { ref text, .. } if text.contains("unsafe { *q }")),
            "{err}"
        );
    }

    #[test]
    fn a_deleted_safety_comment_is_found() {
        let text = "fn f(p: *const u8) -> u8 {\n    // SAFETY: fine.\n    let q = unsafe { p.add(1) };\n    unsafe { *q }\n}\n";
        let err = check_safety_comments("f.rs", text).unwrap_err();
        assert_eq!(
            err,
            SafetyCommentError::Missing {
                what: "f.rs".into(),
                line: 4,
                text: "    unsafe { *q }".into()
            }
        );
        let two = "fn f() {\n    // SAFETY: fine.\n    unsafe { g(unsafe { h() }) }\n}\n";
        assert!(matches!(
            check_safety_comments("f.rs", two),
            Err(SafetyCommentError::Crowded { line: 3, .. })
        ));
    }

    #[test]
    fn ensure_file_contents_writes_only_what_changed_and_check_names_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("gen.rs");
        let g = Generator::Catalog;
        // Missing: check fails naming the file and the command; writing creates it.
        let err = ensure_file_contents(g, &path, "a\n", true).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("gen.rs") && msg.contains("cargo xtask codegen"),
            "{msg}"
        );
        assert!(!path.exists());
        assert_eq!(
            ensure_file_contents(g, &path, "a\n", false).unwrap(),
            Outcome::Written
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\n");
        // Same contents (line endings aside): nothing written, check passes.
        std::fs::write(&path, "a\r\n").unwrap();
        assert_eq!(
            ensure_file_contents(g, &path, "a\n", true).unwrap(),
            Outcome::Unchanged
        );
        assert_eq!(
            ensure_file_contents(g, &path, "a\n", false).unwrap(),
            Outcome::Unchanged
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\r\n");
        // Different: check fails and leaves the file alone; writing replaces it.
        assert!(matches!(
            ensure_file_contents(g, &path, "b\n", true),
            Err(FileError::Stale { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\r\n");
        assert_eq!(
            ensure_file_contents(g, &path, "b\n", false).unwrap(),
            Outcome::Written
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
    }

    #[test]
    fn prune_dir_removes_or_reports_what_is_no_longer_generated() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("api")).unwrap();
        std::fs::create_dir_all(d.join("old")).unwrap();
        std::fs::write(d.join("api").join("types.rs"), "").unwrap();
        std::fs::write(d.join("api.rs"), "").unwrap();
        std::fs::write(d.join("old").join("x.rs"), "").unwrap();
        let keep: std::collections::BTreeSet<PathBuf> = [PathBuf::from("api").join("types.rs")]
            .into_iter()
            .collect();
        let orphans = prune_dir(Generator::Bindings, d, &keep, true).unwrap();
        let shown: Vec<String> = orphans.iter().map(ToString::to_string).collect();
        assert_eq!(orphans.len(), 2, "{shown:?}");
        assert!(
            shown.iter().all(|s| s.contains("regen-bindings")),
            "{shown:?}"
        );
        assert!(d.join("api.rs").exists());
        assert!(
            prune_dir(Generator::Bindings, d, &keep, false)
                .unwrap()
                .is_empty()
        );
        assert!(!d.join("api.rs").exists());
        assert!(!d.join("old").exists());
        assert!(d.join("api").join("types.rs").exists());
    }
}
