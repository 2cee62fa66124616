//! `cargo xtask release CRATE VERSION`, `cargo xtask release-tag` and
//! `cargo xtask semver-checks`: releasing one crate at a time (docs/releasing.md).
//!
//! `release` checks the crate's `CHANGELOG.md` has a `## [VERSION]` entry, bumps the
//! crate's `version`, rewrites every requirement on it (the workspace's
//! `[workspace.dependencies]` and any member manifest), refreshes `Cargo.lock` and
//! runs the publishing dry run of the crate (with the workspace crates it needs).
//! `release-tag` tags the release commit `CRATE-vVERSION` and records it in
//! `release-baselines.toml`, which `semver-checks` compares each crate against.

mod baselines;
mod manifest;
mod version;

use std::path::Path;
use std::process::Command;

use self::baselines::{Baseline, parse_baselines, render_baselines};
use self::manifest::{check_changelog, set_package_version, set_requirement};
use self::version::Version;

use crate::util::{cargo, no_more, run_cmd, take_flag, take_value, workspace_root};
use crate::workspace::{Crate, publishable, with_workspace_deps};

/// The tracked file naming each crate's last release: its version and commit.
pub(crate) const BASELINES: &str = "release-baselines.toml";

/// The `cargo-semver-checks` release CI installs (`.ci/run`).
const SEMVER_CHECKS_VERSION: &str = "0.51.0";

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The crate of that name, or an error listing the publishable ones.
fn find<'a>(crates: &'a [Crate], name: &str) -> Result<&'a Crate, String> {
    crates.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = crates.iter().map(|c| c.name.as_str()).collect();
        format!(
            "`{name}` is not a publishable crate of this workspace (those are: {})",
            names.join(", ")
        )
    })
}

/// `cargo xtask release CRATE VERSION [--no-dry-run]`.
pub(crate) fn release(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let no_dry_run = take_flag(&mut args, "--no-dry-run");
    let [name, version] = &args[..] else {
        return Err("usage: cargo xtask release CRATE VERSION [--no-dry-run]".to_string());
    };
    let new = Version::parse(version)?;
    let (crates, _) = publishable()?;
    let krate = find(&crates, name)?;
    let current =
        Version::parse(&krate.version).map_err(|e| format!("{name}'s current version: {e}"))?;
    if new <= current {
        return Err(format!(
            "{name} is at {current}: the new version must be greater, not {new}"
        ));
    }
    let dir = krate
        .manifest
        .parent()
        .ok_or("a manifest without a folder")?;
    // Nothing is written before every check passed.
    check_changelog(&read(&dir.join("CHANGELOG.md"))?, &new).map_err(|e| format!("{name}: {e}"))?;
    let root = workspace_root();
    let mut edits = vec![(
        krate.manifest.clone(),
        set_package_version(&read(&krate.manifest)?, &new)
            .map_err(|e| format!("{}: {e}", krate.manifest.display()))?,
    )];
    let mut requirements = 0;
    let mut manifests = vec![root.join("Cargo.toml")];
    manifests.extend(crates.iter().map(|c| c.manifest.clone()));
    // The unpublished members (tests, the xtask) too: they may name a version.
    for dir in ["tests", "tests/driver-shim", "tests/nvtx-inject", "xtask"] {
        manifests.push(root.join(dir).join("Cargo.toml"));
    }
    for path in manifests {
        if !path.exists() {
            continue;
        }
        let text = match edits.iter().find(|(p, _)| *p == path) {
            Some((_, t)) => t.clone(),
            None => read(&path)?,
        };
        let (text, n) = set_requirement(&text, name, &new);
        if n > 0 {
            requirements += n;
            match edits.iter_mut().find(|(p, _)| *p == path) {
                Some(e) => e.1 = text,
                None => edits.push((path, text)),
            }
        }
    }
    for (path, text) in &edits {
        write(path, text)?;
    }
    println!("release: {name} {current} -> {new}; {requirements} requirement(s) on it rewritten");
    if current.allows_breaking(&new) {
        println!(
            "release: {current} -> {new} may break {name}'s users: its dependents need a release too"
        );
    }
    run_cmd(
        cargo()
            .current_dir(&root)
            .args(["update", "--workspace", "--offline"]),
    )?;
    if !no_dry_run {
        let (crates, _) = publishable()?;
        let mut cmd = cargo();
        cmd.current_dir(&root)
            .args(["publish", "--dry-run", "--allow-dirty"]);
        for c in with_workspace_deps(&crates, name) {
            cmd.args(["-p", &c]);
        }
        run_cmd(&mut cmd)?;
    }
    println!(
        "release: next: commit, `cargo xtask release-tag {name}` on that commit, \
         `cargo publish -p {name}`, then commit {BASELINES}"
    );
    Ok(())
}

/// The output of a git command in the workspace root, trimmed.
fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(workspace_root())
        .args(args)
        .output()
        .map_err(|e| format!("could not start git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `cargo xtask release-tag [CRATE…]`: tags HEAD `CRATE-vVERSION` for each crate
/// (all publishable crates when none is named) and records HEAD as its baseline.
pub(crate) fn release_tag(args: &[String]) -> Result<(), String> {
    let (crates, _) = publishable()?;
    let names: Vec<String> = if args.is_empty() {
        crates.iter().map(|c| c.name.clone()).collect()
    } else {
        args.to_vec()
    };
    if !git(&["status", "--porcelain", "--untracked-files=no"])?.is_empty() {
        return Err("the working tree has changes: tag a committed release".to_string());
    }
    let head = git(&["rev-parse", "HEAD"])?;
    let path = workspace_root().join(BASELINES);
    let mut baselines = if path.exists() {
        parse_baselines(&read(&path)?)?
    } else {
        Vec::new()
    };
    for name in &names {
        let krate = find(&crates, name)?;
        let b = Baseline {
            name: name.clone(),
            version: krate.version.clone(),
            rev: head.clone(),
        };
        match git(&[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/tags/{}^{{commit}}", b.tag()),
        ]) {
            Ok(at) if at == head => {}
            Ok(at) => {
                return Err(format!(
                    "the tag {} already names {at}, not HEAD: {name} {} was released; \
                     bump it first (cargo xtask release)",
                    b.tag(),
                    b.version
                ));
            }
            Err(_) => {
                git(&["tag", &b.tag(), &head])?;
                println!("release-tag: tagged {} at {head}", b.tag());
            }
        }
        baselines.retain(|o| o.name != *name);
        baselines.push(b);
    }
    write(&path, &render_baselines(&baselines))?;
    println!("release-tag: recorded in {BASELINES}: commit it (and push the tags)");
    Ok(())
}

/// `cargo xtask semver-checks [--crates a,b]`: `cargo semver-checks` of each
/// publishable crate against its baseline commit.
pub(crate) fn semver_checks(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let only: Option<Vec<String>> = take_value(&mut args, "--crates")?
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    no_more(&args)?;
    let (crates, _) = publishable()?;
    let baselines = parse_baselines(&read(&workspace_root().join(BASELINES))?)?;
    let unreleased: Vec<String> = crates
        .iter()
        .filter(|c| {
            let changelog = c.manifest.with_file_name("CHANGELOG.md");
            std::fs::read_to_string(changelog).is_ok_and(|t| never_released(&t))
        })
        .map(|c| c.name.clone())
        .collect();
    for n in &unreleased {
        if !baselines.iter().any(|b| b.name == *n) {
            println!(
                "semver-checks: {n} has no release yet (its CHANGELOG names none): nothing to compare"
            );
        }
    }
    let plan = semver_plan(&crates, &baselines, only.as_deref(), &unreleased)?;
    let installed = Command::new(cargo().get_program())
        .args(["semver-checks", "--version"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match installed {
        Some(v) => println!("semver-checks: {v}"),
        None => {
            return Err(format!(
                "cargo-semver-checks is not installed: cargo install --locked \
                 cargo-semver-checks --version {SEMVER_CHECKS_VERSION}"
            ));
        }
    }
    for (rev, names) in plan {
        // A shallow clone may lack the commit: say so instead of semver-checks' error.
        git(&["cat-file", "-e", &format!("{rev}^{{commit}}")]).map_err(|_| {
            format!(
                "the baseline commit {rev} of {} is not in this clone (a shallow clone? \
                 `git fetch --unshallow`)",
                names.join(", ")
            )
        })?;
        let mut cmd = cargo();
        cmd.current_dir(workspace_root()).args([
            "semver-checks",
            "check-release",
            "--baseline-rev",
            &rev,
        ]);
        for n in &names {
            cmd.args(["-p", n]);
        }
        run_cmd(&mut cmd)?;
    }
    Ok(())
}

/// Crates with no public Rust API for `cargo semver-checks` to compare: a
/// proc-macro crate exports only its macros, whose input grammar rustdoc does not
/// describe (its tests guard it).
const NO_RUST_API: &[&str] = &["cudars-core-macros"];

/// Whether a crate's CHANGELOG shows no release: no `## [VERSION]` heading besides
/// `## [Unreleased]` (a new crate, which has no baseline to compare with yet).
fn never_released(changelog: &str) -> bool {
    !changelog
        .lines()
        .any(|l| l.starts_with("## [") && !l.starts_with("## [Unreleased]"))
}

/// The `cargo semver-checks` runs: crates grouped by baseline commit. A crate of
/// `unreleased` (never released) with no baseline is left out; any other crate
/// without one is an error (a release that was not recorded).
fn semver_plan(
    crates: &[Crate],
    baselines: &[Baseline],
    only: Option<&[String]>,
    unreleased: &[String],
) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut plan: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(only) = only {
        for n in only {
            find(crates, n)?;
        }
    }
    for c in crates {
        if only.is_some_and(|o| !o.contains(&c.name)) || NO_RUST_API.contains(&c.name.as_str()) {
            continue;
        }
        let b = baselines.iter().find(|b| b.name == c.name);
        if b.is_none() && unreleased.contains(&c.name) {
            continue;
        }
        let b = b.ok_or_else(|| {
            format!(
                "{BASELINES} has no baseline for {}: record its release with \
                 `cargo xtask release-tag {}`",
                c.name, c.name
            )
        })?;
        let (base, cur) = (Version::parse(&b.version)?, Version::parse(&c.version)?);
        if cur < base {
            return Err(format!(
                "{} is at {cur}, below its last release {base}",
                c.name
            ));
        }
        match plan.iter_mut().find(|(r, _)| *r == b.rev) {
            Some((_, names)) => names.push(c.name.clone()),
            None => plan.push((b.rev.clone(), vec![c.name.clone()])),
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn krate(name: &str, version: &str) -> Crate {
        Crate {
            name: name.into(),
            version: version.into(),
            manifest: PathBuf::from(format!("/w/{name}/Cargo.toml")),
            readme: None,
            license: None,
            license_file: None,
            rust_version: None,
            workspace_deps: Vec::new(),
        }
    }

    #[test]
    fn the_semver_plan_groups_crates_by_baseline_and_needs_every_baseline() {
        let (r1, r2) = ("1".repeat(40), "2".repeat(40));
        let crates = [
            krate("a", "0.1.0"),
            krate("b", "0.2.0"),
            krate("cudars-core-macros", "0.1.0"),
            krate("c", "1.0.0"),
        ];
        let b = |n: &str, ver: &str, rev: &str| Baseline {
            name: n.into(),
            version: ver.into(),
            rev: rev.into(),
        };
        let bases = [
            b("a", "0.1.0", &r1),
            b("b", "0.1.0", &r2),
            b("c", "1.0.0", &r1),
        ];
        let plan = semver_plan(&crates, &bases, None, &[]).unwrap();
        assert_eq!(
            plan,
            [
                (r1.clone(), vec!["a".to_string(), "c".to_string()]),
                (r2.clone(), vec!["b".to_string()])
            ]
        );
        let only = ["b".to_string()];
        assert_eq!(
            semver_plan(&crates, &bases, Some(&only), &[]).unwrap(),
            [(r2, vec!["b".to_string()])]
        );
        assert!(
            semver_plan(&crates, &bases[..1], None, &[])
                .unwrap_err()
                .contains("no baseline for b")
        );
        // A crate never released has no baseline and is left out; one that was
        // released still needs its baseline.
        let new = ["b".to_string(), "c".to_string()];
        assert_eq!(
            semver_plan(&crates[..2], &bases[..1], None, &new).unwrap(),
            [(r1.clone(), vec!["a".to_string()])]
        );
        assert!(
            semver_plan(&crates, &bases[..1], None, &new[..1])
                .unwrap_err()
                .contains("no baseline for c")
        );
        assert!(never_released(
            "# Changelog\n\n## [Unreleased]\n\n### Added\n"
        ));
        assert!(!never_released(
            "## [Unreleased]\n\n## [0.1.0] - 2026-11-27\n"
        ));
        let bad = ["nope".to_string()];
        assert!(
            semver_plan(&crates, &bases, Some(&bad), &[])
                .unwrap_err()
                .contains("not a publishable")
        );
        let older = [b("a", "0.2.0", &r1)];
        assert!(
            semver_plan(&crates[..1], &older, None, &[])
                .unwrap_err()
                .contains("below its last release")
        );
    }
}
