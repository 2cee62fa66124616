//! Who answers a `cuGetProcAddress` request, and the forwarding itself.
//!
//! [`route`] is the decision, a pure function of the symbol, the requested
//! version and the [`Config`]; [`get_proc_address`] carries it out with the real
//! driver's `cuGetProcAddress_v2` passed in, so tests can give it a fake one.

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::config::Config;
use crate::{
    CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND,
    CUDA_SUCCESS, CUdriverProcAddressQueryResult, CUresult,
};

/// The C signature of `cuGetProcAddress_v2`.
pub type GetProcAddressV2 = unsafe extern "C" fn(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: u64,
    status: *mut CUdriverProcAddressQueryResult,
) -> CUresult;

/// The C signature of `cuGetProcAddress` (CUDA 11.3–11.8: no status).
pub type GetProcAddressV1 = unsafe extern "C" fn(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: u64,
) -> CUresult;

/// The C signature of `cuDriverGetVersion`.
pub type DriverGetVersion = unsafe extern "C" fn(version: *mut c_int) -> CUresult;

/// The ABI version in which `cuDriverGetVersion` appeared (CUDA 2.2).
pub const DRIVER_GET_VERSION_SINCE: c_int = 2020;
/// The ABI version of the first `cuGetProcAddress` (CUDA 11.3).
pub const GET_PROC_ADDRESS_SINCE: c_int = 11030;
/// The ABI version of `cuGetProcAddress_v2` (CUDA 12.0, which added the status).
pub const GET_PROC_ADDRESS_V2_SINCE: c_int = 12000;

/// One of the shim's own entry points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShimFn {
    /// The shim's `cuDriverGetVersion`.
    DriverGetVersion,
    /// The shim's `cuGetProcAddress_v2`.
    GetProcAddressV2,
    /// The shim's `cuGetProcAddress` (the CUDA 11 ABI).
    GetProcAddressV1,
}

/// Who answers a `cuGetProcAddress` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Hidden by `CUDA_RS_SHIM_HIDE`: not found.
    Hidden,
    /// One of the shim's own functions, asked for at a version older than the
    /// function (the real driver answers so for its own).
    VersionNotSufficient,
    /// The shim hands out its own function.
    Shim(ShimFn),
    /// The real driver answers, asked at this version.
    Forward {
        /// `min(requested, emulated)`.
        version: c_int,
    },
}

/// The version a request is served at: the requested one, capped at the
/// emulated driver's (none when the configuration emulates none).
pub fn effective_version(requested: c_int, emulated: Option<c_int>) -> c_int {
    match emulated {
        Some(e) => requested.min(e),
        None => requested,
    }
}

/// Who answers a request for `symbol` (a `cuGetProcAddress` base name) at
/// `requested`, under `config`.
///
/// The real driver hands out, for a version `v`, the newest ABI of a function not
/// newer than `v`, and nothing for functions that appeared after `v`: asking it
/// at `min(requested, emulated)` gives exactly what the emulated driver would.
/// `cuDriverGetVersion` and `cuGetProcAddress` are the shim's own, so that the
/// version a program reads and the lookups it makes through a pointer it was
/// handed stay emulated too.
pub fn route(symbol: &[u8], requested: c_int, config: &Config) -> Route {
    if config.hides(symbol) {
        return Route::Hidden;
    }
    let version = effective_version(requested, config.driver_version);
    match symbol {
        b"cuDriverGetVersion" if version >= DRIVER_GET_VERSION_SINCE => {
            Route::Shim(ShimFn::DriverGetVersion)
        }
        b"cuGetProcAddress" if version >= GET_PROC_ADDRESS_V2_SINCE => {
            Route::Shim(ShimFn::GetProcAddressV2)
        }
        b"cuGetProcAddress" if version >= GET_PROC_ADDRESS_SINCE => {
            Route::Shim(ShimFn::GetProcAddressV1)
        }
        b"cuDriverGetVersion" | b"cuGetProcAddress" => Route::VersionNotSufficient,
        _ => Route::Forward { version },
    }
}

/// The address of one of the shim's exported functions.
pub fn shim_fn_address(f: ShimFn) -> *mut c_void {
    match f {
        ShimFn::DriverGetVersion => crate::cuDriverGetVersion as DriverGetVersion as *mut c_void,
        ShimFn::GetProcAddressV2 => crate::cuGetProcAddress_v2 as GetProcAddressV2 as *mut c_void,
        ShimFn::GetProcAddressV1 => crate::cuGetProcAddress as GetProcAddressV1 as *mut c_void,
    }
}

/// `cuGetProcAddress_v2` under `config`: answers as [`route`] decides, forwarding
/// to `real` (the real driver's `cuGetProcAddress_v2`) at the capped version;
/// with `wrap`, a forwarded function the shim wraps is handed out behind its
/// trampoline ([`crate::wrap::wrap_lookup`]).
///
/// # Safety
///
/// `symbol` is NULL or a NUL-terminated string; `pfn` is NULL or valid for one
/// pointer write; `status` is NULL or valid for one write; `real` may be called
/// with these arguments (the real driver's function, or a test's).
#[allow(
    clippy::too_many_arguments,
    reason = "the C function's five arguments, then what the shim forwards them with"
)]
pub unsafe fn get_proc_address(
    real: GetProcAddressV2,
    config: &Config,
    wrap: bool,
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    requested: c_int,
    flags: u64,
    status: *mut CUdriverProcAddressQueryResult,
) -> CUresult {
    if symbol.is_null() || pfn.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-null and NUL-terminated, by the caller's contract.
    let name = unsafe { CStr::from_ptr(symbol) };
    let (rc, out, st) = match route(name.to_bytes(), requested, config) {
        Route::Forward { version } => {
            // SAFETY: the caller's pointers, passed on unchanged; `real` accepts them.
            let rc = unsafe { real(symbol, pfn, version, flags, status) };
            if wrap && rc == CUDA_SUCCESS {
                // SAFETY: `pfn` is valid for reads and writes, by the caller's contract.
                let found = unsafe { pfn.read() };
                if !found.is_null() {
                    // SAFETY: `found` is the real driver's answer for `name` at
                    // `version` with `flags`.
                    let out =
                        unsafe { crate::wrap::wrap_lookup(name.to_bytes(), version, flags, found) };
                    // SAFETY: as above.
                    unsafe { pfn.write(out) };
                }
            }
            return rc;
        }
        Route::Shim(f) => (
            CUDA_SUCCESS,
            shim_fn_address(f),
            CU_GET_PROC_ADDRESS_SUCCESS,
        ),
        Route::Hidden => (
            CUDA_ERROR_NOT_FOUND,
            std::ptr::null_mut(),
            CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
        ),
        Route::VersionNotSufficient => (
            CUDA_ERROR_NOT_FOUND,
            std::ptr::null_mut(),
            CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
        ),
    };
    // SAFETY: `pfn` is non-null and valid for a write, by the caller's contract.
    unsafe { pfn.write(out) };
    if !status.is_null() {
        // SAFETY: non-null and valid for a write, by the caller's contract.
        unsafe { status.write(st) };
    }
    rc
}

/// `cuGetProcAddress` (no status) under `config`: [`get_proc_address`] with the
/// status dropped.
///
/// # Safety
///
/// As [`get_proc_address`].
pub unsafe fn get_proc_address_v1(
    real: GetProcAddressV2,
    config: &Config,
    wrap: bool,
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    requested: c_int,
    flags: u64,
) -> CUresult {
    let mut status: CUdriverProcAddressQueryResult = CU_GET_PROC_ADDRESS_SUCCESS;
    // SAFETY: the caller's pointers under the same contract; `status` is a local.
    unsafe {
        get_proc_address(
            real,
            config,
            wrap,
            symbol,
            pfn,
            requested,
            flags,
            &mut status,
        )
    }
}

/// `cuDriverGetVersion` reporting `version`.
///
/// # Safety
///
/// `out` is NULL or valid for one write.
pub unsafe fn driver_get_version(version: c_int, out: *mut c_int) -> CUresult {
    if out.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-null and valid for a write, by the caller's contract.
    unsafe { out.write(version) };
    CUDA_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    fn emulating(version: c_int) -> Config {
        Config {
            driver_version: Some(version),
            ..Config::default()
        }
    }

    #[test]
    fn requests_are_capped_at_the_emulated_version() {
        let c = emulating(12080);
        assert_eq!(
            route(b"cuMemAlloc", 13000, &c),
            Route::Forward { version: 12080 }
        );
        assert_eq!(
            route(b"cuMemAlloc", 12000, &c),
            Route::Forward { version: 12000 }
        );
        assert_eq!(
            route(b"cuMemAlloc", 3020, &c),
            Route::Forward { version: 3020 }
        );
        // No emulation: the request goes through as asked.
        assert_eq!(
            route(b"cuMemAlloc", 13000, &Config::default()),
            Route::Forward { version: 13000 }
        );
    }

    #[test]
    fn the_shim_answers_for_its_own_entry_points() {
        let c = emulating(12040);
        assert_eq!(
            route(b"cuDriverGetVersion", 13000, &c),
            Route::Shim(ShimFn::DriverGetVersion)
        );
        assert_eq!(
            route(b"cuGetProcAddress", 13000, &c),
            Route::Shim(ShimFn::GetProcAddressV2)
        );
        assert_eq!(
            route(b"cuGetProcAddress", 12000, &c),
            Route::Shim(ShimFn::GetProcAddressV2)
        );
        assert_eq!(
            route(b"cuGetProcAddress", 11080, &c),
            Route::Shim(ShimFn::GetProcAddressV1)
        );
        // An 11.8 driver has only the status-less cuGetProcAddress, whatever is asked.
        assert_eq!(
            route(b"cuGetProcAddress", 13000, &emulating(11080)),
            Route::Shim(ShimFn::GetProcAddressV1)
        );
        // Older than the functions themselves: as the real driver says it.
        assert_eq!(
            route(b"cuGetProcAddress", 11020, &c),
            Route::VersionNotSufficient
        );
        assert_eq!(
            route(b"cuDriverGetVersion", 2010, &c),
            Route::VersionNotSufficient
        );
    }

    #[test]
    fn hidden_symbols_are_not_found_whatever_the_version() {
        let c = Config {
            driver_version: Some(13000),
            hide: vec!["cuMemcpyBatchAsync".into(), "cuGreenCtxCreate".into()],
            ..Config::default()
        };
        assert_eq!(route(b"cuMemcpyBatchAsync", 13000, &c), Route::Hidden);
        assert_eq!(route(b"cuGreenCtxCreate", 12040, &c), Route::Hidden);
        assert_eq!(
            route(b"cuMemcpyAsync", 13000, &c),
            Route::Forward { version: 13000 }
        );
    }

    // A fake real driver: records what it was asked and answers with `FAKE_FN`.
    thread_local! {
        static ASKED: RefCell<Vec<(String, c_int, u64)>> = const { RefCell::new(Vec::new()) };
        static STATUS_WAS_NULL: Cell<bool> = const { Cell::new(false) };
    }
    static FAKE_FN: u8 = 0;

    fn fake_fn() -> *mut c_void {
        std::ptr::from_ref(&FAKE_FN).cast_mut().cast()
    }

    unsafe extern "C" fn fake_real(
        symbol: *const c_char,
        pfn: *mut *mut c_void,
        version: c_int,
        flags: u64,
        status: *mut CUdriverProcAddressQueryResult,
    ) -> CUresult {
        // SAFETY: the tests pass NUL-terminated names.
        let name = unsafe { CStr::from_ptr(symbol) }
            .to_string_lossy()
            .into_owned();
        ASKED.with(|a| a.borrow_mut().push((name.clone(), version, flags)));
        STATUS_WAS_NULL.with(|s| s.set(status.is_null()));
        let (rc, out, st) = if name == "cuMissing" {
            (
                CUDA_ERROR_NOT_FOUND,
                std::ptr::null_mut(),
                CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
            )
        } else {
            (CUDA_SUCCESS, fake_fn(), CU_GET_PROC_ADDRESS_SUCCESS)
        };
        // SAFETY: the tests pass a valid `pfn`, and `status` is checked.
        unsafe {
            pfn.write(out);
            if !status.is_null() {
                status.write(st);
            }
        }
        rc
    }

    fn asked() -> Vec<(String, c_int, u64)> {
        ASKED.with(|a| std::mem::take(&mut *a.borrow_mut()))
    }

    /// Calls [`get_proc_address`] against the fake: (rc, pfn, status).
    fn lookup(
        config: &Config,
        symbol: &CStr,
        requested: c_int,
        flags: u64,
    ) -> (CUresult, *mut c_void, CUdriverProcAddressQueryResult) {
        // Garbage in both outputs, to see that the shim writes them.
        let mut pfn: *mut c_void = std::ptr::dangling_mut::<u8>().cast();
        let mut status: CUdriverProcAddressQueryResult = 77;
        // SAFETY: a NUL-terminated name and two locals.
        let rc = unsafe {
            get_proc_address(
                fake_real,
                config,
                false,
                symbol.as_ptr(),
                &mut pfn,
                requested,
                flags,
                &mut status,
            )
        };
        (rc, pfn, status)
    }

    #[test]
    fn the_real_driver_is_asked_at_the_capped_version() {
        let c = emulating(12080);
        let (rc, pfn, status) = lookup(&c, c"cuMemAlloc", 13000, 1);
        assert_eq!((rc, status), (CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS));
        assert_eq!(pfn, fake_fn());
        assert_eq!(asked(), [("cuMemAlloc".to_string(), 12080, 1)]);

        // Below the emulated version: asked as requested, flags untouched.
        lookup(&c, c"cuStreamSynchronize", 12000, 2);
        assert_eq!(asked(), [("cuStreamSynchronize".to_string(), 12000, 2)]);

        // The real driver's "not found" comes back as it said it.
        let (rc, pfn, status) = lookup(&c, c"cuMissing", 13000, 0);
        assert_eq!(
            (rc, pfn, status),
            (
                CUDA_ERROR_NOT_FOUND,
                std::ptr::null_mut(),
                CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
            )
        );
        assert_eq!(asked(), [("cuMissing".to_string(), 12080, 0)]);
    }

    #[test]
    fn the_shim_hands_out_its_own_lookups_and_version() {
        let c = emulating(12040);
        let (rc, pfn, status) = lookup(&c, c"cuGetProcAddress", 13000, 1);
        assert_eq!((rc, status), (CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS));
        assert_eq!(
            pfn,
            crate::cuGetProcAddress_v2 as GetProcAddressV2 as *mut c_void
        );
        let (_, pfn, _) = lookup(&emulating(11080), c"cuGetProcAddress", 13000, 1);
        assert_eq!(
            pfn,
            crate::cuGetProcAddress as GetProcAddressV1 as *mut c_void
        );
        let (rc, pfn, _) = lookup(&c, c"cuDriverGetVersion", 13000, 1);
        assert_eq!(rc, CUDA_SUCCESS);
        assert_eq!(
            pfn,
            crate::cuDriverGetVersion as DriverGetVersion as *mut c_void
        );
        // None of these reached the real driver.
        assert!(asked().is_empty());

        let (rc, pfn, status) = lookup(&c, c"cuGetProcAddress", 11000, 1);
        assert_eq!(
            (rc, pfn, status),
            (
                CUDA_ERROR_NOT_FOUND,
                std::ptr::null_mut(),
                CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
            )
        );
    }

    #[test]
    fn a_hidden_symbol_is_not_found_and_never_forwarded() {
        let c = Config {
            hide: vec!["cuGreenCtxCreate".into()],
            ..emulating(13000)
        };
        let (rc, pfn, status) = lookup(&c, c"cuGreenCtxCreate", 13000, 0);
        assert_eq!(rc, CUDA_ERROR_NOT_FOUND);
        assert!(pfn.is_null());
        assert_eq!(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        assert!(asked().is_empty());
    }

    #[test]
    fn null_arguments_are_invalid_and_a_null_status_is_fine() {
        let c = emulating(12080);
        let mut pfn: *mut c_void = std::ptr::null_mut();
        // SAFETY: NULL pointers are refused before any use.
        let rc = unsafe {
            get_proc_address(
                fake_real,
                &c,
                false,
                std::ptr::null(),
                &mut pfn,
                13000,
                0,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(rc, CUDA_ERROR_INVALID_VALUE);
        // SAFETY: as above.
        let rc = unsafe {
            get_proc_address(
                fake_real,
                &c,
                false,
                c"cuMemAlloc".as_ptr(),
                std::ptr::null_mut(),
                13000,
                0,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(rc, CUDA_ERROR_INVALID_VALUE);
        assert!(asked().is_empty());

        // The status is optional, for forwarded and answered requests alike.
        for (name, forwarded) in [(c"cuMemAlloc", true), (c"cuDriverGetVersion", false)] {
            // SAFETY: a NUL-terminated name and a local.
            let rc = unsafe {
                get_proc_address(
                    fake_real,
                    &c,
                    false,
                    name.as_ptr(),
                    &mut pfn,
                    13000,
                    0,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, CUDA_SUCCESS);
            assert!(!pfn.is_null());
            assert_eq!(asked().len(), usize::from(forwarded));
            if forwarded {
                assert!(STATUS_WAS_NULL.with(Cell::get));
            }
        }
    }

    #[test]
    fn wrapped_functions_are_handed_out_behind_their_trampolines() {
        let c = emulating(12080);
        let ask = |name: &CStr, version: c_int| {
            let mut pfn: *mut c_void = std::ptr::null_mut();
            // SAFETY: a NUL-terminated name and a local; the fake's answer is
            // never called (the per-thread slot of cuStreamSynchronize is this
            // test's alone).
            let rc = unsafe {
                get_proc_address(
                    fake_real,
                    &c,
                    true,
                    name.as_ptr(),
                    &mut pfn,
                    version,
                    2,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, CUDA_SUCCESS);
            pfn
        };
        let wrapped = ask(c"cuStreamSynchronize", 2000);
        assert!(!wrapped.is_null());
        assert_ne!(
            wrapped,
            fake_fn(),
            "a wrapped function comes behind a trampoline"
        );
        assert_eq!(ask(c"cuStreamSynchronize", 2000), wrapped);
        // Not a wrapped function: the driver's answer, untouched.
        assert_eq!(ask(c"cuMemsetD2D8Async", 3020), fake_fn());
        asked();
    }

    #[test]
    fn the_status_less_lookup_forwards_the_same_way() {
        let c = emulating(11080);
        let mut pfn: *mut c_void = std::ptr::null_mut();
        // SAFETY: a NUL-terminated name and a local.
        let rc = unsafe {
            get_proc_address_v1(
                fake_real,
                &c,
                false,
                c"cuMemAlloc".as_ptr(),
                &mut pfn,
                12000,
                0,
            )
        };
        assert_eq!(rc, CUDA_SUCCESS);
        assert_eq!(pfn, fake_fn());
        assert_eq!(asked(), [("cuMemAlloc".to_string(), 11080, 0)]);
    }

    #[test]
    fn the_version_is_written_where_asked() {
        let mut v: c_int = 0;
        // SAFETY: a local.
        assert_eq!(unsafe { driver_get_version(12040, &mut v) }, CUDA_SUCCESS);
        assert_eq!(v, 12040);
        // SAFETY: NULL is refused.
        let rc = unsafe { driver_get_version(12040, std::ptr::null_mut()) };
        assert_eq!(rc, CUDA_ERROR_INVALID_VALUE);
    }
}
