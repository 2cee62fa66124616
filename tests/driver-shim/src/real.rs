//! Finding and loading the real driver.

use std::path::{Path, PathBuf};

use crate::config::ENV_REAL_DRIVER;

/// Where the real driver usually is, in the order they are tried when
/// `CUDA_RS_SHIM_REAL_DRIVER` is unset.
pub const WELL_KNOWN: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
];

/// The real driver's path: `explicit` (`CUDA_RS_SHIM_REAL_DRIVER`) when given,
/// else the first of `candidates` that exists; never the shim's own file `own`.
///
/// `canonical` resolves a path to its canonical form, `None` when it does not
/// exist ([`std::fs::canonicalize`], or a test's table).
///
/// # Errors
///
/// Why no real driver can be named: the explicit path is relative, missing or
/// the shim itself, or none of the candidates exists (all are listed).
pub fn choose_real_driver(
    explicit: Option<&Path>,
    candidates: &[&Path],
    own: Option<&Path>,
    canonical: impl Fn(&Path) -> Option<PathBuf>,
) -> Result<PathBuf, String> {
    let own = own.and_then(&canonical);
    let is_own = |c: &Path| own.as_deref() == Some(c);
    if let Some(p) = explicit {
        if !p.is_absolute() {
            return Err(format!(
                "{ENV_REAL_DRIVER}={} is not an absolute path",
                p.display()
            ));
        }
        return match canonical(p) {
            None => Err(format!("{ENV_REAL_DRIVER}={} does not exist", p.display())),
            Some(c) if is_own(&c) => Err(format!(
                "{ENV_REAL_DRIVER}={} is this shim, not the real driver",
                p.display()
            )),
            Some(_) => Ok(p.to_path_buf()),
        };
    }
    for p in candidates {
        match canonical(p) {
            Some(c) if !is_own(&c) => return Ok(p.to_path_buf()),
            _ => {}
        }
    }
    let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "no real CUDA driver found (tried {}); set {ENV_REAL_DRIVER} to its libcuda.so.1",
        tried.join(", ")
    ))
}

/// The parts of the real driver the shim uses.
#[derive(Clone, Copy)]
pub struct RealDriver {
    /// Its `cuGetProcAddress_v2`.
    pub get_proc_address: crate::route::GetProcAddressV2,
    /// What its `cuDriverGetVersion` says.
    pub version: std::ffi::c_int,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use super::{RealDriver, WELL_KNOWN, choose_real_driver};
    use crate::config::Config;
    use crate::route::{DriverGetVersion, GetProcAddressV2};
    use std::ffi::{CStr, CString, c_int, c_void};
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::{Path, PathBuf};

    /// The file this shim was loaded from, as the loader knows it.
    fn own_path() -> Option<PathBuf> {
        let mut info = libc::Dl_info {
            dli_fname: std::ptr::null(),
            dli_fbase: std::ptr::null_mut(),
            dli_sname: std::ptr::null(),
            dli_saddr: std::ptr::null_mut(),
        };
        let addr = crate::cuDriverGetVersion as DriverGetVersion as *const c_void;
        // SAFETY: `addr` is a function of this object; `info` is a local to fill.
        if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: `dladdr` filled in a NUL-terminated name owned by the loader.
        let name = unsafe { CStr::from_ptr(info.dli_fname) };
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
    }

    fn dl_error() -> String {
        // SAFETY: `dlerror` returns NULL or a NUL-terminated message owned by libc.
        let e = unsafe { libc::dlerror() };
        if e.is_null() {
            return "unknown error".to_string();
        }
        // SAFETY: non-null, NUL-terminated, valid until the next dl* call on this thread.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }

    fn symbol(handle: *mut c_void, name: &CStr) -> Option<*mut c_void> {
        // SAFETY: `handle` came from a successful `dlopen`; `name` is NUL-terminated.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    }

    /// Finds, loads (once per process, never closed) and checks the real driver.
    pub(crate) fn load(config: &Config) -> Result<RealDriver, String> {
        let candidates: Vec<&Path> = WELL_KNOWN.iter().map(Path::new).collect();
        let own = own_path();
        let path = choose_real_driver(
            config.real_driver.as_deref(),
            &candidates,
            own.as_deref(),
            |p| std::fs::canonicalize(p).ok(),
        )?;
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("{} has a NUL byte in its name", path.display()))?;
        let flags: c_int = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
        // SAFETY: a NUL-terminated path; loading runs the driver's initialisers,
        // which is what loading a driver means. RTLD_DEEPBIND keeps the real
        // driver's references to its own functions from binding to the shim's.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), flags) };
        if handle.is_null() {
            return Err(format!("cannot load {}: {}", path.display(), dl_error()));
        }
        let gpa = symbol(handle, c"cuGetProcAddress_v2").ok_or_else(|| {
            format!(
                "{} has no cuGetProcAddress_v2 (a driver older than CUDA 12.0); the shim needs a newer one",
                path.display()
            )
        })?;
        // A hard link or a copy of the shim under another name loads as the shim.
        if gpa == crate::cuGetProcAddress_v2 as GetProcAddressV2 as *mut c_void {
            return Err(format!(
                "{} is this shim, not the real driver",
                path.display()
            ));
        }
        let version_fn = symbol(handle, c"cuDriverGetVersion")
            .ok_or_else(|| format!("{} has no cuDriverGetVersion", path.display()))?;
        // SAFETY: every driver exports `CUresult cuGetProcAddress_v2(const char *,
        // void **, int, cuuint64_t, CUdriverProcAddressQueryResult *)` under this name.
        let get_proc_address = unsafe { std::mem::transmute::<*mut c_void, GetProcAddressV2>(gpa) };
        // SAFETY: `CUresult cuDriverGetVersion(int *)`, likewise.
        let version_fn =
            unsafe { std::mem::transmute::<*mut c_void, DriverGetVersion>(version_fn) };
        let mut version: c_int = 0;
        // SAFETY: `version` is a local; the call needs no `cuInit`.
        let rc = unsafe { version_fn(&mut version) };
        if rc != crate::CUDA_SUCCESS {
            return Err(format!(
                "cuDriverGetVersion of {} failed with CUresult {rc}",
                path.display()
            ));
        }
        Ok(RealDriver {
            get_proc_address,
            version,
        })
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    use super::RealDriver;
    use crate::config::Config;

    pub(crate) fn load(_config: &Config) -> Result<RealDriver, String> {
        Err("the driver shim works on Linux with glibc only (it needs RTLD_DEEPBIND)".to_string())
    }
}

pub(crate) use imp::load;

#[cfg(test)]
mod tests {
    use super::*;

    /// A file system of symbolic links: `(path, canonical)`.
    fn fs(table: &'static [(&'static str, &'static str)]) -> impl Fn(&Path) -> Option<PathBuf> {
        move |p| {
            table
                .iter()
                .find(|(from, _)| Path::new(from) == p)
                .map(|(_, to)| PathBuf::from(to))
        }
    }

    const A: &str = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
    const B: &str = "/usr/lib64/libcuda.so.1";
    const SHIM: &str = "/pkg/shim/libcuda.so.1";

    #[test]
    fn the_first_existing_well_known_driver_is_taken() {
        let canon = fs(&[(B, "/usr/lib64/libcuda.so.570.1"), (SHIM, SHIM)]);
        let got = choose_real_driver(
            None,
            &[Path::new(A), Path::new(B)],
            Some(Path::new(SHIM)),
            canon,
        );
        assert_eq!(got.unwrap(), Path::new(B));
    }

    #[test]
    fn the_shim_is_never_taken_for_the_real_driver() {
        // The shim installed (or linked) where a real driver usually is.
        let canon = fs(&[
            (A, "/opt/pkg/shim/libcuda.so.1"),
            (B, "/usr/lib64/libcuda.so.570.1"),
            (SHIM, "/opt/pkg/shim/libcuda.so.1"),
        ]);
        let got = choose_real_driver(
            None,
            &[Path::new(A), Path::new(B)],
            Some(Path::new(SHIM)),
            &canon,
        );
        assert_eq!(got.unwrap(), Path::new(B));
        let err =
            choose_real_driver(Some(Path::new(A)), &[], Some(Path::new(SHIM)), &canon).unwrap_err();
        assert!(err.contains("is this shim"), "{err}");
    }

    #[test]
    fn an_explicit_driver_must_be_an_existing_absolute_path() {
        let canon = fs(&[(B, B)]);
        let got = choose_real_driver(Some(Path::new(B)), &[Path::new(A)], None, &canon);
        assert_eq!(got.unwrap(), Path::new(B));
        // Given but missing: no fallback to the well-known places.
        let err = choose_real_driver(
            Some(Path::new("/nope/libcuda.so.1")),
            &[Path::new(B)],
            None,
            &canon,
        )
        .unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        let err =
            choose_real_driver(Some(Path::new("libcuda.so.1")), &[], None, &canon).unwrap_err();
        assert!(err.contains("not an absolute path"), "{err}");
    }

    #[test]
    fn nothing_found_lists_the_places_tried() {
        let err =
            choose_real_driver(None, &[Path::new(A), Path::new(B)], None, fs(&[])).unwrap_err();
        assert!(err.contains(A) && err.contains(B), "{err}");
        assert!(err.contains(ENV_REAL_DRIVER), "{err}");
    }

    #[test]
    fn the_well_known_places_are_absolute() {
        assert!(WELL_KNOWN.iter().all(|p| Path::new(p).is_absolute()));
    }
}
