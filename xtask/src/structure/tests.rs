//! Tests of `cargo xtask structure`, and the workspace-wide check that no crate has an
//! import loop.

use super::*;

#[test]
fn use_trees_expand() {
    let got = expand_use("crate::a::{b, c::D as E, self, f::*}");
    let names: Vec<(String, String)> = got.into_iter().map(|(p, n)| (p.join("::"), n)).collect();
    assert_eq!(
        names,
        [
            ("crate::a::b".into(), "b".into()),
            ("crate::a::c::D".into(), "E".into()),
            ("crate::a".into(), "a".into()),
            ("crate::a::f".into(), "*".into()),
        ]
    );
}

#[test]
fn comments_literals_and_test_modules_are_blanked() {
    let code = "use crate::a; // crate::b\nlet s = \"crate::c\"; let r = r#\"crate::d\"#; let c = '\"';\n#[cfg(test)]\nmod tests { use crate::e; }\nfn f<'a>() { crate::g::h(); }";
    let blanked = strip_test_modules(&blank(code));
    let (uses, rest) = take_uses(&blanked);
    assert_eq!(uses, [(false, "crate::a".to_string())]);
    let inline: Vec<String> = inline_paths(&rest).iter().map(|p| p.join("::")).collect();
    assert_eq!(inline, ["crate::g::h"]);
}

/// Architecture Invariant: no crate of the workspace has an import loop (its
/// modules can be read bottom up; see "Floors" in docs/architecture.md).
/// `cargo xtask structure --crate NAME` shows the arrows of a loop this
/// reports, and `STRUCTURE_WHY=room` what each names.
#[test]
fn no_crate_has_an_import_loop() {
    let crates = workspace_root().join("crates");
    let mut names: Vec<String> = fs::read_dir(&crates)
        .expect("crates/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.iter().any(|n| n == "cudars-core") && names.len() > 5,
        "{names:?}"
    );
    // The loops still allowed, each with why; one that is gone fails the test
    // too, so that the list only shrinks.
    const ALLOWED: &[(&str, &str, &str)] = &[];
    let mut found = Vec::new();
    let mut allowed_seen = Vec::new();
    for krate in &names {
        let graph = Crate::read(&crates.join(krate).join("src")).expect("readable source");
        for l in graph.loops() {
            let l = l.join(" <-> ");
            if ALLOWED.iter().any(|(k, a, _)| k == krate && *a == l) {
                allowed_seen.push((krate.clone(), l));
            } else {
                found.push(format!("{krate}: {l}"));
            }
        }
    }
    for (k, a, _) in ALLOWED {
        assert!(
            allowed_seen.iter().any(|(sk, sa)| sk == k && sa == a),
            "{k}: the allowed loop {a} is gone: take it off ALLOWED"
        );
    }
    assert!(
        found.is_empty(),
        "import loops (break each along a real seam: move the shared items \
         down into a leaf module, or the impl block up beside what it needs):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_loop_through_a_parent_module_is_found() {
    let dir = std::env::temp_dir().join(format!("structure-loop-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("a")).unwrap();
    fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    fs::write(
        dir.join("a/mod.rs"),
        "mod c;\npub use c::C;\npub struct A;\n",
    )
    .unwrap();
    fs::write(dir.join("a/c.rs"), "use super::A;\npub struct C(A);\n").unwrap();
    fs::write(dir.join("b.rs"), "use crate::a::C;\n").unwrap();
    let graph = Crate::read(&dir).unwrap();
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(graph.loops(), [vec!["a".to_string(), "a::c".to_string()]]);
}

#[test]
fn loops_are_one_component() {
    let comp = scc(&[vec![1], vec![0], vec![0]]);
    assert_eq!(comp[0], comp[1]);
    assert_ne!(comp[0], comp[2]);
}
