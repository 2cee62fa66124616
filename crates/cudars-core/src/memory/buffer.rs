//! [`Buffer`]: an allocation of a [`MemoryResource`](super::MemoryResource), its
//! copies and fills, and its stream-ordered free (managed memory's advice and
//! prefetches are [`ManagedBuffer`](super::ManagedBuffer)'s).

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Error, Result};
use crate::stream_capture::CaptureStatus;
use crate::{device::Device, stream::Stream};

use crate::{
    memory::resource::MemoryKind, memory::resource::MemoryResource, memory::resource::Resource,
};

/// Rejects zero-sized element types at compile time (a view of `()` would have
/// no bytes to address).
pub(crate) struct NonZeroSize<T>(PhantomData<T>);

impl<T> NonZeroSize<T> {
    pub(crate) const OK: () = assert!(
        std::mem::size_of::<T>() > 0,
        "typed device memory needs an element type of at least one byte"
    );
}

/// A span of memory from a [`MemoryResource`], or a foreign pointer.
///
/// An owned buffer is freed on drop through its resource, ordered on its *free
/// stream* (the stream it was allocated on, unless
/// [`set_free_stream`](Self::set_free_stream) changed it); the buffer keeps a clone
/// of that stream and an `Arc` of its resource, so neither can be destroyed first.
/// [`close`](Self::close) frees it and reports errors. `Buffer` is `Send + Sync`:
/// it is an address and a size, and every operation goes through a stream.
pub struct Buffer {
    ptr: sys::CUdeviceptr,
    size: usize,
    kind: MemoryKind,
    device: Device,
    owner: Option<(Resource, Stream)>,
    /// Imported from another process (IPC).
    mapped: bool,
    /// What keeps foreign memory alive ([`Buffer::from_raw_with_owner`]).
    keep: Option<Arc<dyn Any + Send + Sync>>,
}

/// Buffers are equal when they span the same memory: the same address and size
/// (`cuda.core`'s `Buffer.__eq__`), as a buffer and one adopted over its memory
/// with [`from_raw`](Buffer::from_raw) do.
impl PartialEq for Buffer {
    fn eq(&self, other: &Self) -> bool {
        (self.ptr, self.size) == (other.ptr, other.size)
    }
}

impl Eq for Buffer {}

/// Hashes the address and size, as equality compares them.
impl std::hash::Hash for Buffer {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.ptr, self.size).hash(state);
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("device", &self.device)
            .field("owned", &self.owner.is_some())
            .field("mapped", &self.mapped)
            .field("has_owner", &self.keep.is_some())
            .finish()
    }
}

impl Buffer {
    /// Allocates `size` bytes from `mr`, ordered on `stream`, which also becomes
    /// the buffer's free stream. The same as `mr.allocate(size, &stream)` (see
    /// [`MemoryResource`]).
    ///
    /// `stream` is an `Option<&Stream>` (or a `&Stream`). `None` is for resources
    /// that are not stream-ordered ([`MemoryResource::is_stream_ordered`] is
    /// `false`): the memory is allocated at once and the buffer's free stream is
    /// the device's legacy default stream ([`Stream::legacy_default`]), so that it
    /// is freed after the work that this crate's methods queue on it, on any
    /// stream, as for any buffer (see [`set_free_stream`](Self::set_free_stream)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size, a stream of another device, or
    /// no stream for a stream-ordered resource; the resource's error.
    pub fn allocate<'s>(
        mr: Arc<dyn MemoryResource>,
        size: usize,
        stream: impl Into<Option<&'s Stream>>,
    ) -> Result<Self> {
        Self::allocate_in(Resource::Shared(mr), size, stream.into())
    }

    /// [`allocate`](Self::allocate) from either kind of [`Resource`].
    // Always: with plain `#[inline]`, whether LLVM inlines it into the pool's
    // `allocate` depended on which features were on (15 more host instructions
    // per allocation without `ipc`; `scripts/host-cost.sh`).
    #[inline(always)]
    pub(crate) fn allocate_in(mr: Resource, size: usize, stream: Option<&Stream>) -> Result<Self> {
        // Frees that could not run when dropped, first (one relaxed load when none).
        crate::deferred::poll();
        let device = mr.device();
        let what = || format!("allocating {size} bytes on device {}", device.ordinal());
        if size == 0 {
            return Err(Error::zero_size(what()));
        }
        let legacy;
        let stream = match stream {
            Some(s) => s,
            None if mr.is_stream_ordered() => {
                return Err(Error::invalid(
                    what(),
                    "the resource is stream-ordered (a memory pool): pass the stream to \
                     allocate on; only resources that are not stream-ordered take `None`",
                ));
            }
            None => {
                legacy = Stream::legacy_default(&device)?;
                &legacy
            }
        };
        if stream.device() != &device {
            return Err(Error::other_device(
                what(),
                format!("the stream belongs to device {}", stream.device().ordinal()),
            ));
        }
        // SAFETY: the buffer takes the memory over: `free` hands it, with `size`, to
        // `mr.deallocate` once (the owner is taken first), ordered on the free stream
        // after the buffer's own work.
        let ptr = unsafe { mr.allocate_raw(size, stream) }?;
        let kind = mr.kind();
        Ok(Self {
            ptr,
            size,
            kind,
            device,
            owner: Some((mr, stream.for_frees())),
            mapped: false,
            keep: None,
        })
    }

    #[cfg(any(feature = "gl", all(unix, any(feature = "ipc", feature = "vmm"))))]
    /// A buffer whose memory `mr` gives back on `stream` (its free stream) when
    /// the buffer goes: an import from another process (the IPC path,
    /// `mapped`), or memory another API lends (a mapped graphics resource's,
    /// whose `mr` frees nothing: the free only orders the buffer's work on
    /// other streams before `stream`'s next work, the unmapping).
    pub(crate) fn from_parts(
        ptr: sys::CUdeviceptr,
        size: usize,
        kind: MemoryKind,
        device: Device,
        (mr, stream): (Arc<dyn MemoryResource>, &Stream),
        mapped: bool,
    ) -> Self {
        Self {
            ptr,
            size,
            kind,
            device,
            owner: Some((Resource::Shared(mr), stream.for_frees())),
            mapped,
            keep: None,
        }
    }

    /// Wraps memory someone else owns; it is never freed by this buffer.
    ///
    /// `kind` is the caller's word, and what [`is_host_accessible`](Self::is_host_accessible)
    /// and [`is_managed`](Self::is_managed) answer from; [`MemoryKind::of_pointer`]
    /// asks the driver, as `cuda.core`'s `Buffer.from_handle` does without a
    /// memory resource.
    ///
    /// # Safety
    /// `ptr` must address `size` bytes of memory of `kind` usable on `device`, valid
    /// for as long as the buffer and the work issued through it; and, if `kind`
    /// lets the host reach it (pinned or managed), it must not overlap another
    /// buffer (their host views would alias). Device memory may overlap another
    /// buffer's (an IPC or virtual memory import of memory held twice does): a
    /// copy between overlapping ranges then leaves unspecified data in the
    /// destination, as CUDA leaves overlapping copies, never undefined behaviour
    /// on the host (rule 9 of the soundness contract).
    pub unsafe fn from_raw(
        ptr: sys::CUdeviceptr,
        size: usize,
        kind: MemoryKind,
        device: &Device,
    ) -> Self {
        Self {
            ptr,
            size,
            kind,
            device: *device,
            owner: None,
            mapped: false,
            keep: None,
        }
    }

    /// As [`from_raw`](Self::from_raw), keeping `owner` alive as long as the
    /// buffer (`cuda.core`'s `Buffer.from_handle(ptr, size, owner=…)`): the object
    /// that owns the memory, or anything whose life bounds it. [`owner`](Self::owner)
    /// hands it back. The buffer still never frees the memory; dropping it drops
    /// its reference to `owner`, at once, without waiting for work queued on the
    /// memory.
    ///
    /// ```no_run
    /// # fn f(dev: cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::{Buffer, MemoryKind};
    /// let theirs = Arc::new(dev.allocate(256, s)?);
    /// // SAFETY: `theirs` holds 256 bytes of device memory and lives as long as
    /// // `view` (which keeps it), and `view`'s work is synchronised before it drops.
    /// let view = unsafe {
    ///     Buffer::from_raw_with_owner(theirs.ptr(), 256, MemoryKind::Device, &dev, theirs.clone())
    /// };
    /// assert!(view.owner().is_some_and(|o| o.downcast_ref::<Buffer>().is_some()));
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw), where "valid for as long as the buffer and
    /// the work issued through it" may be met by `owner`: the memory must stay
    /// valid while `owner` lives, and work issued through the buffer must
    /// complete before the last reference to `owner` goes.
    pub unsafe fn from_raw_with_owner(
        ptr: sys::CUdeviceptr,
        size: usize,
        kind: MemoryKind,
        device: &Device,
        owner: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Self {
            ptr,
            size,
            kind,
            device: *device,
            owner: None,
            mapped: false,
            keep: Some(owner),
        }
    }

    /// The object that keeps this buffer's foreign memory alive, given to
    /// [`from_raw_with_owner`](Self::from_raw_with_owner) (`None` otherwise: an
    /// owning buffer's memory is its [`memory_resource`](Self::memory_resource)'s).
    /// Downcast it to the type given.
    pub fn owner(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.keep.as_ref()
    }

    /// Whether the buffer was imported from another process
    /// (`from_ipc_descriptor`, feature `ipc`): its memory belongs to the
    /// exporter's pool.
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    #[cfg(feature = "vmm")]
    /// Changes the size (virtual memory growth).
    pub(crate) fn set_size(&mut self, size: usize) {
        self.size = size;
    }

    /// Where the device address is stored (a kernel argument points at it).
    pub(crate) fn ptr_ref(&self) -> *const sys::CUdeviceptr {
        &self.ptr
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device it belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The kind of memory.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// The memory resource the buffer came from and returns its memory to
    /// (`None` for memory it does not own: [`Buffer::from_raw`]).
    pub fn memory_resource(&self) -> Option<&Arc<dyn MemoryResource>> {
        self.owner.as_ref().map(|(mr, _)| mr.arc())
    }

    /// The stream the buffer is freed on (`None` for memory it does not own).
    pub fn free_stream(&self) -> Option<&Stream> {
        self.owner.as_ref().map(|(_, s)| s)
    }

    /// Whether the buffer owns its memory (and frees it when dropped).
    pub fn is_owned(&self) -> bool {
        self.owner.is_some()
    }

    /// Whether kernels can touch it (every kind can).
    pub fn is_device_accessible(&self) -> bool {
        true
    }

    /// Whether the host can read and write it directly: pinned or managed
    /// memory, by the buffer's [`MemoryKind`] (its resource's, or for
    /// [`from_raw`](Self::from_raw) the kind its caller gave, which
    /// [`MemoryKind::of_pointer`] can ask of the driver).
    pub fn is_host_accessible(&self) -> bool {
        matches!(self.kind, MemoryKind::Pinned | MemoryKind::Managed)
    }

    /// Whether it is managed memory.
    pub fn is_managed(&self) -> bool {
        self.kind == MemoryKind::Managed
    }

    /// Changes the stream the buffer is freed on.
    ///
    /// The new free stream first waits for everything queued on the old one (an
    /// event recorded there): the old free stream is where every use of the
    /// buffer was ordered (rule 2 of the soundness contract,
    /// `docs/architecture.md`), so the free, and [`host_slice_mut`]'s wait, stay
    /// after all of them.
    ///
    /// [`host_slice_mut`]: Self::host_slice_mut
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device; the driver's
    /// error ordering the new stream after the old (the buffer then keeps its
    /// old free stream).
    pub fn set_free_stream(&mut self, stream: &Stream) -> Result<()> {
        let _current = self.check_stream(stream, "setting a buffer's free stream")?;
        if let Some((_, s)) = &mut self.owner {
            let new = stream.for_frees();
            if !s.is_same_queue(&new) {
                new.wait_stream(s)?;
                *s = new;
            }
        }
        Ok(())
    }

    pub(crate) fn check_stream(
        &self,
        stream: &Stream,
        what: &'static str,
    ) -> Result<crate::context::Current> {
        self.check_stream_device(stream, what)?;
        stream.context().ensure_current()
    }

    /// Refuses a stream of another device.
    pub(crate) fn check_stream_device(&self, stream: &Stream, what: &'static str) -> Result<()> {
        if stream.device() != &self.device {
            return Err(Error::other_device(
                what,
                format!(
                    "the buffer is on device {} and the stream on device {}",
                    self.device.ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn check_len(&self, bytes: usize, what: &'static str) -> Result<()> {
        if bytes > self.size {
            return Err(Error::out_of_range(
                what,
                format!(
                    "{bytes} bytes do not fit in a buffer of {} bytes",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn require_managed(&self, what: &'static str) -> Result<()> {
        if self.kind != MemoryKind::Managed {
            return Err(Error::unsupported(
                what,
                format!(
                    "the buffer holds {:?} memory, not managed memory",
                    self.kind
                ),
            ));
        }
        Ok(())
    }

    /// The host-visible contents as a slice, for pinned and managed memory.
    ///
    /// # Safety
    /// No work that writes the buffer may be pending or start while the slice
    /// lives (synchronise its streams first), and the buffer's bytes must be valid
    /// `T`s (guaranteed for `Pod` types).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for device memory; [`Error::InvalidArgument`] when the
    /// size or address does not fit `T`.
    pub unsafe fn as_host_slice<T: Pod>(&self) -> Result<&[T]> {
        let len = self.host_len::<T>("reading a buffer from the host")?;
        // SAFETY: host-accessible memory of `size` bytes, aligned for `T`; the caller
        // guarantees no concurrent writes.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as usize as *const T, len) })
    }

    /// The host-visible contents as a mutable slice, for pinned and managed
    /// memory, without waiting for anything: the zero-copy host view, for a caller
    /// that has synchronised. [`host_slice_mut`](Self::host_slice_mut) is the safe
    /// form, which waits first.
    ///
    /// The slice borrows the buffer mutably, so while it lives no method of this
    /// crate can queue new work on the buffer. What the borrow cannot see is device
    /// work queued before, or launched from elsewhere with the buffer's address:
    /// that is what the caller vouches for.
    ///
    /// # Safety
    /// No device work (copies, fills, kernels, graphs, on any stream, or in another
    /// process) that reads or writes the buffer may be pending or start while the
    /// slice lives: synchronise the streams that used it first (or call
    /// [`host_slice_mut`](Self::host_slice_mut)). The host and the GPU writing the
    /// same memory at once is a data race.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for device memory; [`Error::InvalidArgument`] when the
    /// size or address does not fit `T`.
    pub unsafe fn as_host_slice_mut<T: Pod>(&mut self) -> Result<&mut [T]> {
        let len = self.host_len::<T>("writing a buffer from the host")?;
        // SAFETY: host-accessible memory of `size` bytes, aligned for `T` (checked),
        // any bit pattern of which is a valid `T` (`Pod`); the `&mut self` borrow
        // excludes every other view through this buffer, and the caller guarantees
        // that no device work touches it meanwhile.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as usize as *mut T, len) })
    }

    /// Waits for the device work queued on the buffer, then gives its host-visible
    /// contents (pinned or managed memory) as a mutable slice: zero-copy host reads
    /// and writes, safely.
    ///
    /// Rule 3 of the soundness contract (`docs/architecture.md`): the host sees
    /// the memory only after the free stream, where rule 2 ordered every use.
    ///
    /// ```no_run
    /// # fn f(dev: cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::LegacyPinnedMemoryResource;
    /// let mut buf = Arc::new(LegacyPinnedMemoryResource::new(&dev)).allocate(1024, None)?;
    /// buf.fill_pattern(2.0f32, s)?; // on the GPU, on `s`
    /// let host: &mut [f32] = buf.host_slice_mut()?; // waits for the fill
    /// assert!(host.iter().all(|&x| x == 2.0));
    /// host[0] = 1.0; // written straight into the pinned memory
    /// # Ok(()) }
    /// ```
    ///
    /// What it waits for: the buffer's free stream
    /// ([`free_stream`](Self::free_stream)). Every operation this crate queues on
    /// the buffer, on whatever stream (copies, fills, prefetches, batches), makes
    /// the free stream wait for it, so synchronising the free stream waits for all
    /// of them; and `&mut self` means none can be queued while the slice lives.
    /// A kernel or a graph that uses the buffer must be ordered before the free
    /// stream too, as [`launch`](crate::launch) requires of a buffer it is given
    /// (launch it on the free stream, or make the free stream wait for it).
    ///
    /// This costs a stream synchronisation; a caller that has synchronised already
    /// can use [`as_host_slice_mut`](Self::as_host_slice_mut).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for device memory, and for a buffer that does not own
    /// its memory ([`Buffer::from_raw`]: there is no free stream to wait for; use
    /// `as_host_slice_mut`); [`Error::InvalidArgument`] when the size or address
    /// does not fit `T`; the driver's error, including that of failed work.
    pub fn host_slice_mut<T: Pod>(&mut self) -> Result<&mut [T]> {
        const WHAT: &str = "viewing a buffer from the host";
        self.host_len::<T>(WHAT)?;
        let Some((_, free)) = &self.owner else {
            return Err(Error::unsupported(
                WHAT,
                "the buffer does not own its memory, so it has no free stream to wait \
                 for: synchronise its work and use `as_host_slice_mut`",
            ));
        };
        free.wait()?;
        // SAFETY: the free stream has been synchronised: every operation this
        // crate queued on the buffer had made it wait (see above), and kernels and
        // graphs given the buffer are ordered before it by their callers' contract.
        // `&mut self` keeps any new work from being queued through the buffer while
        // the slice lives.
        unsafe { self.as_host_slice_mut() }
    }

    /// The free stream, before which rule 2 of the soundness contract ordered
    /// every use of the buffer (what [`host_slice_mut`](Self::host_slice_mut)
    /// waits for; `PinnedBuffer`'s host views wait for it once it lent views).
    pub(crate) fn uses_stream(&self, what: &'static str) -> Result<&Stream> {
        self.owner.as_ref().map(|(_, free)| free).ok_or_else(|| {
            Error::unsupported(what, "the buffer does not own its memory: no free stream")
        })
    }

    /// The number of `T`s in the host-visible buffer, or why it cannot be viewed
    /// as `T`s.
    fn host_len<T: Pod>(&self, what: &'static str) -> Result<usize> {
        if !self.is_host_accessible() {
            return Err(Error::unsupported(
                what,
                "device memory is not host-accessible",
            ));
        }
        self.typed_len::<T>(what)
    }

    /// Orders this buffer's eventual free after the work queued so far on `stream`
    /// (an event recorded there, waited for by the free stream), when `stream` is not
    /// the free stream. Keeps stream-ordered frees from racing work on other streams.
    ///
    /// cudars-core's own operations (copies, fills, typed launches) do this for the
    /// buffers they touch. Code that queues work on a buffer through another
    /// library (cuBLAS, cuFFT, NCCL, a raw driver call) calls it after queueing,
    /// so that dropping the buffer cannot free memory the work still uses
    /// ([`Buffer::order_frees_after`] for all of one operation's buffers).
    /// Nothing is done when `stream` is the free stream or the buffer does not own
    /// its memory.
    ///
    /// # Errors
    /// The driver's error recording or waiting for the event; the stream has then
    /// been waited for, so the free still cannot overtake the work.
    #[inline]
    pub fn order_free_after(&self, stream: &Stream) -> Result<()> {
        order_frees_after(std::iter::once(self), stream)
    }

    /// Makes the work queued next on `stream` wait for every use of the buffer
    /// queued so far: one event recorded on the buffer's free stream (its home
    /// stream), waited for by `stream`; nothing when `stream` is the free stream.
    ///
    /// Every use of the buffer on another stream through this crate's safe API
    /// (copies, fills, typed launches) is joined back to the free stream when
    /// it is queued (rule 2 of the soundness contract, `docs/architecture.md`:
    /// the free must come after it). So the free stream is always after every
    /// such use: work queued on the free stream itself (reading the result with
    /// `copy_to_host` or `to_vec`) needs nothing, and work on a third stream
    /// needs this call. This is the explicit form of what `cudarc` does on
    /// every call with an event per buffer use ("Coming from cudarc" in
    /// `docs/porting-from-python.md`). A byte-API [`launch`](crate::launch) or
    /// another library's call on another stream is not joined for you: call
    /// [`order_free_after`](Self::order_free_after) with its stream after
    /// queueing it.
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, home: &cudars_core::Stream, other: &cudars_core::Stream, third: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// let mut buf = dev.allocate(1024, home)?; // `home` is its free stream
    /// buf.fill_u32(7, other)?; // joined back to `home` when queued
    /// let mut out = [0u32; 256];
    /// buf.copy_to_host(&mut out, home)?; // after the fill: nothing to do
    /// buf.order_after_uses(third)?; // `third` waits for the fill too
    /// buf.copy_to_host(&mut out, third)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a buffer that does not own its memory (it has
    /// no free stream: order its work yourself); [`Error::InvalidArgument`] for
    /// a stream of another device; the driver's error recording or waiting for
    /// the event.
    pub fn order_after_uses(&self, stream: &Stream) -> Result<()> {
        const WHAT: &str = "ordering a stream after a buffer's uses";
        let home = self.uses_stream(WHAT)?;
        self.check_stream_device(stream, WHAT)?;
        if home.is_same_queue(stream) {
            return Ok(());
        }
        // The event is made in the home stream's context, current for it.
        stream.wait_stream(home)
    }

    /// [`order_free_after`](Self::order_free_after) for several buffers at once,
    /// the operands of one operation: one event recorded on `stream`, waited for
    /// once by each distinct free stream that is not `stream` (nothing at all when
    /// every buffer is freed on `stream`).
    ///
    /// # Errors
    /// As [`order_free_after`](Self::order_free_after).
    pub fn order_frees_after<'a>(
        buffers: impl IntoIterator<Item = &'a Buffer>,
        stream: &Stream,
    ) -> Result<()> {
        order_frees_after(buffers.into_iter(), stream)
    }

    /// Frees the buffer now (ordered on `stream`, or its free stream), reporting
    /// errors that dropping it would swallow. Called inside a host function (a
    /// driver thread, where CUDA calls are forbidden), the free is queued and made
    /// later on an ordinary thread (see [`deferred_frees`](crate::deferred_frees)).
    ///
    /// # Errors
    /// The resource's error: the memory was not freed, and the free is queued and
    /// retried until it succeeds ([`deferred_frees`](crate::deferred_frees)); when
    /// ordering the free on `stream` after the free stream's work fails, that
    /// error, and the buffer is freed on its own stream instead (it is dropped).
    pub fn close(mut self, stream: Option<&Stream>) -> Result<()> {
        self.free(stream)
    }

    #[inline]
    fn free(&mut self, stream: Option<&Stream>) -> Result<()> {
        let Some((mr, free_stream)) = self.owner.take() else {
            return Ok(());
        };
        if let Some(other) = stream {
            if other.device() != &self.device {
                // Put the owner back: the buffer stays valid and is freed later.
                self.owner = Some((mr, free_stream));
                return Err(Error::other_device(
                    "freeing a buffer",
                    format!(
                        "the buffer is on device {} and the stream on device {}",
                        self.device.ordinal(),
                        other.device().ordinal()
                    ),
                ));
            }
        }
        // One relaxed load when no callback runs and nothing waits (the fast
        // path); drains waiting frees first on an ordinary thread.
        if crate::deferred::release_gate() {
            // Deferred-free rule: on a driver callback thread no CUDA call is
            // made; the free, with the ordering it asked for, runs later on an
            // ordinary thread, ordered after all the work queued by then.
            defer_free(
                mr.into_arc(),
                (self.ptr, self.size),
                free_stream,
                stream.cloned(),
                None,
            );
            return Ok(());
        }
        if let Some(other) = stream {
            // Work queued on the free stream must come before the free too.
            if let Err(e) = other.wait_stream(&free_stream) {
                // Nothing was freed: put the owner back, so that dropping the
                // buffer frees it on its own stream instead of leaking it.
                self.owner = Some((mr, free_stream));
                return Err(e);
            }
        }
        let s = stream.unwrap_or(&free_stream);
        // SAFETY: `ptr`/`size` came from `mr.allocate_raw` and are freed once (the
        // owner was taken; a failed free freed nothing, per the trait's contract,
        // and is retried by the deferred queue alone); later work cannot use them
        // (the buffer is gone).
        let r = unsafe { mr.deallocate(self.ptr, self.size, s) };
        if let Err(e) = &r {
            free_failed(mr, (self.ptr, self.size), s, e);
        }
        r
    }
}

/// Queues the free of `ptr`/`size` to `mr` on the deferred-free queue: retried on
/// an ordinary thread, on `on` after the work queued on `free_stream` (or on
/// `free_stream` itself), until it succeeds. A retry waits while that stream is
/// capturing a graph (its free would be captured, not done). The retry may run
/// on any thread: a per-thread default stream names the retrying thread's own,
/// so where one is involved the whole context is waited for first (nothing can
/// still use the memory, whichever stream then frees it).
fn defer_free(
    mr: Arc<dyn MemoryResource>,
    (ptr, size): (sys::CUdeviceptr, usize),
    free_stream: Stream,
    on: Option<Stream>,
    first_error: Option<String>,
) {
    let what = format!("freeing {size} bytes at {ptr:#x}");
    crate::deferred::defer(what, size, first_error, move || {
        const RETRYING: &str = "retrying a deferred free";
        const CAPTURING: &str = "the stream it is ordered on is capturing a graph";
        let s = on.as_ref().unwrap_or(&free_stream);
        // The stream's context, current: a special handle (the legacy default
        // stream) names the current context's.
        let _current = s.context().ensure_current()?;
        // Not even ordered while capturing (the wait would be captured).
        s.while_not_capturing(RETRYING, CAPTURING, || Ok(()))?;
        if s.is_per_thread_default() || free_stream.is_per_thread_default() {
            // Another thread's per-thread stream cannot be named here.
            free_stream.context().sync()?;
            s.context().sync()?;
        } else if let Some(o) = &on {
            // `close(Some(on))` was asked on a callback thread: the free
            // stream's work comes first. Made on every try until the free is
            // done: a capture of `o` begun since the check above may have
            // taken this wait, and the check below then refuses the free.
            o.wait_stream(&free_stream)?;
        }
        // Capture-gate rule: the free is queued outside any capture, as the
        // check found (a captured free would run whenever its graph is
        // launched, or never).
        s.while_not_capturing(RETRYING, CAPTURING, || {
            // SAFETY: the buffer's memory, taken out of it (the buffer is gone,
            // so no later work uses it); every earlier try failed, freeing
            // nothing (the trait's contract); ordered after the buffer's work
            // on `s` (or after all the context's work).
            unsafe { mr.deallocate(ptr, size, s) }
        })
    });
}

/// Orders the frees of `buffers` after the work queued on `stream` so far: one
/// event recorded on `stream`, waited for by each distinct free stream that is not
/// `stream`. If that fails, waits for `stream` instead, so that no free can
/// overtake the work, and reports the error.
#[inline]
pub(crate) fn order_frees_after<'a>(
    buffers: impl Iterator<Item = &'a Buffer>,
    stream: &Stream,
) -> Result<()> {
    // The common case, every operand freed on `stream` (or not owned): one
    // comparison per buffer, nothing gathered.
    let mut rest = buffers.skip_while(|b| !b.free_needs_ordering(stream));
    match rest.next() {
        None => Ok(()),
        Some(first) => order_frees_slow(first, rest, stream),
    }
}

/// As [`order_frees_after`], for a caller that holds `stream`'s capture gate
/// and found it not capturing ([`Stream::while_not_capturing`]): the event
/// recorded on `stream` is then an ordinary one, and the free streams wait for
/// it without taking their own capture gates (taking another stream's gate
/// exclusively while this one's is held would deadlock against a thread doing
/// the mirror image).
pub(crate) fn order_frees_after_uncaptured<'a>(
    buffers: impl Iterator<Item = &'a Buffer>,
    stream: &Stream,
) -> Result<()> {
    let mut rest = buffers.skip_while(|b| !b.free_needs_ordering(stream));
    match rest.next() {
        None => Ok(()),
        Some(first) => order_frees_slow_with(first, rest, stream, true),
    }
}

impl Buffer {
    /// Whether the buffer's free runs on a queue other than `stream`'s, so that
    /// work on `stream` using the buffer must be ordered before it (rule 2).
    #[inline]
    pub(crate) fn free_needs_ordering(&self, stream: &Stream) -> bool {
        matches!(&self.owner, Some((_, free)) if !free.is_same_queue(stream))
    }
}

#[cold]
#[inline(never)]
fn order_frees_slow<'a>(
    first: &'a Buffer,
    rest: impl Iterator<Item = &'a Buffer>,
    stream: &Stream,
) -> Result<()> {
    order_frees_slow_with(first, rest, stream, false)
}

/// [`order_frees_slow`]; `uncaptured`: the caller holds `stream`'s capture gate
/// and found it not capturing ([`order_frees_after_uncaptured`]).
fn order_frees_slow_with<'a>(
    first: &'a Buffer,
    rest: impl Iterator<Item = &'a Buffer>,
    stream: &Stream,
    uncaptured: bool,
) -> Result<()> {
    // Work queued on a capturing stream runs when its graph does, not now, and
    // `begin_capture`'s contract keeps every buffer it uses alive as long as the
    // graph can run: there is nothing to order. An event recorded in the capture
    // and waited for by the free stream would instead pull the free stream into
    // the capture (left unjoined, `end_capture` fails). A status the driver cannot
    // give falls through to the ordering below.
    if !uncaptured
        && matches!(
            stream.capture_status(),
            Ok(CaptureStatus::Active | CaptureStatus::Invalidated)
        )
    {
        return Ok(());
    }
    let mut frees: Vec<&Stream> = Vec::new();
    for b in std::iter::once(first).chain(rest) {
        if let Some((_, free)) = &b.owner {
            if !free.is_same_queue(stream) && !frees.iter().any(|s| s.is_same_queue(free)) {
                frees.push(free);
            }
        }
    }
    let order = || -> Result<()> {
        let e = crate::event::Event::in_context(
            stream.context(),
            crate::event::EventOptions::default(),
        )?;
        e.record(stream)?;
        for free in &frees {
            if uncaptured {
                free.wait_event_uncaptured(&e)?;
            } else {
                free.wait_event(&e)?;
            }
        }
        Ok(())
    };
    let r = order();
    if r.is_err() {
        let _ = stream.drain();
    }
    r
}

// Deferred-free rule: a drop on a driver callback thread, or whose free fails,
// hands the free to the deferred queue (`free`), so it neither calls CUDA there
// nor leaks.
impl Drop for Buffer {
    /// The buffer's free, on its free stream (rule 2 of the soundness contract:
    /// after the work queued there; deferred-free rule: never on a driver
    /// callback thread, and a failed free is retried, never dropped): `free`
    /// without another stream, inlined, so that only its hot path remains here
    /// (one relaxed load, then the resource's free).
    #[inline]
    fn drop(&mut self) {
        // Errors cannot be reported from drop: `close` reports them.
        let _ = self.free(None);
    }
}

/// A free that failed (deferred-free rule: never dropped, a leak): retried by the
/// deferred queue on `s`, which orders it after the free stream's work.
#[cold]
#[inline(never)]
fn free_failed(mr: Resource, (ptr, size): (sys::CUdeviceptr, usize), s: &Stream, e: &Error) {
    let first = crate::error::Report::new(e).to_string();
    defer_free(mr.into_arc(), (ptr, size), s.clone(), None, Some(first));
}

impl Buffer {
    /// How many `T`s the buffer holds, if it holds a whole number of aligned ones.
    pub(crate) fn typed_len<T>(&self, what: &'static str) -> Result<usize> {
        let () = NonZeroSize::<T>::OK;
        let t = std::mem::size_of::<T>();
        if self.size() % t != 0 || self.ptr() % std::mem::align_of::<T>() as u64 != 0 {
            return Err(Error::invalid(
                what,
                format!(
                    "{} bytes at {:#x} are not a whole number of aligned {t}-byte elements",
                    self.size(),
                    self.ptr()
                ),
            ));
        }
        Ok(self.size() / t)
    }
}
