//! A stream's capture state: [`CaptureMode`], [`CaptureStatus`] and what the
//! driver says of a stream's capture. Above `stream` (it adds the queries to
//! [`Stream`]); read by host functions, buffers' frees and `graph/` (which starts
//! and ends captures).

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Result};
use crate::stream::Stream;

/// Which calls that are unsafe during a stream capture (a synchronous
/// allocation, a synchronisation, a query of another stream, …) CUDA refuses while
/// the capture runs (`CUstreamCaptureMode`).
///
/// **The default is [`Relaxed`](Self::Relaxed), as for `cuda.core`'s
/// `GraphBuilder.begin_building()`**, so that a port behaves as its Python
/// original. CUDA's C examples usually capture with `Global`, which also catches
/// mistakes: a capture in `Global` mode fails (and is invalidated) when any thread
/// makes such a call, one in `Relaxed` mode lets them through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CaptureMode {
    /// Such calls from any thread are errors while capturing
    /// (`CU_STREAM_CAPTURE_MODE_GLOBAL`).
    Global,
    /// Only this thread's such calls are errors
    /// (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    ThreadLocal,
    /// No calls are restricted (`CU_STREAM_CAPTURE_MODE_RELAXED`); the default,
    /// as in `cuda.core`.
    #[default]
    Relaxed,
}

impl CaptureMode {
    /// The driver's value.
    pub(crate) fn raw(self) -> sys::CUstreamCaptureMode {
        match self {
            CaptureMode::Global => sys::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => sys::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => sys::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// Whether a stream is capturing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing.
    Active,
    /// Capturing, but an error invalidated the capture.
    Invalidated,
}

impl CaptureStatus {
    /// From the driver's value.
    fn from_raw(s: sys::CUstreamCaptureStatus) -> Self {
        if s == sys::CU_STREAM_CAPTURE_STATUS_ACTIVE {
            CaptureStatus::Active
        } else if s == sys::CU_STREAM_CAPTURE_STATUS_INVALIDATED {
            CaptureStatus::Invalidated
        } else {
            CaptureStatus::None
        }
    }
}

/// What [`Stream::capture_info`] reads of a stream's capture.
pub(crate) struct CaptureInfo {
    /// Whether, and how, the stream is capturing.
    pub(crate) status: CaptureStatus,
    /// The graph being captured into (null when not capturing).
    pub(crate) graph: sys::CUgraph,
    /// The nodes the stream's next captured work will depend on.
    pub(crate) deps: Vec<sys::CUgraphNode>,
}

impl Stream {
    /// Whether the stream is capturing.
    ///
    /// # Errors
    /// The driver's error.
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        // Green rule: every call on a green context's stream holds its lock.
        let _green = self.context().green_guard()?;
        let mut s = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: `s` is valid for writes; a live stream.
        unsafe { sys::cuStreamIsCapturing(self.handle(), &mut s) }
            .check(|| "asking a stream's capture status")?;
        Ok(CaptureStatus::from_raw(s))
    }

    /// Runs `queue` while no capture of this stream can begin or end, if the
    /// stream is not capturing; refuses with [`Error::InvalidArgument`]
    /// (`what`, `why`) otherwise. The capture-gate rule (rule 12 of the
    /// soundness contract, `docs/architecture.md`): the status is read with the
    /// stream's capture gate held shared, and the gate stays held until
    /// `queue` returns, so the work `queue` queues (a copy into host memory, an
    /// event record) is queued outside any capture, exactly as the check found.
    /// Every check of "not capturing" that is followed by queuing goes through
    /// here, [`launch_host_func`](Self::launch_host_func) or
    /// [`Completion`](crate::Completion)'s record, which hold the same gate.
    ///
    /// `queue` must not take this stream's gate again: not through
    /// [`wait_event`](Self::wait_event) or [`wait_stream`](Self::wait_stream)
    /// of this stream (which take it exclusively: a deadlock), nor through
    /// `launch_host_func` or a [`Completion`](crate::Completion) of it (a
    /// second shared hold waits behind a waiting writer: a deadlock too). Waits
    /// for events that were recorded outside a capture go through
    /// [`wait_event_uncaptured`](Self::wait_event_uncaptured).
    ///
    /// [`Error::InvalidArgument`]: crate::Error::InvalidArgument
    pub(crate) fn while_not_capturing<R>(
        &self,
        what: &'static str,
        why: &'static str,
        queue: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let _gate = self.capture_gate_shared();
        if self.capture_status()? != CaptureStatus::None {
            return Err(crate::error::Error::invalid(what, why));
        }
        hooks::after_capture_check(self);
        queue()
    }

    /// The stream's capture: its status, the graph being captured into and the
    /// nodes that the next captured work will depend on
    /// (`cuStreamGetCaptureInfo`, the CUDA 12.3 shape where the driver has it).
    pub(crate) fn capture_info(&self) -> Result<CaptureInfo> {
        const WHAT: &str = "reading a stream's capture";
        let _current = self.context().ensure_current()?;
        let mut status = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let mut deps: *const sys::CUgraphNode = std::ptr::null();
        let mut n = 0usize;
        let rc = if crate::versions::driver_at_least(12030) {
            // SAFETY: every output is valid for writes (edge data is optional); a
            // live stream.
            unsafe {
                sys::cuStreamGetCaptureInfo(
                    self.handle(),
                    &mut status,
                    std::ptr::null_mut(),
                    &mut graph,
                    &mut deps,
                    std::ptr::null_mut(),
                    &mut n,
                )
            }
        } else {
            // SAFETY: as above, the shape of drivers before CUDA 12.3.
            unsafe {
                sys::cuda12::cuStreamGetCaptureInfo(
                    self.handle(),
                    &mut status,
                    std::ptr::null_mut(),
                    &mut graph,
                    &mut deps,
                    &mut n,
                )
            }
        };
        rc.check(|| WHAT)?;
        let deps = if deps.is_null() || n == 0 {
            Vec::new()
        } else {
            // SAFETY: the driver's array of `n` nodes, valid until the next call
            // on the stream; copied at once.
            unsafe { std::slice::from_raw_parts(deps, n) }.to_vec()
        };
        Ok(CaptureInfo {
            status: CaptureStatus::from_raw(status),
            graph,
            deps,
        })
    }
}

/// Test hooks: code the tests run inside the crate's critical windows, to widen
/// them where a race would otherwise take luck to see. Not part of the API.
#[doc(hidden)]
pub mod hooks {
    use std::sync::RwLock;

    use crate::stream::Stream;

    /// What runs between a capture check and the queuing it guards.
    type Hook = Box<dyn Fn(&Stream) + Send + Sync>;

    static AFTER_CAPTURE_CHECK: RwLock<Option<Hook>> = RwLock::new(None);
    /// Whether a hook is set: one relaxed load when none is.
    static SET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Sets (or, with `None`, clears) a function that runs right after a
    /// stream's capture status is found clear and before the work the check
    /// guards is queued (`Stream::while_not_capturing`), on the thread that
    /// queues, with the capture gate held. For the tests of the capture-gate
    /// rule; the hook must not queue work on the stream it is given.
    #[doc(hidden)]
    pub fn set_after_capture_check(hook: Option<Hook>) {
        let mut g = AFTER_CAPTURE_CHECK
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        SET.store(hook.is_some(), std::sync::atomic::Ordering::Release);
        *g = hook;
    }

    /// Runs the hook, if one is set.
    #[inline]
    pub(crate) fn after_capture_check(stream: &Stream) {
        if SET.load(std::sync::atomic::Ordering::Relaxed) {
            run(stream);
        }
    }

    #[cold]
    fn run(stream: &Stream) {
        let g = AFTER_CAPTURE_CHECK
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = g.as_ref() {
            h(stream);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The capture-gate rule, as a table the test holds the sources to: every
    /// read of a stream's capture status in the workspace's library sources,
    /// by file, with why the window between the read and what it guards is
    /// closed. A new reader fails this test until it goes through
    /// `Stream::while_not_capturing` (or holds the gate otherwise) and its row
    /// says so.
    const READERS: &[(&str, usize, &str)] = &[
        (
            "cudars-core/src/stream_capture.rs",
            1,
            "`while_not_capturing`: the gate is held from the read to the end of the queuing",
        ),
        (
            "cudars-core/src/callback.rs",
            3,
            "`launch_host_func`, `launch_host_func_ordered`, `launch_host_func_repeatable_into`: \
             the gate is held from the read to the queuing",
        ),
        (
            "cudars-core/src/memory/buffer.rs",
            1,
            "`order_frees_slow_with` (not the `_uncaptured` path, which holds the gate): skips \
             ordering the free after a use queued on a capturing stream; the use was queued by \
             this thread just before the read, and `begin_capture`'s contract forbids another \
             thread to queue work on the stream while its capture begins, so the status read \
             is the one the use was queued under",
        ),
        (
            "cudars-core/src/graph/capture.rs",
            2,
            "`GraphCapture`'s end: the capture's last nodes, and after a failed end whether \
             the stream still captures, read with the gate held exclusively; nothing is \
             queued after either read",
        ),
        (
            "cudars-core/src/graph/builder.rs",
            3,
            "`is_building` queues nothing; `check_building` and `capturing`: the builder's own \
             stream, whose capture only its `&mut self` methods begin and end",
        ),
    ];

    #[test]
    #[cfg_attr(
        miri,
        ignore = "reads every source file of the workspace, which Miri interprets far too slowly"
    )]
    fn every_capture_status_read_is_in_the_table() {
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."))
            .to_path_buf();
        let patterns = [
            concat!(".capture_", "status()"),
            concat!(".capture_", "info()"),
        ];
        let mut found: Vec<(String, usize)> = Vec::new();
        let mut dirs = vec![crates.clone()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let rel = path
                    .strip_prefix(&crates)
                    .map(|p| p.to_string_lossy().into_owned());
                let Ok(rel) = rel else { continue };
                if path.is_dir() {
                    // Library sources only: not tests, benches or examples.
                    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    if !matches!(name, "tests" | "benches" | "examples" | "target") {
                        dirs.push(path);
                    }
                    continue;
                }
                if !rel.ends_with(".rs") || !rel.contains("/src/") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                // The sources' own unit tests are not library code.
                let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
                let n: usize = code
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .map(|l| patterns.iter().map(|p| l.matches(p).count()).sum::<usize>())
                    .sum();
                if n > 0 {
                    found.push((rel.replace('\\', "/"), n));
                }
            }
        }
        found.sort();
        let mut want: Vec<(String, usize)> = READERS
            .iter()
            .map(|(f, n, _)| ((*f).to_owned(), *n))
            .collect();
        want.sort();
        assert_eq!(
            found, want,
            "a read of a stream's capture status is not in the capture-gate table \
             (stream_capture.rs): go through `Stream::while_not_capturing`, or add a row \
             that says why the window is closed"
        );
    }
}
