//! [`PinnedBuffer<T>`]: typed page-locked host memory whose copies to and from the
//! device are truly asynchronous.
//!
//! Architecture Invariant: the host never touches pinned memory that a copy in
//! flight reads or writes. Each asynchronous copy records an event on its stream
//! (one per stream and direction, re-recorded for later copies, since a stream runs
//! in order) and keeps it in the buffer; host access ([`PinnedBuffer::as_slice`],
//! [`PinnedBuffer::as_mut_slice`]) and `Drop` wait for the events that conflict
//! first. Copies that conflict with each other are ordered on the device
//! (`cuStreamWaitEvent`), never by waiting on the host. Forgetting a guard cannot
//! break this: there is no guard, the state lives in the buffer.
//!
//! Device views ([`PinnedBuffer::view`], [`PinnedBuffer::view_mut`]), which
//! kernels and every other device operation take, are ordered at the one place
//! every such use starts from, the lending: `view` waits for the copies in
//! flight that write the memory, `view_mut` for every copy in flight, so no use
//! of a view, on any stream and through any operation (a copy, a batch, a
//! launch, a library call), overtakes a conflicting copy. After the lending they
//! are tracked the way a byte [`Buffer`]'s are: each use orders the inner
//! buffer's free stream after itself (rule 2 of the soundness contract). Lending
//! a view sets a flag in the buffer (not in the view, which `mem::forget` could
//! skip); while it is set, host access waits for the free stream, and copies and
//! host functions are ordered after it.
//!
//! The capture-gate rule: a copy or a host function checks that its stream is
//! not capturing, orders itself after the copies in flight, queues, and records
//! its event, all under the stream's capture gate
//! ([`Stream::while_not_capturing`]), so no capture of the stream begins in
//! between and takes the copy, or its event, into a graph.

use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::memory::buffer::NonZeroSize;
use crate::memory::view::{DeviceView, DeviceViewMut};
use crate::stream::QueueId;
use crate::{
    device::Device, event::Event, event::EventOptions, memory::buffer::Buffer,
    memory::pinned::LegacyPinnedMemoryResource, stream::Stream,
};

/// An array of `len` elements of type `T` in page-locked host memory
/// (`cuMemHostAlloc`, usable from every context). Copies between it and device
/// views ([`DeviceViewMut::copy_from_pinned`], [`DeviceView::copy_to_pinned`]) are
/// queued without waiting, so they overlap kernels and copies on other streams;
/// reading it on the host waits only for copies that write it, and writing it
/// waits for every copy in flight.
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use cudars_core::{DeviceBuffer, PinnedBuffer};
/// let mut host = PinnedBuffer::from_slice(dev, &[1u32, 2, 3, 4])?;
/// let mut dev_buf = DeviceBuffer::<u32>::allocate(dev, 4, s)?;
/// dev_buf.view_mut().copy_from_pinned(&host, s)?; // queued; returns at once
/// // ... queue kernels ...
/// dev_buf.view().copy_to_pinned(&mut host, s)?; // queued after the upload
/// assert_eq!(host.as_slice()?, [1, 2, 3, 4]); // waits for the download only
/// # Ok(()) }
/// ```
///
/// Kernels take it as they take a [`DeviceBuffer`](crate::DeviceBuffer), through
/// [`view`](Self::view) (a `const T*`) and [`view_mut`](Self::view_mut) (a `T*`):
/// the device reads and writes the page-locked memory directly (zero copy). A
/// view borrows the buffer, so no host slice of it lives while a view does:
///
/// ```compile_fail,E0502
/// # fn f(host: &mut cudars_core::PinnedBuffer<f32>) -> cudars_core::Result<()> {
/// let elems = host.as_slice()?;
/// let out = host.view_mut()?; // error: `host` is borrowed by the host slice
/// drop((elems, out));
/// # Ok(()) }
/// ```
///
/// ```compile_fail,E0502
/// # fn f(host: &mut cudars_core::PinnedBuffer<f32>) -> cudars_core::Result<()> {
/// let input = host.view();
/// let elems = host.as_mut_slice()?; // error: `host` is lent to a view
/// drop((input, elems));
/// # Ok(()) }
/// ```
///
/// and after the view is gone, the host slices wait for the kernels it was given
/// (rule 3 of the soundness contract):
///
/// ```no_run
/// # fn f(k: &cudars_core::TypedKernel<(cudars_core::MutPtr<f32>, u64)>, dev: &cudars_core::Device,
/// #      s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// let mut out = cudars_core::PinnedBuffer::<f32>::zeroed(dev, 1024)?;
/// let cfg = cudars_core::LaunchConfig::for_elements(1024, 256);
/// // SAFETY: the kernel writes out[0..n], n = 1024 = the view's length.
/// unsafe { k.launch(s, &cfg, (out.view_mut()?, 1024))? };
/// let written: &[f32] = out.as_slice()?; // waits for the kernel
/// # let _ = written; Ok(()) }
/// ```
///
/// **Not in graphs.** Graph nodes ([`Graph::add_copy`](crate::Graph::add_copy),
/// [`Graph::add_kernel_typed`](crate::Graph::add_kernel_typed), a
/// [`GraphBuilder`](crate::GraphBuilder)'s work) take no `PinnedBuffer`, and a
/// launch on a capturing stream refuses its views: a graph touches its memory
/// whenever any of its instantiations is launched, on any stream, later and
/// any number of times, and the buffer's host slices, which wait for the
/// copies and views recorded in the buffer, cannot wait for launches they do
/// not see (the device would write under a live `&[T]`). Pinned memory in a
/// graph is an `Arc<DeviceBuffer<T>>` from
/// [`LegacyPinnedMemoryResource`] (or a [`PinnedMemoryResource`](crate::PinnedMemoryResource)):
/// the graph keeps it alive, and it hands out no host slice, so the host reads
/// it through a copy ordered after the launch on a stream:
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream,
/// #      x: &std::sync::Arc<cudars_core::DeviceBuffer<f32>>) -> cudars_core::Result<()> {
/// use std::sync::Arc;
/// use cudars_core::{DeviceBuffer, Graph, GraphCompleteOptions, LegacyPinnedMemoryResource};
/// let pinned = Arc::new(LegacyPinnedMemoryResource::new(dev));
/// let host = Arc::new(DeviceBuffer::<f32>::allocate_from(pinned, x.len(), s)?);
/// let mut g = Graph::new(&dev.context()?)?;
/// g.add_copy(&[], &host, x)?; // device to pinned host memory, when the graph runs
/// let exec = g.instantiate(GraphCompleteOptions::default())?;
/// exec.launch(s)?;
/// let out: Vec<f32> = host.to_vec(s)?; // ordered after the launch on `s`
/// # let _ = out; Ok(()) }
/// ```
pub struct PinnedBuffer<T> {
    buf: Buffer,
    len: usize,
    pending: Mutex<Pending>,
    _t: PhantomData<T>,
}

/// Copies in flight, by stream: those that read the host memory (to the device)
/// and those that write it (from the device).
/// And whether device views were lent since the host last waited for their uses.
#[derive(Default)]
struct Pending {
    reads: Vec<(QueueId, Event)>,
    writes: Vec<(QueueId, Event)>,
    /// A shared view ([`PinnedBuffer::view`]) was lent: the device may read.
    viewed: bool,
    /// A mutable view ([`PinnedBuffer::view_mut`]) was lent: the device may write.
    viewed_mut: bool,
    /// Host functions lent the elements (also in `reads` or `writes`): a mutable
    /// view waits for them, so that the device never writes under their slices.
    hosted: Vec<(QueueId, Event)>,
}

impl Pending {
    /// Waits on the host for the uses of the views lent: those that may write
    /// (`writes_only`), or all.
    fn wait_views(&mut self, buf: &Buffer, writes_only: bool, what: &'static str) -> Result<()> {
        let lent = self.viewed_mut || (!writes_only && self.viewed);
        if lent {
            // Rule 2: every use of a view ordered the free stream after itself.
            buf.uses_stream(what)?.wait()?;
            self.viewed_mut = false;
            if !writes_only {
                self.viewed = false;
            }
        }
        Ok(())
    }

    /// Orders later work on `stream` after the uses of the views lent: those that
    /// may write (`writes_only`), or all. The flags stay set: the host has not
    /// waited. The caller holds `stream`'s capture gate
    /// ([`Stream::while_not_capturing`]).
    fn order_after_views(
        &self,
        buf: &Buffer,
        stream: &Stream,
        writes_only: bool,
        what: &'static str,
    ) -> Result<()> {
        if self.viewed_mut || (!writes_only && self.viewed) {
            let free = buf.uses_stream(what)?;
            if !free.is_same_queue(stream) {
                // The free stream of a pinned buffer is its device's legacy
                // default stream (`zeroed` allocates with no stream, and the
                // buffer is private): the driver never captures it, so the event
                // is an ordinary one, which `stream` may wait for under its gate.
                let e = Event::in_context(free.context(), EventOptions::default())?;
                e.record(free)?;
                stream.wait_event_uncaptured(&e)?;
            }
        }
        Ok(())
    }
}

impl<T> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("element", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("ptr", &format_args!("{:#x}", self.buf.ptr()))
            .finish()
    }
}

impl<T: Pod> PinnedBuffer<T> {
    /// `len` zeroed elements of page-locked memory (`device` names the context
    /// that allocates; the memory is portable to all).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a length of zero or one whose size overflows;
    /// the driver's error.
    pub fn zeroed(device: &Device, len: usize) -> Result<Self> {
        let () = NonZeroSize::<T>::OK;
        let size = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::invalid(
                "allocating pinned host memory",
                format!("{len} elements overflow the address space"),
            )
        })?;
        let mr = std::sync::Arc::new(LegacyPinnedMemoryResource::new(device));
        let mut buf = mr.allocate(size, None)?;
        // SAFETY: freshly allocated host memory that no device work has seen.
        unsafe { buf.as_host_slice_mut::<u8>() }?.fill(0);
        Ok(Self {
            buf,
            len,
            pending: Mutex::new(Pending::default()),
            _t: PhantomData,
        })
    }

    /// A page-locked copy of `src`.
    ///
    /// # Errors
    /// As [`zeroed`](Self::zeroed).
    pub fn from_slice(device: &Device, src: &[T]) -> Result<Self> {
        let mut b = Self::zeroed(device, src.len())?;
        b.as_mut_slice()?.copy_from_slice(src);
        Ok(b)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: an allocation holds at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The host address.
    pub fn as_ptr(&self) -> *const T {
        self.buf.ptr() as usize as *const T
    }

    /// The elements, after waiting for the copies in flight that write them
    /// and, when a [`view_mut`](Self::view_mut) was lent since the last wait, for
    /// the device work given it (rule 3 of the soundness contract,
    /// `docs/architecture.md`).
    ///
    /// # Errors
    /// The driver's error for a failed copy or kernel.
    pub fn as_slice(&self) -> Result<&[T]> {
        let mut p = self.lock();
        wait_all(&mut p.writes)?;
        p.wait_views(&self.buf, true, "reading pinned memory on the host")?;
        // SAFETY: no copy that writes the memory is in flight, nor any device work
        // given a mutable view of it (waited for above: rule 2 ordered each use
        // before the free stream), and none can start while `&self` is borrowed
        // (writing it takes `&mut self`, and so does a mutable view).
        unsafe { self.buf.as_host_slice() }
    }

    /// The elements, mutably, after waiting for every copy and host function in
    /// flight and, when views were lent since the last wait, for the device work
    /// given them (rule 3 of the soundness contract, `docs/architecture.md`).
    ///
    /// # Errors
    /// The driver's error for a failed copy or kernel.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        let p = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        wait_all(&mut p.reads)?;
        wait_all(&mut p.writes)?;
        p.wait_views(&self.buf, false, "writing pinned memory on the host")?;
        // The host functions' events are behind those waited for above.
        p.hosted.clear();
        // SAFETY: no copy touches the memory now, nor any device work given a
        // view of it (waited for above), and `&mut self` keeps new copies and new
        // views from starting.
        unsafe { self.buf.as_host_slice_mut() }
    }

    /// The elements as a shared device view: what a kernel's `const T*`
    /// parameter ([`ConstPtr`](crate::ConstPtr), `kernels!`' `DeviceView`), a copy
    /// or a library call takes. The device reads the page-locked memory in place.
    ///
    /// Lending the view first waits for the copies in flight that write the
    /// memory ([`DeviceView::copy_to_pinned`], a host function lent the elements
    /// mutably), so that no use of the view, on whatever stream, reads before
    /// them (rule 3 of the soundness contract, `docs/architecture.md`); with
    /// none in flight it waits for nothing. A wait that fails is retried as
    /// [`Stream::sync`]'s callers inside the crate retry (rule 4): a copy that
    /// failed for good runs no more. Later host writes
    /// ([`as_mut_slice`](Self::as_mut_slice)) and copies into the buffer wait
    /// for the work given the view; the view borrows the buffer, so none can
    /// start while it lives.
    pub fn view(&self) -> DeviceView<'_, T> {
        let mut p = self.lock();
        settle(&mut p.writes);
        p.viewed = true;
        DeviceView::new_unchecked(&self.buf, self.buf.ptr(), self.len)
    }

    /// The elements as an exclusive device view: what a kernel's `T*` parameter
    /// ([`MutPtr`](crate::MutPtr), `kernels!`' `DeviceViewMut`) takes. Host
    /// access ([`as_slice`](Self::as_slice), [`as_mut_slice`](Self::as_mut_slice),
    /// a host function lent the elements) and copies wait for the work given the
    /// view (rule 3 of the soundness contract): the device never writes the
    /// memory under a live host slice, which the view's exclusive borrow excludes
    /// while it lives and the wait after.
    ///
    /// Lending the view first waits for every copy in flight, and every host
    /// function lent the elements ([`Stream::launch_host_func_with`] and
    /// `_with_mut`): no use of the view, on whatever stream, writes under a
    /// copy or a host function that reads the memory, or races one that writes
    /// it (rule 3 of the soundness contract); with none in flight it waits for
    /// nothing.
    ///
    /// # Errors
    /// The driver's error waiting for a copy or a host function.
    pub fn view_mut(&mut self) -> Result<DeviceViewMut<'_, T>> {
        let p = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        wait_all(&mut p.reads)?;
        wait_all(&mut p.writes)?;
        // The host functions' events are behind those waited for above.
        p.hosted.clear();
        p.viewed_mut = true;
        Ok(DeviceViewMut::new_unchecked(
            &self.buf,
            self.buf.ptr(),
            self.len,
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks a copy of `len` elements against this buffer.
    fn check_len(&self, len: usize, what: &'static str) -> Result<()> {
        if len != self.len {
            return Err(Error::out_of_range(
                what,
                format!("the lengths differ: {len} and {} elements", self.len),
            ));
        }
        Ok(())
    }
}

/// Why a copy or a host function lent the memory is refused on a capturing
/// stream.
const CAPTURING: &str = "the stream is capturing a graph, which would read or write the host \
                         memory whenever it is launched, past what this buffer can track";

impl<T: Pod + Send + Sync> PinnedBuffer<T> {
    /// Queues `f` on `stream` with the elements, mutably: the body of
    /// [`Stream::launch_host_func_with_mut`].
    pub(crate) fn lend_mut_to_host_func(
        &mut self,
        stream: &Stream,
        f: impl FnOnce(&mut [T]) + Send + 'static,
    ) -> Result<()> {
        const WHAT: &str = "lending pinned host memory to a host function";
        let host = HostPtr(self.buf.ptr() as usize as *mut T, self.len);
        let buf = &self.buf;
        let p = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        // Capture-gate rule: from the capture check to the event's record.
        let p = std::cell::RefCell::new(p);
        stream.launch_host_func_ordered(
            (WHAT, CAPTURING),
            || {
                let p = p.borrow();
                // Soundness contract: rule 3. Not before the copies in flight
                // that read or write the memory (ordered on the device: the host
                // function runs after them in stream order, and nothing blocks
                // on a driver thread).
                order_after(&p.reads, stream)?;
                order_after(&p.writes, stream)?;
                // And not before the device work given views of it.
                p.order_after_views(buf, stream, false, WHAT)
            },
            move || {
                // SAFETY: rule 3. The memory lives until the host function has run:
                // the buffer's `Drop` waits for the event `track` records behind it
                // on `stream` (and a forgotten buffer is never freed). No other host
                // reference exists while it runs: `as_slice` and `as_mut_slice` wait
                // for that event first, and `&mut self` excluded both until it was
                // recorded. No copy touches the memory meanwhile: those queued before
                // are ordered before it (above), those queued after wait for the
                // event (it is tracked as a write, which every copy orders after).
                f(unsafe { host.slice_mut() });
            },
            || {
                let mut p = p.borrow_mut();
                track(&mut p.hosted, stream)?;
                track(&mut p.writes, stream)
            },
        )
    }

    /// Queues `f` on `stream` with the elements, read only: the body of
    /// [`Stream::launch_host_func_with`].
    pub(crate) fn lend_to_host_func(
        &self,
        stream: &Stream,
        f: impl FnOnce(&[T]) + Send + 'static,
    ) -> Result<()> {
        const WHAT: &str = "lending pinned host memory to a host function";
        let host = HostPtr(self.buf.ptr() as usize as *mut T, self.len);
        // Capture-gate rule: from the capture check to the events' record. The
        // lock is taken in the two steps, not across the queuing, which may drop
        // `f` (user code) on a refusal.
        stream.launch_host_func_ordered(
            (WHAT, CAPTURING),
            || {
                let p = self.lock();
                // Soundness contract: rule 3. Not before the copies in flight
                // that write the memory (none starts while `&self` is borrowed:
                // writing takes `&mut self`).
                order_after(&p.writes, stream)?;
                // And not before device work given a mutable view of it.
                p.order_after_views(&self.buf, stream, true, WHAT)
            },
            move || {
                // SAFETY: rule 3. The memory lives until the host function has run
                // (as in `lend_mut_to_host_func`). Nothing writes it while it runs:
                // copies that write it queued before are ordered before it (above);
                // the host writes only through `as_mut_slice`, and copies write it
                // only through `copy_to_pinned`, which both wait for the reads
                // tracked here first, and the device through a mutable view, which
                // `&self` excludes now and which takes `&mut self` later.
                f(unsafe { host.slice() });
            },
            || {
                let mut p = self.lock();
                track(&mut p.hosted, stream)?;
                track(&mut p.reads, stream)
            },
        )
    }
}

/// Host functions that borrow a pinned buffer: the lending part of the host
/// function API (`crate::callback` has the rest), here beside the buffer state it
/// orders.
impl Stream {
    /// Queues `f` to run on a driver thread in stream order, as
    /// [`launch_host_func`](Self::launch_host_func), with `buf`'s elements lent to
    /// it mutably for the length of the call: Python's host callback that reads
    /// and writes a pinned array (`host_launch.py`).
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use cudars_core::{DeviceBuffer, PinnedBuffer};
    /// let mut host = PinnedBuffer::<i32>::zeroed(dev, 4)?;
    /// let mut d = DeviceBuffer::<i32>::from_host(dev, &[1, 2, 3, 4], s)?;
    /// d.view().copy_to_pinned(&mut host, s)?; // the device writes the array
    /// s.launch_host_func_with_mut(&mut host, |xs| {
    ///     for x in xs {
    ///         *x *= 10; // then the host, in stream order
    ///     }
    /// })?;
    /// d.view_mut().copy_from_pinned(&host, s)?; // then the device reads it
    /// assert_eq!(host.as_slice()?, [10, 20, 30, 40]); // waits for the callback
    /// # Ok(()) }
    /// ```
    ///
    /// The lending is ordered like any stream work on the buffer, and nothing
    /// blocks: `stream` waits on the device for the buffer's copies in flight on
    /// other streams, and the callback is tracked in the buffer as a write, so
    /// copies queued after it (on any stream) wait for it on the device and the
    /// host views ([`PinnedBuffer::as_slice`], [`PinnedBuffer::as_mut_slice`]) and
    /// the buffer's `Drop` wait for it. No other reference to the elements exists
    /// while `f` runs (rule 3 of the soundness contract, `docs/architecture.md`).
    /// The rules of `launch_host_func` hold: `f` must not call CUDA, its panics
    /// are recorded in the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a capturing stream (a graph would run the
    /// callback whenever it is launched, past what the buffer tracks) or a stream
    /// of another device; the driver's error.
    pub fn launch_host_func_with_mut<T: bytemuck::Pod + Send + Sync>(
        &self,
        buf: &mut PinnedBuffer<T>,
        f: impl FnOnce(&mut [T]) + Send + 'static,
    ) -> Result<()> {
        buf.lend_mut_to_host_func(self, f)
    }

    /// As [`launch_host_func_with_mut`](Self::launch_host_func_with_mut), lending
    /// `buf`'s elements read only: the callback runs after the copies in flight
    /// that write them, may overlap host reads ([`PinnedBuffer::as_slice`]) and
    /// copies that read them, and is waited for by whatever writes them next
    /// (rule 3 of the soundness contract).
    ///
    /// # Errors
    /// As [`launch_host_func_with_mut`](Self::launch_host_func_with_mut).
    pub fn launch_host_func_with<T: bytemuck::Pod + Send + Sync>(
        &self,
        buf: &PinnedBuffer<T>,
        f: impl FnOnce(&[T]) + Send + 'static,
    ) -> Result<()> {
        buf.lend_to_host_func(self, f)
    }
}

/// The address and length of a [`PinnedBuffer`]'s elements, moved into a host
/// function that views them.
struct HostPtr<T>(*mut T, usize);

// SAFETY: Soundness contract: rule 3. A `HostPtr` is only made by the lending
// methods above, whose host function is the one user of it, and which order
// every other access to the memory around that function; the elements are
// `Send + Sync`, so viewing them from the driver's thread is allowed.
unsafe impl<T: Send + Sync> Send for HostPtr<T> {}

impl<T> HostPtr<T> {
    /// The elements, mutably.
    ///
    /// # Safety
    /// The memory is live and nothing else reads or writes it for `'a`.
    unsafe fn slice_mut<'a>(self) -> &'a mut [T] {
        // SAFETY: the caller's promise; the address is a live pinned
        // allocation of `self.1` elements, aligned for `T` (`PinnedBuffer`).
        unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
    }

    /// The elements.
    ///
    /// # Safety
    /// The memory is live and nothing writes it for `'a`.
    unsafe fn slice<'a>(self) -> &'a [T] {
        // SAFETY: as in `slice_mut`.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }
    }
}

/// Waits for every event of `list` and empties it.
fn wait_all(list: &mut Vec<(QueueId, Event)>) -> Result<()> {
    for (_, e) in list.iter() {
        e.sync()?;
    }
    list.clear();
    Ok(())
}

/// Makes `stream` wait for the events of `list` recorded on other queues
/// (compared by [`QueueId`]: the legacy stream of another context, another
/// thread's per-thread stream, or a new stream given a destroyed one's handle,
/// is another queue though its handle is the same). The caller holds
/// `stream`'s capture gate ([`Stream::while_not_capturing`]); every event of a
/// list was recorded under its own stream's gate, outside any capture.
fn order_after(list: &[(QueueId, Event)], stream: &Stream) -> Result<()> {
    let here = stream.queue_id();
    for (q, e) in list {
        if *q != here {
            stream.wait_event_uncaptured(e)?;
        }
    }
    Ok(())
}

/// Waits for every event of `list` and empties it, for a caller that cannot
/// report an error ([`PinnedBuffer::view`]): a wait that fails is tried again
/// with the thread in relaxed capture mode (another thread's global capture
/// refuses it for now), then through the event's context, up to three times,
/// as `Stream::drain` does (rule 4): an error that persists through every try
/// is sticky, and the copy runs no more.
fn settle(list: &mut Vec<(QueueId, Event)>) {
    for (_, e) in list.iter() {
        if e.sync().is_ok() {
            continue;
        }
        let _relaxed = crate::deferred::RelaxedCapture::enter();
        if e.sync().is_ok() {
            continue;
        }
        for _ in 0..3 {
            if e.context().sync().is_ok() {
                break;
            }
        }
    }
    list.clear();
}

/// Records that a copy on `stream` is in flight: re-records the stream's event
/// in `list`, or adds one. If that fails, waits for the stream instead, so that
/// nothing untracked is left in flight.
fn track(list: &mut Vec<(QueueId, Event)>, stream: &Stream) -> Result<()> {
    let here = stream.queue_id();
    let r = (|| {
        if let Some((_, e)) = list.iter().find(|(q, _)| *q == here) {
            return e.record(stream);
        }
        let e = Event::in_context(stream.context(), EventOptions::default())?;
        e.record(stream)?;
        list.push((here, e));
        Ok(())
    })();
    if r.is_err() {
        let _ = stream.drain();
    }
    r
}

// Deferred-free rule: on a driver callback thread (no CUDA calls, and waiting
// there could wait for the callback itself), or when a wait is refused for now
// (a global-mode capture refuses synchronising calls), the waits and the free
// move to the deferred queue, in the same order: the memory is never freed
// before the copies in flight are known to be done.
impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // The memory is freed when `buf` drops, after this: wait for every copy in
        // flight first. Errors cannot be reported from drop; a failed event leaves
        // its context's work to wait for instead.
        let p = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let events: Vec<Event> = p
            .reads
            .drain(..)
            .chain(p.writes.drain(..))
            .chain(p.hosted.drain(..))
            .map(|(_, e)| e)
            .collect();
        let mut left = if crate::deferred::must_defer() {
            events
        } else {
            match wait_all_or_keep(events) {
                Ok(()) => return,
                Err(left) => left,
            }
        };
        let size = self.buf.size();
        // SAFETY: a stand-in that owns nothing, never used: `self` is being
        // dropped, and the real buffer moves to the queue.
        let stand_in = unsafe {
            Buffer::from_raw(
                0,
                0,
                crate::memory::resource::MemoryKind::Pinned,
                self.buf.device(),
            )
        };
        let mut buf = Some(std::mem::replace(&mut self.buf, stand_in));
        crate::deferred::defer(
            "freeing pinned memory",
            size,
            None,
            move || match wait_all_or_keep(std::mem::take(&mut left)) {
                Ok(()) => {
                    drop(buf.take());
                    Ok(())
                }
                Err(rest) => {
                    left = rest;
                    Err(Error::unsupported(
                        "freeing pinned memory",
                        "waiting for the copies in flight is refused for now",
                    ))
                }
            },
        );
    }
}

/// Waits for `events` (each, or its context when that fails). The events whose
/// wait is refused for now (a capture forbids it: the wait is retried later)
/// come back; other failures count as done, as the context's failed work is no
/// longer running (what the crate has always assumed here).
fn wait_all_or_keep(events: Vec<Event>) -> std::result::Result<(), Vec<Event>> {
    let mut left = Vec::new();
    for e in events {
        let Err(err) = e.sync() else { continue };
        if !crate::deferred::refused_for_now(&err) {
            let _ = e.context().sync();
        } else if e.context().sync().is_err() {
            left.push(e);
        }
    }
    if left.is_empty() { Ok(()) } else { Err(left) }
}

impl<T: Pod> DeviceViewMut<'_, T> {
    /// Queues a copy of `src` (of equal length) into this view on `stream`, and
    /// returns without waiting: the copy overlaps work on other streams. `src`
    /// stays readable on the host meanwhile; writing it ([`PinnedBuffer::as_mut_slice`])
    /// waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another length, a stream of another device
    /// or a capturing stream; the driver's error.
    pub fn copy_from_pinned(&mut self, src: &PinnedBuffer<T>, stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying pinned host memory to the device";
        src.check_len(self.len, WHAT)?;
        let span = self.span();
        // Capture-gate rule: from the capture check to the event's record. The
        // lock is taken inside the gate, as the lending host functions take it
        // (one order: gate, then lock).
        stream.while_not_capturing(WHAT, CAPTURING, || {
            let mut p = src.lock();
            // Not before copies in flight that write the host memory have
            // finished, nor device work given a mutable view of it.
            order_after(&p.writes, stream)?;
            p.order_after_views(&src.buf, stream, true, WHAT)?;
            // SAFETY: the pinned memory lives until every copy tracked in
            // `pending` has finished (Drop waits), and is not written on the
            // host before (only `as_mut_slice`, which waits, writes it).
            unsafe { span.upload_uncaptured(src.as_ptr().cast(), stream) }?;
            track(&mut p.reads, stream)
        })
    }
}

impl<T: Pod> DeviceView<'_, T> {
    /// Queues a copy of this view into `dst` (of equal length) on `stream`, and
    /// returns without waiting. Reading `dst` on the host
    /// ([`PinnedBuffer::as_slice`]) waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another length, a stream of another device
    /// or a capturing stream; the driver's error.
    pub fn copy_to_pinned(&self, dst: &mut PinnedBuffer<T>, stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying device memory to pinned host memory";
        dst.check_len(self.len, WHAT)?;
        let dst_ptr = dst.buf.ptr() as usize as *mut u8;
        let span = self.span();
        let buf = &dst.buf;
        let p = dst
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        // Capture-gate rule: from the capture check to the event's record.
        stream.while_not_capturing(WHAT, CAPTURING, || {
            // Not before the copies in flight that read or write the host
            // memory, nor device work given views of it.
            order_after(&p.reads, stream)?;
            order_after(&p.writes, stream)?;
            p.order_after_views(buf, stream, false, WHAT)?;
            // SAFETY: as in `copy_from_pinned`; the host reads `dst` only after
            // waiting for this copy (`as_slice`), and `&mut` excludes other
            // access now.
            unsafe { span.download_uncaptured(dst_ptr, stream) }?;
            track(&mut p.writes, stream)
        })
    }
}
