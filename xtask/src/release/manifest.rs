//! Editing a crate's manifest (its `version`, every requirement on a crate) and
//! checking its `CHANGELOG.md`, line by line so that nothing else changes.

use super::version::Version;

/// The name of a TOML table header line (`[package]` → `package`), if it is one.
pub(super) fn table_header(line: &str) -> Option<&str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
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
}
