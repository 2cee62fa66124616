//! `cargo xtask check-packages`: what each publishable crate's `.crate` holds.
//!
//! Packages every publishable crate (`cargo package --no-verify`, the files alone:
//! the publishing dry run builds them) and checks each `.crate`: under the
//! registry's 10 MiB, with its README, licence files and CHANGELOG, a
//! `rust-version`, and no scratch (logs, test-run leftovers, proptest regression
//! seeds, archives, editor files).

use std::path::Path;
use std::process::Command;

use crate::util::{cargo, no_more, run_cmd, workspace_root};
use crate::workspace::{Crate, publishable};

/// The most a `.crate` may weigh on the registry.
const MAX_CRATE_BYTES: u64 = 10 * 1024 * 1024;

/// What a package must not carry: file-name suffixes and path parts.
const SCRATCH_SUFFIXES: &[&str] = &[
    ".log",
    ".tmp",
    ".orig",
    ".rej",
    ".swp",
    ".bak",
    "~",
    ".pyc",
    ".crate",
    ".tar",
    ".tar.gz",
    ".tar.xz",
    ".tgz",
    ".zip",
    ".whl",
    ".so",
    ".o",
    ".a",
    ".profraw",
    ".proptest-regressions",
    ".DS_Store",
];
const SCRATCH_DIRS: &[&str] = &[
    "target",
    "proptest-regressions",
    "__pycache__",
    ".venv",
    "gpu-pkg",
    ".headers",
];

/// The problems of one package: `files` are the paths inside the `.crate` (below
/// its `NAME-VERSION/` folder), `bytes` its size.
pub(crate) fn problems(krate: &Crate, files: &[String], bytes: u64) -> Vec<String> {
    let mut out = Vec::new();
    if bytes > MAX_CRATE_BYTES {
        out.push(format!(
            "the .crate weighs {bytes} bytes, over the registry's {MAX_CRATE_BYTES}"
        ));
    }
    let has = |f: &str| files.iter().any(|x| x == f);
    match &krate.readme {
        None => out.push("no `readme` in the manifest".to_string()),
        Some(r) => {
            // cargo packs a README from outside the crate at the package's root.
            let name = Path::new(r)
                .file_name()
                .map_or(r.clone(), |n| n.to_string_lossy().into_owned());
            if !has(r) && !has(&name) {
                out.push(format!("the README ({r}) is not in the package"));
            }
        }
    }
    if !has("CHANGELOG.md") {
        out.push("no CHANGELOG.md".to_string());
    }
    match (&krate.license, &krate.license_file) {
        (None, None) => out.push("no `license` or `license-file` in the manifest".to_string()),
        (_, Some(f)) if !has(f) => out.push(format!("the license file {f} is not in the package")),
        (Some(expr), _) => {
            for id in license_ids(expr) {
                // `Apache-2.0` → a LICENSE-APACHE or LICENSE-APACHE-2.0 file.
                let stem = id.split('-').next().unwrap_or(&id).to_ascii_uppercase();
                let found = files.iter().any(|f| {
                    let up = f.to_ascii_uppercase();
                    !f.contains('/')
                        && (up.starts_with("LICENSE") || up.starts_with("LICENCE"))
                        && up.contains(&stem)
                });
                if !found {
                    out.push(format!(
                        "no licence file for {id} (a LICENSE-{stem} at its root)"
                    ));
                }
            }
        }
        _ => {}
    }
    if krate.rust_version.is_none() {
        out.push("no `rust-version` in the manifest".to_string());
    }
    for f in files {
        if let Some(why) = scratch(f) {
            out.push(format!("{f}: {why}"));
        }
    }
    out
}

/// Why a packaged path is scratch, if it is.
fn scratch(path: &str) -> Option<String> {
    // cargo's own: the manifest as written, beside the normalized one.
    if path == "Cargo.toml.orig" {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    if let Some(d) = parts[..parts.len().saturating_sub(1)]
        .iter()
        .find(|p| SCRATCH_DIRS.contains(p))
    {
        return Some(format!("under {d}/, not part of a source package"));
    }
    let name = parts.last().copied().unwrap_or(path);
    SCRATCH_SUFFIXES
        .iter()
        .find(|s| name.ends_with(*s))
        .map(|s| format!("a {s} file (scratch, test data or a build product)"))
}

/// The licence identifiers of an SPDX expression (`MIT OR Apache-2.0`).
fn license_ids(expr: &str) -> Vec<String> {
    expr.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '/')
        .filter(|w| !w.is_empty() && !matches!(*w, "OR" | "AND" | "WITH"))
        .map(str::to_string)
        .collect()
}

/// The paths of a `.crate` below its `NAME-VERSION/` folder (`tar -tzf`).
fn crate_files(path: &Path, top: &str) -> Result<Vec<String>, String> {
    let out = Command::new("tar")
        .arg("-tzf")
        .arg(path)
        .output()
        .map_err(|e| format!("could not start tar: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tar -tzf {} failed with {}",
            path.display(),
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(top).and_then(|l| l.strip_prefix('/')))
        .filter(|l| !l.is_empty() && !l.ends_with('/'))
        .map(str::to_string)
        .collect())
}

/// `cargo xtask check-packages`. It packages the crates itself (a few seconds):
/// the `.crate` files of a publishing dry run lie in a folder of cargo's own.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    no_more(args)?;
    let (crates, target) = publishable()?;
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args(["package", "--no-verify", "--allow-dirty", "--quiet"]);
    for c in &crates {
        cmd.args(["-p", &c.name]);
    }
    run_cmd(&mut cmd)?;
    let mut failed = 0;
    for c in &crates {
        let top = format!("{}-{}", c.name, c.version);
        let path = target.join("package").join(format!("{top}.crate"));
        let bytes = std::fs::metadata(&path)
            .map_err(|e| format!("{}: {e} (package it first)", path.display()))?
            .len();
        let files = crate_files(&path, &top)?;
        let found = problems(c, &files, bytes);
        println!(
            "check-packages: {top}.crate: {} files, {:.1} KiB{}",
            files.len(),
            bytes as f64 / 1024.0,
            if found.is_empty() { ", ok" } else { "" }
        );
        for p in &found {
            println!("  {p}");
        }
        failed += usize::from(!found.is_empty());
    }
    if failed > 0 {
        return Err(format!("{failed} package(s) with problems"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{MAX_CRATE_BYTES, problems, scratch};
    use crate::workspace::Crate;
    use std::path::PathBuf;

    fn krate() -> Crate {
        Crate {
            name: "cudars-x".into(),
            version: "0.1.0".into(),
            manifest: PathBuf::from("/w/cudars-x/Cargo.toml"),
            readme: Some("README.md".into()),
            license: Some("MIT OR Apache-2.0".into()),
            license_file: None,
            rust_version: Some("1.85".into()),
            workspace_deps: Vec::new(),
        }
    }

    fn files(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const GOOD: &[&str] = &[
        "Cargo.toml",
        "Cargo.toml.orig",
        "Cargo.lock",
        ".cargo_vcs_info.json",
        "README.md",
        "CHANGELOG.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "src/lib.rs",
        "tests/kernels/sample.cu",
        "benches/c/gemm.c",
    ];

    #[test]
    fn a_complete_package_passes() {
        assert_eq!(problems(&krate(), &files(GOOD), 1000), Vec::<String>::new());
    }

    #[test]
    fn size_readme_licences_changelog_and_rust_version_are_required() {
        let mut c = krate();
        c.rust_version = None;
        c.readme = None;
        let found = problems(
            &c,
            &files(&["Cargo.toml", "LICENSE-MIT", "src/lib.rs"]),
            MAX_CRATE_BYTES + 1,
        );
        let text = found.join("\n");
        for want in [
            "over the registry's",
            "no `readme`",
            "no CHANGELOG.md",
            "no licence file for Apache-2.0 (a LICENSE-APACHE",
            "no `rust-version`",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        assert!(!text.contains("for MIT"), "{text}");
        let mut c = krate();
        c.readme = Some("../../README.md".into());
        assert!(problems(&c, &files(GOOD), 1).is_empty());
        c.readme = Some("docs/README.md".into());
        assert!(
            problems(&c, &files(&GOOD[..4]), 1)
                .join("\n")
                .contains("docs/README.md")
        );
    }

    #[test]
    fn scratch_is_refused() {
        let mut list = files(GOOD);
        list.extend(files(&[
            "cufile.log",
            "proptest-regressions/cache.txt",
            "tests/dlpack.proptest-regressions",
            "src/target/x.rs",
            "a.tar.xz",
        ]));
        let found = problems(&krate(), &list, 1);
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(found[0].starts_with("cufile.log: a .log file"));
        assert!(found[1].contains("under proptest-regressions/"));
        assert_eq!(scratch("Cargo.toml.orig"), None);
        assert_eq!(
            scratch("src/lib.rs.orig"),
            Some("a .orig file (scratch, test data or a build product)".into())
        );
    }
}
