//! Tidy checks, without a GPU, in the spirit of rust-analyzer's:
//!
//! - The soundness contract's paper trail: every `unsafe impl` of a
//!   thread-safety or crate contract trait in the safe crates, and every safe
//!   host view, names the rule of the soundness contract (`docs/architecture.md`,
//!   "The soundness contract") that it relies on, and every rule it names exists.
//! - Files a newcomer can hold in their head: no hand-written source file passes
//!   [`MAX_LINES`] lines, but for the [`LONG_FILES`] listed with a reason.
//! - cudars-core's internal imports name an item by the module that defines it,
//!   never through a root re-export (docs/architecture.md, "Floors of cudars-core").

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

/// The crates whose `unsafe impl`s the contract covers (the pathfinder's loader
/// handles and the generated bindings are outside it).
const CRATES: &[&str] = &[
    "cudars-core",
    "cudars-blas",
    "cudars-rand",
    "cudars-solver",
    "cudars-fft",
    "cudars-nccl",
    "cudars-file",
    "cudars-nvtx",
];

/// Traits whose `unsafe impl` must name a rule: thread safety, and the crate's
/// own unsafe traits.
const TRAITS: &[&str] = &[
    "Send",
    "Sync",
    "MemoryResource",
    "KernelArg",
    "Param",
    "Signature",
];

/// The safe host views: functions that hand out a host reference to memory the
/// device can reach, each with the file that defines it.
const HOST_VIEWS: &[(&str, &str)] = &[
    (
        "crates/cudars-core/src/memory/buffer.rs",
        "pub fn host_slice_mut",
    ),
    (
        "crates/cudars-core/src/memory/pinned_buffer.rs",
        "pub fn as_slice",
    ),
    (
        "crates/cudars-core/src/memory/pinned_buffer.rs",
        "pub fn as_mut_slice",
    ),
    (
        "crates/cudars-core/src/memory/pinned_buffer.rs",
        "pub fn launch_host_func_with_mut",
    ),
    (
        "crates/cudars-core/src/memory/pinned_buffer.rs",
        "pub fn launch_host_func_with<",
    ),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The numbers of the rules `docs/architecture.md` lists under "The soundness
/// contract".
fn contract_rules() -> Vec<u32> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc
        .find("### The soundness contract")
        .expect("docs/architecture.md has no \"### The soundness contract\" section");
    let section = &doc[start..];
    let end = section[3..].find("\n### ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.split_once(". **")?;
            let _ = rest;
            n.trim().parse().ok()
        })
        .collect()
}

/// The rule numbers a comment names: "rule 5", "rules 1 and 9", "rules 1, 2 and 4".
fn cited_rules(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("rule") {
        rest = &rest[i + 4..];
        let tail = rest.strip_prefix('s').unwrap_or(rest);
        // Numbers separated by spaces, commas and "and".
        for word in tail.split_whitespace() {
            let w = word.trim_matches(|c: char| c == ',' || c == '.' || c == ')' || c == ';');
            if w == "and" {
                continue;
            }
            match w.parse::<u32>() {
                Ok(n) => out.push(n),
                Err(_) => break,
            }
        }
    }
    out
}

/// The `//` comment lines right above line `i` (attributes skipped).
fn comment_above(lines: &[&str], i: usize) -> String {
    let mut j = i;
    let mut block = Vec::new();
    while j > 0 {
        j -= 1;
        let t = lines[j].trim();
        if t.starts_with("//") {
            block.push(t);
        } else if t.starts_with("#[") {
            continue;
        } else {
            break;
        }
    }
    block.reverse();
    block.join(" ")
}

#[test]
fn the_contract_lists_its_rules_in_order() {
    let rules = contract_rules();
    assert!(
        rules.len() >= 10,
        "only {} rules found: {rules:?}",
        rules.len()
    );
    let expected: Vec<u32> = (1..=rules.len() as u32).collect();
    assert_eq!(rules, expected, "the rules are not numbered 1, 2, 3, …");
}

#[test]
fn every_unsafe_impl_names_the_rule_it_relies_on() {
    let rules = contract_rules();
    let mut missing = Vec::new();
    let mut checked = 0;
    for c in CRATES {
        let mut files = Vec::new();
        rust_files(&root().join("crates").join(c).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                let t = l.trim_start();
                let Some(rest) = t.strip_prefix("unsafe impl") else {
                    continue;
                };
                // `unsafe impl<T: Pod> Send for …`: the trait is the word before `for`.
                let rest = rest.split(" for ").next().unwrap_or("");
                let name = rest
                    .rsplit(|c: char| c.is_whitespace() || c == '>' || c == ':')
                    .next()
                    .unwrap_or("");
                if !TRAITS.contains(&name) {
                    continue;
                }
                checked += 1;
                let comment = comment_above(&lines, i);
                let cited = cited_rules(&comment);
                let at = format!("{}:{}", f.display(), i + 1);
                if !comment.contains("SAFETY:") && !comment.contains("Soundness contract") {
                    missing.push(format!("{at}: no SAFETY comment"));
                } else if cited.is_empty() {
                    missing.push(format!("{at}: names no rule of the soundness contract"));
                } else if let Some(n) = cited.iter().find(|n| !rules.contains(n)) {
                    missing.push(format!("{at}: names rule {n}, which the contract lacks"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} unsafe impls found: is the scan broken?"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_safe_host_view_names_its_rule() {
    let rules = contract_rules();
    for (file, sig) in HOST_VIEWS {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.trim_start().starts_with(sig))
            .unwrap_or_else(|| panic!("{file}: `{sig}` not found"));
        let cited = cited_rules(&comment_above(&lines, i));
        assert!(
            cited.iter().any(|n| rules.contains(n)),
            "{file}: `{sig}` names no rule of the soundness contract in its docs"
        );
    }
}

#[test]
fn cited_rules_are_read_as_written() {
    assert_eq!(cited_rules("// Soundness contract: rule 11."), [11]);
    assert_eq!(cited_rules("rules 1 and 9."), [1, 9]);
    assert_eq!(cited_rules("(rules 1, 2 and 4 (frees wait))"), [1, 2, 4]);
    assert_eq!(cited_rules("no rules here"), [] as [u32; 0]);
}

/// The modules `lib.rs` declares: the only names that may follow `crate::`
/// inside cudars-core.
fn root_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').trim().to_string())
        })
        .collect()
}

/// Whether the `crate::` that `after` follows is the target of a doc link (`](`).
fn rest_before_is_doc_link(code: &str, after: &str) -> bool {
    let at = code.len() - after.len() - "crate::".len();
    code[..at].ends_with("](")
}

/// Architecture Invariant (docs/architecture.md, "Floors of cudars-core"): inside
/// cudars-core an item is named by the module that defines it, never through a root
/// re-export: every `crate::` path in its sources (comments aside) starts with a
/// module `lib.rs` declares, and so does every entry of a `use crate::{…}` group.
#[test]
fn cudars_core_imports_by_module_path_not_through_the_root() {
    let src = root().join("crates/cudars-core/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules = root_modules(&lib);
    assert!(
        modules.iter().any(|m| m == "memory"),
        "lib.rs's modules not found"
    );
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("src/lib.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        // Comments aside (a doc link may name a public path).
        let code: String = text
            .lines()
            .map(|l| match l.find("//") {
                Some(i) => &l[..i],
                None => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let mut rest = code.as_str();
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().last();
            let after = &rest[i + "crate::".len()..];
            rest = after;
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // another word ending in `crate`
            }
            if rest_before_is_doc_link(&code, after) {
                continue; // a doc link written in a string (`[x](crate::X)`)
            }
            let heads: Vec<String> = if let Some(group) = after.strip_prefix('{') {
                // The entries of the group at its top level.
                let mut depth = 0;
                let mut entries = vec![String::new()];
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => entries.push(String::new()),
                        _ => {}
                    }
                    if depth == 0 && c != ',' {
                        entries.last_mut().unwrap().push(c);
                    }
                }
                entries
                    .iter()
                    .map(|e| e.trim().split("::").next().unwrap_or("").trim().to_string())
                    .filter(|e| !e.is_empty())
                    .collect()
            } else {
                vec![
                    after
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect(),
                ]
            };
            for h in heads {
                if h != "self" && !modules.contains(&h) {
                    bad.push(format!("{rel}: crate::{h}"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "cudars-core names these items through lib.rs's re-exports; name them by the \
         module that defines them (crate::module::Item):\n{}",
        bad.join("\n")
    );
}

/// The most lines a hand-written, non-test source file may have: past it, split
/// the file along its seams (docs/architecture.md: each major type in its own
/// module).
const MAX_LINES: usize = 1000;

/// The source files allowed past [`MAX_LINES`], each with why. An entry that is
/// no longer needed (the file is gone, or back within the limit) fails the
/// check, so the list only shrinks.
const LONG_FILES: &[(&str, &str)] = &[];

/// Whether `rel` (relative to the workspace root, `/`-separated) is test code:
/// the `tests` package, a crate's `tests/` folder, a unit-test module file
/// (`tests.rs`, or anything under a `tests/` folder of `src/`).
fn is_test_file(rel: &str) -> bool {
    rel.split('/').any(|c| c == "tests") || rel.ends_with("/tests.rs")
}

/// Whether `text` is generated code: `// @generated` in its first lines, as
/// the generators (`cargo xtask codegen`, `cargo xtask regen-bindings`) write it.
fn is_generated(text: &str) -> bool {
    text.lines().take(3).any(|l| l.contains("@generated"))
}

/// Every hand-written, non-test `.rs` file of the workspace's crates and
/// xtask, relative to the root, with its line count.
fn source_files() -> Vec<(String, usize)> {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if is_test_file(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        if is_generated(&text) {
            continue;
        }
        out.push((rel, text.lines().count()));
    }
    out.sort();
    out
}

/// Architecture Invariant: no hand-written, non-test source file passes
/// [`MAX_LINES`] lines, but for the [`LONG_FILES`], each with a reason; and
/// every exception is still needed.
#[test]
fn no_source_file_is_too_long() {
    let files = source_files();
    assert!(
        files.len() > 100,
        "only {} source files found: is the scan broken?",
        files.len()
    );
    let mut problems = Vec::new();
    for (rel, lines) in &files {
        if *lines > MAX_LINES && !LONG_FILES.iter().any(|(f, _)| f == rel) {
            problems.push(format!(
                "{rel}: {lines} lines, more than {MAX_LINES}: split it along its seams \
                 (or, with a reason, add it to LONG_FILES in tests/tests/tidy.rs)"
            ));
        }
    }
    for (i, (file, why)) in LONG_FILES.iter().enumerate() {
        if why.trim().is_empty() {
            problems.push(format!("LONG_FILES: {file} gives no reason"));
        }
        if LONG_FILES[..i].iter().any(|(f, _)| f == file) {
            problems.push(format!("LONG_FILES: {file} is listed twice"));
        }
        match files.iter().find(|(f, _)| f == file) {
            None => problems.push(format!(
                "stale exception: {file} ({why}) is no longer a hand-written source file \
                 (moved, removed, generated or a test): remove it from LONG_FILES"
            )),
            Some((_, lines)) if *lines <= MAX_LINES => problems.push(format!(
                "stale exception: {file} ({why}) has {lines} lines, within {MAX_LINES}: \
                 remove it from LONG_FILES"
            )),
            Some(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn test_and_generated_files_are_told_apart() {
    assert!(is_test_file("tests/src/lib.rs"));
    assert!(is_test_file("crates/cudars-core/tests/gpu.rs"));
    assert!(is_test_file(
        "crates/cudars-core-macros/src/cparse/tests.rs"
    ));
    assert!(!is_test_file("crates/cudars-core/src/lib.rs"));
    assert!(!is_test_file("xtask/src/bindings/parse.rs"));
    assert!(is_generated("// @generated by `cargo xtask codegen`\n"));
    assert!(!is_generated("//! Hand-written.\nfn main() {}\n"));
}

/// The crates whose public types the `Send`/`Sync` table of
/// docs/architecture.md covers ("Send and Sync of every public type").
const AUTO_TRAIT_CRATES: &[&str] = &[
    "cudars-pathfinder",
    "cudars-core",
    "cudars-blas",
    "cudars-rand",
    "cudars-solver",
    "cudars-fft",
    "cudars-nccl",
    "cudars-file",
    "cudars-nvtx",
];

/// The `pub struct`/`pub enum`/`pub union` items of `text`, by name: items of
/// `#[cfg(test)]` and `#[cfg(loom)]` inline modules, and comments, left out.
/// (The workspace denies `unreachable_pub` in CI, so each is reachable from its
/// crate's root, or a sealed trait's, which its row says.)
fn public_types(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_to: Option<String> = None;
    let mut test_attr = false;
    for line in text.lines() {
        if let Some(end) = &skip_to {
            if line.trim_end() == end {
                skip_to = None;
            }
            continue;
        }
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") || t.starts_with("#[cfg(loom)]") {
            test_attr = true;
            continue;
        }
        let indent = &line[..line.len() - t.len()];
        if test_attr && (t.starts_with("mod ") || t.starts_with("pub(crate) mod ")) {
            if t.ends_with('{') {
                skip_to = Some(format!("{indent}}}"));
            }
            test_attr = false;
            continue;
        }
        if !t.starts_with("#[") {
            test_attr = false;
        }
        for kw in ["pub struct ", "pub enum ", "pub union "] {
            if let Some(rest) = t.strip_prefix(kw) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The rows of the table: (crate, type name), read from the type column's
/// path (`cudars_fft::Plan<f32>`: `cudars-fft`, `Plan`).
fn auto_trait_rows() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let begin = "<!-- begin auto-traits table";
    let start = doc
        .find(begin)
        .expect("docs/architecture.md has no auto-traits table");
    let end = start + doc[start..].find("<!-- end auto-traits table -->").unwrap();
    doc[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| {
            let path = l.split('`').next().unwrap();
            let path = path.split('<').next().unwrap();
            let krate = path.split("::").next().unwrap().replace('_', "-");
            let name = path.rsplit("::").next().unwrap().to_owned();
            (krate, name)
        })
        .collect()
}

/// Rule 11: every public type of the safe crates has a row in the `Send`/`Sync`
/// table (whose assertions `tests/tests/auto_traits.rs` makes, generated by
/// `cargo xtask codegen`), and every row names a public type.
#[test]
fn every_public_type_has_a_send_and_sync_row() {
    let mut found = Vec::new();
    for c in AUTO_TRAIT_CRATES {
        let mut files = Vec::new();
        rust_files(&root().join("crates").join(c).join("src"), &mut files);
        files.sort();
        for f in files {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&f).unwrap();
            if is_test_file(&rel) {
                continue;
            }
            for name in public_types(&text) {
                found.push(((c.to_string(), name), rel.clone()));
            }
        }
    }
    assert!(
        found.len() > 200,
        "only {} public types: is the scan broken?",
        found.len()
    );
    let mut rows = auto_trait_rows();
    let mut missing = Vec::new();
    for ((krate, name), file) in &found {
        match rows.iter().position(|(k, n)| k == krate && n == name) {
            Some(i) => {
                rows.swap_remove(i);
            }
            None => missing.push(format!(
                "{file}: `{name}` has no row in the Send/Sync table of docs/architecture.md \
                 (\"Send and Sync of every public type\"): add one with its reason, then run \
                 `cargo xtask codegen`"
            )),
        }
    }
    for (krate, name) in rows {
        missing.push(format!(
            "docs/architecture.md: the Send/Sync row of `{name}` ({krate}) names no public type"
        ));
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn public_types_are_read_as_written() {
    let text = "pub struct A<T> {\n}\n/// pub struct NotMe\npub(crate) struct B;\n\
                #[cfg(test)]\nmod tests {\n    pub struct C;\n}\n    pub enum D {}\npub union E {}\n";
    assert_eq!(public_types(text), ["A", "D", "E"]);
}

/// The library crates, whose handles' `Drop`s must defer on a driver callback
/// thread (rule 6).
const LIBRARY_CRATES: &[&str] = &[
    "cudars-blas",
    "cudars-rand",
    "cudars-solver",
    "cudars-fft",
    "cudars-nccl",
    "cudars-file",
    "cudars-nvtx",
];

/// The `Drop`s of the library crates that need not go through
/// `cudars_core::release_or_defer`, each with why (file, type, reason). An entry
/// whose `Drop` is gone, or that calls it after all, fails the check.
const DROPS_THAT_CALL_NO_CUDA: &[(&str, &str, &str)] = &[
    (
        "crates/cudars-blas/src/lt.rs",
        "Guard",
        "a cuBLASLt descriptor (host memory; its destroy calls no CUDA), made and dropped \
         inside one `matmul` call, on its caller's thread",
    ),
    (
        "crates/cudars-nccl/src/comm.rs",
        "End",
        "ends a NCCL group on the thread that started it, inside `grouped_status` (reached \
         only by a panic there)",
    ),
    (
        "crates/cudars-nccl/src/types.rs",
        "CustomOp",
        "`!Send` (it borrows a `!Sync` `Communicator`): dropped on the thread that made it \
         with a NCCL call, never handed to a driver callback",
    ),
    (
        "crates/cudars-file/src/handle.rs",
        "Transfer",
        "frees host memory (a `Box`): no CUDA or cuFile call",
    ),
    (
        "crates/cudars-nvtx/src/range.rs",
        "ScopedRange",
        "an NVTX pop: NVTX is not CUDA, and any thread may call it",
    ),
    (
        "crates/cudars-nvtx/src/range.rs",
        "Range",
        "an NVTX range end: NVTX is not CUDA, and any thread may call it",
    ),
    (
        "crates/cudars-nvtx/src/domain.rs",
        "Domain",
        "an NVTX domain destroy: NVTX is not CUDA, and any thread may call it",
    ),
];

/// Each `impl … Drop for Type` of `text`: the type's name and the impl's text.
fn drop_impls(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if !t.starts_with("impl") {
            continue;
        }
        let Some((_, after)) = t.split_once(" Drop for ") else {
            continue;
        };
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = &l[..l.len() - t.len()];
        let end = format!("{indent}}}");
        let body: Vec<&str> = lines[i..]
            .iter()
            .copied()
            .take_while(|x| x.trim_end() != end)
            .collect();
        out.push((name, body.join("\n")));
    }
    out
}

/// Rule 6: every `Drop` of the library crates destroys through
/// `cudars_core::release_or_defer` (run at once, or deferred on a driver
/// callback thread, where CUDA calls are forbidden), but for the few listed
/// with a reason in [`DROPS_THAT_CALL_NO_CUDA`].
#[test]
fn every_library_drop_goes_through_release_or_defer() {
    let mut problems = Vec::new();
    let mut seen_exempt = Vec::new();
    let mut checked = 0;
    for c in LIBRARY_CRATES {
        let mut files = Vec::new();
        rust_files(&root().join("crates").join(c).join("src"), &mut files);
        for f in files {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&f).unwrap();
            for (name, body) in drop_impls(&text) {
                checked += 1;
                let calls = body.contains("release_or_defer(");
                let exempt = DROPS_THAT_CALL_NO_CUDA
                    .iter()
                    .find(|(file, ty, _)| *file == rel && *ty == name);
                match (calls, exempt) {
                    (true, None) => {}
                    (false, Some(_)) => seen_exempt.push((rel.clone(), name)),
                    (true, Some(_)) => problems.push(format!(
                        "{rel}: `{name}`'s Drop calls release_or_defer: take it off \
                         DROPS_THAT_CALL_NO_CUDA"
                    )),
                    (false, None) => problems.push(format!(
                        "{rel}: `{name}`'s Drop does not call `cudars_core::release_or_defer`: \
                         a library handle may be dropped on a driver callback thread, where \
                         CUDA calls are forbidden (rule 6 of the soundness contract); \
                         destroy through it, or, if the Drop calls no CUDA, list it with a \
                         reason in DROPS_THAT_CALL_NO_CUDA"
                    )),
                }
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} Drop impls found: is the scan broken?"
    );
    for (file, ty, why) in DROPS_THAT_CALL_NO_CUDA {
        if why.trim().is_empty() {
            problems.push(format!(
                "DROPS_THAT_CALL_NO_CUDA: {file} `{ty}` gives no reason"
            ));
        }
        if !seen_exempt.iter().any(|(f, n)| f == file && n == ty) {
            problems.push(format!(
                "DROPS_THAT_CALL_NO_CUDA: {file} has no Drop of `{ty}` (or it calls \
                 release_or_defer): remove the entry"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn drop_impls_are_read_as_written() {
    let text = "impl<T: Float> Drop for Plan<T>\nwhere\n    X: Y,\n{\n    fn drop(&mut self) {\n        \
                release_or_defer(a);\n    }\n}\nimpl Drop for B {\n    fn drop(&mut self) {}\n}\n";
    let d = drop_impls(text);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].0, "Plan");
    assert!(d[0].1.contains("release_or_defer("));
    assert_eq!(d[1].0, "B");
    assert!(!d[1].1.contains("release_or_defer("));
}
