//! The conformance manifest (`docs/reference/cuda-core-tests-manifest.toml`) against
//! the pinned list of `cuda.core`'s test ids (`docs/reference/cuda-core-tests.txt`):
//! every id of the list has exactly one entry and no entry names another id; a
//! ported entry names a `#[test]` function its file defines; a deliberate
//! difference links a section of the porting guide; and the numbers at the top of
//! `docs/parity.md` are the manifest's. Needs no GPU; the documents are compiled
//! in, the Rust test files are read from the checkout (without them, that one test
//! prints `SKIPPED`). Each test prints the counts.


use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const LIST: &str = include_str!("../../../../docs/reference/cuda-core-tests.txt");
const MANIFEST: &str = include_str!("../../../../docs/reference/cuda-core-tests-manifest.toml");
const PORTING: &str = include_str!("../../../../docs/porting-from-python.md");
const PARITY: &str = include_str!("../../../../docs/parity.md");

/// Where ported tests live, as a manifest entry spells it.
const RUST_TESTS: &str = "crates/cudars-core/tests/conformance/";
/// The one section of the porting guide that `deliberate` entries link into.
const GUIDE: &str = "docs/porting-from-python.md#";

/// What a manifest entry says of one test id.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    /// `crates/cudars-core/tests/<file>.rs::<function>`.
    Ported { file: String, function: String },
    /// `n/a python-object-model`.
    PythonObjectModel,
    /// `n/a cython`.
    Cython,
    /// `n/a deliberate docs/porting-from-python.md#<anchor>`.
    Deliberate { anchor: String },
    /// `todo`.
    Todo,
}

impl Status {
    fn parse(value: &str) -> Result<Status, String> {
        match value {
            "todo" => return Ok(Status::Todo),
            "n/a python-object-model" => return Ok(Status::PythonObjectModel),
            "n/a cython" => return Ok(Status::Cython),
            _ => {}
        }
        if let Some(link) = value.strip_prefix("n/a deliberate ") {
            let anchor = link.strip_prefix(GUIDE).ok_or_else(|| {
                format!("a deliberate difference links {link:?}, not {GUIDE}<section>")
            })?;
            return Ok(Status::Deliberate {
                anchor: anchor.to_owned(),
            });
        }
        if let Some(rest) = value.strip_prefix(RUST_TESTS) {
            let (file, function) = rest
                .split_once("::")
                .ok_or_else(|| format!("{value:?} names no test function (<file>.rs::<fn>)"))?;
            let ok_file = file.ends_with(".rs") && !file.contains('/') && file.len() > 3;
            let ok_fn = !function.is_empty()
                && function
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok_file || !ok_fn {
                return Err(format!("{value:?} is not {RUST_TESTS}<file>.rs::<test fn>"));
            }
            return Ok(Status::Ported {
                file: file.to_owned(),
                function: function.to_owned(),
            });
        }
        Err(format!("unknown status {value:?}"))
    }
}

/// The ids of the pinned list, in its order (a `[*]` line's ` # why` cut off).
fn listed_ids() -> Vec<&'static str> {
    LIST.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split(" # ").next().unwrap())
        .collect()
}

/// One TOML basic string at the start of `s` (`\\` and `\"` are the escapes the
/// manifest uses): its text and what follows it.
fn basic_string(s: &str) -> Result<(String, &str), String> {
    let body = s
        .strip_prefix('"')
        .ok_or_else(|| format!("expected '\"' at {s:?}"))?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &body[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                other => return Err(format!("unsupported escape {other:?} in {s:?}")),
            },
            c => out.push(c),
        }
    }
    Err(format!("unterminated string {s:?}"))
}

/// The manifest's entries, in its order; a malformed line or a repeated id is an error.
fn manifest() -> Result<Vec<(String, Status)>, String> {
    let body = MANIFEST
        .split_once("\n[tests]\n")
        .ok_or("the manifest has no [tests] table")?
        .1;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (n, line) in body.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("[tests] line {}: {e}", n + 1);
        let (id, rest) = basic_string(line).map_err(at)?;
        let rest = rest
            .strip_prefix(" = ")
            .ok_or_else(|| at(format!("expected ' = ' after {id:?}")))?;
        let (value, tail) = basic_string(rest).map_err(at)?;
        if !tail.trim().is_empty() {
            return Err(at(format!("trailing text {tail:?}")));
        }
        let status = Status::parse(&value).map_err(at)?;
        if !seen.insert(id.clone()) {
            return Err(at(format!("{id:?} has two entries")));
        }
        out.push((id, status));
    }
    Ok(out)
}

/// GitHub's anchor for a Markdown heading (its `#`s included or not): lower case,
/// punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of the porting guide's headings (a repeated one numbered as
/// GitHub does: `-1`, `-2`, …).
fn guide_anchors() -> BTreeSet<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in PORTING.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line);
        let n = counts.entry(base.clone()).or_default();
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The counts the manifest gives.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    ids: usize,
    ported: usize,
    python_object_model: usize,
    cython: usize,
    deliberate: usize,
    todo: usize,
}

impl Counts {
    fn of(entries: &[(String, Status)]) -> Counts {
        let mut c = Counts {
            ids: entries.len(),
            ..Counts::default()
        };
        for (_, s) in entries {
            match s {
                Status::Ported { .. } => c.ported += 1,
                Status::PythonObjectModel => c.python_object_model += 1,
                Status::Cython => c.cython += 1,
                Status::Deliberate { .. } => c.deliberate += 1,
                Status::Todo => c.todo += 1,
            }
        }
        c
    }

    fn na(&self) -> usize {
        self.python_object_model + self.cython + self.deliberate
    }

    fn print(&self) {
        println!(
            "cuda.core conformance: {} test ids: {} ported, {} n/a ({} python-object-model, \
             {} deliberate, {} cython), {} todo",
            self.ids,
            self.ported,
            self.na(),
            self.python_object_model,
            self.deliberate,
            self.cython,
            self.todo
        );
    }
}

/// `1,849` for 1849: the numbers in `docs/parity.md` are written with separators.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_pinned_list_is_sorted_and_names_its_commit() {
    let ids = listed_ids();
    assert!(!ids.is_empty(), "the pinned list is empty");
    let header = LIST.lines().next().unwrap();
    assert!(
        header.contains("at commit ") && header.split("at commit ").nth(1).unwrap().len() >= 40,
        "the list's first line names the pinned commit: {header:?}"
    );
    for pair in ids.windows(2) {
        assert!(
            pair[0] < pair[1],
            "the list is not sorted or repeats an id at {:?}",
            pair[1]
        );
    }
    for id in &ids {
        assert!(id.contains(".py::"), "{id:?} is not <file>::<test>");
    }
    Counts::of(&manifest().unwrap()).print();
}

#[test]
fn every_listed_id_has_exactly_one_entry() {
    let entries = manifest().unwrap();
    let listed: BTreeSet<&str> = listed_ids().into_iter().collect();
    let named: BTreeSet<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
    let missing: Vec<_> = listed.difference(&named).collect();
    let unknown: Vec<_> = named.difference(&listed).collect();
    Counts::of(&entries).print();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "the manifest misses {} listed ids (first: {:?}) and names {} ids the list lacks \
         (first: {:?}); run scripts/cuda-core-manifest-sync.py",
        missing.len(),
        missing.iter().take(5).collect::<Vec<_>>(),
        unknown.len(),
        unknown.iter().take(5).collect::<Vec<_>>()
    );
}

#[test]
fn deliberate_differences_link_a_section_of_the_porting_guide() {
    let anchors = guide_anchors();
    let entries = manifest().unwrap();
    let broken: Vec<_> = entries
        .iter()
        .filter_map(|(id, s)| match s {
            Status::Deliberate { anchor } if !anchors.contains(anchor) => Some((id, anchor)),
            _ => None,
        })
        .collect();
    Counts::of(&entries).print();
    assert!(
        broken.is_empty(),
        "links to no heading of porting-from-python.md: {broken:?}"
    );
}

/// The `#[test]` functions a Rust test file defines (attributes such as
/// `#[ignore = "…"]` may stand between the `#[test]` and the `fn`), each with
/// whether it is marked `#[ignore = "differs: …"]` (a port that fails because
/// `cudars-core` does otherwise).
fn test_functions(source: &str) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    let mut pending = false;
    let mut differs = false;
    for line in source.lines() {
        let line = line.trim();
        if line == "#[test]" {
            pending = true;
            differs = false;
        } else if pending && line.starts_with("#[") {
            differs |= line.starts_with("#[ignore = \"differs:");
        } else if pending {
            let rest = line.strip_prefix("async ").unwrap_or(line);
            if let Some(rest) = rest.strip_prefix("fn ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name, differs);
            }
            pending = false;
        }
    }
    out
}

/// The `#[test]` functions of each Rust test file the manifest names (`None` for
/// a file that does not exist); `None` without the test sources.
type PortedFiles = BTreeMap<String, Option<BTreeMap<String, bool>>>;

fn ported_files(entries: &[(String, Status)]) -> Option<PortedFiles> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    if !dir.join("manifest.rs").exists() {
        return None;
    }
    let mut files = BTreeMap::new();
    for (_, status) in entries {
        if let Status::Ported { file, .. } = status {
            files.entry(file.clone()).or_insert_with(|| {
                std::fs::read_to_string(dir.join(file))
                    .ok()
                    .map(|s| test_functions(&s))
            });
        }
    }
    Some(files)
}

/// The modules `main.rs` declares (`mod x;`, a `#[cfg(..)]` before it or not).
fn declared_modules() -> BTreeSet<String> {
    include_str!("main.rs")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// How many ported entries name a test marked `#[ignore = "differs: …"]`
/// (`None` without the test sources).
fn differing(entries: &[(String, Status)]) -> Option<usize> {
    let files = ported_files(entries)?;
    let differs = |file: &String, function: &String| {
        files[file]
            .as_ref()
            .and_then(|f| f.get(function))
            .copied()
            .unwrap_or(false)
    };
    Some(
        entries
            .iter()
            .filter(
                |(_, s)| matches!(s, Status::Ported { file, function } if differs(file, function)),
            )
            .count(),
    )
}

#[test]
fn ported_entries_name_tests_that_exist() {
    let entries = manifest().unwrap();
    Counts::of(&entries).print();
    let Some(files) = ported_files(&entries) else {
        println!(
            "SKIPPED ported_entries_name_tests_that_exist: needs the cudars-core test sources"
        );
        return;
    };
    let mut bad = Vec::new();
    for (id, status) in &entries {
        let Status::Ported { file, function } = status else {
            continue;
        };
        let module = file.trim_end_matches(".rs");
        if !declared_modules().contains(module) {
            bad.push(format!(
                "{id}: {RUST_TESTS}{file} is not a module of {RUST_TESTS}main.rs (its tests never run)"
            ));
        }
        match &files[file] {
            None => bad.push(format!("{id}: {RUST_TESTS}{file} does not exist")),
            Some(fns) if !fns.contains_key(function) => bad.push(format!(
                "{id}: {RUST_TESTS}{file} has no #[test] fn {function}"
            )),
            Some(_) => {}
        }
    }
    assert!(
        bad.is_empty(),
        "ported entries naming no test:\n{}",
        bad.join("\n")
    );
    println!(
        "of the ported, {} are #[ignore = \"differs: …\"]",
        differing(&entries).unwrap()
    );
}

#[test]
fn the_parity_page_leads_with_the_manifests_numbers() {
    let entries = manifest().unwrap();
    let c = Counts::of(&entries);
    c.print();
    let Some(differ) = differing(&entries) else {
        println!(
            "SKIPPED the_parity_page_leads_with_the_manifests_numbers: needs the cudars-core \
             test sources"
        );
        return;
    };
    let expected = format!(
        "**{} test ids: {} ported ({} of them differ), {} n/a ({} python-object-model, \
         {} deliberate, {} cython), {} todo**",
        thousands(c.ids),
        thousands(c.ported),
        thousands(differ),
        thousands(c.na()),
        thousands(c.python_object_model),
        thousands(c.deliberate),
        thousands(c.cython),
        thousands(c.todo)
    );
    let first_table = PARITY.find("\n| ").unwrap_or(PARITY.len());
    assert!(
        PARITY[..first_table].contains(&expected),
        "docs/parity.md's opening section should say {expected}"
    );
}

#[test]
fn the_manifest_parser_reads_escapes_and_refuses_malformed_values() {
    let (s, rest) = basic_string(r#""a\\d+\"b" = "todo""#).unwrap();
    assert_eq!(s, r#"a\d+"b"#);
    assert_eq!(rest, r#" = "todo""#);
    assert!(basic_string(r#""open"#).is_err());
    assert!(basic_string(r#""bad \n escape""#).is_err());
    assert_eq!(
        Status::parse("crates/cudars-core/tests/conformance/program.rs::test_a").unwrap(),
        Status::Ported {
            file: "program.rs".into(),
            function: "test_a".into()
        }
    );
    for bad in [
        "ported",
        "n/a",
        "n/a repr",
        "n/a deliberate docs/parity.md#x",
        "crates/cudars-core/tests/conformance/x.rs",
        "crates/cudars-core/tests/conformance/sub/x.rs::t",
        "crates/cudars-core/tests/conformance/x.rs::not a fn",
        "crates/cudars-core/tests/conformance_x.rs::t",
    ] {
        assert!(Status::parse(bad).is_err(), "{bad:?} was accepted");
    }
    assert_eq!(
        slug("### Building and packaging `cuda.core`"),
        "building-and-packaging-cudacore"
    );
    assert_eq!(
        test_functions(
            "#[test]\n#[ignore = \"differs: x\"]\nfn t_1() {}\nfn helper() {}\n\
             #[test]\n#[ignore = \"slow\"]\nfn t_2() {}\n#[test]\nfn t_3() {}\n"
        ),
        BTreeMap::from([
            ("t_1".to_owned(), true),
            ("t_2".to_owned(), false),
            ("t_3".to_owned(), false)
        ])
    );
    assert_eq!(thousands(2176), "2,176");
    assert_eq!(thousands(51), "51");
}
