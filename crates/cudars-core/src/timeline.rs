//! Names on the Nsight timeline: [`TimelineName`] for the ground floor's objects,
//! and the names this crate gives what it makes for itself.
//!
//! NVTX costs a load and a branch per call when no profiler is attached
//! (`cudars-nvtx`); the names this crate builds (`format!`) are built only when one
//! is.

use cudars_nvtx::TimelineName;

use crate::context::Context;
use crate::device::Device;
use crate::event::Event;
use crate::stream::Stream;

impl TimelineName for Device {
    fn name_on_timeline(&self, name: &str) {
        cudars_nvtx::name_cu_device(self.handle(), name);
    }
}

impl TimelineName for Context {
    fn name_on_timeline(&self, name: &str) {
        // SAFETY: `self` owns (or, adopted, borrows for as long as it lives) a live
        // context (soundness contract, rule 1).
        unsafe { cudars_nvtx::name_cu_context(self.handle().cast(), name) }
    }
}

impl TimelineName for Stream {
    fn name_on_timeline(&self, name: &str) {
        // SAFETY: `self` holds a live stream, or one of the driver's special
        // handles, while it lives (rule 1).
        unsafe { cudars_nvtx::name_cu_stream(self.handle().cast(), name) }
    }
}

impl TimelineName for Event {
    fn name_on_timeline(&self, name: &str) {
        // SAFETY: `self` holds a live event while it lives (rule 1).
        unsafe { cudars_nvtx::name_cu_event(self.handle().cast(), name) }
    }
}

/// Names a stream this crate made for itself, the name built only when a
/// profiler is attached.
pub(crate) fn name_own_stream(stream: &Stream, name: impl FnOnce() -> String) {
    if cudars_nvtx::tool_attached() {
        stream.name_on_timeline(&name());
    }
}
