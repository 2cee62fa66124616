//! NVTX from Rust: your own names on the Nsight Systems timeline.
//!
//! Ranges ([`range`], [`push`]/[`pop`], [`start_range`]), marks ([`mark`]),
//! [domains](Domain) with their categories and [registered
//! strings](Domain::register_string), colours and payloads ([`Attributes`]), names
//! for OS threads and CUDA devices, contexts, streams and events
//! ([`name_cu_stream`] and friends; [`TimelineName`], which cudars-core implements
//! for its types), and, with the `tracing` feature, `NvtxLayer`, which turns every
//! `tracing` span into an NVTX range.
//!
//! ```
//! use cudars_nvtx::{Attributes, Color};
//!
//! let _step = cudars_nvtx::range("step");          // ends when dropped
//! cudars_nvtx::mark(Attributes::new("checkpoint").color(Color::RED).payload(3u32));
//! ```
//!
//! # No library, no cost
//!
//! NVTX v3 is header-only in C; this crate implements the same tool-loading
//! protocol in Rust and links nothing. On the first call in the process, the
//! library a profiler names in `NVTX_INJECTION64_PATH` (Nsight Systems sets it for
//! the programs it launches) is loaded and fills the function slots it
//! implements. Without it, every call is one atomic load and a branch: a range
//! costs a few nanoseconds, and Rust text is never copied. The benchmark
//! `nvtx_range_ns` measures it (`docs/performance.md`).
//!
//! # Why a crate of its own
//!
//! NVTX is useful without CUDA (CPU phases, I/O, a request's life) and needs only
//! a dynamic loader, so it sits *below* cudars-core: this crate depends on no other
//! crate of cuda-rs, any program can use it without the CUDA stack, and cudars-core
//! depends on it. That way round, cudars-core names what it makes itself (a graph
//! builder's private streams, the program cache's compiles, in the `cuda-rs`
//! domain) and implements [`TimelineName`] for its `Device`, `Context`, `Stream`
//! and `Event`, whose raw handles it owns; it re-exports this crate as
//! `cudars_core::cudars_nvtx`. (The other way, cudars-nvtx over cudars-core behind
//! a feature, would leave cudars-core unable to name its own objects.)
//!
//! # Threads
//!
//! Every function may be called from any thread. [`ScopedRange`] guards stay on
//! their thread (NVTX keeps one range stack per thread); a [`Range`] may end on
//! any thread.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attributes;
mod domain;
#[cfg(feature = "tracing")]
mod layer;
mod names;
mod range;
mod tool;

use std::ffi::{c_int, c_void};

pub use attributes::{Attributes, Color, Message, Payload, RegisteredString};
pub use domain::Domain;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use layer::NvtxLayer;
#[cfg(any(target_os = "linux", windows))]
pub use names::name_current_thread;
pub use names::{
    TimelineName, name_category, name_cu_context, name_cu_device, name_cu_event, name_cu_stream,
    name_os_thread,
};
pub use range::{Range, ScopedRange};

use attributes::RawAttributes;
use tool::{CORE_SLOTS, CORE2_SLOTS, core, core2};

/// The environment variable a profiler sets to the path of its NVTX library on
/// 64-bit targets (`NVTX_INJECTION32_PATH` on 32-bit ones).
pub const INJECTION_PATH_VAR: &str = tool::INJECTION_PATH_VAR;

type MarkEx = unsafe extern "C" fn(*const RawAttributes);
type RangeStartEx = unsafe extern "C" fn(*const RawAttributes) -> u64;
type RangeEnd = unsafe extern "C" fn(u64);
type RangePushEx = unsafe extern "C" fn(*const RawAttributes) -> c_int;
type RangePop = unsafe extern "C" fn() -> c_int;
type Initialize = unsafe extern "C" fn(*const c_void);

/// The function in a core slot, if the tool implements it.
macro_rules! core_fn {
    ($id:ident as $t:ty) => {{
        let f = tool::load(&CORE_SLOTS[core::$id]);
        if f.is_null() {
            None
        } else {
            // SAFETY: a non-null slot holds the tool's function for this callback
            // id, whose C signature `$t` is (NVIDIA's `nvtxTypes.h`).
            Some(unsafe { std::mem::transmute::<*mut c_void, $t>(f) })
        }
    }};
}

/// Runs the tool-loading protocol now rather than at the first event
/// (`nvtxInitialize`), so that its cost lands where the caller chooses.
pub fn initialize() {
    tool::initialize();
    let f = tool::load(&CORE2_SLOTS[core2::INITIALIZE]);
    if !f.is_null() {
        // SAFETY: the tool's `nvtxInitialize`, whose argument is reserved (null).
        let f = unsafe { std::mem::transmute::<*mut c_void, Initialize>(f) };
        // SAFETY: as above.
        unsafe { f(std::ptr::null()) }
    }
}

/// Whether a profiler's NVTX library is attached to this process (loads it first,
/// if nothing was loaded yet).
pub fn tool_attached() -> bool {
    tool::attached()
}

/// A point in time on the calling thread's row, in the default domain.
pub fn mark<'a>(attributes: impl Into<Attributes<'a>>) {
    if let Some(f) = core_fn!(MARK_EX as MarkEx) {
        let a = attributes.into();
        // SAFETY: the tool's `nvtxMarkEx` with attributes alive for the call.
        a.with_raw(std::ptr::null_mut(), |r| unsafe { f(r) });
    }
}

/// A range on the calling thread, in the default domain, from now until the guard
/// drops.
///
/// ```
/// fn solve() {
///     let _r = cudars_nvtx::range("solve");
///     // ...
/// }
/// ```
#[must_use = "the range ends when the guard drops"]
pub fn range<'a>(attributes: impl Into<Attributes<'a>>) -> ScopedRange<'static> {
    push(attributes);
    ScopedRange::new(None)
}

/// Pushes a range onto the calling thread's stack (default domain); returns its
/// depth, or `None` when no tool keeps a stack.
pub fn push<'a>(attributes: impl Into<Attributes<'a>>) -> Option<u32> {
    let f = core_fn!(RANGE_PUSH_EX as RangePushEx)?;
    let a = attributes.into();
    // SAFETY: the tool's `nvtxRangePushEx` with attributes alive for the call.
    let depth = a.with_raw(std::ptr::null_mut(), |r| unsafe { f(r) });
    u32::try_from(depth).ok()
}

/// Pops the calling thread's innermost range (default domain); returns the depth
/// it had, or `None` when no tool keeps a stack (or the stack was empty).
pub fn pop() -> Option<u32> {
    let f = core_fn!(RANGE_POP as RangePop)?;
    // SAFETY: the tool's `nvtxRangePop`.
    u32::try_from(unsafe { f() }).ok()
}

/// Starts a range in the default domain that any thread may end.
#[must_use = "the range ends when it drops"]
pub fn start_range<'a>(attributes: impl Into<Attributes<'a>>) -> Range<'static> {
    let id = match core_fn!(RANGE_START_EX as RangeStartEx) {
        Some(f) => {
            let a = attributes.into();
            // SAFETY: the tool's `nvtxRangeStartEx` with attributes alive for the call.
            a.with_raw(std::ptr::null_mut(), |r| unsafe { f(r) })
        }
        None => 0,
    };
    Range::new(id, None)
}

pub(crate) fn end_raw(id: u64) {
    if let Some(f) = core_fn!(RANGE_END as RangeEnd) {
        // SAFETY: the tool's `nvtxRangeEnd` with an id its start returned.
        unsafe { f(id) }
    }
}

#[cfg(test)]
mod tests {
    // Without `NVTX_INJECTION64_PATH` (the unit tests never set it), every call is a
    // no-op that reports no tool.
    #[test]
    fn without_a_tool_everything_is_a_no_op() {
        if std::env::var_os(super::INJECTION_PATH_VAR).is_some() {
            return; // Run under a profiler: not this test's situation.
        }
        assert!(!super::tool_attached());
        assert_eq!(super::push("a"), None);
        assert_eq!(super::pop(), None);
        let r = super::start_range("b");
        assert_eq!(r.id(), 0);
        r.end();
        let d = super::Domain::new("d");
        assert!(d.as_raw().is_null());
        let s = d.register_string("s\0tail");
        assert_eq!(s.text().to_bytes(), b"s");
        drop(d.range(&s));
        super::mark("c");
    }
}
