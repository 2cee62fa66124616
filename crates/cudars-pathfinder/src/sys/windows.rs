//! The Windows loader through `libloading`: `LoadLibraryExW`, `GetModuleHandleExW`,
//! `GetProcAddress`, plus `GetModuleFileNameW` for the path of a loaded module and
//! `AddDllDirectory` for libraries whose companions are loaded by bare name.

use std::ffi::{CStr, OsStr, OsString, c_void};
use std::mem::ManuallyDrop;
use std::os::windows::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use libloading::os::windows::{
    LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR, Library,
};

#[link(name = "kernel32")]
unsafe extern "system" {
    fn GetModuleFileNameW(module: *mut c_void, filename: *mut u16, size: u32) -> u32;
    fn AddDllDirectory(new_directory: *const u16) -> *mut c_void;
}

/// A module handle (`HMODULE`). Handles are never freed (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawDl(NonNull<c_void>);

// SAFETY: an HMODULE is the module's base address, valid in every thread of the
// process; GetProcAddress and GetModuleFileNameW on it are thread-safe, and the
// module is never freed, so the handle stays valid.
unsafe impl Send for RawDl {}
// SAFETY: as above: shared use only calls thread-safe loader functions.
unsafe impl Sync for RawDl {}

impl RawDl {
    pub(crate) fn as_ptr(self) -> *mut c_void {
        self.0.as_ptr()
    }

    /// Takes a `libloading` library without ever freeing it.
    fn keep(lib: Library) -> Option<Self> {
        NonNull::new(lib.into_raw() as *mut c_void).map(Self)
    }

    /// A `libloading` view of the handle that must not be dropped (it would free it).
    fn borrow(self) -> ManuallyDrop<Library> {
        // SAFETY: the handle came from LoadLibraryExW or GetModuleHandleExW and is
        // never freed; ManuallyDrop keeps this view from calling FreeLibrary.
        ManuallyDrop::new(unsafe { Library::from_raw(self.as_ptr() as isize) })
    }
}

/// `libloading`'s error as one line: the OS message (`The specified module could
/// not be found. (os error 126)`), without libloading's own prefix.
fn message(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(os) => os.to_string(),
        None => e.to_string(),
    }
}

/// The module named `dll` if the process has already loaded it (`GetModuleHandleExW`).
pub(crate) fn already_loaded(dll: &str) -> Option<RawDl> {
    // `open_already_loaded` adds a reference that is never dropped (modules are
    // never freed), so the handle stays valid even if its loader frees it.
    Library::open_already_loaded(dll).ok().and_then(RawDl::keep)
}

/// Loads a DLL. A full path is loaded with `LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
/// LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR`, so its own imports are found beside it; a bare
/// name by the standard search order (the program's directory, the system
/// directories, `PATH`). `deepbind` has no meaning on Windows.
pub(crate) fn open(name: &OsStr, _deepbind: bool) -> Result<RawDl, String> {
    let flags = if Path::new(name).is_absolute() {
        LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR
    } else {
        0
    };
    // SAFETY: loading runs the DLL's initialisers; that is the documented purpose of
    // this crate and the caller's request. The library is never freed.
    let lib = unsafe { Library::load_with_flags(name, flags) }.map_err(|e| message(&e))?;
    RawDl::keep(lib).ok_or_else(|| "LoadLibraryExW returned a null module".to_string())
}

/// Looks an exported symbol up (`GetProcAddress`).
pub(crate) fn symbol(h: RawDl, name: &CStr) -> Option<NonNull<c_void>> {
    let lib = h.borrow();
    // SAFETY: `h` is a live module; the symbol is read as an untyped address (a
    // pointer-sized value, as libloading requires) and never called here.
    let sym = unsafe { lib.get::<*mut c_void>(name.to_bytes_with_nul()) }.ok()?;
    sym.into_raw().and_then(|f| NonNull::new(f as *mut c_void))
}

/// The file a module was loaded from (`GetModuleFileNameW`).
pub(crate) fn path_of(h: RawDl) -> Option<PathBuf> {
    let mut buf: Vec<u16> = vec![0; 260];
    loop {
        let cap = u32::try_from(buf.len()).ok()?;
        // SAFETY: `buf` has room for `cap` UTF-16 units; `h` is a live module.
        let n = unsafe { GetModuleFileNameW(h.as_ptr(), buf.as_mut_ptr(), cap) } as usize;
        if n == 0 {
            return None;
        }
        if n < buf.len() {
            buf.truncate(n);
            return Some(PathBuf::from(OsString::from_wide(&buf)));
        }
        // Truncated: the path is longer than the buffer.
        if buf.len() >= 32_768 {
            return None;
        }
        buf.resize(buf.len() * 4, 0);
    }
}

/// Makes `dir` findable for DLLs that a library loads by bare name (NVRTC's
/// `nvrtc-builtins64_*.dll`, cuFFT's and cuDNN's companions), as `cuda.pathfinder`
/// does for the catalogue's `requires_add_dll_directory` libraries:
/// `AddDllDirectory` (for loads with `LOAD_LIBRARY_SEARCH_*`) and `dir` at the end
/// of the process's `PATH` (for plain `LoadLibrary`, which ignores the former).
pub(crate) fn add_dll_directory(dir: &Path) {
    let wide: Vec<u16> = dir.as_os_str().encode_wide().chain(Some(0)).collect();
    // SAFETY: `wide` is a NUL-terminated UTF-16 path that outlives the call. The
    // returned cookie is not needed: the directory stays for the life of the process.
    let _cookie = unsafe { AddDllDirectory(wide.as_ptr()) };
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|p| p == dir) {
        return;
    }
    let joined =
        std::env::join_paths(std::env::split_paths(&path).chain(std::iter::once(dir.into())));
    if let Ok(joined) = joined {
        // SAFETY: on Windows the process environment is owned by the OS and guarded by
        // its own lock (GetEnvironmentVariableW/SetEnvironmentVariableW), so setting a
        // variable while other threads read the environment is sound (std documents
        // `set_var` as always safe on Windows).
        unsafe { std::env::set_var("PATH", joined) };
    }
}

/// Where the standard search order would find `dll`, without loading it: the
/// program's directory, the system directories (`%SystemRoot%\System32`,
/// `%SystemRoot%`), then each directory on `PATH`.
pub(crate) fn resolve_by_name(dll: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push(exe_dir);
    }
    if let Some(root) = std::env::var_os("SystemRoot").filter(|v| !v.is_empty()) {
        let root = PathBuf::from(root);
        dirs.push(root.join("System32"));
        dirs.push(root);
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()));
    }
    dirs.into_iter().map(|d| d.join(dll)).find(|p| p.is_file())
}

/// Where [`resolve_by_name`] looks, for "not found" messages.
pub(crate) const SYSTEM_SEARCH_PLACES: &str =
    "not in the program's directory, the system directories or on PATH";

/// Whether this platform can load libraries at all.
pub(crate) const CAN_LOAD: bool = true;
