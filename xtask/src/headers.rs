//! `cargo xtask fetch-headers`: fetch and verify the pinned CUDA headers.
//!
//! The pins live in `headers/pins.json`: for each CUDA major version the NVIDIA
//! wheels that carry the headers, their versions, the folder inside the wheel
//! and a sha256 of every header taken from it. The headers land in
//! `.headers/cuda<major>/include/` (git-ignored), where `regen-bindings` reads them.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::util::{no_more, take_value, workspace_root};

/// One wheel that carries headers.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Package {
    /// The PyPI name.
    pub(crate) name: String,
    /// The pinned version.
    pub(crate) version: String,
    /// The folder inside the wheel that holds the headers.
    pub(crate) include_dir: String,
    /// Header path (relative to `include_dir`) to its sha256.
    pub(crate) headers: BTreeMap<String, String>,
}

/// The pins for one CUDA major version.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MajorPins {
    /// `major.minor` of the toolkit the wheels belong to.
    pub(crate) cuda_version: String,
    /// The wheels.
    pub(crate) packages: Vec<Package>,
}

/// The CUDA majors the pins know, in order.
pub(crate) const MAJORS: [u32; 2] = [12, 13];

/// Reads `headers/pins.json` for one major.
pub(crate) fn pins(major: u32) -> Result<MajorPins, String> {
    let path = workspace_root().join("headers").join("pins.json");
    let text = fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let all: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))?;
    let key = format!("cuda{major}");
    let v = all
        .get(&key)
        .ok_or_else(|| format!("{} has no `{key}` entry", path.display()))?;
    serde_json::from_value(v.clone())
        .map_err(|e| format!("parsing {} `{key}`: {e}", path.display()))
}

/// `.headers/cuda<major>/include`: where the fetched headers live.
pub(crate) fn include_dir(major: u32) -> PathBuf {
    workspace_root()
        .join(".headers")
        .join(format!("cuda{major}"))
        .join("include")
}

/// The sha256 of a file, as lowercase hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String, String> {
    let bytes = fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// Checks every pinned header of `major` in `.headers/`; returns the mismatches.
pub(crate) fn verify(major: u32) -> Result<Vec<String>, String> {
    let pins = pins(major)?;
    let inc = include_dir(major);
    let mut bad = Vec::new();
    for p in &pins.packages {
        for (rel, want) in &p.headers {
            let path = inc.join(rel);
            if !path.is_file() {
                bad.push(format!("{rel} (from {} {}): missing", p.name, p.version));
                continue;
            }
            let got = sha256_file(&path)?;
            if &got != want {
                bad.push(format!(
                    "{rel} (from {} {}): sha256 {got}, pinned {want}",
                    p.name, p.version
                ));
            }
        }
    }
    Ok(bad)
}

fn parse_majors(v: Option<String>) -> Result<Vec<u32>, String> {
    match v.as_deref() {
        None | Some("all") => Ok(MAJORS.to_vec()),
        Some("12") => Ok(vec![12]),
        Some("13") => Ok(vec![13]),
        Some(other) => Err(format!("--cuda takes 12, 13 or all, not `{other}`")),
    }
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let cuda = take_value(&mut args, "--cuda")?;
    let cuda_home = take_value(&mut args, "--cuda-home")?;
    no_more(&args)?;
    let majors = parse_majors(cuda)?;
    match cuda_home {
        Some(home) => {
            let [major] = majors[..] else {
                return Err(
                    "--cuda-home needs --cuda 12 or --cuda 13 (the toolkit's major)".into(),
                );
            };
            from_cuda_home(major, Path::new(&home))
        }
        None => {
            for major in majors {
                fetch(major)?;
            }
            Ok(())
        }
    }
}

/// Downloads the pinned wheels (`pip download --no-deps`) and extracts the pinned headers.
fn fetch(major: u32) -> Result<(), String> {
    let pins = pins(major)?;
    let root = workspace_root();
    let wheels = root
        .join(".headers")
        .join("wheels")
        .join(format!("cuda{major}"));
    let inc = include_dir(major);
    fs::create_dir_all(&wheels).map_err(|e| format!("creating {}: {e}", wheels.display()))?;
    if inc.exists() {
        fs::remove_dir_all(&inc).map_err(|e| format!("clearing {}: {e}", inc.display()))?;
    }
    fs::create_dir_all(&inc).map_err(|e| format!("creating {}: {e}", inc.display()))?;
    for p in &pins.packages {
        let wheel = match find_wheel(&wheels, p)? {
            Some(w) => w,
            None => {
                eprintln!("fetch-headers: downloading {}=={}", p.name, p.version);
                let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
                crate::util::run_cmd(
                    Command::new(python)
                        .args([
                            "-m",
                            "pip",
                            "download",
                            "--no-deps",
                            "--only-binary=:all:",
                            "-q",
                            "-d",
                        ])
                        .arg(&wheels)
                        .arg(format!("{}=={}", p.name, p.version)),
                )?;
                find_wheel(&wheels, p)?.ok_or_else(|| {
                    format!("pip download left no wheel for {}=={}", p.name, p.version)
                })?
            }
        };
        extract(&wheel, p, &inc)?;
    }
    let bad = verify(major)?;
    if !bad.is_empty() {
        return Err(format!(
            "CUDA {major} headers do not match headers/pins.json:\n  {}",
            bad.join("\n  ")
        ));
    }
    let n: usize = pins.packages.iter().map(|p| p.headers.len()).sum();
    eprintln!(
        "fetch-headers: CUDA {} headers ({n} files) verified in {}",
        pins.cuda_version,
        inc.display()
    );
    Ok(())
}

fn find_wheel(dir: &Path, p: &Package) -> Result<Option<PathBuf>, String> {
    let prefix = format!("{}-{}-", p.name.replace('-', "_"), p.version);
    let rd = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.to_ascii_lowercase().starts_with(&prefix) && n.ends_with(".whl"))
        })
        .collect();
    found.sort();
    Ok(found.into_iter().next())
}

/// Extracts the pinned headers of `p` from `wheel` (a zip) into `inc` with Python's zipfile.
fn extract(wheel: &Path, p: &Package, inc: &Path) -> Result<(), String> {
    const SCRIPT: &str = r#"
import sys, zipfile, os
wheel, prefix, dest = sys.argv[1], sys.argv[2], sys.argv[3]
z = zipfile.ZipFile(wheel)
for rel in sys.argv[4:]:
    data = z.read(prefix + "/" + rel)
    out = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)
"#;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    crate::util::run_cmd(
        Command::new(python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(wheel)
            .arg(&p.include_dir)
            .arg(inc)
            .args(p.headers.keys()),
    )
}

/// Copies the pinned header names from an installed toolkit, reporting (not failing on)
/// headers that differ from the pins: a toolkit of another minor version differs.
fn from_cuda_home(major: u32, home: &Path) -> Result<(), String> {
    let pins = pins(major)?;
    let inc = include_dir(major);
    if inc.exists() {
        fs::remove_dir_all(&inc).map_err(|e| format!("clearing {}: {e}", inc.display()))?;
    }
    let mut missing = Vec::new();
    for p in &pins.packages {
        for rel in p.headers.keys() {
            let candidates = [
                home.join("include").join(rel),
                home.join("nvvm").join("include").join(rel),
            ];
            let Some(src) = candidates.iter().find(|c| c.is_file()) else {
                missing.push(rel.clone());
                continue;
            };
            let dst = inc.join(rel);
            if let Some(parent) = dst.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| format!("creating {}: {e}", parent.display()))?;
            }
            fs::copy(src, &dst).map_err(|e| format!("copying {}: {e}", src.display()))?;
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "{} lacks headers the bindings need: {}",
            home.display(),
            missing.join(", ")
        ));
    }
    let bad = verify(major)?;
    if bad.is_empty() {
        eprintln!(
            "fetch-headers: headers from {} match the CUDA {} pins",
            home.display(),
            pins.cuda_version
        );
    } else {
        eprintln!(
            "fetch-headers: warning: headers from {} differ from the CUDA {} pins \
             (regen-bindings will generate for that toolkit; --check will report the difference):\n  {}",
            home.display(),
            pins.cuda_version,
            bad.join("\n  ")
        );
    }
    Ok(())
}
