//! Run-time resolution of every entry point, once per library, thread-safe.
//!
//! Each API module owns one [`Api`] static: its library's catalogue name, the
//! generated table of [`Entry`]s and a `OnceLock` that holds the resolved function
//! pointers. The first call into an API loads the library through
//! `cuda-pathfinder` and resolves every entry at once; after that a call costs one
//! acquire load, one branch and the indirect call.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fmt;
use std::sync::OnceLock;

use cuda_pathfinder::{LoadedDl, PathfinderError};

/// The environment variable that selects the per-thread default stream variants.
pub const PER_THREAD_DEFAULT_STREAM_VAR: &str = "CUDA_RS_PER_THREAD_DEFAULT_STREAM";

/// A resolved C function, type-erased (the generated wrapper restores its type).
pub(crate) type RawFn = unsafe extern "C" fn();

/// One entry point of an API, as the generator wrote it.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The public C name (`cuMemAlloc`).
    pub(crate) name: &'static CStr,
    /// The name `cuGetProcAddress` takes (driver; `cuMemAlloc`).
    pub(crate) base: &'static CStr,
    /// The exported symbol (`cuMemAlloc_v2`).
    pub(crate) symbol: &'static CStr,
    /// The ABI version from `cudaTypedefs.h` (driver; 0 when none matched).
    pub(crate) version: u32,
    /// The exported per-thread default stream symbol, if there is one.
    pub(crate) ptds_symbol: Option<&'static CStr>,
    /// The per-thread default stream ABI version (driver; 0 when none).
    pub(crate) ptds_version: u32,
}

/// How an API's entries are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// `cuGetProcAddress` at each entry's ABI version.
    Driver,
    /// The exported symbol, looked up in the loaded library.
    Dlsym,
}

/// Which C API an error or entry point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiKind {
    /// The driver API (`libcuda`).
    Driver,
    /// The runtime API (`libcudart`).
    Runtime,
    /// NVRTC (`libnvrtc`).
    Nvrtc,
    /// nvJitLink (`libnvJitLink`).
    NvJitLink,
    /// NVVM (`libnvvm`).
    Nvvm,
    /// NVML (`libnvidia-ml`).
    Nvml,
}

impl ApiKind {
    /// The pathfinder's catalogue name of the library (`cuda`, `cudart`, …).
    pub fn library(self) -> &'static str {
        match self {
            Self::Driver => "cuda",
            Self::Runtime => "cudart",
            Self::Nvrtc => "nvrtc",
            Self::NvJitLink => "nvJitLink",
            Self::Nvvm => "nvvm",
            Self::Nvml => "nvml",
        }
    }

    fn index(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Driver => "CUDA driver",
            Self::Runtime => "CUDA runtime",
            Self::Nvrtc => "NVRTC",
            Self::NvJitLink => "nvJitLink",
            Self::Nvvm => "NVVM",
            Self::Nvml => "NVML",
        })
    }
}

/// Why an entry point cannot be called.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Unavailable {
    /// The library itself could not be found or loaded.
    #[error("{api} library could not be loaded: {error}")]
    Library {
        /// The API.
        api: ApiKind,
        /// The pathfinder's error, listing every place it searched.
        error: PathfinderError,
    },
    /// The library was loaded but lacks the symbol.
    #[error("`{name}` is not exported by {path} (symbol `{symbol}`)")]
    Symbol {
        /// The public C name.
        name: &'static str,
        /// The symbol that was looked up.
        symbol: &'static str,
        /// The library that was searched.
        path: String,
    },
    /// The installed driver does not offer this entry point at the ABI version the
    /// bindings were generated for.
    #[error(
        "`{name}` (ABI version {version}) is not available from the installed driver \
         (driver CUDA version {}): {reason}",
        fmt_version(*driver_version)
    )]
    DriverSymbol {
        /// The public C name.
        name: &'static str,
        /// The ABI version asked for.
        version: u32,
        /// What `cuDriverGetVersion` reported (0 if it could not be asked).
        driver_version: i32,
        /// What `cuGetProcAddress` said.
        reason: &'static str,
    },
    /// The library found is of another CUDA major version than these bindings were
    /// generated for; its ABI may differ, so none of its entry points is used.
    #[error(
        "{api} library {path} is CUDA {found}, but these bindings are for CUDA {expected} \
         (build cuda-bindings with the `cuda-{found}` feature, or make a CUDA {expected} \
         {api} the one found)"
    )]
    MajorVersion {
        /// The API.
        api: ApiKind,
        /// The library that was loaded.
        path: String,
        /// Its CUDA major version.
        found: i32,
        /// The bindings' ([`CUDA_MAJOR`](crate::CUDA_MAJOR)).
        expected: u32,
    },
    /// The library was loaded but resolving its entry points failed as a whole.
    #[error("{api}: {message}")]
    Resolution {
        /// The API.
        api: ApiKind,
        /// What went wrong.
        message: String,
    },
}

/// `13000` → `13.0`.
pub(crate) fn fmt_version(v: i32) -> String {
    if v <= 0 {
        "unknown".into()
    } else {
        format!("{}.{}", v / 1000, (v % 1000) / 10)
    }
}

/// What resolving one API produced.
pub(crate) struct Table<const N: usize> {
    pub(crate) fns: [Option<RawFn>; N],
    pub(crate) lib: &'static LoadedDl,
    /// The driver's version (driver API only).
    pub(crate) driver_version: i32,
    pub(crate) per_thread: bool,
    /// The library's CUDA major version when it is not the bindings' (then every
    /// entry of `fns` is `None`).
    pub(crate) wrong_major: Option<i32>,
}

/// One API's lazily resolved table.
pub(crate) struct Api<const N: usize> {
    pub(crate) kind: ApiKind,
    pub(crate) resolver: Resolver,
    pub(crate) entries: &'static [Entry; N],
    table: OnceLock<Result<Table<N>, PathfinderError>>,
}

impl<const N: usize> Api<N> {
    pub(crate) const fn new(
        kind: ApiKind,
        resolver: Resolver,
        entries: &'static [Entry; N],
    ) -> Self {
        Self {
            kind,
            resolver,
            entries,
            table: OnceLock::new(),
        }
    }

    /// The resolved table, resolving it on first use. A library that cannot be
    /// loaded is remembered as such for the life of the process.
    #[inline]
    pub(crate) fn table(&self) -> Result<&Table<N>, &PathfinderError> {
        match self.table.get() {
            Some(t) => t.as_ref(),
            None => self.init(),
        }
    }

    #[cold]
    #[inline(never)]
    fn init(&self) -> Result<&Table<N>, &PathfinderError> {
        self.table
            .get_or_init(|| {
                let lib = cuda_pathfinder::load_nvidia_dynamic_lib(self.kind.library())?;
                Ok(resolve(lib, self.kind, self.resolver, self.entries))
            })
            .as_ref()
    }

    /// The function of entry `idx`, if it resolved.
    #[inline(always)]
    pub(crate) fn entry(&self, idx: usize) -> Option<RawFn> {
        match self.table() {
            Ok(t) => t.fns[idx],
            Err(_) => None,
        }
    }

    /// Why entry `idx` is unavailable (`None` if it is available).
    pub(crate) fn why_unavailable(&self, idx: usize) -> Option<Unavailable> {
        let e = self.entries.get(idx)?;
        let name = e.name.to_str().unwrap_or("?");
        match self.table() {
            Err(error) => Some(Unavailable::Library {
                api: self.kind,
                error: error.clone(),
            }),
            Ok(t) if t.fns[idx].is_some() => None,
            Ok(t) if t.wrong_major.is_some() => Some(Unavailable::MajorVersion {
                api: self.kind,
                path: t.lib.abs_path().display().to_string(),
                found: t.wrong_major.unwrap_or_default(),
                expected: crate::CUDA_MAJOR,
            }),
            Ok(t) => Some(match self.resolver {
                Resolver::Driver if e.version != 0 => {
                    let (version, flags) = driver_request(e, t.per_thread);
                    let reason = match driver_lookup(t.lib, e.base, version, flags) {
                        Err(Some(DriverLookupStatus::VersionNotSufficient)) => {
                            "the driver is older than this entry point's ABI version"
                        }
                        Err(Some(DriverLookupStatus::SymbolNotFound)) => {
                            "the driver does not know the symbol"
                        }
                        Err(None) => "cuGetProcAddress is missing or failed",
                        Ok(_) => "it resolved on a second attempt; resolution is done once",
                    };
                    Unavailable::DriverSymbol {
                        name,
                        version,
                        driver_version: t.driver_version,
                        reason,
                    }
                }
                _ => {
                    let sym = if t.per_thread {
                        e.ptds_symbol.unwrap_or(e.symbol)
                    } else {
                        e.symbol
                    };
                    Unavailable::Symbol {
                        name,
                        symbol: sym.to_str().unwrap_or("?"),
                        path: t.lib.abs_path().display().to_string(),
                    }
                }
            }),
        }
    }

    /// Records that entry `idx` was called while unavailable, for the error helpers.
    #[cold]
    pub(crate) fn note_unavailable(&self, idx: usize) {
        LAST_UNAVAILABLE.with(|c| c.set(Some((self.kind.index(), idx))));
    }

    /// Takes the note [`note_unavailable`](Self::note_unavailable) left on this
    /// thread for this API, if any.
    pub(crate) fn take_unavailable(&self) -> Option<Unavailable> {
        let (api, idx) = LAST_UNAVAILABLE.with(Cell::get)?;
        if api != self.kind.index() {
            return None;
        }
        LAST_UNAVAILABLE.with(|c| c.set(None));
        self.why_unavailable(idx)
    }

    /// The number of entries that resolved, and the total.
    pub(crate) fn counts(&self) -> Option<(usize, usize)> {
        let t = self.table().ok()?;
        Some((t.fns.iter().filter(|f| f.is_some()).count(), N))
    }

    /// Whether the entry named `name` resolved.
    pub(crate) fn is_available(&self, name: &str) -> bool {
        let Ok(t) = self.table() else { return false };
        self.entries
            .iter()
            .position(|e| e.name.to_bytes() == name.as_bytes())
            .is_some_and(|i| t.fns[i].is_some())
    }
}

thread_local! {
    static LAST_UNAVAILABLE: Cell<Option<(u8, usize)>> = const { Cell::new(None) };
}

/// Whether per-thread default stream variants were asked for.
pub(crate) fn per_thread_requested() -> bool {
    std::env::var(PER_THREAD_DEFAULT_STREAM_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn resolve<const N: usize>(
    lib: &'static LoadedDl,
    kind: ApiKind,
    resolver: Resolver,
    entries: &'static [Entry; N],
) -> Table<N> {
    let per_thread = per_thread_requested();
    let mut fns: [Option<RawFn>; N] = [None; N];
    let mut driver_version = 0;
    let wrong_major = library_major(lib, kind).filter(|&m| m != crate::CUDA_MAJOR as i32);
    if wrong_major.is_some() {
        return Table {
            fns,
            lib,
            driver_version,
            per_thread,
            wrong_major,
        };
    }
    match resolver {
        Resolver::Dlsym => {
            for (slot, e) in fns.iter_mut().zip(entries) {
                let sym = match (per_thread, e.ptds_symbol) {
                    (true, Some(p)) => p,
                    _ => e.symbol,
                };
                *slot = dlsym(lib, sym);
            }
        }
        Resolver::Driver => {
            driver_version = query_driver_version(lib);
            for (slot, e) in fns.iter_mut().zip(entries) {
                *slot = if e.version == 0 {
                    // No `PFN_` type recorded the ABI: take the exported symbol.
                    dlsym(lib, e.symbol)
                } else {
                    let (version, flags) = driver_request(e, per_thread);
                    driver_lookup(lib, e.base, version, flags).ok()
                };
            }
        }
    }
    Table {
        fns,
        lib,
        driver_version,
        per_thread,
        wrong_major: None,
    }
}

/// The CUDA major version of a loaded runtime, NVRTC or nvJitLink library, asked of
/// the library itself; `None` for the other APIs (the driver and NVML keep their
/// ABI across CUDA versions, NVVM versions its IR instead) or when it cannot say.
fn library_major(lib: &LoadedDl, kind: ApiKind) -> Option<i32> {
    match kind {
        ApiKind::Runtime => {
            let f = lib.symbol(c"cudaRuntimeGetVersion")?;
            // SAFETY: `cudaRuntimeGetVersion(int*)` in every CUDA version.
            let f: unsafe extern "C" fn(*mut c_int) -> c_int =
                unsafe { std::mem::transmute(f.as_ptr()) };
            let mut v = 0;
            // SAFETY: `v` is valid for writes.
            (unsafe { f(&mut v) } == 0 && v > 0).then_some(v / 1000)
        }
        ApiKind::Nvrtc => {
            let f = lib.symbol(c"nvrtcVersion")?;
            // SAFETY: `nvrtcVersion(int*, int*)` in every CUDA version.
            let f: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int =
                unsafe { std::mem::transmute(f.as_ptr()) };
            let (mut major, mut minor) = (0, 0);
            // SAFETY: both are valid for writes.
            (unsafe { f(&mut major, &mut minor) } == 0 && major > 0).then_some(major)
        }
        ApiKind::NvJitLink => {
            let f = lib.symbol(c"nvJitLinkVersion")?;
            // SAFETY: `nvJitLinkVersion(unsigned*, unsigned*)` since CUDA 12.3.
            let f: unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int =
                unsafe { std::mem::transmute(f.as_ptr()) };
            let (mut major, mut minor) = (0, 0);
            // SAFETY: both are valid for writes.
            (unsafe { f(&mut major, &mut minor) } == 0 && major > 0)
                .then(|| i32::try_from(major).ok())
                .flatten()
        }
        ApiKind::Driver | ApiKind::Nvvm | ApiKind::Nvml => None,
    }
}

fn dlsym(lib: &LoadedDl, sym: &CStr) -> Option<RawFn> {
    let p = lib.symbol(sym)?;
    // SAFETY: a non-null address of an exported function; it is only called after
    // being transmuted back to its C signature by the generated wrapper.
    Some(unsafe { std::mem::transmute::<*mut c_void, RawFn>(p.as_ptr()) })
}

/// `CU_GET_PROC_ADDRESS_LEGACY_STREAM`.
const LEGACY_STREAM: u64 = 1 << 0;
/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`.
const PER_THREAD_DEFAULT_STREAM: u64 = 1 << 1;

/// The version and flags to ask `cuGetProcAddress` for.
fn driver_request(e: &Entry, per_thread: bool) -> (u32, u64) {
    if per_thread && e.ptds_version != 0 {
        (e.ptds_version, PER_THREAD_DEFAULT_STREAM)
    } else {
        (e.version, LEGACY_STREAM)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DriverLookupStatus {
    SymbolNotFound,
    VersionNotSufficient,
}

type GetProcAddressV2 =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> c_int;
type GetProcAddressV1 = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> c_int;

/// `cuGetProcAddress_v2` (CUDA 12+) or, on older drivers, `cuGetProcAddress`.
fn driver_lookup(
    lib: &LoadedDl,
    base: &CStr,
    version: u32,
    flags: u64,
) -> Result<RawFn, Option<DriverLookupStatus>> {
    let mut out: *mut c_void = std::ptr::null_mut();
    let version = c_int::try_from(version).map_err(|_| None)?;
    if let Some(p) = lib.symbol(c"cuGetProcAddress_v2") {
        // SAFETY: `cuGetProcAddress_v2` has this signature in every driver that exports it.
        let f = unsafe { std::mem::transmute::<*mut c_void, GetProcAddressV2>(p.as_ptr()) };
        let mut status: c_int = 0;
        // SAFETY: `base` is NUL-terminated; `out` and `status` are valid for writes.
        let rc = unsafe { f(base.as_ptr(), &mut out, version, flags, &mut status) };
        if rc != 0 || out.is_null() {
            return Err(Some(match status {
                2 => DriverLookupStatus::VersionNotSufficient,
                _ => DriverLookupStatus::SymbolNotFound,
            }));
        }
    } else if let Some(p) = lib.symbol(c"cuGetProcAddress") {
        // SAFETY: CUDA 11.3–11.8 drivers export `cuGetProcAddress` with this signature.
        let f = unsafe { std::mem::transmute::<*mut c_void, GetProcAddressV1>(p.as_ptr()) };
        // SAFETY: as above.
        let rc = unsafe { f(base.as_ptr(), &mut out, version, flags) };
        if rc != 0 || out.is_null() {
            return Err(Some(DriverLookupStatus::SymbolNotFound));
        }
    } else {
        return Err(None);
    }
    // SAFETY: a non-null function address handed out by the driver.
    Ok(unsafe { std::mem::transmute::<*mut c_void, RawFn>(out) })
}

fn query_driver_version(lib: &LoadedDl) -> i32 {
    let Some(p) = lib.symbol(c"cuDriverGetVersion") else {
        return 0;
    };
    // SAFETY: `CUresult cuDriverGetVersion(int *)`, exported by every driver.
    let f = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_int) -> c_int>(p.as_ptr())
    };
    let mut v: c_int = 0;
    // SAFETY: `v` is valid for writes; the call needs no `cuInit`.
    if unsafe { f(&mut v) } == 0 { v } else { 0 }
}
