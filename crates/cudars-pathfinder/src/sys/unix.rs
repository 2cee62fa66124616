//! `dlopen` and friends (glibc and other Unix loaders).

use std::ffi::{CStr, CString, OsStr, c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::ptr::NonNull;

/// The loader's entry points and flags. On Linux (glibc and musl agree on these
/// values everywhere but MIPS) they are declared here, so that a dependent's first
/// build does not wait for `libc` and its build script before compiling this crate,
/// the first of the chain every cudars crate sits on (docs/performance.md, "A
/// dependent's build"); elsewhere they come from `libc`. The `dl_matches_libc` test
/// checks the values against `libc`'s.
#[cfg(not(any(
    not(target_os = "linux"),
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6"
)))]
mod dl {
    use std::ffi::{c_char, c_int, c_void};

    pub(super) const RTLD_NOW: c_int = 2;
    pub(super) const RTLD_NOLOAD: c_int = 4;
    pub(super) const RTLD_GLOBAL: c_int = 0x100;
    #[cfg(target_env = "gnu")]
    pub(super) const RTLD_DEEPBIND: c_int = 8;

    // Linked through the standard library, which links the C library (and, on
    // glibc before 2.34, `libdl`) into every program.
    unsafe extern "C" {
        pub(super) fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
        pub(super) fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        pub(super) fn dlerror() -> *mut c_char;
    }
}

#[cfg(any(
    not(target_os = "linux"),
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6"
))]
mod dl {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub(super) use dl::RTLD_DEEPBIND;
    pub(super) use libc::{RTLD_GLOBAL, RTLD_NOLOAD, RTLD_NOW, dlerror, dlopen, dlsym};
}

/// A handle from `dlopen`. Handles are never closed (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawDl(NonNull<c_void>);

// SAFETY: a dlopen handle is an opaque token; glibc's dlsym/dlinfo on it are
// thread-safe, and the handle is never closed, so it stays valid on any thread.
unsafe impl Send for RawDl {}
// SAFETY: as above: shared use only calls thread-safe loader functions.
unsafe impl Sync for RawDl {}

impl RawDl {
    pub(crate) fn as_ptr(self) -> *mut c_void {
        self.0.as_ptr()
    }
}

/// The calling thread's last loader error, or a placeholder.
fn last_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string owned by the loader,
    // valid until the next dl* call on this thread; we copy it at once.
    unsafe {
        let msg = dl::dlerror();
        if msg.is_null() {
            "unknown loader error".into()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        }
    }
}

/// Why nothing loads under Miri, which cannot call the dynamic loader: there, no
/// library is loaded and loading fails with this message, so that a test that needs
/// a library fails with it instead of ending the whole run; such tests are marked
/// `#[cfg_attr(miri, ignore = "...")]` (docs/architecture.md, "Test support").
const UNDER_MIRI: &str = "Miri cannot call the dynamic loader \
     (mark a test that loads a library `#[cfg_attr(miri, ignore)]`)";

fn to_cstring(name: &OsStr) -> Result<CString, String> {
    CString::new(name.as_bytes()).map_err(|_| "the path contains a NUL byte".to_string())
}

/// The handle of `soname` if the process has already loaded it (`RTLD_NOLOAD`).
pub(crate) fn already_loaded(soname: &str) -> Option<RawDl> {
    if cfg!(miri) {
        return None;
    }
    let c = to_cstring(OsStr::new(soname)).ok()?;
    // SAFETY: `c` is a valid C string; RTLD_NOLOAD only looks the library up and
    // bumps its reference count, which we never drop (handles are never closed).
    let h = unsafe { dl::dlopen(c.as_ptr(), dl::RTLD_NOW | dl::RTLD_NOLOAD) };
    NonNull::new(h).map(RawDl)
}

/// Loads a library by path or soname with `RTLD_NOW | RTLD_GLOBAL`
/// (and `RTLD_DEEPBIND` when asked).
pub(crate) fn open(name: &OsStr, deepbind: bool) -> Result<RawDl, String> {
    if cfg!(miri) {
        return Err(UNDER_MIRI.into());
    }
    let c = to_cstring(name)?;
    let mut flags = dl::RTLD_NOW | dl::RTLD_GLOBAL;
    if deepbind {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            flags |= dl::RTLD_DEEPBIND;
        }
    }
    // SAFETY: `c` is a valid C string. Loading runs the library's initialisers;
    // that is the documented purpose of this crate and the caller's request.
    let h = unsafe { dl::dlopen(c.as_ptr(), flags) };
    NonNull::new(h).map(RawDl).ok_or_else(last_error)
}

/// Looks a symbol up in a loaded library.
pub(crate) fn symbol(h: RawDl, name: &CStr) -> Option<NonNull<c_void>> {
    // SAFETY: `h` is a live handle (never closed) and `name` a valid C string.
    NonNull::new(unsafe { dl::dlsym(h.as_ptr(), name.as_ptr()) })
}

#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const c_char,
    l_ld: *mut c_void,
    l_next: *mut LinkMap,
    l_prev: *mut LinkMap,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    fn dlinfo(handle: *mut c_void, request: c_int, info: *mut c_void) -> c_int;
}

/// The file a handle was loaded from, as the loader recorded it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn path_of(h: RawDl) -> Option<PathBuf> {
    const RTLD_DI_LINKMAP: c_int = 2;
    let mut lm: *mut LinkMap = std::ptr::null_mut();
    // SAFETY: RTLD_DI_LINKMAP writes one `struct link_map *` into `info`; `h` is live.
    let rc = unsafe { dlinfo(h.as_ptr(), RTLD_DI_LINKMAP, (&raw mut lm).cast()) };
    if rc != 0 || lm.is_null() {
        return None;
    }
    // SAFETY: the loader's link_map for a live handle is valid, and l_name is a
    // NUL-terminated string (possibly empty) that lives as long as the handle.
    let name = unsafe {
        let l_name = (*lm).l_name;
        if l_name.is_null() {
            return None;
        }
        CStr::from_ptr(l_name)
    };
    let bytes = name.to_bytes();
    if bytes.is_empty() {
        return None;
    }
    let p = PathBuf::from(OsStr::from_bytes(bytes));
    Some(std::path::absolute(&p).unwrap_or(p))
}

/// The file a handle was loaded from: found through a symbol's address (`dladdr`).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn path_of(_h: RawDl) -> Option<PathBuf> {
    None
}

/// Where the OS loader would find `soname`, without loading it: read from its
/// search path (`LD_LIBRARY_PATH`, `/etc/ld.so.cache`, the default directories).
pub(crate) fn resolve_by_name(soname: &str) -> Option<PathBuf> {
    if cfg!(target_os = "linux") {
        crate::ldcache::resolve(soname)
    } else {
        None
    }
}

/// Where [`resolve_by_name`] looks, for "not found" messages.
pub(crate) const SYSTEM_SEARCH_PLACES: &str =
    "not on LD_LIBRARY_PATH, in /etc/ld.so.cache or the default directories";

/// Whether this platform can load libraries at all.
pub(crate) const CAN_LOAD: bool = true;

#[cfg(test)]
mod tests {
    use super::dl;

    /// The flags declared here for Linux are the C library's (`libc` is a
    /// dev-dependency on every Unix).
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot call the dynamic loader")]
    fn dl_matches_libc() {
        assert_eq!(dl::RTLD_NOW, libc::RTLD_NOW);
        assert_eq!(dl::RTLD_NOLOAD, libc::RTLD_NOLOAD);
        assert_eq!(dl::RTLD_GLOBAL, libc::RTLD_GLOBAL);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        assert_eq!(dl::RTLD_DEEPBIND, libc::RTLD_DEEPBIND);
        // The declared functions are the C library's: one loads the C library
        // itself (already loaded) and finds `dlsym` in it.
        let name = c"libc.so.6";
        // SAFETY: a valid C string; RTLD_NOLOAD only looks the library up.
        let h = unsafe { dl::dlopen(name.as_ptr(), dl::RTLD_NOW | dl::RTLD_NOLOAD) };
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(!h.is_null());
            // SAFETY: a live handle and a valid C string.
            let f = unsafe { dl::dlsym(h, c"dlsym".as_ptr()) };
            assert!(!f.is_null());
        }
    }
}
