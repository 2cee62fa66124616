//! Debian's `ip` (iproute2) for `run-launchers.sh`, whose socket runs put each rank
//! in a network namespace of its own: the lent GPU machines have no `ip`. The
//! `.deb`s are downloaded once into `target/gpu-pkg-debs/` (as the glvnd ones are),
//! unpacked, and `ip` with the libraries it loads goes to `DIR/iproute/`.

use std::path::Path;
use std::process::Command;

use super::gl::{debs, is_soname};
use crate::util::{run_cmd, workspace_root};

/// iproute2 and the packages of the libraries its `ip` loads (`libbpf.so.1`,
/// `libelf.so.1`, `libmnl.so.0`, `libbsd.so.0`, `libcap.so.2`) and theirs
/// (`libz.so.1`, `libmd.so.0`); glibc the machine has.
const IPROUTE_DEBS: &[&str] = &[
    "iproute2", "libbpf1", "libelf1", "libmnl0", "libbsd0", "libcap2", "libmd0", "zlib1g",
];

/// Where a `.deb` may put `ip`: Debian before and after the merged `/usr`.
const IP_PATHS: &[&str] = &["bin/ip", "sbin/ip", "usr/bin/ip", "usr/sbin/ip"];

/// Where the libraries' `.deb`s put them.
const LIB_DIRS: &[&str] = &["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"];

/// Unpacks iproute2's `.deb`s into `dest`: `dest/ip` and each library under its
/// soname in `dest/lib/` (`run-launchers.sh` runs `ip` with that folder on the
/// loader's path); returns the bytes copied.
pub(super) fn iproute(dest: &Path) -> Result<u64, String> {
    let cache = workspace_root().join("target").join("gpu-pkg-debs");
    std::fs::create_dir_all(&cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;
    let hint = format!(
        "the GPU package carries Debian's `ip` ({}) for run-launchers.sh's network namespaces",
        IPROUTE_DEBS.join(" ")
    );
    let debs = debs(&cache, IPROUTE_DEBS, &hint)?;
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    for deb in &debs {
        run_cmd(Command::new("dpkg-deb").arg("-x").arg(deb).arg(tmp.path()))
            .map_err(|e| format!("{e} (unpacking needs dpkg-deb)"))?;
    }
    let libdest = dest.join("lib");
    std::fs::create_dir_all(&libdest)
        .map_err(|e| format!("creating {}: {e}", libdest.display()))?;
    // `sbin/ip` may be a link to `bin/ip`: copy what the first one found points at.
    let ip = IP_PATHS
        .iter()
        .map(|p| tmp.path().join(p))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "the iproute2 .deb holds no ip (looked at {})",
                IP_PATHS.join(" ")
            )
        })?;
    let mut total = std::fs::copy(&ip, dest.join("ip"))
        .map_err(|e| format!("copying {}: {e}", ip.display()))?;
    let mut names = Vec::new();
    for dir in LIB_DIRS
        .iter()
        .map(|d| tmp.path().join(d))
        .filter(|d| d.is_dir())
    {
        for entry in
            std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?
        {
            let entry = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !is_soname(&name) || !entry.path().is_file() {
                continue;
            }
            // The soname is a link to the versioned file: copy what it points at.
            total += std::fs::copy(entry.path(), libdest.join(&name))
                .map_err(|e| format!("copying {name}: {e}"))?;
            names.push(name);
        }
    }
    for want in [
        "libbpf.so.1",
        "libelf.so.1",
        "libmnl.so.0",
        "libbsd.so.0",
        "libcap.so.2",
        "libz.so.1",
        "libmd.so.0",
    ] {
        if !names.iter().any(|n| n == want) {
            names.sort();
            return Err(format!(
                "the iproute2 .debs hold no {want} (found: {})",
                names.join(" ")
            ));
        }
    }
    Ok(total)
}
