//! NVTX's tool-loading protocol: the client side of what NVIDIA's header-only
//! `nvToolsExt.h` compiles into every program.
//!
//! On the first NVTX call of the process, the library named by
//! `NVTX_INJECTION64_PATH` (`NVTX_INJECTION32_PATH` on 32-bit targets) is loaded
//! and its `InitializeInjectionNvtx2` is called with [`get_export_table`]. The tool
//! asks that for the callbacks table and calls `GetModuleFunctionTable` once per
//! module (core, CUDA, OpenCL, CUDA runtime, core2, sync); each answer is an array
//! of pointers to this process's function slots (index 0 and the last entry
//! null), and the tool writes its own functions into the slots it implements.
//! Slots it leaves alone are no-ops.
//!
//! Architecture Invariant: the tool writes into a *staging* table, never into the
//! live slots. Only after `InitializeInjectionNvtx2` has returned are the staged
//! pointers copied into the atomic slots the API reads, and only then is the state
//! published as complete. So no thread ever reads a slot while the tool writes it,
//! and a slot is one atomic load on the hot path: before initialisation every slot
//! holds [`UNINIT`], which sends the first caller (of any slot) here; afterwards a
//! slot holds null (no tool, or a call the tool does not implement) or the tool's
//! function. A tool that writes into its table after its initialisation returned
//! is not heard (NVIDIA's tools write only during it).

use std::ffi::{c_int, c_uint, c_void};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// The value of every slot before the tool-loading protocol ran.
pub(crate) const UNINIT: *mut c_void = ptr::dangling_mut::<u8>().cast::<c_void>();

/// Export table ids (`NvtxExportTableID`).
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;

/// The NVTX API version this implementation speaks (`NVTX_VERSION`).
pub(crate) const NVTX_VERSION: u32 = 3;

/// Callback modules (`NvtxCallbackModule`) and the slot count of each
/// (`NVTX_CBID_<MODULE>_SIZE`, the unused slot 0 included).
pub(crate) mod module {
    pub(crate) const CORE: usize = 1;
    pub(crate) const CUDA: usize = 2;
    pub(crate) const OPENCL: usize = 3;
    pub(crate) const CUDART: usize = 4;
    pub(crate) const CORE2: usize = 5;
    pub(crate) const SYNC: usize = 6;
    /// One past the last module.
    pub(crate) const COUNT: usize = 7;
    /// Slots per module, indexed by module (0: the invalid module).
    pub(crate) const SIZES: [usize; COUNT] = [0, 16, 9, 15, 7, 16, 7];
}

/// Callback ids of the core module (`NvtxCallbackIdCore`).
pub(crate) mod core {
    pub(crate) const MARK_EX: usize = 1;
    pub(crate) const RANGE_START_EX: usize = 4;
    pub(crate) const RANGE_END: usize = 7;
    pub(crate) const RANGE_PUSH_EX: usize = 8;
    pub(crate) const RANGE_POP: usize = 11;
    pub(crate) const NAME_CATEGORY_A: usize = 12;
    pub(crate) const NAME_OS_THREAD_A: usize = 14;
}

/// Callback ids of the core2 (domain) module (`NvtxCallbackIdCore2`).
pub(crate) mod core2 {
    pub(crate) const DOMAIN_MARK_EX: usize = 1;
    pub(crate) const DOMAIN_RANGE_START_EX: usize = 2;
    pub(crate) const DOMAIN_RANGE_END: usize = 3;
    pub(crate) const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub(crate) const DOMAIN_RANGE_POP: usize = 5;
    pub(crate) const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub(crate) const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub(crate) const DOMAIN_CREATE_A: usize = 12;
    pub(crate) const DOMAIN_DESTROY: usize = 14;
    pub(crate) const INITIALIZE: usize = 15;
}

/// Callback ids of the CUDA driver module (`NvtxCallbackIdCuda`).
pub(crate) mod cuda {
    pub(crate) const NAME_CU_DEVICE_A: usize = 1;
    pub(crate) const NAME_CU_CONTEXT_A: usize = 3;
    pub(crate) const NAME_CU_STREAM_A: usize = 5;
    pub(crate) const NAME_CU_EVENT_A: usize = 7;
}

const FRESH: u8 = 0;
const STARTED: u8 = 1;
const COMPLETE: u8 = 2;

/// Where the protocol stands (`FRESH`, `STARTED`, `COMPLETE`).
static STATE: AtomicU8 = AtomicU8::new(FRESH);
/// Whether a tool's initialisation succeeded (read after `COMPLETE`).
static ATTACHED: AtomicU8 = AtomicU8::new(0);

/// One module's live slots.
type ModuleSlots<const N: usize> = [AtomicPtr<c_void>; N];

#[allow(clippy::declare_interior_mutable_const)] // Each use is a fresh array, as intended.
const UNINIT_SLOT: AtomicPtr<c_void> = AtomicPtr::new(UNINIT);

/// The live slots the API reads, one array per module (sizes as in [`module::SIZES`]).
pub(crate) static CORE_SLOTS: ModuleSlots<16> = [UNINIT_SLOT; 16];
pub(crate) static CUDA_SLOTS: ModuleSlots<9> = [UNINIT_SLOT; 9];
static OPENCL_SLOTS: ModuleSlots<15> = [UNINIT_SLOT; 15];
static CUDART_SLOTS: ModuleSlots<7> = [UNINIT_SLOT; 7];
pub(crate) static CORE2_SLOTS: ModuleSlots<16> = [UNINIT_SLOT; 16];
static SYNC_SLOTS: ModuleSlots<7> = [UNINIT_SLOT; 7];

fn live(module: usize) -> &'static [AtomicPtr<c_void>] {
    match module {
        module::CORE => &CORE_SLOTS,
        module::CUDA => &CUDA_SLOTS,
        module::OPENCL => &OPENCL_SLOTS,
        module::CUDART => &CUDART_SLOTS,
        module::CORE2 => &CORE2_SLOTS,
        module::SYNC => &SYNC_SLOTS,
        _ => &[],
    }
}

/// The function in `slot`, loading the tool first if nothing was loaded yet; null
/// when no tool is attached or the tool does not implement it.
#[inline(always)]
pub(crate) fn load(slot: &AtomicPtr<c_void>) -> *mut c_void {
    let f = slot.load(Ordering::Acquire);
    if f != UNINIT {
        return f;
    }
    initialize();
    slot.load(Ordering::Acquire)
}

/// Whether a tool's initialisation succeeded (runs the protocol first if needed).
pub(crate) fn attached() -> bool {
    initialize();
    ATTACHED.load(Ordering::Acquire) != 0
}

/// Runs the tool-loading protocol once per process; other callers wait for it.
#[cold]
pub(crate) fn initialize() {
    if STATE.load(Ordering::Acquire) == COMPLETE {
        return;
    }
    if STATE
        .compare_exchange(FRESH, STARTED, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let staged = load_tool();
        ATTACHED.store(u8::from(staged.is_some()), Ordering::Release);
        for m in 1..module::COUNT {
            for (i, slot) in live(m).iter().enumerate() {
                let f = staged
                    .as_ref()
                    .and_then(|s| s.slots[m].get(i).copied())
                    .filter(|&f| f != UNINIT)
                    .unwrap_or(ptr::null_mut());
                slot.store(f, Ordering::Release);
            }
        }
        STATE.store(COMPLETE, Ordering::Release);
    } else {
        while STATE.load(Ordering::Acquire) != COMPLETE {
            std::thread::yield_now();
        }
    }
}

/// The staging table: what the tool wrote, per module; each module's array has
/// its slots then a null guard entry. Leaked once, so that a tool keeping the
/// table's address never sees it freed.
struct Staging {
    /// Per module: the slot values (index 0 unused).
    slots: [Vec<*mut c_void>; module::COUNT],
    /// Per module: pointers to each slot of `slots` (index 0 and the last null),
    /// what `GetModuleFunctionTable` hands out.
    tables: [Vec<*mut *mut c_void>; module::COUNT],
}

/// The one staging table of the process, set while the tool initialises.
static STAGING: AtomicPtr<Staging> = AtomicPtr::new(ptr::null_mut());

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: unsafe extern "C" fn(
        module: c_int,
        out_table: *mut *mut *mut *mut c_void,
        out_size: *mut c_uint,
    ) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(version: u32),
}

static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
    struct_size: size_of::<ExportTableCallbacks>(),
    get_module_function_table,
};

static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: size_of::<ExportTableVersionInfo>(),
    version: NVTX_VERSION,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `nvtxGetExportTable`: what the tool's `InitializeInjectionNvtx2` receives.
unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => ptr::from_ref(&CALLBACKS).cast(),
        ETID_VERSIONINFO => ptr::from_ref(&VERSION_INFO).cast(),
        _ => ptr::null(),
    }
}

/// `SetInjectionNvtxVersion`: reserved by NVIDIA; ignored, as in the C headers.
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

/// `GetModuleFunctionTable`: the staging table of `module` and its slot count
/// (the number of entries less the trailing null, as NVIDIA's headers count).
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    out_table: *mut *mut *mut *mut c_void,
    out_size: *mut c_uint,
) -> c_int {
    let staging = STAGING.load(Ordering::Acquire);
    let Ok(m) = usize::try_from(module) else {
        return 0;
    };
    if staging.is_null() || m == 0 || m >= module::COUNT {
        return 0;
    }
    // SAFETY: `staging` was leaked by `load_tool` and is never freed; the tool calls
    // this during its initialisation, on the thread running `load_tool`, which
    // touches the staging table only after the tool returns.
    let table = unsafe { &mut (*staging).tables[m] };
    if !out_size.is_null() {
        let n = c_uint::try_from(table.len() - 1).unwrap_or(0);
        // SAFETY: the tool passes a writable `unsigned int` or null (checked).
        unsafe { out_size.write(n) };
    }
    if !out_table.is_null() {
        // SAFETY: the tool passes a writable `NvtxFunctionTable` or null (checked).
        unsafe { out_table.write(table.as_mut_ptr()) };
    }
    1
}

/// `InitializeInjectionNvtx2`.
type InitializeInjection =
    unsafe extern "C" fn(get_export_table: unsafe extern "C" fn(u32) -> *const c_void) -> c_int;

/// The variable naming the injection library of this target's pointer width.
pub(crate) const INJECTION_PATH_VAR: &str = if size_of::<usize>() == 4 {
    "NVTX_INJECTION32_PATH"
} else {
    "NVTX_INJECTION64_PATH"
};

/// Loads the tool named by the environment and lets it fill a staging table;
/// `None` when no tool is named or it cannot be loaded or initialised (then every
/// call is a no-op, as with NVIDIA's headers).
fn load_tool() -> Option<&'static Staging> {
    let path = std::env::var_os(INJECTION_PATH_VAR).filter(|p| !p.is_empty())?;
    // SAFETY: loading runs the library's initialisers. The variable is how a
    // profiler asks a process to load its library, the protocol's one entry point;
    // NVIDIA's headers do the same `dlopen`.
    let lib = unsafe { libloading::Library::new(&path) }.ok()?;
    // SAFETY: `InitializeInjectionNvtx2` has this signature in every NVTX tool.
    let init = unsafe { lib.get::<InitializeInjection>(b"InitializeInjectionNvtx2\0") }.ok()?;
    let init: InitializeInjection = *init;

    let slots: [Vec<*mut c_void>; module::COUNT] =
        std::array::from_fn(|m| vec![UNINIT; module::SIZES[m]]);
    let staging: &'static mut Staging = Box::leak(Box::new(Staging {
        slots,
        tables: std::array::from_fn(|_| Vec::new()),
    }));
    for m in 1..module::COUNT {
        let base = staging.slots[m].as_mut_ptr();
        let mut table = Vec::with_capacity(module::SIZES[m] + 1);
        table.push(ptr::null_mut());
        for i in 1..module::SIZES[m] {
            // SAFETY: `i` is within the module's slot vector, which never reallocates.
            table.push(unsafe { base.add(i) });
        }
        table.push(ptr::null_mut());
        staging.tables[m] = table;
    }
    let staging_ptr: *mut Staging = staging;
    STAGING.store(staging_ptr, Ordering::Release);
    // SAFETY: the tool's entry point, called once with the export-table getter as
    // the protocol says; it may only write into the staging table.
    let ok = unsafe { init(get_export_table) } != 0;
    if !ok {
        // The tool declined; keep nothing it wrote and unload it, as the headers do.
        STAGING.store(ptr::null_mut(), Ordering::Release);
        drop(lib);
        return None;
    }
    // The tool's functions must outlive every call: the library is never unloaded.
    std::mem::forget(lib);
    // SAFETY: the tool has returned; nothing else writes the staging table now.
    Some(unsafe { &*staging_ptr })
}
