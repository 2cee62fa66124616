//! Typed trampolines in front of chosen driver functions: they count calls,
//! fail the calls a fault [`Plan`] names, and count the
//! handles that succeeding calls create and release.
//!
//! A trampoline stands in for the real function that `cuGetProcAddress` hands
//! out, so it must take exactly that function's arguments. Each one here is
//! written with the parameter types of the `PFN_<name>_v<version>` typedef that
//! `cudaTypedefs.h` gives the ABI it wraps (cudars-bindings' generated types), and
//! a `const` item coerces it to that typedef, so a signature that differs does
//! not compile. A lookup is wrapped only when the driver hands out exactly that
//! ABI: asked at a version from the ABI's own up to (not including) the next ABI
//! of the function, and no later than the newest headers the table was checked
//! against ([`NEWEST_KNOWN_ABI`]); a test checks the table's ranges against every
//! `PFN_` typedef of the CUDA 13.0 and 12.9 headers.
//!
//! Each trampoline has two slots, for the legacy and the per-thread default
//! stream variant (`_ptds`/`_ptsz`) of its function, which share a signature and
//! are distinct functions of the driver.

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_ulonglong, c_void};
use std::io::Write as _;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

use cudars_bindings::driver::*;

use crate::fault::Plan;

/// What a successful call does to the handles it is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing counted.
    None,
    /// Creates one handle of the kind (allocates, creates, loads, imports).
    Acquire(Kind),
    /// Releases one handle of the kind (frees, destroys, unloads).
    Release(Kind),
}

/// The kinds of handles counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Device, pinned and managed memory, and imported IPC pointers.
    Memory,
    /// Streams.
    Stream,
    /// Events (created, or opened from IPC handles).
    Event,
    /// Modules.
    Module,
    /// Context-independent libraries.
    Library,
    /// JIT linker states.
    Linker,
    /// Memory pools.
    Pool,
    /// Physical allocations of the virtual memory API (created or imported
    /// from a shareable handle; released with `cuMemRelease`).
    Physical,
    /// Virtual memory mappings (`cuMemMap`, `cuMemUnmap`).
    Mapping,
    /// Reserved virtual address ranges (`cuMemAddressReserve`, `cuMemAddressFree`).
    Reservation,
}

impl Kind {
    /// Every kind, in the report's order.
    pub const ALL: [Kind; 10] = [
        Kind::Memory,
        Kind::Stream,
        Kind::Event,
        Kind::Module,
        Kind::Library,
        Kind::Linker,
        Kind::Pool,
        Kind::Physical,
        Kind::Mapping,
        Kind::Reservation,
    ];

    /// The kind's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::Stream => "streams",
            Kind::Event => "events",
            Kind::Module => "modules",
            Kind::Library => "libraries",
            Kind::Linker => "linkers",
            Kind::Pool => "pools",
            Kind::Physical => "physical",
            Kind::Mapping => "mappings",
            Kind::Reservation => "reservations",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One wrapped ABI of a driver function.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The `cuGetProcAddress` base name (`cuMemAlloc`).
    pub base: &'static str,
    /// The ABI version the trampoline's signature is (`3020`).
    pub version: c_int,
    /// The next ABI version of the function, from which the driver hands out
    /// another signature; `None` when the known headers have none.
    pub until: Option<c_int>,
    /// What a successful call does.
    pub effect: Effect,
}

/// The newest ABI version the table was checked against (the CUDA 13.0
/// headers): a request above it may be handed an ABI the table does not know,
/// and is never wrapped.
pub const NEWEST_KNOWN_ABI: c_int = 13000;

/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`.
const PER_THREAD_DEFAULT_STREAM: u64 = 1 << 1;

macro_rules! trampolines {
    ($( $idx:literal $module:ident $base:literal $version:literal, $until:expr, $effect:expr, $pfn:ident ( $($arg:ident : $ty:ty),* ); )*) => {
        /// The wrapped ABIs, by index.
        pub static ENTRIES: [Entry; COUNT] = [$(Entry { base: $base, version: $version, until: $until, effect: $effect }),*];

        /// How many ABIs are wrapped.
        pub const COUNT: usize = [$($idx),*].len();

        // An entry's index is its place in `ENTRIES`: `trampoline` picks the
        // function (and its signature) by it.
        const _: () = {
            let indices: [usize; COUNT] = [$($idx),*];
            let mut i = 0;
            while i < COUNT {
                assert!(indices[i] == i, "trampoline indices must count 0, 1, 2, … in order");
                i += 1;
            }
        };

        $(
            #[allow(non_snake_case)]
            mod $module {
                use super::*;

                /// The trampoline of slot `SLOT`.
                ///
                /// # Safety
                ///
                /// As the driver function it stands for.
                pub(super) unsafe extern "C" fn call<const SLOT: usize>($($arg: $ty),*) -> CUresult {
                    type Real = unsafe extern "C" fn($($ty),*) -> CUresult;
                    if let Some(rc) = enter($idx) {
                        return cudaError_enum(rc);
                    }
                    let real = REAL[$idx][SLOT].load(Ordering::Acquire);
                    if real.is_null() {
                        // Handed out only after the slot is filled; never reached.
                        return CUDA_ERROR_NOT_INITIALIZED;
                    }
                    // SAFETY: the slot holds what the real driver's
                    // `cuGetProcAddress` returned for this function at an ABI
                    // version whose signature is `Real` (see `wrap_lookup`);
                    // `Real` is the `PFN_` typedef's, by the `const` below.
                    let real = unsafe { std::mem::transmute::<*mut c_void, Real>(real) };
                    // SAFETY: the caller's arguments, passed on unchanged, under
                    // the driver function's own contract.
                    let rc = unsafe { real($($arg),*) };
                    leave($idx, rc.0);
                    rc
                }

                // The trampolines have the signature of the header's typedef.
                const _: $pfn = Some(call::<0>);
                const _: $pfn = Some(call::<1>);

                /// The address of slot `slot`'s trampoline.
                pub(super) fn address(slot: usize) -> *mut c_void {
                    type Own = unsafe extern "C" fn($($ty),*) -> CUresult;
                    if slot == 0 {
                        call::<0> as Own as *mut c_void
                    } else {
                        call::<1> as Own as *mut c_void
                    }
                }
            }
        )*

        /// The trampoline of entry `index`, slot `slot`.
        fn trampoline(index: usize, slot: usize) -> *mut c_void {
            match index {
                $($idx => $module::address(slot),)*
                _ => null_mut(),
            }
        }
    };
}

trampolines! {
    0 cuInit "cuInit" 2000, None, Effect::None, PFN_cuInit_v2000 (flags: c_uint);
    1 cuDeviceGet "cuDeviceGet" 2000, None, Effect::None, PFN_cuDeviceGet_v2000 (device: *mut CUdevice_v1, ordinal: c_int);
    2 cuDevicePrimaryCtxRetain "cuDevicePrimaryCtxRetain" 7000, None, Effect::None, PFN_cuDevicePrimaryCtxRetain_v7000 (pctx: *mut CUcontext, dev: CUdevice_v1);
    3 cuCtxSetCurrent "cuCtxSetCurrent" 4000, None, Effect::None, PFN_cuCtxSetCurrent_v4000 (ctx: CUcontext);
    4 cuCtxSynchronize_v2000 "cuCtxSynchronize" 2000, Some(13000), Effect::None, PFN_cuCtxSynchronize_v2000 ();
    5 cuCtxSynchronize_v13000 "cuCtxSynchronize" 13000, None, Effect::None, PFN_cuCtxSynchronize_v13000 (ctx: CUcontext);
    6 cuStreamSynchronize "cuStreamSynchronize" 2000, None, Effect::None, PFN_cuStreamSynchronize_v2000 (h_stream: CUstream);
    7 cuStreamWaitEvent "cuStreamWaitEvent" 3020, None, Effect::None, PFN_cuStreamWaitEvent_v3020 (h_stream: CUstream, h_event: CUevent, flags: c_uint);
    8 cuEventRecord "cuEventRecord" 2000, None, Effect::None, PFN_cuEventRecord_v2000 (h_event: CUevent, h_stream: CUstream);
    9 cuEventSynchronize "cuEventSynchronize" 2000, None, Effect::None, PFN_cuEventSynchronize_v2000 (h_event: CUevent);
    10 cuMemcpyAsync "cuMemcpyAsync" 4000, None, Effect::None, PFN_cuMemcpyAsync_v4000 (dst: CUdeviceptr_v2, src: CUdeviceptr_v2, byte_count: usize, h_stream: CUstream);
    11 cuMemcpyHtoDAsync "cuMemcpyHtoDAsync" 3020, None, Effect::None, PFN_cuMemcpyHtoDAsync_v3020 (dst_device: CUdeviceptr_v2, src_host: *const c_void, byte_count: usize, h_stream: CUstream);
    12 cuMemcpyDtoHAsync "cuMemcpyDtoHAsync" 3020, None, Effect::None, PFN_cuMemcpyDtoHAsync_v3020 (dst_host: *mut c_void, src_device: CUdeviceptr_v2, byte_count: usize, h_stream: CUstream);
    13 cuMemsetD8Async "cuMemsetD8Async" 3020, None, Effect::None, PFN_cuMemsetD8Async_v3020 (dst_device: CUdeviceptr_v2, uc: c_uchar, n: usize, h_stream: CUstream);
    14 cuMemsetD32Async "cuMemsetD32Async" 3020, None, Effect::None, PFN_cuMemsetD32Async_v3020 (dst_device: CUdeviceptr_v2, ui: c_uint, n: usize, h_stream: CUstream);
    15 cuLaunchKernel "cuLaunchKernel" 4000, None, Effect::None, PFN_cuLaunchKernel_v4000 (f: CUfunction, grid_dim_x: c_uint, grid_dim_y: c_uint, grid_dim_z: c_uint, block_dim_x: c_uint, block_dim_y: c_uint, block_dim_z: c_uint, shared_mem_bytes: c_uint, h_stream: CUstream, kernel_params: *mut *mut c_void, extra: *mut *mut c_void);
    16 cuLaunchKernelEx "cuLaunchKernelEx" 11060, None, Effect::None, PFN_cuLaunchKernelEx_v11060 (config: *const CUlaunchConfig, f: CUfunction, kernel_params: *mut *mut c_void, extra: *mut *mut c_void);
    17 cuLibraryGetKernel "cuLibraryGetKernel" 12000, None, Effect::None, PFN_cuLibraryGetKernel_v12000 (p_kernel: *mut CUkernel, library: CUlibrary, name: *const c_char);
    18 cuKernelGetFunction "cuKernelGetFunction" 12000, None, Effect::None, PFN_cuKernelGetFunction_v12000 (p_func: *mut CUfunction, kernel: CUkernel);
    19 cuKernelGetParamInfo "cuKernelGetParamInfo" 12040, None, Effect::None, PFN_cuKernelGetParamInfo_v12040 (kernel: CUkernel, param_index: usize, param_offset: *mut usize, param_size: *mut usize);
    20 cuModuleGetFunction "cuModuleGetFunction" 2000, None, Effect::None, PFN_cuModuleGetFunction_v2000 (hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char);
    21 cuFuncGetParamInfo "cuFuncGetParamInfo" 12040, None, Effect::None, PFN_cuFuncGetParamInfo_v12040 (func: CUfunction, param_index: usize, param_offset: *mut usize, param_size: *mut usize);
    22 cuLinkAddData "cuLinkAddData" 6050, None, Effect::None, PFN_cuLinkAddData_v6050 (state: CUlinkState, type_: CUjitInputType, data: *mut c_void, size: usize, name: *const c_char, num_options: c_uint, options: *mut CUjit_option, option_values: *mut *mut c_void);
    23 cuLinkComplete "cuLinkComplete" 5050, None, Effect::None, PFN_cuLinkComplete_v5050 (state: CUlinkState, cubin_out: *mut *mut c_void, size_out: *mut usize);
    24 cuMemAlloc "cuMemAlloc" 3020, None, Effect::Acquire(Kind::Memory), PFN_cuMemAlloc_v3020 (dptr: *mut CUdeviceptr_v2, bytesize: usize);
    25 cuMemAllocAsync "cuMemAllocAsync" 11020, None, Effect::Acquire(Kind::Memory), PFN_cuMemAllocAsync_v11020 (dptr: *mut CUdeviceptr_v2, bytesize: usize, h_stream: CUstream);
    26 cuMemAllocFromPoolAsync "cuMemAllocFromPoolAsync" 11020, None, Effect::Acquire(Kind::Memory), PFN_cuMemAllocFromPoolAsync_v11020 (dptr: *mut CUdeviceptr_v2, bytesize: usize, pool: CUmemoryPool, h_stream: CUstream);
    27 cuMemAllocManaged "cuMemAllocManaged" 6000, None, Effect::Acquire(Kind::Memory), PFN_cuMemAllocManaged_v6000 (dptr: *mut CUdeviceptr_v2, bytesize: usize, flags: c_uint);
    28 cuMemAllocHost "cuMemAllocHost" 3020, None, Effect::Acquire(Kind::Memory), PFN_cuMemAllocHost_v3020 (pp: *mut *mut c_void, bytesize: usize);
    29 cuMemHostAlloc "cuMemHostAlloc" 2020, None, Effect::Acquire(Kind::Memory), PFN_cuMemHostAlloc_v2020 (pp: *mut *mut c_void, bytesize: usize, flags: c_uint);
    30 cuMemPoolImportPointer "cuMemPoolImportPointer" 11020, None, Effect::Acquire(Kind::Memory), PFN_cuMemPoolImportPointer_v11020 (ptr_out: *mut CUdeviceptr_v2, pool: CUmemoryPool, share_data: *mut CUmemPoolPtrExportData_v1);
    31 cuMemFree "cuMemFree" 3020, None, Effect::Release(Kind::Memory), PFN_cuMemFree_v3020 (dptr: CUdeviceptr_v2);
    32 cuMemFreeAsync "cuMemFreeAsync" 11020, None, Effect::Release(Kind::Memory), PFN_cuMemFreeAsync_v11020 (dptr: CUdeviceptr_v2, h_stream: CUstream);
    33 cuMemFreeHost "cuMemFreeHost" 2000, None, Effect::Release(Kind::Memory), PFN_cuMemFreeHost_v2000 (p: *mut c_void);
    34 cuStreamCreate "cuStreamCreate" 2000, None, Effect::Acquire(Kind::Stream), PFN_cuStreamCreate_v2000 (ph_stream: *mut CUstream, flags: c_uint);
    35 cuStreamCreateWithPriority "cuStreamCreateWithPriority" 5050, None, Effect::Acquire(Kind::Stream), PFN_cuStreamCreateWithPriority_v5050 (ph_stream: *mut CUstream, flags: c_uint, priority: c_int);
    36 cuStreamDestroy "cuStreamDestroy" 4000, None, Effect::Release(Kind::Stream), PFN_cuStreamDestroy_v4000 (h_stream: CUstream);
    37 cuEventCreate "cuEventCreate" 2000, None, Effect::Acquire(Kind::Event), PFN_cuEventCreate_v2000 (ph_event: *mut CUevent, flags: c_uint);
    38 cuIpcOpenEventHandle "cuIpcOpenEventHandle" 4010, None, Effect::Acquire(Kind::Event), PFN_cuIpcOpenEventHandle_v4010 (ph_event: *mut CUevent, handle: CUipcEventHandle_v1);
    39 cuEventDestroy "cuEventDestroy" 4000, None, Effect::Release(Kind::Event), PFN_cuEventDestroy_v4000 (h_event: CUevent);
    40 cuModuleLoadData "cuModuleLoadData" 2000, None, Effect::Acquire(Kind::Module), PFN_cuModuleLoadData_v2000 (module: *mut CUmodule, image: *const c_void);
    41 cuModuleLoadDataEx "cuModuleLoadDataEx" 2010, None, Effect::Acquire(Kind::Module), PFN_cuModuleLoadDataEx_v2010 (module: *mut CUmodule, image: *const c_void, num_options: c_uint, options: *mut CUjit_option, option_values: *mut *mut c_void);
    42 cuModuleLoadFatBinary "cuModuleLoadFatBinary" 2000, None, Effect::Acquire(Kind::Module), PFN_cuModuleLoadFatBinary_v2000 (module: *mut CUmodule, fat_cubin: *const c_void);
    43 cuModuleUnload "cuModuleUnload" 2000, None, Effect::Release(Kind::Module), PFN_cuModuleUnload_v2000 (hmod: CUmodule);
    44 cuLibraryLoadData "cuLibraryLoadData" 12000, None, Effect::Acquire(Kind::Library), PFN_cuLibraryLoadData_v12000 (library: *mut CUlibrary, code: *const c_void, jit_options: *mut CUjit_option, jit_options_values: *mut *mut c_void, num_jit_options: c_uint, library_options: *mut CUlibraryOption, library_option_values: *mut *mut c_void, num_library_options: c_uint);
    45 cuLibraryLoadFromFile "cuLibraryLoadFromFile" 12000, None, Effect::Acquire(Kind::Library), PFN_cuLibraryLoadFromFile_v12000 (library: *mut CUlibrary, file_name: *const c_char, jit_options: *mut CUjit_option, jit_options_values: *mut *mut c_void, num_jit_options: c_uint, library_options: *mut CUlibraryOption, library_option_values: *mut *mut c_void, num_library_options: c_uint);
    46 cuLibraryUnload "cuLibraryUnload" 12000, None, Effect::Release(Kind::Library), PFN_cuLibraryUnload_v12000 (library: CUlibrary);
    47 cuLinkCreate "cuLinkCreate" 6050, None, Effect::Acquire(Kind::Linker), PFN_cuLinkCreate_v6050 (num_options: c_uint, options: *mut CUjit_option, option_values: *mut *mut c_void, state_out: *mut CUlinkState);
    48 cuLinkDestroy "cuLinkDestroy" 5050, None, Effect::Release(Kind::Linker), PFN_cuLinkDestroy_v5050 (state: CUlinkState);
    49 cuMemPoolCreate "cuMemPoolCreate" 11020, None, Effect::Acquire(Kind::Pool), PFN_cuMemPoolCreate_v11020 (pool: *mut CUmemoryPool, pool_props: *const CUmemPoolProps_v1);
    50 cuMemPoolDestroy "cuMemPoolDestroy" 11020, None, Effect::Release(Kind::Pool), PFN_cuMemPoolDestroy_v11020 (pool: CUmemoryPool);
    51 cuEventQuery "cuEventQuery" 2000, None, Effect::None, PFN_cuEventQuery_v2000 (h_event: CUevent);
    52 cuMemCreate "cuMemCreate" 10020, None, Effect::Acquire(Kind::Physical), PFN_cuMemCreate_v10020 (handle: *mut CUmemGenericAllocationHandle_v1, size: usize, prop: *const CUmemAllocationProp_v1, flags: c_ulonglong);
    53 cuMemImportFromShareableHandle "cuMemImportFromShareableHandle" 10020, None, Effect::Acquire(Kind::Physical), PFN_cuMemImportFromShareableHandle_v10020 (handle: *mut CUmemGenericAllocationHandle_v1, os_handle: *mut c_void, sh_handle_type: CUmemAllocationHandleType);
    54 cuMemRelease "cuMemRelease" 10020, None, Effect::Release(Kind::Physical), PFN_cuMemRelease_v10020 (handle: CUmemGenericAllocationHandle_v1);
    55 cuMemMap "cuMemMap" 10020, None, Effect::Acquire(Kind::Mapping), PFN_cuMemMap_v10020 (ptr: CUdeviceptr_v2, size: usize, offset: usize, handle: CUmemGenericAllocationHandle_v1, flags: c_ulonglong);
    56 cuMemUnmap "cuMemUnmap" 10020, None, Effect::Release(Kind::Mapping), PFN_cuMemUnmap_v10020 (ptr: CUdeviceptr_v2, size: usize);
    57 cuMemAddressReserve "cuMemAddressReserve" 10020, None, Effect::Acquire(Kind::Reservation), PFN_cuMemAddressReserve_v10020 (ptr: *mut CUdeviceptr_v2, size: usize, alignment: usize, addr: CUdeviceptr_v2, flags: c_ulonglong);
    58 cuMemAddressFree "cuMemAddressFree" 10020, None, Effect::Release(Kind::Reservation), PFN_cuMemAddressFree_v10020 (ptr: CUdeviceptr_v2, size: usize);
    59 cuMemSetAccess "cuMemSetAccess" 10020, None, Effect::None, PFN_cuMemSetAccess_v10020 (ptr: CUdeviceptr_v2, size: usize, desc: *const CUmemAccessDesc_v1, count: usize);
}

/// The real functions behind each entry's two slots.
static REAL: [[AtomicPtr<c_void>; 2]; COUNT] =
    [const { [const { AtomicPtr::new(null_mut()) }; 2] }; COUNT];
/// Calls per entry since the plan was last installed (counted under the first
/// entry of the same base name, so the ABIs of one function share a count).
static CALLS: [AtomicU64; COUNT] = [const { AtomicU64::new(0) }; COUNT];
/// Calls failed on purpose, per entry (counted likewise).
static INJECTED: [AtomicU64; COUNT] = [const { AtomicU64::new(0) }; COUNT];
/// Handles created per kind, since the process started.
static CREATED: [AtomicU64; Kind::ALL.len()] = [const { AtomicU64::new(0) }; Kind::ALL.len()];
/// Handles released per kind, since the process started.
static RELEASED: [AtomicU64; Kind::ALL.len()] = [const { AtomicU64::new(0) }; Kind::ALL.len()];
/// The fault plan in force.
static PLAN: RwLock<Plan> = RwLock::new(Plan {
    rules: Vec::new(),
    random: None,
});

/// The first entry with the same base name as `index`: where its calls count.
fn counter(index: usize) -> usize {
    let base = ENTRIES[index].base;
    ENTRIES.iter().position(|e| e.base == base).unwrap_or(index)
}

/// Before a call: counts it, and returns the error to fail it with, if the plan
/// says so.
fn enter(index: usize) -> Option<c_uint> {
    let at = counter(index);
    let call = CALLS[at].fetch_add(1, Ordering::Relaxed) + 1;
    let entry = &ENTRIES[index];
    let rc = PLAN.read().unwrap_or_else(PoisonError::into_inner).decide(
        entry.base,
        entry.effect,
        call,
    )?;
    INJECTED[at].fetch_add(1, Ordering::Relaxed);
    Some(rc)
}

/// After a call that reached the driver: counts the handle a success made or
/// released.
fn leave(index: usize, rc: c_uint) {
    if rc != CUDA_SUCCESS.0 {
        return;
    }
    match ENTRIES[index].effect {
        Effect::None => {}
        Effect::Acquire(kind) => {
            CREATED[kind.index()].fetch_add(1, Ordering::Relaxed);
        }
        Effect::Release(kind) => {
            RELEASED[kind.index()].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Installs `plan` and starts the call and failure counts again from zero (a
/// rule's `N` counts from here). The handle counts go on.
pub fn install(plan: Plan) {
    let mut current = PLAN.write().unwrap_or_else(PoisonError::into_inner);
    for c in CALLS.iter().chain(&INJECTED) {
        c.store(0, Ordering::Relaxed);
    }
    crate::fake::reset();
    *current = plan;
}

/// The entry that wraps what the driver hands out for `base` asked at
/// `version` (the version passed to the real driver).
pub fn entry_for(base: &[u8], version: c_int) -> Option<usize> {
    if version > NEWEST_KNOWN_ABI {
        return None;
    }
    ENTRIES.iter().position(|e| {
        e.base.as_bytes() == base && e.version <= version && e.until.is_none_or(|u| version < u)
    })
}

/// What to hand out for a lookup of `base` at `version` with `flags` whose
/// real answer is `real` (non-null): a trampoline in front of it, or `real`
/// itself when the function is not wrapped at that version.
///
/// # Safety
///
/// `real` is what the real driver's `cuGetProcAddress` returned for `base` at
/// `version` with `flags`: a function of that ABI's signature.
pub unsafe fn wrap_lookup(
    base: &[u8],
    version: c_int,
    flags: u64,
    real: *mut c_void,
) -> *mut c_void {
    let Some(index) = entry_for(base, version) else {
        return real;
    };
    let slot = usize::from(flags & PER_THREAD_DEFAULT_STREAM != 0);
    match REAL[index][slot].compare_exchange(null_mut(), real, Ordering::AcqRel, Ordering::Acquire)
    {
        Ok(_) => trampoline(index, slot),
        Err(same) if same == real => trampoline(index, slot),
        Err(_) => {
            // The driver handed out another function for the same ABI and
            // variant: not counted, rather than called through the wrong one.
            crate::say(&format!(
                "{} (ABI {version}) was handed out as two different functions; the second is not wrapped",
                ENTRIES[index].base
            ));
            real
        }
    }
}

/// The counts as JSON: calls and injected failures per function (those
/// called), per kind of handle the number created, released and live
/// (created minus released), and under `driver` the calls each function of the
/// [fake driver](crate::fake) received (empty with a real driver).
pub fn report_json() -> String {
    let mut calls = Vec::new();
    let mut injected = Vec::new();
    for (i, e) in ENTRIES.iter().enumerate() {
        if counter(i) != i {
            continue;
        }
        let n = CALLS[i].load(Ordering::Relaxed);
        if n > 0 {
            calls.push(format!("\"{}\":{n}", e.base));
        }
        let f = INJECTED[i].load(Ordering::Relaxed);
        if f > 0 {
            injected.push(format!("\"{}\":{f}", e.base));
        }
    }
    let per_kind = |f: &dyn Fn(Kind) -> i128| {
        Kind::ALL
            .iter()
            .map(|&k| format!("\"{}\":{}", k.name(), f(k)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let created = |k: Kind| i128::from(CREATED[k.index()].load(Ordering::Relaxed));
    let released = |k: Kind| i128::from(RELEASED[k.index()].load(Ordering::Relaxed));
    format!(
        "{{\"calls\":{{{}}},\"injected\":{{{}}},\"created\":{{{}}},\"released\":{{{}}},\"live\":{{{}}},\"driver\":{{{}}}}}",
        calls.join(","),
        injected.join(","),
        per_kind(&created),
        per_kind(&released),
        per_kind(&|k| created(k) - released(k)),
        crate::fake::counts_json(),
    )
}

/// Writes [`report_json`] to `path` (for `CUDA_RS_SHIM_REPORT`, at exit).
pub fn write_report(path: &std::path::Path) {
    let written = std::fs::File::create(path).and_then(|mut f| writeln!(f, "{}", report_json()));
    if let Err(e) = written {
        crate::say(&format!(
            "could not write the report to {}: {e}",
            path.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// The wrap tests share the process-wide counters: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Every `PFN_<base>_v<N>` typedef (not the per-thread ones) of the CUDA 13.0
    /// and 12.9 headers, by base name.
    fn header_abis() -> BTreeMap<String, Vec<c_int>> {
        let mut out: BTreeMap<String, Vec<c_int>> = BTreeMap::new();
        for text in [
            include_str!("../../../crates/cudars-bindings/src/generated/driver/types.rs"),
            include_str!("../../../crates/cudars-bindings/src/generated/driver_cuda12/types.rs"),
        ] {
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("pub type PFN_") else {
                    continue;
                };
                let Some((name, _)) = rest.split_once(" =") else {
                    continue;
                };
                let Some((base, version)) = name.rsplit_once("_v") else {
                    continue;
                };
                if let Ok(v) = version.parse::<c_int>() {
                    let list = out.entry(base.to_string()).or_default();
                    if !list.contains(&v) {
                        list.push(v);
                    }
                }
            }
        }
        for list in out.values_mut() {
            list.sort_unstable();
        }
        out
    }

    #[test]
    fn every_entry_covers_exactly_its_abis_range() {
        let abis = header_abis();
        for e in &ENTRIES {
            let known = abis
                .get(e.base)
                .unwrap_or_else(|| panic!("{} has no PFN_ typedef", e.base));
            assert!(known.contains(&e.version), "{} v{}", e.base, e.version);
            let next = known.iter().copied().find(|&v| v > e.version);
            assert_eq!(e.until, next, "{} v{}: the next ABI", e.base, e.version);
            assert!(e.version <= NEWEST_KNOWN_ABI);
        }
    }

    #[test]
    fn lookups_are_wrapped_only_inside_an_abis_range() {
        assert_eq!(
            entry_for(b"cuMemAlloc", 3020).map(|i| ENTRIES[i].version),
            Some(3020)
        );
        assert_eq!(
            entry_for(b"cuMemAlloc", 13000).map(|i| ENTRIES[i].version),
            Some(3020)
        );
        // Below the ABI the driver hands out an older signature; above the
        // headers, perhaps a newer one.
        assert_eq!(entry_for(b"cuMemAlloc", 2000), None);
        assert_eq!(entry_for(b"cuMemAlloc", 13010), None);
        // Two ABIs of one function, each over its own range.
        assert_eq!(
            entry_for(b"cuCtxSynchronize", 12090).map(|i| ENTRIES[i].version),
            Some(2000)
        );
        assert_eq!(
            entry_for(b"cuCtxSynchronize", 13000).map(|i| ENTRIES[i].version),
            Some(13000)
        );
        assert_eq!(entry_for(b"cuMemAllocPitch", 13000), None);
    }

    // Fake driver functions of two signatures.
    type Alloc = unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult;
    type Free = unsafe extern "C" fn(CUdeviceptr) -> CUresult;
    static FAKE_ALLOCS: AtomicU64 = AtomicU64::new(0);
    unsafe extern "C" fn fake_alloc(dptr: *mut CUdeviceptr, bytesize: usize) -> CUresult {
        FAKE_ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the tests pass a local.
        unsafe { dptr.write(0x1000 + bytesize as u64) };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn fake_free(_dptr: CUdeviceptr) -> CUresult {
        CUDA_SUCCESS
    }

    fn live(kind: Kind) -> i128 {
        i128::from(CREATED[kind.index()].load(Ordering::Relaxed))
            - i128::from(RELEASED[kind.index()].load(Ordering::Relaxed))
    }

    #[test]
    fn trampolines_forward_count_and_fail_as_planned() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the fakes have the signatures of cuMemAlloc's and cuMemFree's 3020 ABIs.
        let (alloc, free) = unsafe {
            (
                wrap_lookup(b"cuMemAlloc", 3020, 1, fake_alloc as Alloc as *mut c_void),
                wrap_lookup(b"cuMemFree", 3020, 1, fake_free as Free as *mut c_void),
            )
        };
        assert_ne!(alloc, fake_alloc as Alloc as *mut c_void);
        // SAFETY: a trampoline of cuMemAlloc's 3020 ABI.
        let alloc = unsafe { std::mem::transmute::<*mut c_void, Alloc>(alloc) };
        // SAFETY: likewise, cuMemFree's.
        let free = unsafe { std::mem::transmute::<*mut c_void, Free>(free) };

        install(Plan {
            rules: crate::fault::parse_rules("cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY").unwrap(),
            random: None,
        });
        let (before, fakes) = (live(Kind::Memory), FAKE_ALLOCS.load(Ordering::Relaxed));
        let mut p: CUdeviceptr = 0;
        // SAFETY: a local to write.
        assert_eq!(unsafe { alloc(&mut p, 64) }, CUDA_SUCCESS);
        assert_eq!(p, 0x1040, "the arguments reach the driver unchanged");
        // The second call fails without reaching the driver.
        let mut q: CUdeviceptr = 0;
        // SAFETY: as above.
        assert_eq!(unsafe { alloc(&mut q, 64) }, CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!((q, FAKE_ALLOCS.load(Ordering::Relaxed)), (0, fakes + 1));
        // SAFETY: as above.
        assert_eq!(unsafe { alloc(&mut q, 8) }, CUDA_SUCCESS);
        assert_eq!(live(Kind::Memory), before + 2);
        // SAFETY: the fake frees nothing.
        unsafe {
            assert_eq!(free(p), CUDA_SUCCESS);
            assert_eq!(free(q), CUDA_SUCCESS);
        }
        assert_eq!(live(Kind::Memory), before);
        let report = report_json();
        assert!(report.contains("\"cuMemAlloc\":3"), "{report}");
        assert!(
            report.contains("\"injected\":{\"cuMemAlloc\":1}"),
            "{report}"
        );
        assert!(report.contains("\"live\":{\"memory\":"), "{report}");

        // Installing a plan starts the call numbers again.
        install(Plan::default());
        // SAFETY: as above.
        assert_eq!(unsafe { alloc(&mut q, 8) }, CUDA_SUCCESS);
        // SAFETY: as above.
        assert_eq!(unsafe { free(q) }, CUDA_SUCCESS);
        assert!(
            report_json().contains("\"calls\":{\"cuMemAlloc\":1,\"cuMemFree\":1}"),
            "{}",
            report_json()
        );
    }

    #[test]
    fn unwrapped_lookups_hand_out_the_real_function() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let real = fake_free as Free as *mut c_void;
        // SAFETY: not wrapped: the pointer is handed back untouched.
        unsafe {
            assert_eq!(wrap_lookup(b"cuMemsetD2D8", 3020, 1, real), real);
            assert_eq!(wrap_lookup(b"cuMemFree", 2000, 1, real), real);
            assert_eq!(wrap_lookup(b"cuMemFree", 13010, 1, real), real);
        }
    }
}
