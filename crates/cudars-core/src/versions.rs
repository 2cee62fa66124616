//! What this process runs on: the driver's CUDA version, each library's version
//! and where it was found, and the driver-version gates of features.
//!
//! *Architecture Invariant:* the CUDA version a feature needs is decided from the
//! driver's version, read once per process (`cuDriverGetVersion`), never per call.
//! The bindings resolve every driver entry point at the newest ABI the driver has
//! and never ask a driver for a newer ABI than its own, so a function that is
//! missing fails with [`Error::Unsupported`] naming the version it needs; choosing
//! between an entry point's CUDA 13 and CUDA 12 shapes (`cuCtxCreate`,
//! `cuMemPrefetchAsync`, …) is done here, by that version.

use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use cudars_bindings::Version;

use crate::error::{DriverRequirement, Error, Result};

/// The driver's CUDA version as `1000 * major + 10 * minor`, read once; 0 when
/// there is no driver.
pub(crate) fn driver_version() -> i32 {
    static V: OnceLock<i32> = OnceLock::new();
    *V.get_or_init(|| {
        let mut v = 0;
        // SAFETY: `v` is valid for writes; the call needs no `cuInit`.
        let rc = unsafe { cudars_bindings::driver::cuDriverGetVersion(&mut v) };
        if rc == cudars_bindings::driver::CUDA_SUCCESS {
            v
        } else {
            0
        }
    })
}

/// Whether the driver is CUDA `v` (`12080`) or newer.
#[inline]
pub(crate) fn driver_at_least(v: i32) -> bool {
    driver_version() >= v
}

/// `Ok` when the driver is CUDA `needs` or newer, else [`Error::Unsupported`]
/// naming `feature`.
pub(crate) fn require_driver<C: Into<std::borrow::Cow<'static, str>>>(
    needs: i32,
    feature: &'static str,
    context: impl FnOnce() -> C,
) -> Result<()> {
    let have = driver_version();
    // Without a driver the call itself fails and says so.
    if have == 0 || have >= needs {
        return Ok(());
    }
    Err(Error::driver_too_old(
        context(),
        DriverRequirement {
            feature: feature.into(),
            needs: Version::from_cuda(needs),
            driver: Version::from_cuda(have),
        },
    ))
}

/// One library: its version and where it was loaded from, or why it could not
/// be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Component {
    /// Its CUDA version (for NVML: the driver's).
    pub version: Option<Version>,
    /// The file that was loaded.
    pub path: Option<PathBuf>,
    /// How the pathfinder found it (`site-packages`, `system-search`, …).
    pub found_via: Option<String>,
    /// Why it is missing or could not be asked its version.
    pub error: Option<String>,
    /// More that the library says of itself (NVML: its version and the driver's).
    pub detail: Option<String>,
}

impl Component {
    /// Where the library was found, or why it was not.
    fn from_library(
        lib: Result<&'static cudars_pathfinder::LoadedDl, cudars_pathfinder::PathfinderError>,
    ) -> Self {
        match lib {
            Err(e) => Self {
                version: None,
                path: None,
                found_via: None,
                error: Some(crate::error::Report::new(&e).to_string()),
                detail: None,
            },
            Ok(lib) => Self {
                version: None,
                path: Some(lib.abs_path().to_path_buf()),
                found_via: Some(lib.found_via().to_string()),
                error: None,
                detail: None,
            },
        }
    }

    /// The library and, when it loaded, the version it reports.
    fn new<E: std::error::Error + 'static>(
        lib: Result<&'static cudars_pathfinder::LoadedDl, cudars_pathfinder::PathfinderError>,
        version: impl FnOnce() -> Result<Version, E>,
    ) -> Self {
        let mut c = Self::from_library(lib);
        if c.path.is_some() {
            match version() {
                Ok(v) => c.version = Some(v),
                Err(e) => c.error = Some(crate::error::Report::new(&e).to_string()),
            }
        }
        c
    }
}

/// The driver's CUDA version and, for each library, its version and where it was
/// found: what [`versions`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Versions {
    /// The driver (`libcuda`): the CUDA version it supports.
    pub driver: Component,
    /// The runtime (`libcudart`); without the `runtime` feature, an error
    /// saying that it was not looked for.
    pub runtime: Component,
    /// NVRTC.
    pub nvrtc: Component,
    /// nvJitLink.
    pub nvjitlink: Component,
    /// NVVM (its IR version, `major.minor`).
    pub nvvm: Component,
    /// NVML (the version is the driver's CUDA version, as NVML reports it);
    /// without the `nvml` feature, an error saying that it was not looked for.
    pub nvml: Component,
}

/// Loads (if needed) the driver and every library through the pathfinder and
/// reports their versions and locations. Nothing fails: a missing library is
/// reported as such.
///
/// ```no_run
/// println!("{}", cudars_core::versions());
/// ```
pub fn versions() -> Versions {
    use cudars_bindings::{driver, nvjitlink, nvrtc, nvvm};
    Versions {
        driver: Component::new(driver::library(), driver::version),
        runtime: runtime_component(),
        nvrtc: Component::new(nvrtc::library(), nvrtc::version),
        nvjitlink: Component::new(nvjitlink::library(), nvjitlink::version),
        nvvm: Component::new(nvvm::library(), nvvm::version),
        nvml: nvml_component(),
    }
}

/// The runtime: cudars-core makes no runtime call, and builds the runtime's
/// bindings only for this report (the `runtime` feature).
#[cfg(feature = "runtime")]
fn runtime_component() -> Component {
    use cudars_bindings::runtime;
    Component::new(runtime::library(), runtime::version)
}

#[cfg(not(feature = "runtime"))]
fn runtime_component() -> Component {
    not_looked_for("runtime")
}

/// A component whose bindings this build leaves out (its `feature` is off).
#[cfg(any(not(feature = "runtime"), not(feature = "nvml")))]
fn not_looked_for(feature: &str) -> Component {
    Component {
        version: None,
        path: None,
        found_via: None,
        error: Some(format!(
            "not looked for: cudars-core was built without its `{feature}` feature"
        )),
        detail: None,
    }
}

/// NVML has no CUDA version of its own: its version string and the driver's go
/// in `detail`.
#[cfg(feature = "nvml")]
fn nvml_component() -> Component {
    use cudars_bindings::nvml;
    let mut c = Component::from_library(nvml::library());
    if c.path.is_some() {
        match nvml::version() {
            Ok((nvml_version, driver)) => {
                c.detail = Some(format!("NVML {nvml_version}, driver {driver}"));
            }
            Err(e) => c.error = Some(crate::error::Report::new(&e).to_string()),
        }
    }
    c
}

/// Without the `nvml` feature NVML's bindings are not built: the component says so.
#[cfg(not(feature = "nvml"))]
fn nvml_component() -> Component {
    not_looked_for("nvml")
}

impl Versions {
    /// Each component with its name, in a fixed order.
    pub fn components(&self) -> [(&'static str, &Component); 6] {
        [
            ("driver", &self.driver),
            ("runtime", &self.runtime),
            ("nvrtc", &self.nvrtc),
            ("nvjitlink", &self.nvjitlink),
            ("nvvm", &self.nvvm),
            ("nvml", &self.nvml),
        ]
    }
}

impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, c) in self.components() {
            let version = c.version.map_or_else(|| "-".to_owned(), |v| v.to_string());
            write!(f, "{name:<10} {version:<6}")?;
            if let Some(p) = &c.path {
                write!(f, " {}", p.display())?;
            }
            if let Some(v) = &c.found_via {
                write!(f, " ({v})")?;
            }
            if let Some(d) = &c.detail {
                write!(f, " {d}")?;
            }
            if let Some(e) = &c.error {
                let first = e.lines().next().unwrap_or_default();
                write!(f, " {first}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
