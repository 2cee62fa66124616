//! Buffers and the memory resources that allocate them.

use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;
use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{Device, Stream};

/// What memory a resource hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryKind {
    /// Device memory: only kernels and copies touch it.
    Device,
    /// Page-locked host memory: the host reads and writes it, the device reaches it
    /// over the bus, and copies from it are truly asynchronous.
    Pinned,
    /// Managed (unified) memory: both sides, migrated on demand.
    Managed,
}

/// An allocator of [`Buffer`]s. Implement it to plug in your own.
///
/// # Safety
/// `allocate` must return memory of at least `size` bytes of the resource's
/// [`kind`](Self::kind), usable on `device()`, and `deallocate` must accept exactly
/// what `allocate` returned.
pub unsafe trait MemoryResource: fmt::Debug + Send + Sync {
    /// Allocates `size` bytes, ordered on `stream` where the resource can be.
    ///
    /// # Errors
    /// The resource's error.
    fn allocate(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr>;

    /// Frees what `allocate` returned, ordered on `stream` where it can be.
    ///
    /// # Safety
    /// `ptr` and `size` must come from this resource's `allocate`, once, and no
    /// work still to run may use the memory, other than work ordered before this
    /// call on `stream`.
    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()>;

    /// The memory's kind.
    fn kind(&self) -> MemoryKind;

    /// The device the memory belongs to.
    fn device(&self) -> Device;
}

/// Device memory from a stream-ordered pool (`cuMemAllocFromPoolAsync`): the device's
/// default pool, or a pool of its own.
#[derive(Debug)]
pub struct DeviceMemoryResource {
    device: Device,
    pool: sys::CUmemoryPool,
    owned: bool,
}

// SAFETY: a CUmemoryPool is a handle any thread may use.
unsafe impl Send for DeviceMemoryResource {}
// SAFETY: as above; the driver serialises pool operations.
unsafe impl Sync for DeviceMemoryResource {}

/// Options for a new device memory pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceMemoryPoolOptions {
    /// The most the pool may hold, in bytes; 0 for no limit.
    pub max_size: usize,
    /// Memory the pool keeps, rather than returning it to the system, at a
    /// synchronisation point; `None` for the driver's default (0).
    pub release_threshold: Option<u64>,
    /// Allocations may be shared with other processes through POSIX file
    /// descriptors.
    pub ipc_enabled: bool,
}

impl DeviceMemoryResource {
    /// The device's default pool (`cuDeviceGetDefaultMemPool`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn default_pool(device: &Device) -> Result<Self> {
        device.ensure_current()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is valid for writes.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device.handle()) }.check(|| {
            format!(
                "getting the default memory pool of device {}",
                device.ordinal()
            )
        })?;
        Ok(Self {
            device: *device,
            pool,
            owned: false,
        })
    }

    /// A new pool on `device`, destroyed when this resource and every buffer from it
    /// are gone.
    ///
    /// # Errors
    /// The driver's error.
    pub fn new_pool(device: &Device, options: DeviceMemoryPoolOptions) -> Result<Self> {
        device.ensure_current()?;
        let props = sys::CUmemPoolProps {
            allocType: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: if options.ipc_enabled {
                sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            } else {
                sys::CU_MEM_HANDLE_TYPE_NONE
            },
            location: sys::CUmemLocation {
                type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
                id: device.ordinal() as i32,
            },
            maxSize: options.max_size,
            ..Default::default()
        };
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `props` is fully initialised; `pool` is valid for writes.
        unsafe { sys::cuMemPoolCreate(&mut pool, &props) }
            .check(|| format!("creating a memory pool on device {}", device.ordinal()))?;
        let mr = Self {
            device: *device,
            pool,
            owned: true,
        };
        if let Some(mut t) = options.release_threshold {
            // SAFETY: the attribute takes a `cuuint64_t`.
            unsafe {
                sys::cuMemPoolSetAttribute(
                    pool,
                    sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&raw mut t).cast(),
                )
            }
            .check(|| "setting a memory pool's release threshold")?;
        }
        Ok(mr)
    }

    /// The driver's pool handle.
    pub fn handle(&self) -> sys::CUmemoryPool {
        self.pool
    }

    /// Bytes the pool holds from the system now (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn reserved_bytes(&self) -> Result<u64> {
        let mut v: u64 = 0;
        // SAFETY: the attribute writes a `cuuint64_t`.
        unsafe {
            sys::cuMemPoolGetAttribute(
                self.pool,
                sys::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                (&raw mut v).cast(),
            )
        }
        .check(|| "reading a memory pool's reserved size")?;
        Ok(v)
    }

    /// Allocates a buffer of `size` bytes ordered on `stream` (see
    /// [`Buffer::allocate`]).
    ///
    /// # Errors
    /// As [`Buffer::allocate`].
    pub fn allocate_buffer(self: &Arc<Self>, size: usize, stream: &Stream) -> Result<Buffer> {
        Buffer::allocate(self.clone(), size, stream)
    }
}

impl Drop for DeviceMemoryResource {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: an owned pool; every buffer holds an `Arc` of this resource, so
            // none is left (their frees are queued; the driver defers the release).
            let _ = unsafe { sys::cuMemPoolDestroy(self.pool) };
        }
    }
}

// SAFETY: pool allocations are device memory of `self.device`, freed with
// `cuMemFreeAsync`, which takes exactly what `cuMemAllocFromPoolAsync` returned.
unsafe impl MemoryResource for DeviceMemoryResource {
    fn allocate(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr> {
        self.device.ensure_current()?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: a live pool and stream; `p` is valid for writes.
        unsafe { sys::cuMemAllocFromPoolAsync(&mut p, size, self.pool, stream.handle()) }.check(
            || {
                format!(
                    "allocating {size} bytes on device {}",
                    self.device.ordinal()
                )
            },
        )?;
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        self.device.ensure_current()?;
        // SAFETY: per the trait's contract.
        unsafe { sys::cuMemFreeAsync(ptr, stream.handle()) }
            .check(|| format!("freeing {size} bytes on device {}", self.device.ordinal()))
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }

    fn device(&self) -> Device {
        self.device
    }
}

/// Page-locked host memory (`cuMemHostAlloc`, portable to every context).
/// Allocation is not stream-ordered: freeing waits for the buffer's free stream.
#[derive(Debug, Clone, Copy)]
pub struct PinnedMemoryResource {
    device: Device,
}

impl PinnedMemoryResource {
    /// A pinned-memory resource whose buffers are used from `device`.
    pub fn new(device: &Device) -> Self {
        Self { device: *device }
    }
}

// SAFETY: `cuMemHostAlloc` memory is host memory the device can reach, freed by
// `cuMemFreeHost` with the pointer it returned.
unsafe impl MemoryResource for PinnedMemoryResource {
    fn allocate(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        self.device.ensure_current()?;
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `p` is valid for writes.
        unsafe { sys::cuMemHostAlloc(&mut p, size, sys::CU_MEMHOSTALLOC_PORTABLE) }
            .check(|| format!("allocating {size} bytes of pinned host memory"))?;
        Ok(p as sys::CUdeviceptr)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // Not stream-ordered: wait for work that may still use it.
        stream.sync()?;
        // SAFETY: per the trait's contract, `ptr` came from `cuMemHostAlloc`.
        unsafe { sys::cuMemFreeHost(ptr as *mut std::ffi::c_void) }
            .check(|| format!("freeing {size} bytes of pinned host memory"))
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Pinned
    }

    fn device(&self) -> Device {
        self.device
    }
}

/// Managed (unified) memory (`cuMemAllocManaged`, attached globally).
/// Allocation is not stream-ordered: freeing waits for the buffer's free stream.
#[derive(Debug, Clone, Copy)]
pub struct ManagedMemoryResource {
    device: Device,
}

impl ManagedMemoryResource {
    /// A managed-memory resource for `device`.
    pub fn new(device: &Device) -> Self {
        Self { device: *device }
    }
}

// SAFETY: `cuMemAllocManaged` memory is reachable from host and device and freed by
// `cuMemFree` with the pointer it returned.
unsafe impl MemoryResource for ManagedMemoryResource {
    fn allocate(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        self.device.ensure_current()?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: `p` is valid for writes.
        unsafe { sys::cuMemAllocManaged(&mut p, size, sys::CU_MEM_ATTACH_GLOBAL.0) }
            .check(|| format!("allocating {size} bytes of managed memory"))?;
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        stream.sync()?;
        self.device.ensure_current()?;
        // SAFETY: per the trait's contract, `ptr` came from `cuMemAllocManaged`.
        unsafe { sys::cuMemFree(ptr) }.check(|| format!("freeing {size} bytes of managed memory"))
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Managed
    }

    fn device(&self) -> Device {
        self.device
    }
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
    owner: Option<(Arc<dyn MemoryResource>, Stream)>,
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("device", &self.device)
            .field("owned", &self.owner.is_some())
            .finish()
    }
}

impl Buffer {
    /// Allocates `size` bytes from `mr`, ordered on `stream`, which also becomes
    /// the buffer's free stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size or a stream of another device;
    /// the resource's error.
    pub fn allocate(mr: Arc<dyn MemoryResource>, size: usize, stream: &Stream) -> Result<Self> {
        let device = mr.device();
        let what = || format!("allocating {size} bytes on device {}", device.ordinal());
        if size == 0 {
            return Err(Error::invalid(what(), "the size is zero"));
        }
        if stream.device() != &device {
            return Err(Error::invalid(
                what(),
                format!("the stream belongs to device {}", stream.device().ordinal()),
            ));
        }
        let ptr = mr.allocate(size, stream)?;
        Ok(Self {
            ptr,
            size,
            kind: mr.kind(),
            device,
            owner: Some((mr, stream.clone())),
        })
    }

    /// Wraps memory someone else owns; it is never freed by this buffer.
    ///
    /// # Safety
    /// `ptr` must address `size` bytes of memory of `kind` usable on `device`, valid
    /// for as long as the buffer and the work issued through it.
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
        }
    }

    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
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

    /// Whether kernels can touch it (every kind can).
    pub fn is_device_accessible(&self) -> bool {
        true
    }

    /// Whether the host can read and write it directly.
    pub fn is_host_accessible(&self) -> bool {
        matches!(self.kind, MemoryKind::Pinned | MemoryKind::Managed)
    }

    /// Whether it is managed memory.
    pub fn is_managed(&self) -> bool {
        self.kind == MemoryKind::Managed
    }

    /// Changes the stream the buffer is freed on.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device.
    pub fn set_free_stream(&mut self, stream: &Stream) -> Result<()> {
        self.check_stream(stream, "setting a buffer's free stream")?;
        if let Some((_, s)) = &mut self.owner {
            *s = stream.clone();
        }
        Ok(())
    }

    fn check_stream(&self, stream: &Stream, what: &'static str) -> Result<()> {
        if stream.device() != &self.device {
            return Err(Error::invalid(
                what,
                format!(
                    "the buffer is on device {} and the stream on device {}",
                    self.device.ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        self.device.ensure_current()
    }

    fn check_len(&self, bytes: usize, what: &'static str) -> Result<()> {
        if bytes > self.size {
            return Err(Error::invalid(
                what,
                format!(
                    "{bytes} bytes do not fit in a buffer of {} bytes",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    /// Copies `src` into the start of the buffer on `stream`, and waits for the copy
    /// (so `src` may be reused at once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is larger than the buffer or the stream
    /// is of another device; the driver's error.
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(src);
        self.check_len(bytes, "copying host memory into a buffer")?;
        self.check_stream(stream, "copying host memory into a buffer")?;
        // SAFETY: `src` holds `bytes` readable bytes and the buffer at least as many;
        // the stream is synchronised before `src` can be touched again.
        unsafe { sys::cuMemcpyHtoDAsync(self.ptr, src.as_ptr().cast(), bytes, stream.handle()) }
            .check(|| {
                format!(
                    "copying {bytes} bytes from the host to device {}",
                    self.device.ordinal()
                )
            })?;
        stream.sync()
    }

    /// Copies the start of the buffer into `dst` on `stream`, and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `dst` is larger than the buffer or the stream
    /// is of another device; the driver's error.
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        self.check_len(bytes, "copying a buffer to host memory")?;
        self.check_stream(stream, "copying a buffer to host memory")?;
        // SAFETY: `dst` holds `bytes` writable bytes (any bit pattern is a valid `T`:
        // `Pod`); the stream is synchronised before `dst` is handed back.
        unsafe {
            sys::cuMemcpyDtoHAsync(dst.as_mut_ptr().cast(), self.ptr, bytes, stream.handle())
        }
        .check(|| {
            format!(
                "copying {bytes} bytes from device {} to the host",
                self.device.ordinal()
            )
        })?;
        stream.sync()
    }

    /// Copies all of `src` into the start of this buffer, ordered on `stream`
    /// (asynchronous: both buffers are freed in stream order, so put their free
    /// streams after `stream`, or use one stream).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is larger than this buffer; the
    /// driver's error.
    pub fn copy_from(&mut self, src: &Buffer, stream: &Stream) -> Result<()> {
        self.check_len(src.size, "copying between buffers")?;
        self.check_stream(stream, "copying between buffers")?;
        // SAFETY: both spans are live and large enough; the copy is stream-ordered.
        unsafe { sys::cuMemcpyAsync(self.ptr, src.ptr, src.size, stream.handle()) }
            .check(|| format!("copying {} bytes between buffers", src.size))
    }

    /// Copies this buffer into the start of `dst` (see [`copy_from`](Self::copy_from)).
    ///
    /// # Errors
    /// As [`copy_from`](Self::copy_from).
    pub fn copy_to(&self, dst: &mut Buffer, stream: &Stream) -> Result<()> {
        dst.copy_from(self, stream)
    }

    /// Fills the buffer with a byte, ordered on `stream`.
    ///
    /// # Errors
    /// The driver's error; a stream of another device.
    pub fn fill_u8(&mut self, value: u8, stream: &Stream) -> Result<()> {
        self.check_stream(stream, "filling a buffer")?;
        // SAFETY: `size` bytes are live.
        unsafe { sys::cuMemsetD8Async(self.ptr, value, self.size, stream.handle()) }
            .check(|| format!("filling {} bytes", self.size))
    }

    /// Fills the buffer with a 2-byte pattern, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of 2; the driver's error.
    pub fn fill_u16(&mut self, value: u16, stream: &Stream) -> Result<()> {
        self.fill_wide(2, stream, |p, n, s| {
            // SAFETY: `n` 2-byte elements are live.
            unsafe { sys::cuMemsetD16Async(p, value, n, s) }
        })
    }

    /// Fills the buffer with a 4-byte pattern, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of 4; the driver's error.
    pub fn fill_u32(&mut self, value: u32, stream: &Stream) -> Result<()> {
        self.fill_wide(4, stream, |p, n, s| {
            // SAFETY: `n` 4-byte elements are live.
            unsafe { sys::cuMemsetD32Async(p, value, n, s) }
        })
    }

    fn fill_wide(
        &mut self,
        width: usize,
        stream: &Stream,
        f: impl FnOnce(sys::CUdeviceptr, usize, sys::CUstream) -> sys::CUresult,
    ) -> Result<()> {
        if self.size % width != 0 || self.ptr % width as u64 != 0 {
            return Err(Error::invalid(
                "filling a buffer",
                format!(
                    "a {width}-byte pattern needs a size and address that are multiples of {width}"
                ),
            ));
        }
        self.check_stream(stream, "filling a buffer")?;
        f(self.ptr, self.size / width, stream.handle())
            .check(|| format!("filling {} bytes", self.size))
    }

    /// Frees the buffer now (ordered on `stream`, or its free stream), reporting
    /// errors that dropping it would swallow.
    ///
    /// # Errors
    /// The resource's error.
    pub fn close(mut self, stream: Option<&Stream>) -> Result<()> {
        self.free(stream)
    }

    fn free(&mut self, stream: Option<&Stream>) -> Result<()> {
        let Some((mr, free_stream)) = self.owner.take() else {
            return Ok(());
        };
        let s = stream.unwrap_or(&free_stream);
        // SAFETY: `ptr`/`size` came from `mr.allocate` and are freed once (the owner
        // was taken); later work cannot use them (the buffer is gone).
        unsafe { mr.deallocate(self.ptr, self.size, s) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // Errors cannot be reported from drop: `close` reports them.
        let _ = self.free(None);
    }
}
