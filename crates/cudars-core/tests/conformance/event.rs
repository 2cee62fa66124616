//! `cuda_core/tests/test_event.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `stream.record(options=o)` is `record_new_event(o)`; `EventOptions(timing_enabled,
//! blocking_sync, ipc_enabled)` is `EventOptions { timing, blocking_sync, ipc }` and
//! the `is_*` properties its fields (`options()`); `e2 - e1` (milliseconds) is
//! `e2.elapsed_since(&e1)` (a `Duration`). Python's `RuntimeError`s are: timing off,
//! `Error::Unsupported`; an event never recorded, the driver's
//! `CUDA_ERROR_INVALID_HANDLE`; one not completed, `CUDA_ERROR_NOT_READY`.
//! `Event` compares and hashes its handle, as `cuda.core`'s does. The IPC event
//! descriptor is the 64 bytes of `Event::ipc_handle` (a `[u8; 64]`: a truncated one
//! does not compile). The helpers `LatchKernel` and `NanosleepKernel` are [`Latch`]
//! and [`nanosleep`] (the latch reads its flag as a `volatile int` in pinned host
//! memory, where Python's uses libcu++'s `cuda::atomic_ref`). Every test but
//! `test_ipc_event_descriptor_eq_same_value` needs a GPU.

// Keys hash the driver handle, which never changes (the interior mutability
// clippy sees is elsewhere).
#![allow(clippy::mutable_key_type)]

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    Buffer, CompileTarget, Device, Error, Event, EventOptions, LaunchConfig,
    LegacyPinnedMemoryResource, Program, ProgramOptions, SourceCode, Stream, StreamOptions,
    TypedKernel,
};

fn hash(e: &Event) -> u64 {
    let mut h = DefaultHasher::new();
    e.hash(&mut h);
    h.finish()
}

fn timing(timing: bool) -> EventOptions {
    EventOptions {
        timing,
        ..EventOptions::default()
    }
}

fn compile(d: &Device, src: &str, name: &str) -> cudars_core::Kernel {
    let mut options = ProgramOptions::for_device(d).unwrap();
    options.std = Some("c++17".into());
    Program::new(SourceCode::Cxx(src), options)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
        .get_kernel(name)
        .unwrap()
}

/// `helpers.latch.LatchKernel`: a kernel that holds its stream until
/// [`release`](Self::release) (or 60 s of SM clock).
pub(crate) struct Latch {
    kernel: TypedKernel<(u64, u64)>,
    flag: Buffer,
    timeout_cycles: u64,
}

const LATCH_SRC: &str = r#"
extern "C"
__global__ void latch(volatile int* val, unsigned long long timeout_cycles) {
    // Start time
    unsigned long long start = clock64();

    while (true) {
        // Check if signal is set
        if (*val) {
            break;
        }

        // Check for timeout
        if (clock64() - start >= timeout_cycles) {
            break;  // Timeout reached
        }

        // Avoid 100% spin.
        __nanosleep(1000000); // 1 ms
    }
}
"#;

impl Latch {
    pub(crate) fn new(device: &Device) -> Self {
        Self::with_timeout(device, 60)
    }

    /// `LatchKernel(device, timeout_sec=…)`.
    pub(crate) fn with_timeout(device: &Device, timeout_sec: u64) -> Self {
        let kernel = TypedKernel::new(compile(device, LATCH_SRC, "latch")).unwrap();
        let flag = Arc::new(LegacyPinnedMemoryResource::new(device))
            .allocate(4, None)
            .unwrap();
        let latch = Self {
            kernel,
            flag,
            timeout_cycles: timeout_sec
                * u64::from(device.properties().clock_rate().unwrap())
                * 1000,
        };
        latch.set(0);
        latch
    }

    fn set(&self, v: i32) {
        // SAFETY: four bytes of page-locked host memory this latch owns (its
        // device address is its host address: unified addressing); the kernel
        // only reads them.
        unsafe { std::ptr::write_volatile(self.flag.ptr() as *mut i32, v) };
    }

    /// Launches the latch on `stream`: what follows on it waits.
    pub(crate) fn launch(&self, stream: &Stream) {
        // SAFETY: the kernel reads the flag, which lives as long as `self`; the
        // test releases the latch (or it times out) before `self` is dropped.
        unsafe {
            self.kernel.launch(
                stream,
                &LaunchConfig::new(1u32, 1u32),
                (self.flag.ptr(), self.timeout_cycles),
            )
        }
        .unwrap();
    }

    /// Lets the latch kernel finish.
    pub(crate) fn release(&self) {
        self.set(1);
    }
}

/// `helpers.nanosleep_kernel.NanosleepKernel(device, sleep_duration_ms)` launched
/// once on `stream`.
fn nanosleep(device: &Device, stream: &Stream, sleep_duration_ms: u32) {
    let src = format!(
        r#"
        extern "C"
        __global__ void nanosleep_kernel() {{
            // The maximum sleep duration is approximately 1 millisecond.
            unsigned int one_ms = 1000000U;
            for (unsigned int i = 0; i < {sleep_duration_ms}; ++i) {{
                __nanosleep(one_ms);
            }}
        }}
        "#
    );
    let k = TypedKernel::<()>::new(compile(device, &src, "nanosleep_kernel")).unwrap();
    // SAFETY: the kernel touches no memory.
    unsafe { k.launch(stream, &LaunchConfig::new(1u32, 1u32), ()) }.unwrap();
}

fn dev() -> Device {
    let d = Device::current().unwrap();
    d.set_current().unwrap();
    d
}

fn new_stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

#[test]
fn test_timing_success() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let device = dev();
    let stream = new_stream(&device);
    let e1 = stream.record_new_event(timing(true)).unwrap();
    nanosleep(&device, &stream, 20);
    let e2 = stream.record_new_event(timing(true)).unwrap();
    e2.sync().unwrap();
    let elapsed_time_ms = e2.elapsed_since(&e1).unwrap().as_secs_f64() * 1e3;
    assert!(elapsed_time_ms.is_finite());
    assert!(elapsed_time_ms > 10.0, "{elapsed_time_ms} ms");
}

#[test]
fn test_is_blocking_sync() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream
        .record_new_event(EventOptions {
            timing: false,
            blocking_sync: true,
            ipc: false,
        })
        .unwrap();
    assert!(event.options().blocking_sync);

    let stream = new_stream(&dev());
    let event = stream.record_new_event(timing(false)).unwrap();
    assert!(!event.options().blocking_sync);
}

#[test]
fn test_sync() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream.record_new_event(timing(false)).unwrap();
    event.sync().unwrap();
    assert!(event.is_done().unwrap());
}

#[test]
fn test_is_done() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream.record_new_event(timing(false)).unwrap();
    // Either answer; never an error.
    event.is_done().unwrap();
}

#[test]
fn test_error_timing_disabled() {
    cudars_tests::require_gpu!();
    let device = dev();
    let stream = new_stream(&device);
    let event1 = stream.record_new_event(timing(true)).unwrap();
    let event2 = stream.record_new_event(timing(false)).unwrap();
    assert!(event1.options().timing);
    assert!(!event2.options().timing);
    stream.sync().unwrap();
    let r = event2.elapsed_since(&event1);
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");

    let event1 = stream.record_new_event(timing(false)).unwrap();
    let event2 = stream.record_new_event(timing(false)).unwrap();
    stream.sync().unwrap();
    let r = event2.elapsed_since(&event1);
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
}

#[test]
fn test_error_timing_recorded() {
    cudars_tests::require_gpu!();
    let device = dev();
    let stream = new_stream(&device);
    let event1 = stream.record_new_event(timing(true)).unwrap();
    let event2 = device.create_event(timing(true)).unwrap();
    let event3 = device.create_event(timing(true)).unwrap();
    stream.sync().unwrap();
    // "Both Events must be recorded": the driver's CUDA_ERROR_INVALID_HANDLE.
    let not_recorded = |r: cudars_core::Result<std::time::Duration>| {
        assert_eq!(
            r.as_ref().err().and_then(Error::driver_code),
            Some(sys::CUDA_ERROR_INVALID_HANDLE),
            "{r:?}"
        );
    };
    not_recorded(event2.elapsed_since(&event1));
    not_recorded(event1.elapsed_since(&event2));
    not_recorded(event3.elapsed_since(&event2));
}

#[test]
fn test_error_timing_incomplete() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let device = dev();
    let latch = Latch::new(&device);
    let stream = new_stream(&device);
    let event1 = stream.record_new_event(timing(true)).unwrap();
    latch.launch(&stream);
    let event3 = stream.record_new_event(timing(true)).unwrap();
    // event3 cannot complete while the latch holds the stream.
    let r = event3.elapsed_since(&event1);
    latch.release();
    assert_eq!(
        r.as_ref().err().and_then(Error::driver_code),
        Some(sys::CUDA_ERROR_NOT_READY),
        "{r:?}"
    );
    event3.sync().unwrap();
    event3.elapsed_since(&event1).unwrap();
}

#[test]
fn test_event_device() {
    cudars_tests::require_gpu!();
    let device = dev();
    let event = device.create_event(EventOptions::default()).unwrap();
    assert_eq!(*event.device(), device);
}

#[test]
fn test_event_context() {
    cudars_tests::require_gpu!();
    let event = dev().create_event(EventOptions::default()).unwrap();
    assert!(!event.context().handle().is_null());
}

#[test]
fn test_event_creation() {
    cudars_tests::require_gpu!();
    let event = dev().create_event(EventOptions::default()).unwrap();
    assert!(!event.handle().is_null());
}

#[test]
#[allow(clippy::eq_op)]
fn test_event_equality_reflexive() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream.record_new_event(EventOptions::default()).unwrap();
    assert!(event == event, "Event should equal itself");
}

#[test]
fn test_event_inequality_different_events() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let e1 = stream.record_new_event(EventOptions::default()).unwrap();
    let e2 = stream.record_new_event(EventOptions::default()).unwrap();
    assert!(e1 != e2, "Different events should not be equal");
}

/// Python's `RuntimeError` "not IPC-enabled": `Error::Unsupported`.
#[test]
#[cfg(unix)]
fn test_event_ipc_descriptor_non_ipc() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream.record_new_event(EventOptions::default()).unwrap();
    let r = event.ipc_handle();
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
}

#[test]
fn test_event_is_done_false() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let device = dev();
    let latch = Latch::new(&device);
    let stream = new_stream(&device);
    latch.launch(&stream);
    let event = stream.record_new_event(EventOptions::default()).unwrap();
    let done = event.is_done();
    latch.release();
    assert!(!done.unwrap());
    event.sync().unwrap();
}

/// The descriptor is the 64 bytes `ipc_handle` returns: equal when the bytes are
/// (Python's `_is_blocking_sync` is no part of its equality, and no part of it here).
#[test]
fn test_ipc_event_descriptor_eq_same_value() {
    let a: [u8; 64] = [1; 64];
    let b: [u8; 64] = [1; 64];
    let c: [u8; 64] = [2; 64];
    assert_eq!(a, a);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn test_event_hash_consistency() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream.record_new_event(EventOptions::default()).unwrap();
    assert_eq!(hash(&event), hash(&event));
}

#[test]
#[allow(clippy::eq_op)]
fn test_event_hash_equality() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let e1 = stream.record_new_event(EventOptions::default()).unwrap();
    let e2 = stream.record_new_event(EventOptions::default()).unwrap();
    assert!(e1 != e2);
    assert_ne!(hash(&e1), hash(&e2));
    assert!(e1 == e1);
    assert_eq!(hash(&e1), hash(&e1));
}

#[test]
fn test_event_dict_key() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let e1 = stream.record_new_event(EventOptions::default()).unwrap();
    let e2 = stream.record_new_event(EventOptions::default()).unwrap();
    let event_cache = HashMap::from([(&e1, "timing1"), (&e2, "timing2")]);
    assert_eq!(event_cache.len(), 2);
    assert_eq!(event_cache[&e1], "timing1");
    assert_eq!(event_cache[&e2], "timing2");
}

#[test]
fn test_event_set_membership() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let e1 = stream.record_new_event(EventOptions::default()).unwrap();
    let e2 = stream.record_new_event(EventOptions::default()).unwrap();
    let mut event_set = HashSet::from([&e1, &e2]);
    assert_eq!(event_set.len(), 2);
    event_set.insert(&e1);
    assert_eq!(event_set.len(), 2);
}
