//! A stand-in `libcuda.so.1` for tests: a program loaded with it believes it runs
//! on an older CUDA driver, and chosen driver calls fail.
//!
//! Built as a shared library and put first on the loader's path under the name
//! `libcuda.so.1` (`run-shim.sh` of the GPU test package does this), the shim is
//! what a program gets when it loads the driver. It exports three driver
//! functions (and the test controls of [fault injection](#wrapped-functions-faults-and-counts))
//! and forwards to the real driver, which it loads itself by absolute path:
//!
//! * `cuDriverGetVersion` reports the emulated version;
//! * `cuGetProcAddress_v2` and `cuGetProcAddress` ask the real driver's
//!   `cuGetProcAddress_v2` at `min(requested, emulated)`. The driver hands out, for
//!   a version, the newest ABI of each function not newer than it and nothing for
//!   functions that came later, so the program gets exactly the entry points and
//!   ABIs of the older driver. Asked for `cuDriverGetVersion` or
//!   `cuGetProcAddress` they hand out the shim's own (`_v2` from 12.0 on), so
//!   nothing reaches the real driver around the emulation.
//!
//! What it cannot change: the GPU, and what the real driver's JIT compiler accepts
//! (a PTX version newer than the emulated driver still loads). Code that takes
//! driver functions other than these three straight from the library (`dlsym`, or
//! linking with `-lcuda`) finds nothing: the shim serves code that resolves the
//! driver through `cuGetProcAddress`, as cuda-rs does.
//!
//! # Environment
//!
//! Read once, at the first call into the shim:
//!
//! | variable | effect |
//! |---|---|
//! | `CUDA_RS_SHIM_REAL_DRIVER` | the real `libcuda.so.1`, an absolute path; unset: the first of [`real::WELL_KNOWN`] that exists and is not the shim |
//! | `CUDA_RS_SHIM_DRIVER_VERSION` | the version to emulate, as `cuDriverGetVersion` writes it (`12040` for 12.4); unset: the real driver's. One above the real driver's is lowered to it, with a note on stderr |
//! | `CUDA_RS_SHIM_HIDE` | comma-separated `cuGetProcAddress` base names (`cuMemcpyBatchAsync,cuGreenCtxCreate`) that are reported as not found (`CUDA_ERROR_NOT_FOUND`, status `CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND`, a NULL pointer) |
//! | `CUDA_RS_SHIM_FAIL` | comma-separated fault rules `function:N:ERROR`: the `N`th call (from 1; `*`: every call) of a wrapped function returns `ERROR` (a `CUresult` name) without reaching the driver (`cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY`) |
//! | `CUDA_RS_SHIM_FAIL_SEED`, `CUDA_RS_SHIM_FAIL_RATE` | together: a seeded random schedule; each call of a wrapped function that releases nothing fails with probability `P` (`0.01`, or `0.01:CUDA_ERROR_OUT_OF_MEMORY`; default error `CUDA_ERROR_UNKNOWN`) |
//! | `CUDA_RS_SHIM_REPORT` | a file the call, failure and handle counts are written to as JSON when the process exits |
//! | `CUDA_RS_SHIM_FAKE_DRIVER` | `1`: load no real driver; answer with the CPU-only [`fake`] driver, which counts every call of every function it has (the report's `driver` section); it reports CUDA 12.8, or the version `CUDA_RS_SHIM_DRIVER_VERSION` asks for up to 13.5. For tests that count driver calls, or run the paths of a driver version, without a GPU |
//!
//! # Wrapped functions, faults and counts
//!
//! The driver functions cudars-core uses to allocate, copy, launch, load and
//! release (the list is [`wrap::ENTRIES`]) are handed out behind typed
//! trampolines ([`wrap`]): each call is counted, may be failed as the fault plan
//! ([`fault`]) says, and, when it succeeds, counts the handle it creates or
//! releases (memory, streams, events, modules, libraries, linkers, pools, and the
//! virtual memory API's physical allocations, mappings and reservations). Besides
//! the variables, a test drives this through three functions the shim exports
//! beside the driver's (found with `dlsym`): [`cuda_rs_shim_set_faults`],
//! [`cuda_rs_shim_set_random_faults`] and [`cuda_rs_shim_report`].
//!
//! # Failures
//!
//! The shim fails closed and says why once, on stderr, in a line starting with
//! `cudars-driver-shim:`. A variable that is set but malformed (an empty value, a
//! version that is not an integer ≥ 1000, a hide list item that is not a name, a
//! fault rule that does not parse or names a function the shim does not wrap, a
//! seed without a rate) makes every call return `CUDA_ERROR_INVALID_VALUE` (1), so
//! `cuInit` cannot even be looked up; a real driver that
//! cannot be found or loaded makes every call return
//! `CUDA_ERROR_SHARED_OBJECT_INIT_FAILED` (303).
//!
//! # Structure
//!
//! The decisions are pure functions, tested without a GPU: [`config`] reads and
//! checks the environment, [`route::route`] says who answers a lookup, and
//! [`route::get_proc_address`] carries that out with the real driver's function
//! passed in. [`real`] finds and loads the real driver; the exported functions
//! only tie these together.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::io::Write as _;
use std::sync::OnceLock;

pub mod config;
pub mod errors;
pub mod fake;
pub mod fault;
pub mod real;
pub mod route;
pub mod wrap;

use config::{Config, clamp_version};

/// `CUresult`, the driver's status code (a C enum).
pub type CUresult = c_uint;
/// `CUdriverProcAddressQueryResult`, what `cuGetProcAddress_v2` says about a lookup.
pub type CUdriverProcAddressQueryResult = c_uint;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_INVALID_VALUE`: also every call's answer under a malformed configuration.
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
/// `CUDA_ERROR_SHARED_OBJECT_INIT_FAILED`: every call's answer when the real
/// driver cannot be loaded.
pub const CUDA_ERROR_SHARED_OBJECT_INIT_FAILED: CUresult = 303;
/// `CUDA_ERROR_NOT_FOUND`: a lookup found nothing.
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;

/// `CU_GET_PROC_ADDRESS_SUCCESS`.
pub const CU_GET_PROC_ADDRESS_SUCCESS: CUdriverProcAddressQueryResult = 0;
/// `CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND`.
pub const CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: CUdriverProcAddressQueryResult = 1;
/// `CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`.
pub const CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: CUdriverProcAddressQueryResult = 2;

/// The shim once set up: the real driver and the configuration, its emulated
/// version clamped and always set.
struct Shim {
    real: real::RealDriver,
    config: Config,
}

/// Writes one line to stderr; a closed stderr is no reason to fail a call.
pub(crate) fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "cudars-driver-shim: {message}");
}

fn set_up() -> Result<Shim, CUresult> {
    let mut config = Config::from_env().map_err(|why| {
        say(&format!(
            "{why}; every call fails with CUDA_ERROR_INVALID_VALUE"
        ));
        CUDA_ERROR_INVALID_VALUE
    })?;
    let real = if config.fake {
        real::RealDriver {
            get_proc_address: fake::get_proc_address,
            // The fake emulates the version asked for, up to its newest.
            version: config
                .driver_version
                .map_or(fake::VERSION, |v| v.min(fake::MAX_VERSION)),
        }
    } else {
        real::load(&config).map_err(|why| {
            say(&format!(
                "{why}; every call fails with CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"
            ));
            CUDA_ERROR_SHARED_OBJECT_INIT_FAILED
        })?
    };
    let clamped = clamp_version(config.driver_version, real.version);
    if let Some(note) = &clamped.note {
        say(note);
    }
    config.driver_version = Some(clamped.version);
    wrap::install(config.faults.clone());
    if config.report.is_some() {
        // SAFETY: registers a plain function; it runs once, at exit (or when the
        // shim is unloaded), and reads only the set-up shim.
        if unsafe { libc::atexit(report_at_exit) } != 0 {
            say("could not register the exit report; CUDA_RS_SHIM_REPORT will not be written");
        }
    }
    Ok(Shim { real, config })
}

/// Writes the counts to `CUDA_RS_SHIM_REPORT`, at exit.
extern "C" fn report_at_exit() {
    if let Ok(Shim {
        config: Config {
            report: Some(path), ..
        },
        ..
    }) = shim()
    {
        wrap::write_report(path);
    }
}

/// The shim, set up by the first call of any thread; the error every call
/// returns when that failed.
fn shim() -> Result<&'static Shim, CUresult> {
    static SHIM: OnceLock<Result<Shim, CUresult>> = OnceLock::new();
    SHIM.get_or_init(set_up).as_ref().map_err(|&rc| rc)
}

/// `CUresult cuDriverGetVersion(int *driverVersion)`: the emulated version.
///
/// # Safety
///
/// `version` is NULL (refused with `CUDA_ERROR_INVALID_VALUE`) or valid for one write.
#[allow(non_snake_case)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    match shim() {
        // SAFETY: the caller's pointer, under the same contract.
        Ok(s) => unsafe { route::driver_get_version(emulated(s), version) },
        Err(rc) => rc,
    }
}

/// The version the shim reports (set up always sets it; the real one otherwise).
fn emulated(s: &Shim) -> c_int {
    s.config.driver_version.unwrap_or(s.real.version)
}

/// `CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
/// cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)`: the real
/// driver's lookup at `min(cudaVersion, emulated)` (see [`route::route`]).
///
/// # Safety
///
/// `symbol` is NULL or NUL-terminated; `pfn` is NULL or valid for one pointer
/// write; `status` is NULL or valid for one write.
#[allow(non_snake_case)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: u64,
    status: *mut CUdriverProcAddressQueryResult,
) -> CUresult {
    match shim() {
        // SAFETY: the caller's pointers, under the same contract; the real
        // driver's `cuGetProcAddress_v2` takes them.
        Ok(s) => unsafe {
            route::get_proc_address(
                s.real.get_proc_address,
                &s.config,
                true,
                symbol,
                pfn,
                cuda_version,
                flags,
                status,
            )
        },
        Err(rc) => rc,
    }
}

/// `CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
/// cuuint64_t flags)`: the CUDA 11 lookup, answered as [`cuGetProcAddress_v2`].
///
/// # Safety
///
/// As [`cuGetProcAddress_v2`].
#[allow(non_snake_case)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: u64,
) -> CUresult {
    match shim() {
        // SAFETY: as in `cuGetProcAddress_v2`.
        Ok(s) => unsafe {
            route::get_proc_address_v1(
                s.real.get_proc_address,
                &s.config,
                true,
                symbol,
                pfn,
                cuda_version,
                flags,
            )
        },
        Err(rc) => rc,
    }
}

/// `CUresult cuda_rs_shim_set_faults(const char *rules)`: replaces the fault plan
/// with `rules` (as `CUDA_RS_SHIM_FAIL` writes them; NULL or empty: none) and
/// starts every call and failure count again from zero, so `N` counts from this
/// call (the handle counts go on). Not a
/// driver function: a test finds it with `dlsym` in the loaded `libcuda.so.1`,
/// which tells it the shim is there.
///
/// Returns `CUDA_ERROR_INVALID_VALUE`, says why on stderr and keeps the plan in
/// force when `rules` is malformed or not UTF-8.
///
/// # Safety
///
/// `rules` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_rs_shim_set_faults(rules: *const c_char) -> CUresult {
    let text = if rules.is_null() {
        ""
    } else {
        // SAFETY: NUL-terminated, by the caller's contract.
        match unsafe { std::ffi::CStr::from_ptr(rules) }.to_str() {
            Ok(t) => t,
            Err(_) => {
                say(
                    "cuda_rs_shim_set_faults: the rules are not valid UTF-8; the plan is unchanged",
                );
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
    };
    match fault::parse_rules(text) {
        Ok(rules) => {
            wrap::install(fault::Plan {
                rules,
                random: None,
            });
            CUDA_SUCCESS
        }
        Err(why) => {
            say(&format!(
                "cuda_rs_shim_set_faults: {why}; the plan is unchanged"
            ));
            CUDA_ERROR_INVALID_VALUE
        }
    }
}

/// `CUresult cuda_rs_shim_set_random_faults(uint64_t seed, uint32_t rate_ppb,
/// CUresult error)`: replaces the fault plan with a random schedule (each call
/// that does not release something fails with probability `rate_ppb` / 10^9,
/// with `error`, the same calls for the same seed) and starts the call and
/// failure counts again.
///
/// Returns `CUDA_ERROR_INVALID_VALUE` for a rate above 10^9 or an `error` of
/// `CUDA_SUCCESS`.
#[unsafe(no_mangle)]
pub extern "C" fn cuda_rs_shim_set_random_faults(
    seed: u64,
    rate_ppb: u32,
    error: CUresult,
) -> CUresult {
    if rate_ppb > fault::BILLION || error == CUDA_SUCCESS {
        say(
            "cuda_rs_shim_set_random_faults: the rate is above 10^9 or the error is CUDA_SUCCESS; the plan is unchanged",
        );
        return CUDA_ERROR_INVALID_VALUE;
    }
    wrap::install(fault::Plan {
        rules: Vec::new(),
        random: Some(fault::Random {
            seed,
            rate_ppb,
            error,
        }),
    });
    CUDA_SUCCESS
}

/// `size_t cuda_rs_shim_report(char *buf, size_t len)`: the call and handle
/// counts as JSON (see [`wrap::report_json`]), written NUL-terminated into `buf`
/// when it holds them; returns their length without the NUL, so a caller with a
/// buffer too small (or NULL) learns the size to ask again with.
///
/// # Safety
///
/// `buf` is NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_rs_shim_report(buf: *mut c_char, len: usize) -> usize {
    let json = wrap::report_json();
    if !buf.is_null() && json.len() < len {
        // SAFETY: `buf` holds `len` > `json.len()` bytes, by the caller's contract.
        unsafe {
            std::ptr::copy_nonoverlapping(json.as_ptr().cast::<c_char>(), buf, json.len());
            buf.add(json.len()).write(0);
        }
    }
    json.len()
}
