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

/// Extracts the pinned headers of every wheel of `major` into `.headers/`: from a
/// wheel already in `.headers/wheels/`, else by reading only the headers' bytes out
/// of the remote wheel (HTTP range requests on the zip's central directory and
/// members), else by downloading the whole wheel (`pip download --no-deps`). The
/// sha256 of every header is checked against the pins whichever way it came.
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
    let mut remote: Vec<&Package> = Vec::new();
    for p in &pins.packages {
        match find_wheel(&wheels, p)? {
            Some(wheel) => extract(&wheel.display().to_string(), p, &inc)?,
            None => remote.push(p),
        }
    }
    if !remote.is_empty() {
        let urls = wheel_urls(&remote)?;
        for p in remote {
            let ranged = urls
                .get(&p.name.to_ascii_lowercase())
                .ok_or_else(|| format!("pip found no wheel for {}=={}", p.name, p.version))
                .and_then(|url| extract(url, p, &inc));
            if let Err(e) = ranged {
                eprintln!(
                    "fetch-headers: reading {}=={} in place failed ({e}); downloading it whole",
                    p.name, p.version
                );
                let wheel = download(&wheels, p)?;
                extract(&wheel.display().to_string(), p, &inc)?;
            }
        }
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

/// The download URL of each pinned wheel (lower-case name to URL), as pip resolves
/// it for this machine, without downloading anything (`pip install --dry-run --report`).
fn wheel_urls(packages: &[&Package]) -> Result<BTreeMap<String, String>, String> {
    let report = std::env::temp_dir().join(format!("cuda-rs-wheels-{}.json", std::process::id()));
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    crate::util::run_cmd(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--no-deps",
                "--ignore-installed",
                "--only-binary=:all:",
                "-q",
                "--report",
            ])
            .arg(&report)
            .args(
                packages
                    .iter()
                    .map(|p| format!("{}=={}", p.name, p.version)),
            ),
    )?;
    let text =
        fs::read_to_string(&report).map_err(|e| format!("reading {}: {e}", report.display()))?;
    let _ = fs::remove_file(&report);
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("parsing pip's report: {e}"))?;
    let mut out = BTreeMap::new();
    for item in v["install"].as_array().into_iter().flatten() {
        let name = item["metadata"]["name"].as_str();
        let url = item["download_info"]["url"].as_str();
        if let (Some(name), Some(url)) = (name, url) {
            out.insert(name.to_ascii_lowercase(), url.to_owned());
        }
    }
    Ok(out)
}

/// Downloads one wheel whole (`pip download --no-deps`).
fn download(wheels: &Path, p: &Package) -> Result<PathBuf, String> {
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
            .arg(wheels)
            .arg(format!("{}=={}", p.name, p.version)),
    )?;
    find_wheel(wheels, p)?
        .ok_or_else(|| format!("pip download left no wheel for {}=={}", p.name, p.version))
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

/// Extracts the pinned headers of `p` from `wheel` (a zip: a local path, or an
/// `https://` URL read with range requests) into `inc` with Python's zipfile.
fn extract(wheel: &str, p: &Package, inc: &Path) -> Result<(), String> {
    const SCRIPT: &str = r#"
import io, os, sys, urllib.request, zipfile

class Ranged(io.RawIOBase):
    """A remote file read with HTTP range requests."""
    def __init__(self, url):
        self.url, self.pos = url, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as r:
            self.size = int(r.headers["Content-Length"])
    def readable(self): return True
    def seekable(self): return True
    def tell(self): return self.pos
    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos
    def readinto(self, b):
        n = min(len(b), self.size - self.pos)
        if n <= 0:
            return 0
        req = urllib.request.Request(self.url, headers={"Range": "bytes=%d-%d" % (self.pos, self.pos + n - 1)})
        with urllib.request.urlopen(req, timeout=60) as r:
            if r.status != 206:
                raise OSError("the server ignored the range request")
            data = r.read()
        b[:len(data)] = data
        self.pos += len(data)
        return len(data)

wheel, prefix, dest = sys.argv[1], sys.argv[2], sys.argv[3]
src = io.BufferedReader(Ranged(wheel), 1 << 16) if wheel.startswith("https://") else wheel
z = zipfile.ZipFile(src)
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
