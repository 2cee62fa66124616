//! Run-time resolution of every entry point, once per library, thread-safe.
//!
//! Each API module owns one [`Api`] static: its library's catalogue name, the
//! generated table of [`Entry`]s and a `OnceLock` that holds the resolved function
//! pointers. The first call into an API loads the library through
//! `cudars-pathfinder` and resolves every entry at once; after that a call costs one
//! acquire load, one branch and the indirect call.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fmt;
use std::sync::OnceLock;

use cudars_pathfinder::{LoadedDl, PathfinderError};

/// The environment variable that selects the per-thread default stream variants.
pub const PER_THREAD_DEFAULT_STREAM_VAR: &str = "CUDA_RS_PER_THREAD_DEFAULT_STREAM";

/// A resolved C function, type-erased (the generated wrapper restores its type).
pub(crate) type RawFn = unsafe extern "C" fn();

/// One entry point of an API, as the generator wrote it.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The public C name (`cuMemAlloc`).
    pub(crate) name: &'static CStr,
    /// The ABIs of this shape, newest first: the CUDA 13 headers' and, where CUDA
    /// 12 declares the same shape under another symbol or ABI version, CUDA 12's.
    pub(crate) abis: &'static [Abi],
}

/// How to resolve one ABI of an entry point.
#[derive(Debug)]
pub(crate) struct Abi {
    /// The CUDA major whose headers declare it (12 or 13).
    pub(crate) major: u32,
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

/// The CUDA majors whose headers the bindings carry.
pub const SUPPORTED_MAJORS: [u32; 2] = [12, 13];

/// How an API's entries are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// `cuGetProcAddress` at each entry's ABI version.
    Driver,
    /// The exported symbol, looked up in the loaded library.
    #[cfg_attr(
        not(any(
            feature = "runtime",
            feature = "nvrtc",
            feature = "nvjitlink",
            feature = "nvvm",
            feature = "nvml",
            feature = "cublas",
            feature = "cublaslt",
            feature = "curand",
            feature = "cufft",
            feature = "cusolver",
            feature = "nccl"
        )),
        allow(dead_code, reason = "every API but the driver's is resolved so")
    )]
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
    /// nvFatbin (`libnvfatbin`).
    NvFatbin,
    /// NVVM (`libnvvm`).
    Nvvm,
    /// NVML (`libnvidia-ml`).
    Nvml,
    /// cuBLAS (`libcublas`).
    Cublas,
    /// cuBLASLt (`libcublasLt`).
    CublasLt,
    /// cuRAND (`libcurand`).
    Curand,
    /// cuFFT (`libcufft`).
    Cufft,
    /// cuSOLVER (`libcusolver`).
    Cusolver,
    /// NCCL (`libnccl`).
    Nccl,
    /// cuFile (`libcufile`, Linux only).
    Cufile,
}

impl ApiKind {
    /// The pathfinder's catalogue name of the library (`cuda`, `cudart`, …).
    pub fn library(self) -> &'static str {
        match self {
            Self::Driver => "cuda",
            Self::Runtime => "cudart",
            Self::Nvrtc => "nvrtc",
            Self::NvJitLink => "nvJitLink",
            Self::NvFatbin => "nvfatbin",
            Self::Nvvm => "nvvm",
            Self::Nvml => "nvml",
            Self::Cublas => "cublas",
            Self::CublasLt => "cublasLt",
            Self::Curand => "curand",
            Self::Cufft => "cufft",
            Self::Cusolver => "cusolver",
            Self::Nccl => "nccl",
            Self::Cufile => "cufile",
        }
    }

    /// Whether the library is versioned by CUDA major, with an ABI per major
    /// (`libcudart.so.12` and `.so.13`): the runtime, NVRTC, nvJitLink, nvFatbin,
    /// cuBLAS, cuBLASLt, cuFFT (`libcufft.so.11` is CUDA 12's, `.so.12` CUDA 13's)
    /// and cuSOLVER (`libcusolver.so.11` is CUDA 12's, `.so.12` CUDA 13's).
    pub fn versioned_by_major(self) -> bool {
        matches!(
            self,
            Self::Runtime
                | Self::Nvrtc
                | Self::NvJitLink
                | Self::NvFatbin
                | Self::Cublas
                | Self::CublasLt
                | Self::Cufft
                | Self::Cusolver
        )
    }

    /// The CUDA major that a library of this API with its own major version
    /// `library_major` belongs to: the same number, except cuFFT's and
    /// cuSOLVER's, which are one behind (cuFFT 11 and cuSOLVER 11 ship with
    /// CUDA 12, cuFFT 12 and cuSOLVER 12 with CUDA 13).
    fn cuda_major_of(self, library_major: i32) -> i32 {
        match self {
            Self::Cufft | Self::Cusolver if library_major > 0 => library_major + 1,
            _ => library_major,
        }
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Driver => "CUDA driver",
            Self::Runtime => "CUDA runtime",
            Self::Nvrtc => "NVRTC",
            Self::NvJitLink => "nvJitLink",
            Self::NvFatbin => "nvFatbin",
            Self::Nvvm => "NVVM",
            Self::Nvml => "NVML",
            Self::Cublas => "cuBLAS",
            Self::CublasLt => "cuBLASLt",
            Self::Curand => "cuRAND",
            Self::Cufft => "cuFFT",
            Self::Cusolver => "cuSOLVER",
            Self::Nccl => "NCCL",
            Self::Cufile => "cuFile",
        })
    }
}

/// Why an entry point cannot be called.
///
/// Each message says what happened at this level; for a library that could not
/// be loaded, the pathfinder's error (every place searched) is the
/// [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Unavailable {
    /// The library itself could not be found or loaded.
    Library {
        /// The API.
        api: ApiKind,
        /// The pathfinder's error, listing every place it searched.
        error: PathfinderError,
    },
    /// The library was loaded but lacks the symbol.
    Symbol {
        /// The API.
        api: ApiKind,
        /// The public C name.
        name: &'static str,
        /// The symbol that was looked up.
        symbol: &'static str,
        /// The library that was searched.
        path: String,
    },
    /// The installed driver offers none of this entry point's ABIs.
    DriverSymbol {
        /// The public C name.
        name: &'static str,
        /// The oldest ABI version the bindings know for it (the driver version it
        /// needs, as `1000 * major + 10 * minor`).
        version: u32,
        /// What `cuDriverGetVersion` reported (0 if it could not be asked).
        driver_version: i32,
        /// What went wrong.
        reason: &'static str,
    },
    /// The library found is of a CUDA major version the bindings do not know; its
    /// ABI may differ, so none of its entry points is used.
    MajorVersion {
        /// The API.
        api: ApiKind,
        /// The library that was loaded.
        path: String,
        /// Its CUDA major version (0 if it could not be told).
        found: i32,
    },
    /// The entry point has another shape (signature or structure layout) in the
    /// loaded library's CUDA major: the function of the same name in the other
    /// module is the one to call.
    OtherShape {
        /// The API.
        api: ApiKind,
        /// The public C name.
        name: &'static str,
        /// The major whose shape was called.
        shape: u32,
        /// The library that was loaded.
        path: String,
        /// Its CUDA major version.
        found: i32,
        /// Where the function of that major's shape is (`cudars_bindings::runtime::cuda12::cudaGetDeviceProperties`).
        instead: String,
    },
    /// The library was loaded but resolving its entry points failed as a whole.
    Resolution {
        /// The API.
        api: ApiKind,
        /// What went wrong.
        message: String,
    },
}

// Written out rather than derived: the crate has no proc-macro dependency, so that a
// dependent's first build compiles no parser (docs/performance.md, "A dependent's build").
impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Library { api, .. } => write!(f, "the {api} library could not be loaded"),
            Self::Symbol {
                name, symbol, path, ..
            } => write!(f, "`{name}` is not exported by {path} (symbol `{symbol}`)"),
            Self::DriverSymbol {
                name,
                version,
                driver_version,
                reason,
            } => write!(
                f,
                "`{name}` needs a CUDA {} driver (ABI version {version}); the installed driver is \
                 CUDA {}: {reason}",
                fmt_version(*version as i32),
                fmt_version(*driver_version)
            ),
            Self::MajorVersion { api, path, found } => write!(
                f,
                "{api} library {path} is CUDA {found}; these bindings know CUDA 12 and 13 \
                 (make a CUDA 12 or 13 {api} the one found)"
            ),
            Self::OtherShape {
                api,
                name,
                shape,
                path,
                found,
                instead,
            } => write!(
                f,
                "`{name}` as called has the CUDA {shape} shape, but {api} library {path} is \
                 CUDA {found}: call {instead}"
            ),
            Self::Resolution { api, message } => write!(f, "{api}: {message}"),
        }
    }
}

impl std::error::Error for Unavailable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Library { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl Unavailable {
    /// The API whose library or entry point is unavailable.
    pub fn api(&self) -> ApiKind {
        match self {
            Self::Library { api, .. }
            | Self::Symbol { api, .. }
            | Self::MajorVersion { api, .. }
            | Self::OtherShape { api, .. }
            | Self::Resolution { api, .. } => *api,
            Self::DriverSymbol { .. } => ApiKind::Driver,
        }
    }

    /// When the library could not be found or loaded: the pathfinder's error,
    /// with every place it searched.
    pub fn library_error(&self) -> Option<&PathfinderError> {
        match self {
            Self::Library { error, .. } => Some(error),
            _ => None,
        }
    }

    /// When the entry point is missing because the driver is too old: the driver
    /// version it needs and the installed driver's.
    pub fn needs_driver(&self) -> Option<(crate::Version, crate::Version)> {
        match self {
            Self::DriverSymbol {
                version,
                driver_version,
                reason,
                ..
            } if *reason == TOO_OLD => Some((
                crate::Version::from_cuda(i32::try_from(*version).unwrap_or(i32::MAX)),
                crate::Version::from_cuda(*driver_version),
            )),
            _ => None,
        }
    }
}

/// [`Unavailable::DriverSymbol`]'s reason when the driver is older than the ABI.
const TOO_OLD: &str = "the driver is older than this entry point";

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
    /// The library's CUDA major, for the APIs versioned by major (0 when it
    /// could not be told).
    pub(crate) major: Option<i32>,
}

impl<const N: usize> Table<N> {
    /// Whether the library's major is one the bindings know (always, for the
    /// APIs not versioned by major).
    fn known_major(&self) -> bool {
        self.header().known_major()
    }

    /// What the table says besides its functions.
    fn header(&self) -> Header {
        Header {
            lib: self.lib,
            driver_version: self.driver_version,
            per_thread: self.per_thread,
            major: self.major,
        }
    }
}

/// A [`Table`] without its functions: what resolving an entry, and saying why
/// one did not resolve, need. Not generic over the table's size, so that code
/// is compiled once rather than once per API.
#[derive(Clone, Copy)]
struct Header {
    lib: &'static LoadedDl,
    driver_version: i32,
    per_thread: bool,
    major: Option<i32>,
}

impl Header {
    /// As [`Table::known_major`].
    fn known_major(self) -> bool {
        self.major
            .is_none_or(|m| SUPPORTED_MAJORS.iter().any(|&k| k as i32 == m))
    }
}

/// One module's lazily resolved table: the main module's or its `cuda12`
/// module's.
pub(crate) struct Api<const N: usize> {
    pub(crate) kind: ApiKind,
    pub(crate) resolver: Resolver,
    /// The Rust path of the module the entries are in (`driver`, `runtime::cuda12`).
    pub(crate) module: &'static str,
    pub(crate) entries: &'static [Entry; N],
    table: OnceLock<Result<Table<N>, PathfinderError>>,
}

impl<const N: usize> Api<N> {
    pub(crate) const fn new(
        kind: ApiKind,
        resolver: Resolver,
        module: &'static str,
        entries: &'static [Entry; N],
    ) -> Self {
        Self {
            kind,
            resolver,
            module,
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
                let lib = cudars_pathfinder::load_nvidia_dynamic_lib(self.kind.library())?;
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
        match self.table() {
            Err(error) => Some(Unavailable::Library {
                api: self.kind,
                error: error.clone(),
            }),
            Ok(t) if t.fns[idx].is_some() => None,
            Ok(t) => entry_unavailable(self.kind, self.resolver, self.module, e, t.header()),
        }
    }

    /// Records that entry `idx` was called while unavailable, for the error helpers.
    #[cold]
    pub(crate) fn note_unavailable(&'static self, idx: usize) {
        LAST_UNAVAILABLE.with(|c| c.set(Some((self as &dyn Why, idx))));
    }

    /// The number of entries that resolved, and the total.
    pub(crate) fn counts(&self) -> Option<(usize, usize)> {
        let t = self.table().ok()?;
        Some((t.fns.iter().filter(|f| f.is_some()).count(), N))
    }

    /// The index of the entry named `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.name.to_bytes() == name.as_bytes())
    }

    /// Whether the entry named `name` resolved.
    pub(crate) fn is_available(&self, name: &str) -> bool {
        let Ok(t) = self.table() else { return false };
        self.position(name).is_some_and(|i| t.fns[i].is_some())
    }

    /// The loaded library's CUDA major, for the APIs versioned by major.
    pub(crate) fn major(&self) -> Option<i32> {
        self.table().ok()?.major
    }
}

/// What the error helpers ask of a table, whatever its size.
trait Why: Sync {
    fn kind(&self) -> ApiKind;
    fn why(&self, idx: usize) -> Option<Unavailable>;
}

impl<const N: usize> Why for Api<N> {
    fn kind(&self) -> ApiKind {
        self.kind
    }
    fn why(&self, idx: usize) -> Option<Unavailable> {
        self.why_unavailable(idx)
    }
}

thread_local! {
    static LAST_UNAVAILABLE: Cell<Option<(&'static dyn Why, usize)>> = const { Cell::new(None) };
}

/// Takes the note an unavailable entry point of `kind` (in either of its modules)
/// left on this thread, and says why it was unavailable.
pub(crate) fn take_unavailable(kind: ApiKind) -> Option<Unavailable> {
    let (api, idx) = LAST_UNAVAILABLE.with(Cell::get)?;
    if api.kind() != kind {
        return None;
    }
    LAST_UNAVAILABLE.with(|c| c.set(None));
    api.why(idx)
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
    let major = kind
        .versioned_by_major()
        .then(|| library_major(lib, kind).unwrap_or(0));
    let mut table = Table {
        fns,
        lib,
        driver_version: 0,
        per_thread,
        major,
    };
    if !table.known_major() {
        return table;
    }
    if resolver == Resolver::Driver {
        table.driver_version = query_driver_version(lib);
    }
    for (slot, e) in fns.iter_mut().zip(entries) {
        *slot = resolve_entry(lib, kind, resolver, e, table.header());
    }
    table.fns = fns;
    table
}

/// The first ABI of `e` that the library offers: for an API versioned by major,
/// the one of the library's major; for the driver, the newest whose ABI version
/// the driver has (a driver asked for a newer version than its own hands back its
/// newest ABI of the symbol, which may be another shape, so it is never asked);
/// otherwise the first exported symbol.
fn resolve_entry(
    lib: &LoadedDl,
    kind: ApiKind,
    resolver: Resolver,
    e: &Entry,
    t: Header,
) -> Option<RawFn> {
    candidates(e, t.major, t.driver_version, t.per_thread, resolver).find_map(
        |abi| match resolver {
            Resolver::Driver if abi.version != 0 => {
                let (version, flags) = abi.driver_request(t.per_thread);
                driver_lookup(lib, abi.base, version, flags).ok()
            }
            _ => {
                let sym = abi.symbol_for(t.per_thread);
                dlsym(lib, sym).or_else(|| {
                    (kind == ApiKind::NvJitLink)
                        .then(|| older_minor_symbol(lib, sym))
                        .flatten()
                })
            }
        },
    )
}

/// Why entry `e` of an API (`kind`, resolved by `resolver`, in `module`) did not
/// resolve from the library `h` describes: [`Api::why_unavailable`]'s body, not
/// generic over the table's size.
fn entry_unavailable(
    kind: ApiKind,
    resolver: Resolver,
    module: &'static str,
    e: &'static Entry,
    h: Header,
) -> Option<Unavailable> {
    let name = e.name.to_str().unwrap_or("?");
    let path = || h.lib.abs_path().display().to_string();
    if !h.known_major() {
        return Some(Unavailable::MajorVersion {
            api: kind,
            path: path(),
            found: h.major.unwrap_or_default(),
        });
    }
    if let Some(found) = h.major {
        if !e.abis.iter().any(|a| a.major as i32 == found) {
            let shape = e.abis.first().map_or(0, |a| a.major);
            let other = if module.ends_with("::cuda12") {
                module.trim_end_matches("::cuda12").to_owned()
            } else {
                format!("{}::cuda12", module)
            };
            return Some(Unavailable::OtherShape {
                api: kind,
                name,
                shape,
                path: path(),
                found,
                instead: format!("`cudars_bindings::{other}::{name}`"),
            });
        }
    }
    // The oldest ABI is the one whose failure says what is needed.
    let abi = e.abis.last()?;
    Some(match resolver {
        Resolver::Driver if abi.version != 0 => {
            let (version, flags) = abi.driver_request(h.per_thread);
            let reason = if newer_than_driver(version, h.driver_version) {
                TOO_OLD
            } else {
                match driver_lookup(h.lib, abi.base, version, flags) {
                    Err(Some(DriverLookupStatus::VersionNotSufficient)) => TOO_OLD,
                    Err(Some(DriverLookupStatus::SymbolNotFound)) => {
                        "the driver does not know the symbol"
                    }
                    Err(None) => "cuGetProcAddress is missing or failed",
                    Ok(_) => "it resolved on a second attempt; resolution is done once",
                }
            };
            Unavailable::DriverSymbol {
                name,
                version,
                driver_version: h.driver_version,
                reason,
            }
        }
        _ => {
            let sym = abi.symbol_for(h.per_thread);
            Unavailable::Symbol {
                api: kind,
                name,
                symbol: sym.to_str().unwrap_or("?"),
                path: path(),
            }
        }
    })
}

/// The ABIs of `e` that may be asked for, newest first: those of the library's
/// `major` when it has one; for the driver, those whose requested ABI version is
/// not newer than `driver_version`.
fn candidates(
    e: &Entry,
    major: Option<i32>,
    driver_version: i32,
    per_thread: bool,
    resolver: Resolver,
) -> impl Iterator<Item = &'static Abi> {
    e.abis.iter().filter(move |abi| {
        major.is_none_or(|m| abi.major as i32 == m)
            && !(resolver == Resolver::Driver
                && newer_than_driver(abi.driver_request(per_thread).0, driver_version))
    })
}

/// Whether ABI `version` is newer than the driver (when its version is known):
/// such a driver is never asked for it.
fn newer_than_driver(version: u32, driver_version: i32) -> bool {
    driver_version > 0 && i64::from(version) > i64::from(driver_version)
}

/// nvJitLink exports each function under a `_<major>_<minor>` name for every
/// minor release of its major up to its own (`__nvJitLinkCreate_12_0` …
/// `__nvJitLinkCreate_12_4` in 12.4), all of one ABI. A library older than the
/// headers lacks the headers' minor: take the newest it has.
fn older_minor_symbol(lib: &LoadedDl, sym: &CStr) -> Option<RawFn> {
    let text = sym.to_str().ok()?;
    let (stem, minor) = text.rsplit_once('_')?;
    let minor: u32 = minor.parse().ok()?;
    (0..minor).rev().find_map(|m| {
        let name = std::ffi::CString::new(format!("{stem}_{m}")).ok()?;
        dlsym(lib, &name)
    })
}

/// The CUDA major version of a loaded runtime, NVRTC or nvJitLink library, asked of
/// the library itself, else read off its file name (`libnvJitLink.so.12`: nvJitLink
/// before 12.3 cannot say); `None` for the other APIs (the driver and NVML keep
/// their ABI across CUDA versions, NVVM versions its IR instead) or when neither
/// tells.
fn library_major(lib: &LoadedDl, kind: ApiKind) -> Option<i32> {
    asked_major(lib, kind)
        .or_else(|| {
            kind.versioned_by_major()
                .then(|| major_from_file_name(lib.abs_path()))
                .flatten()
        })
        .map(|m| kind.cuda_major_of(m))
}

/// `libcudart.so.12.9.79` or `libnvrtc.so.13` → the number after `.so.`; Windows
/// DLLs: `cudart64_13.dll`, `cufft64_12.dll` → the number after the first `_`,
/// `nvrtc64_130_0.dll`, `nvJitLink_120_0.dll` → its tens (`130` is 13.0).
fn major_from_file_name(path: &std::path::Path) -> Option<i32> {
    let name = path.file_name()?.to_str()?;
    if let Some(stem) = name
        .strip_suffix(".dll")
        .or_else(|| name.strip_suffix(".DLL"))
    {
        let n: i32 = stem.split('_').nth(1)?.parse().ok()?;
        return Some(if n >= 100 { n / 10 } else { n });
    }
    let (_, rest) = name.split_once(".so.")?;
    rest.split('.').next()?.parse().ok()
}

fn asked_major(lib: &LoadedDl, kind: ApiKind) -> Option<i32> {
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
        // `nvJitLinkVersion` since CUDA 12.3; `nvFatbinVersion` in every nvFatbin.
        ApiKind::NvJitLink => unsigned_pair_major(lib, c"nvJitLinkVersion"),
        ApiKind::NvFatbin => unsigned_pair_major(lib, c"nvFatbinVersion"),
        ApiKind::Cublas => property_major(lib, c"cublasGetProperty"),
        ApiKind::CublasLt => property_major(lib, c"cublasLtGetProperty"),
        ApiKind::Cufft => property_major(lib, c"cufftGetProperty"),
        ApiKind::Cusolver => property_major(lib, c"cusolverGetProperty"),
        ApiKind::Driver
        | ApiKind::Nvvm
        | ApiKind::Nvml
        | ApiKind::Curand
        | ApiKind::Nccl
        | ApiKind::Cufile => None,
    }
}

/// The major version from a `(unsigned* major, unsigned* minor) -> status`
/// function (`nvJitLinkVersion`, `nvFatbinVersion`).
fn unsigned_pair_major(lib: &LoadedDl, sym: &CStr) -> Option<i32> {
    let f = lib.symbol(sym)?;
    // SAFETY: `(unsigned*, unsigned*) -> status` in every version that exports it.
    let f: unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int =
        unsafe { std::mem::transmute(f.as_ptr()) };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    (unsafe { f(&mut major, &mut minor) } == 0 && major > 0)
        .then(|| i32::try_from(major).ok())
        .flatten()
}

/// The library's own major version from its `*GetProperty(MAJOR_VERSION, int*)`
/// (cuBLAS, cuBLASLt, cuFFT: one signature in every version that has it).
fn property_major(lib: &LoadedDl, sym: &CStr) -> Option<i32> {
    /// `MAJOR_VERSION` of `libraryPropertyType`.
    const MAJOR_VERSION: c_uint = 0;
    let f = lib.symbol(sym)?;
    // SAFETY: `(libraryPropertyType, int*) -> status` in every version that exports it.
    let f: unsafe extern "C" fn(c_uint, *mut c_int) -> c_int =
        unsafe { std::mem::transmute(f.as_ptr()) };
    let mut v = 0;
    // SAFETY: `v` is valid for writes.
    (unsafe { f(MAJOR_VERSION, &mut v) } == 0 && v > 0).then_some(v)
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

impl Abi {
    /// The version and flags to ask `cuGetProcAddress` for.
    fn driver_request(&self, per_thread: bool) -> (u32, u64) {
        if per_thread && self.ptds_version != 0 {
            (self.ptds_version, PER_THREAD_DEFAULT_STREAM)
        } else {
            (self.version, LEGACY_STREAM)
        }
    }

    /// The exported symbol to look up: the per-thread default stream variant when
    /// asked for and there is one.
    fn symbol_for(&self, per_thread: bool) -> &'static CStr {
        match (per_thread, self.ptds_symbol) {
            (true, Some(p)) => p,
            _ => self.symbol,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    static TWO: [Abi; 2] = [
        Abi {
            major: 13,
            base: c"cuMemcpyBatchAsync",
            symbol: c"cuMemcpyBatchAsync_v2",
            version: 13000,
            ptds_symbol: None,
            ptds_version: 0,
        },
        Abi {
            major: 12,
            base: c"cuMemcpyBatchAsync",
            symbol: c"cuMemcpyBatchAsync",
            version: 12080,
            ptds_symbol: None,
            ptds_version: 0,
        },
    ];
    static ENTRY: Entry = Entry {
        name: c"cuMemcpyBatchAsync",
        abis: &TWO,
    };

    fn versions(major: Option<i32>, driver: i32, resolver: Resolver) -> Vec<u32> {
        candidates(&ENTRY, major, driver, false, resolver)
            .map(|a| a.version)
            .collect()
    }

    #[test]
    fn a_driver_is_never_asked_for_an_abi_newer_than_itself() {
        // A 12.8 driver asked at 13000 would return its own (other-shaped) newest.
        assert_eq!(versions(None, 12080, Resolver::Driver), [12080]);
        assert_eq!(versions(None, 13000, Resolver::Driver), [13000, 12080]);
        assert!(versions(None, 12040, Resolver::Driver).is_empty());
        // Unknown driver version: the driver's own status decides.
        assert_eq!(versions(None, 0, Resolver::Driver), [13000, 12080]);
    }

    #[test]
    fn a_library_of_one_major_gets_only_that_majors_abi() {
        assert_eq!(versions(Some(12), 0, Resolver::Dlsym), [12080]);
        assert_eq!(versions(Some(13), 0, Resolver::Dlsym), [13000]);
        assert!(versions(Some(11), 0, Resolver::Dlsym).is_empty());
        assert_eq!(versions(None, 0, Resolver::Dlsym), [13000, 12080]);
    }

    #[test]
    fn the_major_is_read_off_the_file_name() {
        use std::path::Path;
        assert_eq!(
            major_from_file_name(Path::new("/x/libnvJitLink.so.12")),
            Some(12)
        );
        assert_eq!(
            major_from_file_name(Path::new("libcudart.so.13.0.96")),
            Some(13)
        );
        assert_eq!(major_from_file_name(Path::new("/x/libnvrtc.so")), None);
        assert_eq!(major_from_file_name(Path::new("libnvrtc.so.x")), None);
        for (dll, major) in [
            ("cudart64_13.dll", 13),
            ("cufft64_12.dll", 12),
            ("nvrtc64_130_0.dll", 13),
            ("nvJitLink_120_0.dll", 12),
        ] {
            assert_eq!(major_from_file_name(Path::new(dll)), Some(major), "{dll}");
        }
        assert_eq!(major_from_file_name(Path::new("nvcuda.dll")), None);
        assert_eq!(major_from_file_name(Path::new("cudnn64_x.dll")), None);
    }
}
