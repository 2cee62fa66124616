//! `docs/parity.md` against the `cuda.core` 1.3.x reference list
//! (`docs/reference/cuda-core-1.3.x-api.txt`): one row per public name, under
//! its type, totals that add up, and Rust paths that exist in this crate's
//! sources. Needs no GPU; both documents are compiled in, the sources are read
//! from the checkout (without them, that one test prints `SKIPPED`).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const REFERENCE: &str = include_str!("../../../docs/reference/cuda-core-1.3.x-api.txt");
const PARITY: &str = include_str!("../../../docs/parity.md");

/// The statuses a row may have (before any "(in progress: …)").
const STATUSES: [&str; 4] = ["covered", "partial", "missing", "n/a"];

/// The quoted names in a Python list, `['a', 'b']`.
fn quoted(list: &str) -> Vec<String> {
    list.split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The reference's sections, in order: `cuda.core` (every top-level name), each
/// top-level type with members, then each listed module (`cuda.core.system`, …).
fn reference_sections() -> Vec<(String, Vec<String>)> {
    let mut top = Vec::new();
    let mut types = Vec::new();
    let mut modules = Vec::new();
    for line in REFERENCE.lines() {
        if let Some(rest) = line.strip_prefix("  ") {
            // `  Name: kind [members]`
            let (name, rest) = rest.split_once(": ").unwrap();
            let members = quoted(rest.split_once('[').unwrap().1);
            top.push(name.to_owned());
            if !members.is_empty() {
                types.push((name.to_owned(), members));
            }
        } else if line.starts_with("cuda.core.") && line.contains(": [") {
            let (name, rest) = line.split_once(": ").unwrap();
            modules.push((name.to_owned(), quoted(rest)));
        }
    }
    let mut all = vec![("cuda.core".to_owned(), top)];
    all.extend(types);
    all.extend(modules);
    all
}

/// One row of the parity table.
#[derive(Debug)]
struct Row {
    section: String,
    name: String,
    status: String,
    rust: String,
}

impl Row {
    /// The status without its "(in progress: …)" note.
    fn base_status(&self) -> &str {
        self.status.split(" (").next().unwrap()
    }
}

/// The first text between backticks in `s`.
fn first_code(s: &str) -> Option<&str> {
    s.split('`').nth(1)
}

/// The table rows of `docs/parity.md`, with the section (`## ` heading) each is in.
fn parity_rows() -> Vec<Row> {
    let mut section = None;
    let mut rows = Vec::new();
    for line in PARITY.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = Some(first_code(heading).unwrap().to_owned());
        } else if line.starts_with("| `") {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 3, "a row has three cells: {line}");
            rows.push(Row {
                section: section.clone().expect("a row before any section"),
                name: first_code(cells[0]).unwrap().to_owned(),
                status: cells[1].trim().to_owned(),
                rust: cells[2].trim().to_owned(),
            });
        }
    }
    rows
}

#[test]
fn every_reference_name_has_one_row_under_its_type() {
    let sections = reference_sections();
    assert_eq!(sections[0].0, "cuda.core");
    assert!(sections.iter().any(|(s, _)| s == "Buffer"));
    assert!(sections.iter().any(|(s, _)| s == "cuda.core.typing"));
    let rows = parity_rows();
    let mut by_section: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in &rows {
        by_section
            .entry(r.section.as_str())
            .or_default()
            .push(r.name.as_str());
    }
    for (section, members) in &sections {
        let documented = by_section.remove(section.as_str()).unwrap_or_default();
        assert_eq!(
            documented, *members,
            "section `{section}` of docs/parity.md must list the reference's names, in its order"
        );
    }
    assert!(
        by_section.is_empty(),
        "sections the reference does not have: {:?}",
        by_section.keys()
    );
}

#[test]
fn every_row_has_a_known_status_and_says_what_it_maps_to() {
    for r in parity_rows() {
        let what = format!("{}.{}", r.section, r.name);
        assert!(STATUSES.contains(&r.base_status()), "{what}: {}", r.status);
        let note = &r.status[r.base_status().len()..];
        assert!(
            note.is_empty() || (note.starts_with(" (in progress: ") && note.ends_with(')')),
            "{what}: {}",
            r.status
        );
        // Only a row waiting for work in progress may leave the Rust side empty.
        if note.is_empty() {
            assert!(!r.rust.is_empty(), "{what}: say what or why");
        }
        if matches!(r.base_status(), "covered" | "partial") {
            assert!(r.rust.contains('`'), "{what}: name the Rust item");
        }
    }
}

#[test]
fn the_totals_match_the_rows() {
    let rows = parity_rows();
    let count = |s: &str| rows.iter().filter(|r| r.base_status() == s).count();
    let in_progress = rows
        .iter()
        .filter(|r| r.status.contains("(in progress: "))
        .count();
    // Rows marked "(in progress: …)" are counted only while there are any.
    let marked = match in_progress {
        0 => String::new(),
        n => format!(" ({n} of them marked in progress)"),
    };
    let expected = format!(
        "**Totals: {} names: {} covered, {} partial, {} missing, {} n/a**{marked}.",
        rows.len(),
        count("covered"),
        count("partial"),
        count("missing"),
        count("n/a"),
    );
    assert!(
        PARITY.lines().any(|l| l == expected),
        "docs/parity.md's totals line should read:\n{expected}"
    );
}

/// Whether `s` is a Rust path: identifiers joined by `::`.
fn is_path(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|seg| {
            let mut chars = seg.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The names a line of Rust defines: items (`fn`, `struct`, `enum`, `trait`,
/// `type`, `mod`, `const`, `static`), public fields, enum variants and the last
/// name of a `pub use`.
fn defined_on(line: &str, out: &mut BTreeSet<String>) {
    let t = line.trim_start();
    let (public, rest) = match t.strip_prefix("pub") {
        Some(r) if r.starts_with(' ') || r.starts_with('(') => {
            let r = r.trim_start();
            let r = match r.strip_prefix('(') {
                Some(inner) => inner.split_once(')').map_or(inner, |x| x.1).trim_start(),
                None => r,
            };
            (true, r)
        }
        _ => (false, t),
    };
    let mut rest = rest;
    for q in ["const fn ", "unsafe fn ", "async fn ", "const unsafe fn "] {
        if let Some(r) = rest.strip_prefix(q) {
            rest = r;
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name.to_owned());
            }
            return;
        }
    }
    for kw in [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "mod ",
        "const ",
        "static ",
        "union ",
        "unsafe trait ",
    ] {
        if let Some(r) = rest.strip_prefix(kw) {
            let name = ident(r);
            if !name.is_empty() {
                out.insert(name.to_owned());
            }
            return;
        }
    }
    if public {
        if let Some(r) = rest.strip_prefix("use ") {
            let last = r.trim_end_matches(';').rsplit("::").next().unwrap_or("");
            out.insert(ident(last).to_owned());
            return;
        }
        // A public field: `pub name: Type`.
        let name = ident(rest);
        if !name.is_empty() && rest[name.len()..].starts_with(':') {
            out.insert(name.to_owned());
        }
        return;
    }
    // An enum variant: `Name,`, `Name(..)`, `Name {`, `Name = ..`.
    let name = ident(rest);
    if name.starts_with(|c: char| c.is_ascii_uppercase()) {
        let after = rest[name.len()..].trim_start();
        if after.starts_with(',')
            || after.starts_with('(')
            || after.starts_with('{')
            || after.starts_with('=')
        {
            out.insert(name.to_owned());
        }
    }
}

/// What the crate's sources define: every name, and the members (methods,
/// fields, variants) of each type, as far as a line-by-line reading tells.
#[derive(Default)]
struct Defined {
    names: BTreeSet<String>,
    /// Type name → member names; `*` holds what macros define for any type.
    members: BTreeMap<String, BTreeSet<String>>,
}

/// The type an item header opens (`impl<T> Foo<T> for Bar {` → `Bar`;
/// `pub struct Foo {` → `Foo`), `*` for a macro's `impl $t`.
fn opened_type(line: &str) -> Option<String> {
    let t = line.trim_start();
    let t = t.strip_prefix("pub ").unwrap_or(t);
    let t = t.strip_prefix("unsafe ").unwrap_or(t);
    if let Some(rest) = t.strip_prefix("impl") {
        if !(rest.starts_with(' ') || rest.starts_with('<')) {
            return None;
        }
        // Skip the impl's own generics, then take the self type.
        let mut rest = rest.trim_start();
        if rest.starts_with('<') {
            let mut depth = 0;
            let mut end = 0;
            for (i, c) in rest.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = rest[end..].trim_start();
        }
        let head = rest.split(" where").next().unwrap_or(rest);
        let self_ty = match head.split_once(" for ") {
            Some((_, ty)) => ty,
            None => head,
        };
        let self_ty = self_ty.trim().trim_start_matches("dyn ");
        if self_ty.starts_with('$') {
            return Some("*".to_owned());
        }
        let path = self_ty.split('<').next().unwrap_or(self_ty);
        let name = ident(path.rsplit("::").next().unwrap_or(path));
        return (!name.is_empty()).then(|| name.to_owned());
    }
    for kw in ["struct ", "enum ", "trait ", "union "] {
        if let Some(r) = t.strip_prefix(kw) {
            return Some(ident(r).to_owned());
        }
    }
    None
}

fn collect_defined(dir: &Path, out: &mut Defined) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_defined(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut current: Option<String> = None;
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                if let Some(ty) = opened_type(line) {
                    current = Some(ty);
                } else if line.starts_with("macro_rules!") {
                    current = Some("*".to_owned());
                }
                let mut here = BTreeSet::new();
                defined_on(line, &mut here);
                if let Some(ty) = &current {
                    // The header's own name is not a member.
                    let members = out.members.entry(ty.clone()).or_default();
                    members.extend(here.iter().filter(|n| *n != ty).cloned());
                }
                out.names.extend(here);
            }
        }
    }
}

impl Defined {
    /// Whether `path` names something defined: `Type::member` a member of that
    /// type (or one a macro defines), anything else by its last name, with a
    /// leading type checked to exist.
    fn has(&self, path: &str) -> bool {
        let segments: Vec<&str> = path.split("::").collect();
        let last = segments[segments.len() - 1];
        if !self.names.contains(last) {
            return false;
        }
        if segments.len() < 2 {
            return true;
        }
        let owner = segments[segments.len() - 2];
        if !owner.starts_with(|c: char| c.is_ascii_uppercase()) {
            // A module: the last name is enough.
            return self.names.contains(owner) || owner == "cudars_core";
        }
        let of = |t: &str| self.members.get(t).is_some_and(|m| m.contains(last));
        of(owner) || of("*")
    }
}

#[test]
fn item_headers_name_their_type() {
    for (line, ty) in [
        ("impl Buffer {", Some("Buffer")),
        ("impl<T: Pod> DeviceBuffer<T> {", Some("DeviceBuffer")),
        (
            "unsafe impl MemoryResource for DeviceMemoryResource {",
            Some("DeviceMemoryResource"),
        ),
        (
            "impl<'a> From<&'a Buffer> for crate::ArcView<u8> {",
            Some("ArcView"),
        ),
        ("        impl $t {", Some("*")),
        ("pub struct LaunchConfig {", Some("LaunchConfig")),
        ("pub enum Location {", Some("Location")),
        (
            "pub unsafe trait MemoryResource: fmt::Debug {",
            Some("MemoryResource"),
        ),
        ("    let imported = 1;", None),
        ("impls_are_not_impl();", None),
    ] {
        assert_eq!(opened_type(line).as_deref(), ty, "{line}");
    }
}

#[test]
fn definitions_are_recognised() {
    let mut out = BTreeSet::new();
    for line in [
        "    pub fn copy_from(&self) {",
        "pub unsafe fn from_raw(",
        "    pub(crate) const fn raw(self)",
        "pub struct Buffer {",
        "pub unsafe trait MemoryResource: Send {",
        "    pub ipc: bool,",
        "    HostNuma(i32),",
        "    Host,",
        "    Nvml {",
        "pub use cudars_bindings;",
        "pub mod system;",
        "    let x: u32 = 0;",
        "    fn private_helper() {}",
    ] {
        defined_on(line, &mut out);
    }
    let expected = [
        "Buffer",
        "Host",
        "HostNuma",
        "MemoryResource",
        "Nvml",
        "copy_from",
        "cudars_bindings",
        "from_raw",
        "ipc",
        "private_helper",
        "raw",
        "system",
    ];
    assert_eq!(out.iter().map(String::as_str).collect::<Vec<_>>(), expected);
}

#[test]
fn rust_paths_in_the_parity_table_exist() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if !src.is_dir() {
        println!("SKIPPED rust_paths_in_the_parity_table_exist: needs the cudars-core sources");
        return;
    }
    let mut defined = Defined::default();
    collect_defined(&src, &mut defined);
    let mut unknown = Vec::new();
    let mut checked = 0;
    for r in parity_rows().iter().filter(|r| r.base_status() != "n/a") {
        for code in r.rust.split('`').skip(1).step_by(2) {
            // Rooted in the raw bindings crate: not this crate's to define.
            if !is_path(code) || code.starts_with("cudars_bindings::") {
                continue;
            }
            checked += 1;
            // This crate by name.
            let code = code.strip_prefix("cudars_core::").unwrap_or(code);
            if !defined.has(code) {
                unknown.push(format!("{}.{}: `{code}`", r.section, r.name));
            }
        }
    }
    assert!(checked > 300, "only {checked} paths were checked");
    assert!(
        unknown.is_empty(),
        "docs/parity.md names Rust items that crates/cudars-core/src does not define:\n{}",
        unknown.join("\n")
    );
}

/// The non-comment lines of every `.rs` file under `dir`, joined; with
/// `unit_tests_only`, only the lines from a file's first `#[cfg(test)]` on
/// (the unit tests at the end of a source file).
fn rust_sources_under(dir: &Path, unit_tests_only: bool, out: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources_under(&path, unit_tests_only, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut in_tests = !unit_tests_only;
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let t = line.trim_start();
                in_tests |= t.starts_with("#[cfg(test)]");
                if in_tests && !t.starts_with("//") {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
}

/// Whether `word` occurs in `text` as a whole identifier, followed by one of
/// `after` (any character when `after` is empty).
fn has_word(text: &str, word: &str, after: &[&str]) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let start = from + i;
        let end = start + word.len();
        let before_ok =
            !word.starts_with(ident) || !text[..start].chars().next_back().is_some_and(ident);
        let rest = &text[end..];
        let after_ok = !rest.chars().next().is_some_and(ident)
            && (after.is_empty() || after.iter().any(|a| rest.starts_with(a)));
        if before_ok && after_ok {
            return true;
        }
        from = end;
    }
    false
}

/// Whether the test and example code `text` uses the item `path` names: a type
/// or module item by its name; `Type::member` as `Type::member`, or the member
/// called or read through a value (`.member(`, `.member`), or set as a field
/// (`member:`, `member,` in a struct literal's shorthand is not counted).
fn is_used(text: &str, path: &str) -> bool {
    let segments: Vec<&str> = path.split("::").collect();
    let last = segments[segments.len() - 1];
    if segments.len() == 1 {
        return has_word(text, last, &[]);
    }
    let owner = segments[segments.len() - 2];
    if !owner.starts_with(|c: char| c.is_ascii_uppercase()) {
        // A module's item, by its name.
        return has_word(text, last, &[]);
    }
    has_word(text, &format!("{owner}::{last}"), &[])
        || has_word(text, &format!(".{last}"), &[])
        || has_word(text, last, &[": "])
}

#[test]
fn use_detection_is_not_a_substring_match() {
    let text = "let b = pool.allocate_more(4);\nlet o = Foo { ipc_enabled: true };\nBuffer::from_raw_with_owner(p)\n";
    assert!(!is_used(text, "Buffer::allocate"));
    assert!(is_used(text, "Pool::allocate_more"));
    assert!(is_used(text, "Options::ipc_enabled"));
    assert!(!is_used(text, "Buffer::from_raw"));
    assert!(is_used(text, "Buffer::from_raw_with_owner"));
    assert!(is_used(text, "Buffer"));
    assert!(!is_used(text, "Buff"));
    assert!(is_used(text, "Foo"));
    assert!(!is_used(text, "system::driver_version"));
}

/// Every covered row's Rust item (the first Rust path in its last column), and
/// every other member (`Type::member`) the row names, is used by at least one
/// test or example of this crate (its integration tests, its examples, or the
/// unit tests at the end of its source files): a row is covered only when what
/// it names is exercised, not merely defined.
#[test]
fn every_covered_row_is_exercised_by_a_test_or_an_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join("tests").is_dir() || !root.join("examples").is_dir() {
        println!(
            "SKIPPED every_covered_row_is_exercised: needs the cudars-core tests and examples"
        );
        return;
    }
    let mut text = String::new();
    rust_sources_under(&root.join("tests"), false, &mut text);
    rust_sources_under(&root.join("examples"), false, &mut text);
    rust_sources_under(&root.join("src"), true, &mut text);
    let mut unused = Vec::new();
    let mut checked = 0;
    for r in parity_rows()
        .iter()
        .filter(|r| r.base_status() == "covered")
    {
        let paths: Vec<&str> = r
            .rust
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|c| is_path(c) && !c.starts_with("cudars_bindings::"))
            .map(|c| c.strip_prefix("cudars_core::").unwrap_or(c))
            .collect();
        let Some(first) = paths.first() else {
            unused.push(format!("{}.{}: names no Rust item", r.section, r.name));
            continue;
        };
        checked += 1;
        // The row's item, and every member (`Type::member`) it names besides:
        // a type named only for its shape is exercised through its members.
        let is_member = |p: &&&str| {
            let segments: Vec<&str> = p.split("::").collect();
            segments.len() >= 2
                && segments[segments.len() - 2].starts_with(|c: char| c.is_ascii_uppercase())
        };
        for path in std::iter::once(first).chain(paths.iter().skip(1).filter(is_member)) {
            if !is_used(&text, path) {
                unused.push(format!("{}.{}: `{path}`", r.section, r.name));
            }
        }
    }
    assert!(checked > 300, "only {checked} rows were checked");
    assert!(
        unused.is_empty(),
        "covered rows whose Rust item no test or example of cudars-core uses \
         ({} of {checked}):\n{}",
        unused.len(),
        unused.join("\n")
    );
}
