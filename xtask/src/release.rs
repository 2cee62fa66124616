//! `cargo xtask release CRATE VERSION`, `cargo xtask release-tag` and
//! `cargo xtask semver-checks`: releasing one crate at a time (docs/releasing.md).
//!
//! `release` checks the crate's `CHANGELOG.md` has a `## [VERSION]` entry, bumps the
//! crate's `version`, rewrites every requirement on it (the workspace's
//! `[workspace.dependencies]` and any member manifest), refreshes `Cargo.lock` and
//! runs the publishing dry run of the crate (with the workspace crates it needs).
//! `release-tag` tags the release commit `CRATE-vVERSION` and records it in
//! `release-baselines.toml`, which `semver-checks` compares each crate against.

use std::cmp::Ordering;
use std::fmt;
use std::path::Path;
use std::process::Command;

use crate::util::{cargo, no_more, run_cmd, take_flag, take_value, workspace_root};
use crate::workspace::{Crate, publishable, with_workspace_deps};

/// The tracked file naming each crate's last release: its version and commit.
pub(crate) const BASELINES: &str = "release-baselines.toml";

/// The `cargo-semver-checks` release CI installs (`.ci/run`).
const SEMVER_CHECKS_VERSION: &str = "0.51.0";

/// One identifier of a pre-release (`alpha`, `1`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Alpha(String),
}

impl Ord for Pre {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Pre::Num(a), Pre::Num(b)) => a.cmp(b),
            (Pre::Alpha(a), Pre::Alpha(b)) => a.cmp(b),
            // Numeric identifiers have lower precedence than alphanumeric ones.
            (Pre::Num(_), Pre::Alpha(_)) => Ordering::Less,
            (Pre::Alpha(_), Pre::Num(_)) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Pre {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A semantic version, `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, ordered by precedence
/// (build metadata is kept for display and ignored in comparisons).
#[derive(Debug, Clone)]
pub(crate) struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
    text: String,
}

impl Version {
    /// Parses a version as semver 2.0.0 writes it.
    pub(crate) fn parse(s: &str) -> Result<Version, String> {
        let bad = |why: &str| format!("`{s}` is not a semantic version (MAJOR.MINOR.PATCH): {why}");
        let (rest, build) = match s.split_once('+') {
            Some((r, b)) => (r, Some(b)),
            None => (s, None),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (rest, None),
        };
        let num = |part: &str| -> Result<u64, String> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(&format!("`{part}` is not a number")));
            }
            if part.len() > 1 && part.starts_with('0') {
                return Err(bad(&format!("`{part}` has a leading zero")));
            }
            part.parse()
                .map_err(|_| bad(&format!("`{part}` is too large")))
        };
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts[..] else {
            return Err(bad("it needs exactly three numbers"));
        };
        let ident_ok =
            |i: &str| !i.is_empty() && i.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        let mut pres = Vec::new();
        if let Some(pre) = pre {
            for ident in pre.split('.') {
                if !ident_ok(ident) {
                    return Err(bad(&format!("bad pre-release identifier `{ident}`")));
                }
                pres.push(if ident.bytes().all(|b| b.is_ascii_digit()) {
                    Pre::Num(num(ident)?)
                } else {
                    Pre::Alpha(ident.to_string())
                });
            }
        }
        if let Some(build) = build
            && !build.split('.').all(ident_ok)
        {
            return Err(bad(&format!("bad build metadata `{build}`")));
        }
        Ok(Version {
            major: num(major)?,
            minor: num(minor)?,
            patch: num(patch)?,
            pre: pres,
            text: s.to_string(),
        })
    }

    /// Whether a release from `self` to `next` may break users: a new major, or a
    /// new minor while the major is 0 (cargo's compatibility rule).
    pub(crate) fn allows_breaking(&self, next: &Version) -> bool {
        next.major != self.major || (self.major == 0 && next.minor != self.minor)
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Version {}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                // A pre-release comes before its release.
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The name of a TOML table header line (`[package]` → `package`), if it is one.
fn table_header(line: &str) -> Option<&str> {
    let t = line.trim();
    let inner = t.strip_prefix("[[").and_then(|t| t.strip_suffix("]]"));
    inner
        .or_else(|| {
            t.strip_prefix('[')
                .and_then(|t| t.split_once(']').map(|(n, _)| n))
        })
        .map(str::trim)
}

/// Replaces the string starting after `at` (spaces, then `"…"`) with `new`,
/// keeping a requirement's operator (`=`, `~`, `^`, `>=`).
fn replace_string_at(line: &str, at: usize, new: &Version) -> Option<String> {
    let value = &line[at..];
    let open = value.find('"')?;
    if !value[..open].trim().is_empty() {
        return None;
    }
    let close = value[open + 1..].find('"')?;
    let old = &value[open + 1..open + 1 + close];
    let op_len = old.len() - old.trim_start_matches(['=', '^', '~', '>', '<', ' ']).len();
    let start = at + open + 1;
    Some(format!(
        "{}{}{}{}",
        &line[..start],
        &old[..op_len],
        new,
        &line[start + close..]
    ))
}

/// Replaces the value of the `version = "…"` key on `line` (a key line or an
/// inline table), keeping a requirement's operator.
fn replace_version_value(line: &str, new: &Version) -> Option<String> {
    let mut from = 0;
    while let Some(i) = line[from..].find("version") {
        let key = from + i;
        from = key + "version".len();
        let before = line[..key].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.') {
            continue;
        }
        let after = &line[from..];
        let Some(eq) = after.find('=') else { continue };
        if after[..eq].trim().is_empty() {
            return replace_string_at(line, from + eq + 1, new);
        }
    }
    None
}

/// `manifest` with its `[package]` `version` set to `new`.
pub(crate) fn set_package_version(manifest: &str, new: &Version) -> Result<String, String> {
    let mut section = String::new();
    let mut done = false;
    let mut out = Vec::new();
    for line in manifest.split_inclusive('\n') {
        if let Some(h) = table_header(line) {
            section = h.to_string();
        }
        let key = line.trim_start();
        if !done && section == "package" && key.starts_with("version") {
            if key.starts_with("version.workspace") || key.contains("workspace = true") {
                return Err(
                    "the crate takes its version from the workspace; each crate keeps its own"
                        .to_string(),
                );
            }
            if let Some(l) = replace_version_value(line, new) {
                out.push(l);
                done = true;
                continue;
            }
        }
        out.push(line.to_string());
    }
    if !done {
        return Err("no `version = \"…\"` in its [package] table".to_string());
    }
    Ok(out.concat())
}

/// `manifest` with every requirement on `dep` set to `new` (inline tables such as
/// `dep = { path = "…", version = "…" }`, `dep = "…"`, and `[….dependencies.dep]`
/// tables); also the number of requirements rewritten.
pub(crate) fn set_requirement(manifest: &str, dep: &str, new: &Version) -> (String, usize) {
    let mut section = String::new();
    let mut count = 0;
    let mut out = Vec::new();
    let in_deps = |s: &str| s.ends_with("dependencies");
    for line in manifest.split_inclusive('\n') {
        if let Some(h) = table_header(line) {
            section = h.to_string();
            out.push(line.to_string());
            continue;
        }
        let t = line.trim_start();
        let dep_table = section
            .rsplit_once('.')
            .is_some_and(|(parent, name)| in_deps(parent) && name.trim_matches('"') == dep);
        let is_key = |k: &str| {
            t.strip_prefix(k)
                .is_some_and(|r| r.trim_start().starts_with('='))
        };
        let quoted = format!("\"{dep}\"");
        let rewritten = if dep_table && is_key("version") {
            replace_version_value(line, new)
        } else if in_deps(&section) && (is_key(dep) || is_key(&quoted)) {
            let eq = line.find('=').map_or(line.len(), |i| i + 1);
            if line[eq..].trim_start().starts_with('"') {
                // `dep = "1.2"`: the value is the requirement.
                replace_string_at(line, eq, new)
            } else {
                replace_version_value(line, new)
            }
        } else {
            None
        };
        match rewritten {
            Some(l) => {
                count += 1;
                out.push(l);
            }
            None => out.push(line.to_string()),
        }
    }
    (out.concat(), count)
}

/// Checks that `changelog` has an entry for `version` (`## [VERSION]`), as the
/// release moves the notes of `## [Unreleased]` under it.
pub(crate) fn check_changelog(changelog: &str, version: &Version) -> Result<(), String> {
    let heading = format!("## [{version}]");
    if changelog
        .lines()
        .any(|l| l.trim_start().starts_with(&heading))
    {
        return Ok(());
    }
    let unreleased: Vec<&str> = changelog
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("## [Unreleased]"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("## ["))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('['))
        .collect();
    if unreleased.is_empty() {
        Err(format!(
            "CHANGELOG.md has no `{heading} - YYYY-MM-DD` entry, and `## [Unreleased]` says \
             nothing: write what changed under a `{heading}` heading first"
        ))
    } else {
        Err(format!(
            "CHANGELOG.md has no `{heading} - YYYY-MM-DD` entry: move the {} line(s) under \
             `## [Unreleased]` to a new `{heading} - YYYY-MM-DD` heading below it (and leave \
             `## [Unreleased]` empty)",
            unreleased.len()
        ))
    }
}

/// A crate's last release, as `release-baselines.toml` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// The crate.
    pub(crate) name: String,
    /// The version released.
    pub(crate) version: String,
    /// The release commit.
    pub(crate) rev: String,
}

impl Baseline {
    /// The release's tag: `CRATE-vVERSION`.
    pub(crate) fn tag(&self) -> String {
        format!("{}-v{}", self.name, self.version)
    }
}

/// Reads `release-baselines.toml`: one `[crate]` table per crate with `version` and
/// `rev` strings (comments and blank lines allowed).
pub(crate) fn parse_baselines(text: &str) -> Result<Vec<Baseline>, String> {
    let mut out: Vec<Baseline> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |why: String| format!("{BASELINES}:{}: {why}", n + 1);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(name) = table_header(t) {
            let name = name.trim_matches('"').to_string();
            if out.iter().any(|b| b.name == name) {
                return Err(at(format!("[{name}] is given twice")));
            }
            out.push(Baseline {
                name,
                version: String::new(),
                rev: String::new(),
            });
            continue;
        }
        let (key, value) = t
            .split_once('=')
            .ok_or_else(|| at(format!("expected `key = \"value\"`, found `{t}`")))?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .ok_or_else(|| at(format!("the value of `{}` is not a string", key.trim())))?;
        let last = out
            .last_mut()
            .ok_or_else(|| at("a key before any [crate] table".to_string()))?;
        match key.trim() {
            "version" => {
                Version::parse(value).map_err(at)?;
                last.version = value.to_string();
            }
            "rev" => {
                if value.len() != 40 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(at(format!("rev `{value}` is not a full commit id")));
                }
                last.rev = value.to_string();
            }
            other => return Err(at(format!("unknown key `{other}`"))),
        }
    }
    if let Some(b) = out
        .iter()
        .find(|b| b.version.is_empty() || b.rev.is_empty())
    {
        return Err(format!(
            "{BASELINES}: [{}] needs both version and rev",
            b.name
        ));
    }
    Ok(out)
}

/// Writes the baselines in the file's format, sorted by crate name.
pub(crate) fn render_baselines(baselines: &[Baseline]) -> String {
    let mut sorted = baselines.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut s = String::from(
        "# The last release of each publishable crate: its version and the commit it was\n\
         # released from (tagged CRATE-vVERSION where tags travel). `cargo xtask semver-checks`\n\
         # compares each crate with this commit; `cargo xtask release-tag` writes this file.\n\
         # See docs/releasing.md.\n",
    );
    for b in &sorted {
        s.push_str(&format!(
            "\n[{}]\nversion = \"{}\"\nrev = \"{}\"\n",
            b.name, b.version, b.rev
        ));
    }
    s
}

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
    for dir in ["tests", "tests/driver-shim", "xtask"] {
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
    let plan = semver_plan(&crates, &baselines, only.as_deref())?;
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

/// The `cargo semver-checks` runs: crates grouped by baseline commit.
fn semver_plan(
    crates: &[Crate],
    baselines: &[Baseline],
    only: Option<&[String]>,
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
        let b = baselines.iter().find(|b| b.name == c.name).ok_or_else(|| {
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
    use super::*;
    use std::path::PathBuf;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions_parse_and_order_by_semver_precedence() {
        let order = [
            "0.1.0",
            "0.1.1",
            "0.2.0-alpha",
            "0.2.0-alpha.1",
            "0.2.0-alpha.beta",
            "0.2.0-beta.2",
            "0.2.0-beta.11",
            "0.2.0-rc.1",
            "0.2.0",
            "1.0.0",
            "1.10.0",
        ];
        for w in order.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(v("1.0.0+build.5"), v("1.0.0"));
        assert_eq!(v("1.0.0+build.5").to_string(), "1.0.0+build.5");
        for bad in [
            "1.0",
            "1.0.0.0",
            "01.0.0",
            "1.0.x",
            "",
            "1.0.0-",
            "1.0.0-a..b",
            "v1.0.0",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn breaking_releases_follow_cargos_rule() {
        assert!(v("0.1.0").allows_breaking(&v("0.2.0")));
        assert!(!v("0.1.0").allows_breaking(&v("0.1.1")));
        assert!(v("1.2.0").allows_breaking(&v("2.0.0")));
        assert!(!v("1.2.0").allows_breaking(&v("1.3.0")));
    }

    const MANIFEST: &str = r#"[package]
name = "cudars-blas"
version = "0.1.0"
rust-version.workspace = true

[dependencies]
cudars-core.workspace = true
cudars-bindings = { workspace = true, features = ["driver"] }
bytemuck = "1"

[dev-dependencies]
cudars-core = { path = "../cudars-core", version = "=0.1.0" }

[target.'cfg(unix)'.dependencies.cudars-core]
path = "../cudars-core"
version = "0.1"
"#;

    #[test]
    fn the_package_version_is_bumped_and_nothing_else() {
        let out = set_package_version(MANIFEST, &v("0.2.0")).unwrap();
        assert_eq!(
            out,
            MANIFEST.replacen("version = \"0.1.0\"", "version = \"0.2.0\"", 1)
        );
        let err = set_package_version("[package]\nversion.workspace = true\n", &v("1.0.0"));
        assert!(err.unwrap_err().contains("each crate keeps its own"));
        assert!(set_package_version("[dependencies]\nversion = \"1\"\n", &v("1.0.0")).is_err());
    }

    #[test]
    fn requirements_are_rewritten_in_every_form_keeping_the_operator() {
        let (out, n) = set_requirement(MANIFEST, "cudars-core", &v("0.2.0"));
        assert_eq!(n, 2);
        assert!(out.contains(r#"cudars-core = { path = "../cudars-core", version = "=0.2.0" }"#));
        assert!(out.contains("path = \"../cudars-core\"\nversion = \"0.2.0\"\n"));
        // The package's own version and the other dependencies stay.
        assert!(out.contains("name = \"cudars-blas\"\nversion = \"0.1.0\""));
        assert!(out.contains("bytemuck = \"1\""));
        let ws = "[workspace.dependencies]\ncudars-core = { path = \"crates/cudars-core\", version = \"0.1.0\", default-features = false }\ncudars-core-macros = { path = \"m\", version = \"0.1.0\" }\n";
        let (out, n) = set_requirement(ws, "cudars-core", &v("0.1.1"));
        assert_eq!(n, 1);
        assert!(out.contains("version = \"0.1.1\", default-features = false"));
        assert!(out.contains("cudars-core-macros = { path = \"m\", version = \"0.1.0\" }"));
        let (out, n) = set_requirement(
            "[dependencies]\nbytemuck = \"~1.2\"\n",
            "bytemuck",
            &v("1.3.0"),
        );
        assert_eq!(
            (out.as_str(), n),
            ("[dependencies]\nbytemuck = \"~1.3.0\"\n", 1)
        );
    }

    #[test]
    fn the_changelog_must_have_the_new_versions_entry() {
        let moved = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n\n- New.\n\n## [0.1.0] - 2026-11-27\n";
        assert!(check_changelog(moved, &v("0.2.0")).is_ok());
        let pending =
            "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- New.\n\n## [0.1.0] - 2026-11-27\n";
        let err = check_changelog(pending, &v("0.2.0")).unwrap_err();
        assert!(
            err.contains("move the 2 line(s) under `## [Unreleased]`"),
            "{err}"
        );
        let empty =
            "# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-11-27\n\n[0.1.0]: https://x\n";
        let err = check_changelog(empty, &v("0.2.0")).unwrap_err();
        assert!(err.contains("says nothing"), "{err}");
    }

    #[test]
    fn baselines_round_trip_and_bad_files_are_refused() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        let bs = vec![
            Baseline {
                name: "b".into(),
                version: "0.1.0".into(),
                rev: rev.into(),
            },
            Baseline {
                name: "a".into(),
                version: "1.0.0".into(),
                rev: rev.into(),
            },
        ];
        let text = render_baselines(&bs);
        let back = parse_baselines(&text).unwrap();
        assert_eq!(
            back.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(back[1], bs[0]);
        assert_eq!(back[0].tag(), "a-v1.0.0");
        assert!(
            parse_baselines("[a]\nversion = \"1\"\n")
                .unwrap_err()
                .contains("not a semantic")
        );
        assert!(
            parse_baselines("[a]\nrev = \"abc\"\n")
                .unwrap_err()
                .contains("full commit")
        );
        assert!(
            parse_baselines("[a]\nversion = \"1.0.0\"\n")
                .unwrap_err()
                .contains("both")
        );
        assert!(
            parse_baselines("version = \"1.0.0\"\n")
                .unwrap_err()
                .contains("before any")
        );
    }

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
        let plan = semver_plan(&crates, &bases, None).unwrap();
        assert_eq!(
            plan,
            [
                (r1.clone(), vec!["a".to_string(), "c".to_string()]),
                (r2.clone(), vec!["b".to_string()])
            ]
        );
        let only = ["b".to_string()];
        assert_eq!(
            semver_plan(&crates, &bases, Some(&only)).unwrap(),
            [(r2, vec!["b".to_string()])]
        );
        assert!(
            semver_plan(&crates, &bases[..1], None)
                .unwrap_err()
                .contains("no baseline for b")
        );
        let bad = ["nope".to_string()];
        assert!(
            semver_plan(&crates, &bases, Some(&bad))
                .unwrap_err()
                .contains("not a publishable")
        );
        let older = [b("a", "0.2.0", &r1)];
        assert!(
            semver_plan(&crates[..1], &older, None)
                .unwrap_err()
                .contains("below its last release")
        );
    }
}
