//! Debian's glvnd libraries for the OpenGL interop tests: downloaded once into
//! `target/gpu-pkg-debs/`, unpacked, and their sonames copied into the package.
//! [`debs`] serves the iproute module too.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::NO_GL_ENV;
use crate::util::{run_cmd, workspace_root};

/// Debian's glvnd packages: the EGL, OpenGL, GLX and GLES dispatch libraries the
/// OpenGL interop tests load (the NVIDIA driver provides the vendor library).
const GL_DEBS: &[&str] = &[
    "libegl1",
    "libglvnd0",
    "libopengl0",
    "libgl1",
    "libglx0",
    "libgles2",
];

/// The `.deb` of each of `wanted` in `cache`, downloaded there (amd64, from
/// the Debian archive the machine's apt knows) when one is missing; `hint`
/// says, on a failure, what they are for and how to do without.
pub(super) fn debs(cache: &Path, wanted: &[&str], hint: &str) -> Result<Vec<PathBuf>, String> {
    let find = |name: &str| -> Option<PathBuf> {
        let prefix = format!("{name}_");
        std::fs::read_dir(cache)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix) && n.ends_with("_amd64.deb"))
            })
    };
    // One apt-get at a time in this process: two (the tests run in parallel) would
    // share `cache`'s lists and partial downloads without apt's locks.
    static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _apt = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if wanted.iter().all(|d| find(d).is_some()) {
        println!(
            "package-tests: {} from {}",
            wanted.join(" "),
            cache.display()
        );
    } else {
        let lists = cache.join("apt-lists");
        std::fs::create_dir_all(lists.join("partial"))
            .map_err(|e| format!("creating {}: {e}", lists.display()))?;
        // amd64 whatever this machine is; apt's lists and caches under `cache`, so
        // neither the system's apt state nor root is needed.
        let opts = [
            "-qq".to_string(),
            "-oAPT::Architecture=amd64".to_string(),
            "-oAPT::Architectures=amd64".to_string(),
            format!("-oDir::State::Lists={}", lists.display()),
            "-oDir::Cache::pkgcache=".to_string(),
            "-oDir::Cache::srcpkgcache=".to_string(),
            "-oDebug::NoLocking=1".to_string(),
        ];
        run_cmd(Command::new("apt-get").args(&opts).arg("update"))
            .map_err(|e| format!("{e}: {hint}"))?;
        run_cmd(
            Command::new("apt-get")
                .current_dir(cache)
                .args(&opts)
                .arg("download")
                .args(wanted),
        )
        .map_err(|e| format!("{e}: {hint}"))?;
    }
    wanted
        .iter()
        .map(|d| {
            find(d).ok_or_else(|| {
                format!(
                    "apt-get download left no {d}_*_amd64.deb in {}",
                    cache.display()
                )
            })
        })
        .collect()
}

/// Unpacks the glvnd `.deb`s into `dest`: each library under its soname
/// (`libEGL.so.1`), as the loader looks for it; returns the bytes copied.
pub(super) fn gl_libraries(dest: &Path) -> Result<u64, String> {
    let cache = workspace_root().join("target").join("gpu-pkg-debs");
    std::fs::create_dir_all(&cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;
    let hint = format!(
        "the GPU package carries Debian's glvnd libraries ({}) for the OpenGL tests; \
         set {NO_GL_ENV}=1 to package without them",
        GL_DEBS.join(" ")
    );
    let debs = debs(&cache, GL_DEBS, &hint)?;
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    for deb in &debs {
        run_cmd(Command::new("dpkg-deb").arg("-x").arg(deb).arg(tmp.path()))
            .map_err(|e| format!("{e} (unpacking needs dpkg-deb)"))?;
    }
    let libdir = tmp.path().join("usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(dest).map_err(|e| format!("creating {}: {e}", dest.display()))?;
    let mut total = 0;
    let mut names = Vec::new();
    for entry in
        std::fs::read_dir(&libdir).map_err(|e| format!("reading {}: {e}", libdir.display()))?
    {
        let entry = entry.map_err(|e| format!("reading {}: {e}", libdir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_soname(&name) {
            continue;
        }
        // The soname is a link to the versioned file: copy what it points at.
        let to = dest.join(&name);
        total += std::fs::copy(entry.path(), &to).map_err(|e| format!("copying {name}: {e}"))?;
        names.push(name);
    }
    names.sort();
    for want in ["libEGL.so.1", "libGLdispatch.so.0", "libOpenGL.so.0"] {
        if !names.iter().any(|n| n == want) {
            return Err(format!(
                "the glvnd .debs hold no {want} (found: {})",
                names.join(" ")
            ));
        }
    }
    Ok(total)
}

/// Whether a file name is a library's soname: `libX.so.N`.
pub(super) fn is_soname(name: &str) -> bool {
    name.starts_with("lib")
        && name
            .split_once(".so.")
            .is_some_and(|(_, v)| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
}
