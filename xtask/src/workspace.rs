//! The workspace's publishable crates, as `cargo metadata` describes them.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;

use crate::util::{cargo, workspace_root};

/// A workspace member that is published (its manifest has no `publish = false`).
#[derive(Debug, Clone)]
pub(crate) struct Crate {
    /// The package name (`cudars-core`).
    pub(crate) name: String,
    /// Its `version`.
    pub(crate) version: String,
    /// Its `Cargo.toml`.
    pub(crate) manifest: PathBuf,
    /// `readme`, relative to the manifest's folder.
    pub(crate) readme: Option<String>,
    /// `license` (an SPDX expression).
    pub(crate) license: Option<String>,
    /// `license-file`.
    pub(crate) license_file: Option<String>,
    /// `rust-version`.
    pub(crate) rust_version: Option<String>,
    /// The workspace crates it depends on to build (normal and build dependencies,
    /// not dev-dependencies).
    pub(crate) workspace_deps: Vec<String>,
}

/// Every publishable member of the workspace, in `cargo metadata`'s order, and
/// cargo's target directory.
pub(crate) fn publishable() -> Result<(Vec<Crate>, PathBuf), String> {
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .stderr(Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| format!("could not start cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed with {}", out.status));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("reading cargo metadata's output: {e}"))?;
    let target = PathBuf::from(
        meta["target_directory"]
            .as_str()
            .ok_or("cargo metadata names no target directory")?,
    );
    Ok((crates_of(&meta), target))
}

/// The publishable packages of a `cargo metadata --no-deps` document.
fn crates_of(meta: &Value) -> Vec<Crate> {
    let packages = meta["packages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let text = |v: &Value| v.as_str().map(str::to_string);
    packages
        .iter()
        // `publish = false` is `[]`; no `publish` key is `null` (any registry).
        .filter(|p| !p["publish"].as_array().is_some_and(Vec::is_empty))
        .filter_map(|p| {
            let workspace_deps = p["dependencies"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter(|d| d["path"].is_string())
                .filter_map(|d| d["name"].as_str())
                .filter(|n| members.contains(n))
                .map(str::to_string)
                .collect();
            Some(Crate {
                name: text(&p["name"])?,
                version: text(&p["version"])?,
                manifest: PathBuf::from(p["manifest_path"].as_str()?),
                readme: text(&p["readme"]),
                license: text(&p["license"]),
                license_file: text(&p["license_file"]),
                rust_version: text(&p["rust_version"]),
                workspace_deps,
            })
        })
        .collect()
}

/// `name` and every workspace crate it needs to build, dependencies first.
pub(crate) fn with_workspace_deps(all: &[Crate], name: &str) -> Vec<String> {
    fn visit(all: &[Crate], name: &str, out: &mut Vec<String>) {
        if out.iter().any(|n| n == name) {
            return;
        }
        if let Some(c) = all.iter().find(|c| c.name == name) {
            for d in &c.workspace_deps {
                visit(all, d, out);
            }
        }
        out.push(name.to_string());
    }
    let mut out = Vec::new();
    visit(all, name, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::{crates_of, with_workspace_deps};
    use serde_json::json;

    #[test]
    fn publishable_crates_and_their_workspace_dependencies() {
        let meta = json!({"packages": [
            {"name": "a", "version": "0.1.0", "manifest_path": "/w/a/Cargo.toml", "publish": null,
             "readme": "README.md", "license": "MIT", "license_file": null, "rust_version": "1.85",
             "dependencies": [
                {"name": "b", "kind": null, "path": "/w/b"},
                {"name": "t", "kind": "dev", "path": "/w/t"},
                {"name": "serde", "kind": null},
             ]},
            {"name": "b", "version": "0.2.0", "manifest_path": "/w/b/Cargo.toml", "publish": null,
             "readme": null, "license": null, "license_file": null, "rust_version": null,
             "dependencies": []},
            {"name": "t", "version": "0.0.0", "manifest_path": "/w/t/Cargo.toml", "publish": [],
             "dependencies": []},
        ]});
        let crates = crates_of(&meta);
        let names: Vec<&str> = crates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(crates[0].workspace_deps, ["b"]);
        assert_eq!(crates[0].rust_version.as_deref(), Some("1.85"));
        assert_eq!(crates[1].readme, None);
        assert_eq!(with_workspace_deps(&crates, "a"), ["b", "a"]);
        assert_eq!(with_workspace_deps(&crates, "b"), ["b"]);
    }
}
