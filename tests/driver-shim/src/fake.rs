//! A stand-in driver with no GPU behind it (`CUDA_RS_SHIM_FAKE_DRIVER=1`): the
//! shim answers `cuGetProcAddress` from this table instead of loading a real
//! `libcuda.so.1`, and every call of every function here is counted.
//!
//! It exists for the driver-call-count test (`tests/call_counts.rs`): cudars-core
//! runs its hot operations (launches, allocations, frees, copies, events) against
//! it on a machine without a GPU, and the test asserts how many driver calls of
//! each function one operation makes, which no timing can do deterministically.
//! The functions do what that needs and no more: handles are fresh numbers that
//! nothing dereferences, queued work completes at once, the one device is an
//! sm_90 with memory pools, and every kernel takes `(float*, int)`; pinned host
//! memory (`cuMemHostAlloc`) is real host memory; a host function
//! (`cuLaunchHostFunc`) runs at once on a thread of its own. Launches,
//! stream-ordered allocations, frees and copies, event records and stream waits,
//! and reading a kernel's parameters, fail with `CUDA_ERROR_INVALID_CONTEXT` when
//! no context is current on the calling thread, as the driver's do. A function
//! not listed is not found, as a driver too old to have it.
//!
//! Each function is written with the parameter types of its `PFN_` typedef
//! (checked by a `const` item, as the trampolines of [`wrap`](crate::wrap) are);
//! the driver version reported is [`VERSION`], so the loader asks for the ABIs of
//! CUDA 12.8, unless `CUDA_RS_SHIM_DRIVER_VERSION` asks for another, up to
//! [`MAX_VERSION`] (the loader then asks for that version's ABIs; the fake's
//! functions have one shape each, so a test that emulates a version keeps to the
//! functions whose shape did not change).
//!
//! A pool's attributes (`cuMemPoolGetAttribute`, `cuMemPoolSetAttribute`): the
//! release threshold is kept, one value for every pool (0 until set, as the
//! driver's default); the other attributes read 0.
//!
//! The virtual memory calls of an import (reserving a range, importing, creating
//! and releasing physical memory, mapping, unmapping, setting access) succeed
//! with fresh handles and addresses, for the import fault test
//! (`tests/vmm_import_faults.rs`).
//!
//! The device's resources (CUDA 12.4's and 13.1's green-context resources) are
//! answered too: an SM resource of 132 SMs (partitions of 8), workqueue resources
//! (a concurrency limit of 8, shared with the device), the structured split
//! (`cuDevSmResourceSplit`: each group gets its count, or what is left) and a
//! stream's resources, so that their success paths run without a GPU. Contexts:
//! one primary context per device (always active), and explicit ones
//! (`cuCtxCreate` pushes a fresh handle, `cuCtxDestroy` pops it when current),
//! on a per-thread current context and stack.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use cudars_bindings::driver::*;

/// The driver version the fake reports (12.8).
pub const VERSION: c_int = 12080;

/// The newest driver version the fake may be asked to emulate (13.5, the
/// bindings' headers).
pub const MAX_VERSION: c_int = 13050;

/// The fake device's SM resource.
fn sm_resource(count: c_uint, flags: c_uint) -> CUdevResource {
    let mut r = CUdevResource {
        type_: CU_DEV_RESOURCE_TYPE_SM,
        ..Default::default()
    };
    r.__bindgen_anon_1.sm = CUdevSmResource {
        smCount: count,
        minSmPartitionSize: 8,
        smCoscheduledAlignment: 8,
        flags,
        localityDomainId: 0,
    };
    r
}

/// Fills `r` (null or valid for a write) with the fake device's resource of `t`.
///
/// # Safety
/// `r` is null or valid for one write.
unsafe fn device_resource(r: *mut CUdevResource, t: CUdevResourceType) -> CUresult {
    let value = match t {
        CU_DEV_RESOURCE_TYPE_SM => sm_resource(132, 0),
        CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG => {
            let mut v = CUdevResource {
                type_: t,
                ..Default::default()
            };
            v.__bindgen_anon_1.wqConfig = CUdevWorkqueueConfigResource {
                device: 0,
                wqConcurrencyLimit: 8,
                sharingScope: CU_WORKQUEUE_SCOPE_DEVICE_CTX,
            };
            v
        }
        CU_DEV_RESOURCE_TYPE_WORKQUEUE => CUdevResource {
            type_: t,
            ..Default::default()
        },
        _ => return CUDA_ERROR_INVALID_RESOURCE_TYPE,
    };
    // SAFETY: per the contract.
    unsafe { put(r, value) };
    CUDA_SUCCESS
}

/// The next handle handed out: distinct, non-null, never a special stream
/// handle (those are 0, 1 and 2).
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x1000_0000);

fn fresh() -> usize {
    NEXT_HANDLE.fetch_add(0x100, Ordering::Relaxed)
}

/// The release threshold of the fake's pools (`cuMemPoolSetAttribute`): 0, the
/// driver's default, until set.
static RELEASE_THRESHOLD: AtomicU64 = AtomicU64::new(0);

/// The primary context of device `d`.
fn primary(d: CUdevice) -> CUcontext {
    (0xC000_0000usize + (d as usize) * 0x10) as CUcontext
}

thread_local! {
    /// The context current on this thread; a stack for push/pop.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    static STACK: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `CUDA_ERROR_INVALID_CONTEXT` when no context is current on this thread, as
/// the driver answers calls that need one.
fn no_context() -> Option<CUresult> {
    (CURRENT.with(Cell::get) == 0).then_some(CUDA_ERROR_INVALID_CONTEXT)
}

/// Writes `v` through `p` when `p` is not null.
///
/// # Safety
/// `p` is null or valid for one write of `T`.
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: per the contract.
        unsafe { p.write(v) };
    }
}

/// A device attribute of the fake sm_90.
fn attribute(a: CUdevice_attribute) -> c_int {
    match a {
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 9,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        | CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
        | CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y => 1024,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z => 64,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X => i32::MAX,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y | CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z => 65535,
        CU_DEVICE_ATTRIBUTE_WARP_SIZE => 32,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => 132,
        CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
        | CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
        | CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS => 1,
        _ => 0,
    }
}

macro_rules! fakes {
    ($( $name:ident $pfn:ident ( $($arg:ident : $ty:ty),* ) $body:block )*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Clone, Copy)]
        enum Id { $($name,)* }

        /// The functions the fake has, in the order of their counters.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// Calls per function since the counts were last reset.
        static COUNTS: [AtomicU64; NAMES.len()] = [const { AtomicU64::new(0) }; NAMES.len()];

        $(
            #[allow(non_snake_case, clippy::missing_safety_doc)]
            unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
                COUNTS[Id::$name as usize].fetch_add(1, Ordering::Relaxed);
                $body
            }
            const _: $pfn = Some($name);
        )*

        /// The fake's function for a `cuGetProcAddress` base name.
        fn lookup(base: &[u8]) -> Option<*mut c_void> {
            $(
                if base == stringify!($name).as_bytes() {
                    type F = unsafe extern "C" fn($($ty),*) -> CUresult;
                    return Some($name as F as *mut c_void);
                }
            )*
            None
        }
    };
}

fakes! {
    cuInit PFN_cuInit_v2000 (_flags: c_uint) { CUDA_SUCCESS }
    cuGetErrorName PFN_cuGetErrorName_v6000 (_e: CUresult, s: *mut *const c_char) {
        // SAFETY: the caller's out-pointer.
        unsafe { put(s, c"CUDA_ERROR_FAKE".as_ptr()) };
        CUDA_SUCCESS
    }
    cuGetErrorString PFN_cuGetErrorString_v6000 (_e: CUresult, s: *mut *const c_char) {
        // SAFETY: as above.
        unsafe { put(s, c"an error of the fake driver".as_ptr()) };
        CUDA_SUCCESS
    }
    cuDeviceGetCount PFN_cuDeviceGetCount_v2000 (n: *mut c_int) {
        // SAFETY: as above.
        unsafe { put(n, 1) };
        CUDA_SUCCESS
    }
    cuDeviceGet PFN_cuDeviceGet_v2000 (d: *mut CUdevice_v1, ordinal: c_int) {
        if ordinal != 0 {
            return CUDA_ERROR_INVALID_DEVICE;
        }
        // SAFETY: as above.
        unsafe { put(d, 0) };
        CUDA_SUCCESS
    }
    cuDeviceGetAttribute PFN_cuDeviceGetAttribute_v2000 (v: *mut c_int, a: CUdevice_attribute, _d: CUdevice_v1) {
        // SAFETY: as above.
        unsafe { put(v, attribute(a)) };
        CUDA_SUCCESS
    }
    cuDeviceGetName PFN_cuDeviceGetName_v2000 (name: *mut c_char, len: c_int, _d: CUdevice_v1) {
        let text = c"Fake GPU".to_bytes_with_nul();
        if !name.is_null() && len as usize >= text.len() {
            // SAFETY: `name` holds `len` bytes, by the caller's contract.
            unsafe { std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), name, text.len()) };
        }
        CUDA_SUCCESS
    }
    cuDevicePrimaryCtxRetain PFN_cuDevicePrimaryCtxRetain_v7000 (c: *mut CUcontext, d: CUdevice_v1) {
        // SAFETY: as above.
        unsafe { put(c, primary(d)) };
        CUDA_SUCCESS
    }
    cuDevicePrimaryCtxRelease PFN_cuDevicePrimaryCtxRelease_v11000 (_d: CUdevice_v1) { CUDA_SUCCESS }
    cuDevicePrimaryCtxGetState PFN_cuDevicePrimaryCtxGetState_v7000 (_d: CUdevice_v1, flags: *mut c_uint, active: *mut c_int) {
        // SAFETY: the caller's out-pointers. The primary context is always active.
        unsafe {
            put(flags, 0);
            put(active, 1);
        }
        CUDA_SUCCESS
    }
    cuCtxCreate PFN_cuCtxCreate_v12050 (c: *mut CUcontext, _p: *mut CUctxCreateParams, _flags: c_uint, _d: CUdevice) {
        // A new context, made current (pushed), as the driver's.
        let ctx = fresh();
        let prev = CURRENT.with(|cur| cur.replace(ctx));
        STACK.with(|s| s.borrow_mut().push(prev));
        // SAFETY: as above.
        unsafe { put(c, ctx as CUcontext) };
        CUDA_SUCCESS
    }
    cuCtxDestroy PFN_cuCtxDestroy_v4000 (c: CUcontext) {
        // A destroyed context is no longer current on this thread.
        CURRENT.with(|cur| {
            if cur.get() == c as usize {
                cur.set(STACK.with(|s| s.borrow_mut().pop()).unwrap_or(0));
            }
        });
        CUDA_SUCCESS
    }
    cuCtxGetCurrent PFN_cuCtxGetCurrent_v4000 (c: *mut CUcontext) {
        // SAFETY: as above.
        unsafe { put(c, CURRENT.with(Cell::get) as CUcontext) };
        CUDA_SUCCESS
    }
    cuCtxSetCurrent PFN_cuCtxSetCurrent_v4000 (c: CUcontext) {
        CURRENT.with(|cur| cur.set(c as usize));
        CUDA_SUCCESS
    }
    cuCtxPushCurrent PFN_cuCtxPushCurrent_v4000 (c: CUcontext) {
        let prev = CURRENT.with(|cur| cur.replace(c as usize));
        STACK.with(|s| s.borrow_mut().push(prev));
        CUDA_SUCCESS
    }
    cuCtxPopCurrent PFN_cuCtxPopCurrent_v4000 (c: *mut CUcontext) {
        let prev = STACK.with(|s| s.borrow_mut().pop()).unwrap_or(0);
        let popped = CURRENT.with(|cur| cur.replace(prev));
        // SAFETY: as above.
        unsafe { put(c, popped as CUcontext) };
        CUDA_SUCCESS
    }
    cuCtxGetDevice PFN_cuCtxGetDevice_v2000 (d: *mut CUdevice_v1) {
        if CURRENT.with(Cell::get) == 0 {
            return CUDA_ERROR_INVALID_CONTEXT;
        }
        // SAFETY: as above.
        unsafe { put(d, 0) };
        CUDA_SUCCESS
    }
    cuCtxSynchronize PFN_cuCtxSynchronize_v2000 () { CUDA_SUCCESS }
    cuStreamCreate PFN_cuStreamCreate_v2000 (s: *mut CUstream, _flags: c_uint) {
        // SAFETY: as above.
        unsafe { put(s, fresh() as CUstream) };
        CUDA_SUCCESS
    }
    cuStreamCreateWithPriority PFN_cuStreamCreateWithPriority_v5050 (s: *mut CUstream, _flags: c_uint, _p: c_int) {
        // SAFETY: as above.
        unsafe { put(s, fresh() as CUstream) };
        CUDA_SUCCESS
    }
    cuStreamDestroy PFN_cuStreamDestroy_v4000 (_s: CUstream) { CUDA_SUCCESS }
    cuStreamSynchronize PFN_cuStreamSynchronize_v2000 (_s: CUstream) { CUDA_SUCCESS }
    cuMemAddressReserve PFN_cuMemAddressReserve_v10020 (p: *mut CUdeviceptr_v2, _size: usize, _align: usize, _addr: CUdeviceptr_v2, _flags: c_ulonglong) {
        // SAFETY: as above.
        unsafe { put(p, fresh() as CUdeviceptr_v2) };
        CUDA_SUCCESS
    }
    cuMemAddressFree PFN_cuMemAddressFree_v10020 (_p: CUdeviceptr_v2, _size: usize) { CUDA_SUCCESS }
    cuMemCreate PFN_cuMemCreate_v10020 (h: *mut CUmemGenericAllocationHandle_v1, _size: usize, _prop: *const CUmemAllocationProp_v1, _flags: c_ulonglong) {
        // SAFETY: as above.
        unsafe { put(h, fresh() as CUmemGenericAllocationHandle_v1) };
        CUDA_SUCCESS
    }
    cuMemImportFromShareableHandle PFN_cuMemImportFromShareableHandle_v10020 (h: *mut CUmemGenericAllocationHandle_v1, _os: *mut c_void, _t: CUmemAllocationHandleType) {
        // SAFETY: as above.
        unsafe { put(h, fresh() as CUmemGenericAllocationHandle_v1) };
        CUDA_SUCCESS
    }
    cuMemRelease PFN_cuMemRelease_v10020 (_h: CUmemGenericAllocationHandle_v1) { CUDA_SUCCESS }
    cuMemMap PFN_cuMemMap_v10020 (_p: CUdeviceptr_v2, _size: usize, _off: usize, _h: CUmemGenericAllocationHandle_v1, _flags: c_ulonglong) { CUDA_SUCCESS }
    cuMemUnmap PFN_cuMemUnmap_v10020 (_p: CUdeviceptr_v2, _size: usize) { CUDA_SUCCESS }
    cuMemSetAccess PFN_cuMemSetAccess_v10020 (_p: CUdeviceptr_v2, _size: usize, _desc: *const CUmemAccessDesc_v1, _count: usize) { CUDA_SUCCESS }
    cuStreamQuery PFN_cuStreamQuery_v2000 (_s: CUstream) { CUDA_SUCCESS }
    cuStreamWaitEvent PFN_cuStreamWaitEvent_v3020 (_s: CUstream, _e: CUevent, _f: c_uint) {
        if let Some(rc) = no_context() {
            return rc;
        }
        CUDA_SUCCESS
    }
    cuStreamGetFlags PFN_cuStreamGetFlags_v5050 (_s: CUstream, f: *mut c_uint) {
        // SAFETY: as above.
        unsafe { put(f, 0) };
        CUDA_SUCCESS
    }
    cuStreamGetPriority PFN_cuStreamGetPriority_v5050 (_s: CUstream, p: *mut c_int) {
        // SAFETY: as above.
        unsafe { put(p, 0) };
        CUDA_SUCCESS
    }
    cuStreamIsCapturing PFN_cuStreamIsCapturing_v10000 (_s: CUstream, st: *mut CUstreamCaptureStatus) {
        // SAFETY: as above.
        unsafe { put(st, CU_STREAM_CAPTURE_STATUS_NONE) };
        CUDA_SUCCESS
    }
    cuStreamGetCaptureInfo PFN_cuStreamGetCaptureInfo_v12030 (
        _s: CUstream,
        st: *mut CUstreamCaptureStatus,
        id: *mut cuuint64_t,
        graph: *mut CUgraph,
        deps: *mut *const CUgraphNode,
        edges: *mut *const CUgraphEdgeData,
        n: *mut usize
    ) {
        // SAFETY: the caller's out-pointers, each null or valid for a write.
        unsafe {
            put(st, CU_STREAM_CAPTURE_STATUS_NONE);
            put(id, 0);
            put(graph, std::ptr::null_mut());
            put(deps, std::ptr::null());
            put(edges, std::ptr::null());
            put(n, 0);
        }
        CUDA_SUCCESS
    }
    cuGraphCreate PFN_cuGraphCreate_v10000 (g: *mut CUgraph, _flags: c_uint) {
        // SAFETY: as above.
        unsafe { put(g, fresh() as CUgraph) };
        CUDA_SUCCESS
    }
    cuGraphDestroy PFN_cuGraphDestroy_v10000 (_g: CUgraph) { CUDA_SUCCESS }
    cuStreamBeginCaptureToGraph PFN_cuStreamBeginCaptureToGraph_v12030 (
        _s: CUstream,
        _g: CUgraph,
        _deps: *const CUgraphNode,
        _edges: *const CUgraphEdgeData,
        _n: usize,
        _mode: CUstreamCaptureMode
    ) { CUDA_SUCCESS }
    cuStreamEndCapture PFN_cuStreamEndCapture_v10000 (_s: CUstream, g: *mut CUgraph) {
        // Nothing is captured: no graph comes back.
        // SAFETY: as above.
        unsafe { put(g, std::ptr::null_mut()) };
        CUDA_SUCCESS
    }
    cuEventCreate PFN_cuEventCreate_v2000 (e: *mut CUevent, _flags: c_uint) {
        // SAFETY: as above.
        unsafe { put(e, fresh() as CUevent) };
        CUDA_SUCCESS
    }
    cuEventDestroy PFN_cuEventDestroy_v4000 (_e: CUevent) { CUDA_SUCCESS }
    cuEventRecord PFN_cuEventRecord_v2000 (_e: CUevent, _s: CUstream) {
        if let Some(rc) = no_context() {
            return rc;
        }
        CUDA_SUCCESS
    }
    cuEventRecordWithFlags PFN_cuEventRecordWithFlags_v11010 (_e: CUevent, _s: CUstream, _f: c_uint) { CUDA_SUCCESS }
    cuEventQuery PFN_cuEventQuery_v2000 (_e: CUevent) { CUDA_SUCCESS }
    cuEventSynchronize PFN_cuEventSynchronize_v2000 (_e: CUevent) { CUDA_SUCCESS }
    cuDeviceGetDefaultMemPool PFN_cuDeviceGetDefaultMemPool_v11020 (p: *mut CUmemoryPool, d: CUdevice_v1) {
        // SAFETY: as above.
        unsafe { put(p, (0xB000_0000usize + d as usize * 0x10) as CUmemoryPool) };
        CUDA_SUCCESS
    }
    cuDeviceGetMemPool PFN_cuDeviceGetMemPool_v11020 (p: *mut CUmemoryPool, d: CUdevice_v1) {
        // SAFETY: as above.
        unsafe { put(p, (0xB000_0000usize + d as usize * 0x10) as CUmemoryPool) };
        CUDA_SUCCESS
    }
    cuMemPoolGetAttribute PFN_cuMemPoolGetAttribute_v11020 (_pool: CUmemoryPool, a: CUmemPool_attribute, v: *mut c_void) {
        // Every pool's release threshold is the one value kept (the fake has
        // one device); the other attributes read 0.
        let value = if a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD {
            RELEASE_THRESHOLD.load(Ordering::Relaxed)
        } else {
            0
        };
        let wide = matches!(
            a,
            CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
                | CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
                | CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
                | CU_MEMPOOL_ATTR_USED_MEM_CURRENT
                | CU_MEMPOOL_ATTR_USED_MEM_HIGH
        );
        if wide {
            // SAFETY: these attributes write a `cuuint64_t`, as the driver's.
            unsafe { put(v.cast::<u64>(), value) };
        } else {
            // SAFETY: the others write an `int`.
            unsafe { put(v.cast::<c_int>(), 0) };
        }
        CUDA_SUCCESS
    }
    cuMemPoolSetAttribute PFN_cuMemPoolSetAttribute_v11020 (_pool: CUmemoryPool, a: CUmemPool_attribute, v: *mut c_void) {
        if a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD && !v.is_null() {
            // SAFETY: the release threshold is a `cuuint64_t`, as the driver reads it.
            RELEASE_THRESHOLD.store(unsafe { v.cast::<u64>().read() }, Ordering::Relaxed);
        }
        CUDA_SUCCESS
    }
    cuMemAlloc PFN_cuMemAlloc_v3020 (p: *mut CUdeviceptr_v2, _n: usize) {
        // SAFETY: as above.
        unsafe { put(p, fresh() as CUdeviceptr_v2) };
        CUDA_SUCCESS
    }
    cuMemFree PFN_cuMemFree_v3020 (_p: CUdeviceptr_v2) { CUDA_SUCCESS }
    cuMemHostAlloc PFN_cuMemHostAlloc_v2020 (pp: *mut *mut c_void, n: usize, _flags: c_uint) {
        // Real host memory (page-aligned, as the driver's): the crate writes and
        // reads it, and the fake's downloads write it.
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: `p` is valid for writes; 4096 is a power of two and a
        // multiple of the pointer size.
        if unsafe { libc::posix_memalign(&mut p, 4096, n.max(1)) } != 0 {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        // SAFETY: as above.
        unsafe { put(pp, p) };
        CUDA_SUCCESS
    }
    cuMemFreeHost PFN_cuMemFreeHost_v2000 (p: *mut c_void) {
        // SAFETY: `p` came from `cuMemHostAlloc` above, freed once by the
        // caller's contract.
        unsafe { libc::free(p) };
        CUDA_SUCCESS
    }
    cuMemAllocAsync PFN_cuMemAllocAsync_v11020 (p: *mut CUdeviceptr_v2, _n: usize, _s: CUstream) {
        // SAFETY: as above.
        unsafe { put(p, fresh() as CUdeviceptr_v2) };
        CUDA_SUCCESS
    }
    cuMemAllocFromPoolAsync PFN_cuMemAllocFromPoolAsync_v11020 (p: *mut CUdeviceptr_v2, _n: usize, _pool: CUmemoryPool, _s: CUstream) {
        if let Some(rc) = no_context() {
            return rc;
        }
        // SAFETY: as above.
        unsafe { put(p, fresh() as CUdeviceptr_v2) };
        CUDA_SUCCESS
    }
    cuMemFreeAsync PFN_cuMemFreeAsync_v11020 (_p: CUdeviceptr_v2, _s: CUstream) {
        if let Some(rc) = no_context() {
            return rc;
        }
        CUDA_SUCCESS
    }
    cuMemcpyAsync PFN_cuMemcpyAsync_v4000 (_d: CUdeviceptr_v2, _s: CUdeviceptr_v2, _n: usize, _st: CUstream) {
        if let Some(rc) = no_context() {
            return rc;
        }
        CUDA_SUCCESS
    }
    cuMemcpyHtoDAsync PFN_cuMemcpyHtoDAsync_v3020 (_d: CUdeviceptr_v2, _h: *const c_void, _n: usize, _st: CUstream) { CUDA_SUCCESS }
    cuMemcpyDtoHAsync PFN_cuMemcpyDtoHAsync_v3020 (h: *mut c_void, _d: CUdeviceptr_v2, n: usize, _st: CUstream) {
        if !h.is_null() {
            // SAFETY: `h` holds `n` bytes, by the caller's contract.
            unsafe { std::ptr::write_bytes(h.cast::<u8>(), 0, n) };
        }
        CUDA_SUCCESS
    }
    cuMemsetD8Async PFN_cuMemsetD8Async_v3020 (_d: CUdeviceptr_v2, _v: u8, _n: usize, _st: CUstream) { CUDA_SUCCESS }
    cuMemsetD16Async PFN_cuMemsetD16Async_v3020 (_d: CUdeviceptr_v2, _v: u16, _n: usize, _st: CUstream) { CUDA_SUCCESS }
    cuMemsetD32Async PFN_cuMemsetD32Async_v3020 (_d: CUdeviceptr_v2, _v: c_uint, _n: usize, _st: CUstream) { CUDA_SUCCESS }
    cuLibraryLoadData PFN_cuLibraryLoadData_v12000 (
        lib: *mut CUlibrary,
        _code: *const c_void,
        _jo: *mut CUjit_option,
        _jv: *mut *mut c_void,
        _jn: c_uint,
        _lo: *mut CUlibraryOption,
        _lv: *mut *mut c_void,
        _ln: c_uint
    ) {
        // SAFETY: as above.
        unsafe { put(lib, fresh() as CUlibrary) };
        CUDA_SUCCESS
    }
    cuLibraryUnload PFN_cuLibraryUnload_v12000 (_l: CUlibrary) { CUDA_SUCCESS }
    cuLibraryGetKernel PFN_cuLibraryGetKernel_v12000 (k: *mut CUkernel, _l: CUlibrary, _name: *const c_char) {
        // SAFETY: as above.
        unsafe { put(k, fresh() as CUkernel) };
        CUDA_SUCCESS
    }
    cuKernelGetFunction PFN_cuKernelGetFunction_v12000 (f: *mut CUfunction, k: CUkernel) {
        // SAFETY: as above.
        unsafe { put(f, (k as usize + 1) as CUfunction) };
        CUDA_SUCCESS
    }
    cuKernelGetParamInfo PFN_cuKernelGetParamInfo_v12040 (_k: CUkernel, i: usize, off: *mut usize, size: *mut usize) {
        // The driver reads a library kernel's parameters in the current context
        // (on an H100 with driver 580, `CUDA_ERROR_INVALID_CONTEXT` without one).
        if let Some(rc) = no_context() {
            return rc;
        }
        // Every kernel is `(float*, int)`.
        let (o, s) = match i {
            0 => (0, 8),
            1 => (8, 4),
            _ => return CUDA_ERROR_INVALID_VALUE,
        };
        // SAFETY: as above.
        unsafe {
            put(off, o);
            put(size, s);
        }
        CUDA_SUCCESS
    }
    cuLaunchKernel PFN_cuLaunchKernel_v4000 (
        _f: CUfunction,
        _gx: c_uint,
        _gy: c_uint,
        _gz: c_uint,
        _bx: c_uint,
        _by: c_uint,
        _bz: c_uint,
        _shm: c_uint,
        _s: CUstream,
        _params: *mut *mut c_void,
        _extra: *mut *mut c_void
    ) {
        if let Some(rc) = no_context() {
            return rc;
        }
        CUDA_SUCCESS
    }
    cuDeviceGetDevResource PFN_cuDeviceGetDevResource_v12040 (_d: CUdevice_v1, r: *mut CUdevResource, t: CUdevResourceType) {
        // SAFETY: the caller's out-pointer.
        unsafe { device_resource(r, t) }
    }
    cuCtxGetDevResource PFN_cuCtxGetDevResource_v12040 (_c: CUcontext, r: *mut CUdevResource, t: CUdevResourceType) {
        // SAFETY: the caller's out-pointer.
        unsafe { device_resource(r, t) }
    }
    cuStreamGetDevResource PFN_cuStreamGetDevResource_v13010 (_s: CUstream, r: *mut CUdevResource, t: CUdevResourceType) {
        if t != CU_DEV_RESOURCE_TYPE_SM {
            return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        }
        // SAFETY: the caller's out-pointer.
        unsafe { device_resource(r, t) }
    }
    cuDevSmResourceSplit PFN_cuDevSmResourceSplit_v13010 (
        result: *mut CUdevResource,
        n: c_uint,
        input: *const CUdevResource,
        remainder: *mut CUdevResource,
        flags: c_uint,
        params: *mut CU_DEV_SM_RESOURCE_GROUP_PARAMS
    ) {
        if input.is_null() || params.is_null() || flags != 0 || n == 0 {
            return CUDA_ERROR_INVALID_VALUE;
        }
        // SAFETY: `input` is a resource and `params` holds `n` entries, by the
        // caller's contract.
        let (input, params) = unsafe { (&*input, std::slice::from_raw_parts(params, n as usize)) };
        // SAFETY: plain integers.
        let mut left = unsafe { input.__bindgen_anon_1.sm.smCount };
        let mut out = Vec::with_capacity(params.len());
        for p in params {
            let want = if p.smCount == 0 { left } else { p.smCount };
            if want == 0 || want > left {
                return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
            }
            left -= want;
            out.push(sm_resource(want, p.flags));
        }
        if !result.is_null() {
            for (i, g) in out.into_iter().enumerate() {
                // SAFETY: `result` holds `n` resources, by the caller's contract.
                unsafe { result.add(i).write(g) };
            }
        }
        let rest = if left == 0 { CUdevResource::default() } else { sm_resource(left, 0) };
        // SAFETY: the caller's out-pointer.
        unsafe { put(remainder, rest) };
        CUDA_SUCCESS
    }
    cuLaunchHostFunc PFN_cuLaunchHostFunc_v10000 (_s: CUstream, f: CUhostFn, data: *mut c_void) {
        // Queued work completes at once: the host function runs now, on a
        // thread of its own, as the driver's run on a driver thread.
        let Some(f) = f else {
            return CUDA_ERROR_INVALID_VALUE;
        };
        let data = data as usize;
        // SAFETY: the caller's host function, called once with its data, as
        // `cuLaunchHostFunc` promises.
        match std::thread::Builder::new().spawn(move || unsafe { f(data as *mut c_void) }) {
            Ok(_) => CUDA_SUCCESS,
            Err(_) => CUDA_ERROR_OUT_OF_MEMORY,
        }
    }
    cuLaunchKernelEx PFN_cuLaunchKernelEx_v11060 (_c: *const CUlaunchConfig, _f: CUfunction, _p: *mut *mut c_void, _e: *mut *mut c_void) {
        if let Some(rc) = no_context() {
            return rc;
        }
        CUDA_SUCCESS
    }
}

/// Starts every count again from zero.
pub fn reset() {
    for c in &COUNTS {
        c.store(0, Ordering::Relaxed);
    }
}

/// The calls each function received since the last [`reset`], as JSON members
/// (`"cuLaunchKernel":1`), those called only.
pub fn counts_json() -> String {
    NAMES
        .iter()
        .zip(&COUNTS)
        .filter_map(|(n, c)| {
            let v = c.load(Ordering::Relaxed);
            (v > 0).then(|| format!("\"{n}\":{v}"))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `cuGetProcAddress_v2` of the fake: its function for `symbol`, whatever the
/// version and flags, or `CUDA_ERROR_NOT_FOUND`.
///
/// # Safety
/// As the driver's: `symbol` NUL-terminated, `pfn` and `status` null or valid
/// for one write.
pub unsafe extern "C" fn get_proc_address(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    _version: c_int,
    _flags: u64,
    status: *mut crate::CUdriverProcAddressQueryResult,
) -> crate::CUresult {
    if symbol.is_null() {
        return crate::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: NUL-terminated, by the contract.
    let name = unsafe { std::ffi::CStr::from_ptr(symbol) }.to_bytes();
    let found = lookup(name);
    // SAFETY: the caller's out-pointers.
    unsafe {
        put(pfn, found.unwrap_or(std::ptr::null_mut()));
        put(
            status,
            if found.is_some() {
                crate::CU_GET_PROC_ADDRESS_SUCCESS
            } else {
                crate::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
            },
        );
    }
    if found.is_some() {
        crate::CUDA_SUCCESS
    } else {
        crate::CUDA_ERROR_NOT_FOUND
    }
}
