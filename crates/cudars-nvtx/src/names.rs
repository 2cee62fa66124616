//! Names on the timeline: categories, OS threads, and CUDA devices, contexts,
//! streams and events.

use std::ffi::{c_char, c_int, c_void};

use crate::attributes::with_c_str;
use crate::tool::{self, CORE_SLOTS, CUDA_SLOTS, core, cuda};

type NameU32A = unsafe extern "C" fn(u32, *const c_char);
type NameIntA = unsafe extern "C" fn(c_int, *const c_char);
type NamePtrA = unsafe extern "C" fn(*mut c_void, *const c_char);

/// Calls the tool's function in `slot` of type `$t` with `$arg` and `name`.
macro_rules! name_with {
    ($slot:expr, $t:ty, $arg:expr, $name:expr) => {{
        let f = tool::load($slot);
        if !f.is_null() {
            // SAFETY: a non-null slot holds the tool's function of this callback
            // id, whose C signature `$t` is (NVIDIA's `nvtxTypes.h`).
            let f = unsafe { std::mem::transmute::<*mut c_void, $t>(f) };
            // SAFETY: the tool's naming function with NUL-terminated text alive for
            // the call.
            with_c_str($name, |p| unsafe { f($arg, p) });
        }
    }};
}

/// Names category `id` of the default domain (0 is "no category"); see
/// [`Attributes::category`](crate::Attributes::category).
pub fn name_category(id: u32, name: &str) {
    name_with!(&CORE_SLOTS[core::NAME_CATEGORY_A], NameU32A, id, name);
}

/// Names the OS thread with kernel id `thread_id` (`gettid()` on Linux, the thread
/// id on Windows) on the timeline.
pub fn name_os_thread(thread_id: u32, name: &str) {
    name_with!(
        &CORE_SLOTS[core::NAME_OS_THREAD_A],
        NameU32A,
        thread_id,
        name
    );
}

/// Names the calling thread on the timeline (by its kernel thread id on Linux, its
/// thread id on Windows).
#[cfg(any(target_os = "linux", windows))]
pub fn name_current_thread(name: &str) {
    name_os_thread(current_thread_id(), name);
}

#[cfg(target_os = "linux")]
fn current_thread_id() -> u32 {
    // SAFETY: `gettid` has no preconditions and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    u32::try_from(tid).unwrap_or(0)
}

#[cfg(windows)]
fn current_thread_id() -> u32 {
    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetCurrentThreadId() -> u32;
    }
    // SAFETY: `GetCurrentThreadId` has no preconditions and cannot fail.
    unsafe { GetCurrentThreadId() }
}

/// Names CUDA device `ordinal` (a `CUdevice`) on the timeline.
pub fn name_cu_device(ordinal: i32, name: &str) {
    name_with!(&CUDA_SLOTS[cuda::NAME_CU_DEVICE_A], NameIntA, ordinal, name);
}

/// Names a CUDA context (`CUcontext`) on the timeline.
///
/// # Safety
///
/// `context` is a live context of the process's CUDA driver (the tool may look it
/// up in the driver).
pub unsafe fn name_cu_context(context: *mut c_void, name: &str) {
    name_with!(
        &CUDA_SLOTS[cuda::NAME_CU_CONTEXT_A],
        NamePtrA,
        context,
        name
    );
}

/// Names a CUDA stream (`CUstream`) on the timeline.
///
/// # Safety
///
/// `stream` is a live stream of the process's CUDA driver, or one of its special
/// handles (null, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`).
pub unsafe fn name_cu_stream(stream: *mut c_void, name: &str) {
    name_with!(&CUDA_SLOTS[cuda::NAME_CU_STREAM_A], NamePtrA, stream, name);
}

/// Names a CUDA event (`CUevent`) on the timeline.
///
/// # Safety
///
/// `event` is a live event of the process's CUDA driver.
pub unsafe fn name_cu_event(event: *mut c_void, name: &str) {
    name_with!(&CUDA_SLOTS[cuda::NAME_CU_EVENT_A], NamePtrA, event, name);
}

/// An object that can be named on the Nsight timeline: cudars-core implements it
/// for its `Device`, `Context`, `Stream` and `Event`.
///
/// ```no_run
/// use cudars_nvtx::TimelineName as _;
/// # fn f(stream: &cudars_core::Stream) {
/// stream.name_on_timeline("uploads");
/// # }
/// ```
pub trait TimelineName {
    /// Gives the object this name on the timeline (nothing without a tool).
    fn name_on_timeline(&self, name: &str);
}
