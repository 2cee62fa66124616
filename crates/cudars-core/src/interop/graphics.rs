//! OpenGL interop: [`GraphicsResource`], an OpenGL buffer or image registered
//! with CUDA (`cuGraphicsGLRegisterBuffer`, `cuGraphicsGLRegisterImage`), and
//! [`GraphicsMapping`], the guard of one mapping (`cuGraphicsMapResources`)
//! that lends the mapped memory as a [`MappedBuffer`] or a [`MappedArray`] and
//! unmaps on drop.
//!
//! Architecture Invariant: the mapped memory is reachable only through a
//! borrow of the mapping, and the mapping through an exclusive borrow of the
//! resource: the pointer or array cannot outlive the mapping, a resource is
//! mapped once at a time, and it cannot be unregistered while mapped. The
//! borrowed [`Buffer`] and [`OpaqueArray`] are never freed or destroyed here
//! (the graphics API owns the memory), and no `&mut` to them is handed out,
//! so none can be swapped out of its guard.
//! A mapping is recorded in the resource itself (`mapped_on`), not only in its
//! guard: the guard may be leaked (`std::mem::forget` is safe), which ends the
//! borrows (no lent memory can be reached any more) but leaves the resource
//! mapped; the resource's next `map`, `set_map_flags`, `close` or drop then
//! unmaps it on its stream first (after the work ordered before it) and waits
//! for that, before mapping again or unregistering.
//! The lent buffer's free stream is the mapping's and its memory resource
//! frees nothing: the free-ordering rule puts work queued through the buffer on
//! any stream before the unmapping, which is queued on that stream after it.

use std::marker::PhantomData;
use std::ops::{BitOr, BitOrAssign, Deref};
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{
    context::Context, device::Device, launch::array::OpaqueArray, memory::buffer::Buffer,
    memory::resource::MemoryKind, memory::resource::MemoryResource, memory::view::DeviceView,
    memory::view::DeviceViewMut, stream::Stream,
};

/// How CUDA will use a registered resource (`CU_GRAPHICS_REGISTER_FLAGS_*`);
/// combine with `|`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GraphicsRegisterFlags(u32);

impl GraphicsRegisterFlags {
    /// No hint: CUDA may read and write.
    pub const NONE: Self = Self(sys::CU_GRAPHICS_REGISTER_FLAGS_NONE.0);
    /// CUDA will only read (`CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY`).
    pub const READ_ONLY: Self = Self(sys::CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY.0);
    /// CUDA will overwrite every byte, reading none
    /// (`CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD`).
    pub const WRITE_DISCARD: Self = Self(sys::CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD.0);
    /// The mapped array can back a surface
    /// (`CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST`; images only).
    pub const SURFACE_LOAD_STORE: Self = Self(sys::CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST.0);
    /// Textures made from the array may gather
    /// (`CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER`; images only).
    pub const TEXTURE_GATHER: Self = Self(sys::CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER.0);

    /// The driver's bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

impl BitOr for GraphicsRegisterFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl BitOrAssign for GraphicsRegisterFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

/// How CUDA will use the next mappings of a resource
/// (`CU_GRAPHICS_MAP_RESOURCE_FLAGS_*`), set with
/// [`GraphicsResource::set_map_flags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum GraphicsMapFlags {
    /// CUDA may read and write.
    #[default]
    None,
    /// CUDA will only read.
    ReadOnly,
    /// CUDA will overwrite every byte, reading none.
    WriteDiscard,
}

impl GraphicsMapFlags {
    fn raw(self) -> u32 {
        match self {
            Self::None => sys::CU_GRAPHICS_MAP_RESOURCE_FLAGS_NONE.0,
            Self::ReadOnly => sys::CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY.0,
            Self::WriteDiscard => sys::CU_GRAPHICS_MAP_RESOURCE_FLAGS_WRITE_DISCARD.0,
        }
    }
}

/// An OpenGL buffer object or image (texture or renderbuffer) registered with
/// CUDA (`CUgraphicsResource`), unregistered on drop
/// (`cuGraphicsUnregisterResource`) or by [`close`](Self::close), which
/// reports errors. [`map`](Self::map) lends its memory to CUDA work.
///
/// **OpenGL context.** Registering, mapping and unmapping need an OpenGL
/// context current on the calling thread (the one the object belongs to, or
/// one sharing its objects); without one the driver refuses
/// (`CUDA_ERROR_INVALID_GRAPHICS_CONTEXT` or `CUDA_ERROR_UNKNOWN`). The CUDA
/// device must be the one that runs that context ([`gl_devices`] lists them).
/// While a resource is mapped, OpenGL must not use the object; the results of
/// doing so are undefined.
/// Drop or [`close`](Self::close) a resource on a thread where its OpenGL
/// context is current, before the OpenGL object is deleted, as registration
/// needs.
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream, vbo: u32) -> cudars_core::Result<()> {
/// use cudars_core::{GraphicsRegisterFlags, GraphicsResource};
/// // An OpenGL context is current on this thread and `vbo` holds 1024 floats.
/// let mut res = GraphicsResource::from_gl_buffer(dev, vbo, GraphicsRegisterFlags::WRITE_DISCARD)?;
/// {
///     let mut mapping = res.map(s)?;
///     let mut mem = mapping.buffer()?;
///     mem.view_mut::<f32>()?.fill(1.0, s)?;
/// } // unmapped here, ordered after the fill on `s`
/// res.close()?;
/// # Ok(()) }
/// ```
pub struct GraphicsResource {
    handle: sys::CUgraphicsResource,
    ctx: Context,
    /// The stream of the current mapping, while mapped: set by `map`, cleared
    /// by the unmapping (the guard's, or the resource's own for a leaked
    /// guard).
    mapped_on: Option<Stream>,
}

// SAFETY: a graphics resource handle may be used from any thread (the OpenGL
// context requirement is documented; the driver reports its absence); mapping
// takes `&mut self`.
// Soundness contract: rule 11.
unsafe impl Send for GraphicsResource {}
// SAFETY: `&self` methods only read the handle.
// Soundness contract: rule 11.
unsafe impl Sync for GraphicsResource {}

impl std::fmt::Debug for GraphicsResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphicsResource")
            .field("handle", &self.handle)
            .field("device", &self.ctx.device().ordinal())
            .finish()
    }
}

impl GraphicsResource {
    /// Registers the OpenGL buffer object named `gl_buffer` (a `GLuint`) for
    /// CUDA on `device` (whose primary context is made current for the call),
    /// as `cuda.core`'s `GraphicsResource.from_gl_buffer`. An OpenGL context
    /// must be current on this thread (see the type's documentation).
    ///
    /// # Errors
    /// The driver's error, naming the buffer: a name that is not a buffer
    /// object of the current OpenGL context (`CUDA_ERROR_INVALID_VALUE`), no
    /// OpenGL context, a context on another device.
    pub fn from_gl_buffer(
        device: &Device,
        gl_buffer: u32,
        flags: GraphicsRegisterFlags,
    ) -> Result<Self> {
        Self::register(
            device,
            // SAFETY: `out` is valid for writes; the driver checks the name
            // and the flags against the current OpenGL context.
            |out| unsafe { sys::cuGraphicsGLRegisterBuffer(out, gl_buffer, flags.0) },
            || format!("registering OpenGL buffer {gl_buffer}"),
        )
    }

    /// Registers the OpenGL texture or renderbuffer named `image` of `target`
    /// (a `GLenum`: `GL_TEXTURE_2D` is `0x0DE1`, `GL_TEXTURE_3D` `0x806F`,
    /// `GL_TEXTURE_RECTANGLE` `0x84F5`, `GL_TEXTURE_CUBE_MAP` `0x8513`,
    /// `GL_TEXTURE_2D_ARRAY` `0x8C1A`, `GL_RENDERBUFFER` `0x8D41`) for CUDA on
    /// `device`, as `cuda.core`'s `GraphicsResource.from_gl_image`. A mapping
    /// lends it as an array ([`GraphicsMapping::array`]). An OpenGL context
    /// must be current on this thread.
    ///
    /// # Errors
    /// The driver's error, naming the image: a name that is not an image of
    /// that target, an internal format CUDA cannot share, no OpenGL context.
    pub fn from_gl_image(
        device: &Device,
        image: u32,
        target: u32,
        flags: GraphicsRegisterFlags,
    ) -> Result<Self> {
        Self::register(
            device,
            // SAFETY: `out` is valid for writes; the driver checks the name,
            // the target and the flags against the current OpenGL context.
            |out| unsafe { sys::cuGraphicsGLRegisterImage(out, image, target, flags.0) },
            || format!("registering OpenGL image {image} (target {target:#x})"),
        )
    }

    /// Makes `device`'s primary context current and registers through
    /// `call`, which writes the handle; `what` names the object.
    fn register(
        device: &Device,
        call: impl FnOnce(&mut sys::CUgraphicsResource) -> sys::CUresult,
        what: impl FnOnce() -> String,
    ) -> Result<Self> {
        let ctx = Context::primary(device)?;
        let _current = ctx.ensure_current()?;
        let mut handle: sys::CUgraphicsResource = std::ptr::null_mut();
        call(&mut handle)
            .check(|| format!("{} with CUDA on device {}", what(), device.ordinal()))?;
        Ok(Self {
            handle,
            ctx,
            mapped_on: None,
        })
    }

    /// Unmaps the resource if the guard of its last mapping was leaked
    /// (`std::mem::forget`), ordered on that mapping's stream after the work
    /// queued there (and the work on other streams that its lent buffer
    /// ordered before it), as the guard's drop would have, then waits for that
    /// stream: nothing stream-ordered of the old mapping is left before a new
    /// mapping on another stream or an unregistration (which is not
    /// stream-ordered). Only a leak takes this path.
    ///
    /// # Errors
    /// The driver's error; the resource then still counts as mapped, or its
    /// unmapping may still be pending (the caller gives up).
    fn unmap_leaked(&mut self) -> Result<()> {
        if self.mapped_on.is_none() {
            return Ok(());
        }
        let _current = self.ctx.ensure_current()?;
        let Some(stream) = self.mapped_on.take() else {
            return Ok(());
        };
        let mut handle = self.handle;
        // SAFETY: a mapped resource whose guard is gone (leaked: a live guard
        // borrows the resource exclusively), unmapped once (`mapped_on` was
        // taken); no lent memory can be reached any more (it borrowed the
        // guard).
        let unmapped = unsafe { sys::cuGraphicsUnmapResources(1, &mut handle, stream.handle()) }
            .check(|| "unmapping a graphics resource whose mapping was leaked");
        if let Err(e) = unmapped {
            self.mapped_on = Some(stream);
            return Err(e);
        }
        // If the wait fails, `mapped_on` is clear but the unmapping may still
        // be pending: the caller stops (a failed `close` or drop leaks the
        // registration; a failed `map` or `set_map_flags` returns the error
        // with nothing mapped).
        stream.sync()?;
        Ok(())
    }

    /// The driver's handle (`cuda.core`'s `handle` and `resource_handle`).
    pub fn handle(&self) -> sys::CUgraphicsResource {
        self.handle
    }

    /// The device the resource is registered on.
    pub fn device(&self) -> &Device {
        self.ctx.device()
    }

    /// Sets how CUDA will use the next mappings
    /// (`cuGraphicsResourceSetMapFlags`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_map_flags(&mut self, flags: GraphicsMapFlags) -> Result<()> {
        self.unmap_leaked()?;
        let _current = self.ctx.ensure_current()?;
        // SAFETY: a live, unmapped resource (a mapping borrows it exclusively,
        // and one whose guard was leaked was unmapped just now).
        unsafe { sys::cuGraphicsResourceSetMapFlags(self.handle, flags.raw()) }
            .check(|| format!("setting the map flags of a graphics resource to {flags:?}"))
    }

    /// Maps the resource for CUDA, ordered on `stream`
    /// (`cuGraphicsMapResources`): OpenGL work issued before is done before
    /// CUDA work queued on `stream` after this call. The guard lends the
    /// memory ([`GraphicsMapping::buffer`], [`GraphicsMapping::array`]) and
    /// unmaps on drop, ordered on the same stream; a resource is mapped once
    /// at a time (the guard borrows it exclusively). If the guard of the
    /// previous mapping was leaked, that mapping is unmapped first, on its
    /// stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device; the driver's
    /// error (no OpenGL context, the object in use by OpenGL).
    pub fn map(&mut self, stream: &Stream) -> Result<GraphicsMapping<'_>> {
        const WHAT: &str = "mapping a graphics resource";
        if stream.device() != self.ctx.device() {
            return Err(Error::other_device(
                WHAT,
                format!(
                    "the resource is registered on device {} and the stream is on device {}",
                    self.ctx.device().ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        self.unmap_leaked()?;
        let _current = self.ctx.ensure_current()?;
        let mut handle = self.handle;
        // SAFETY: one live, unmapped resource (see `unmap_leaked`); the stream
        // is live.
        unsafe { sys::cuGraphicsMapResources(1, &mut handle, stream.handle()) }.check(|| WHAT)?;
        // Recorded in the resource before the guard exists, so that leaking
        // the guard cannot hide the mapping from the resource.
        self.mapped_on = Some(stream.clone());
        Ok(GraphicsMapping {
            resource: self,
            stream: stream.clone(),
            mapped: true,
        })
    }

    /// Unregisters the resource (`cuGraphicsUnregisterResource`), reporting
    /// the driver's error, which drop cannot (`cuda.core`'s `close`).
    ///
    /// # Errors
    /// The driver's error; the handle is given up either way, except when a
    /// leaked mapping (see [`map`](Self::map)) cannot be unmapped and waited
    /// for: the registration is then leaked rather than torn down under work
    /// that may still use it.
    pub fn close(mut self) -> Result<()> {
        let unmapped = self.unmap_leaked();
        let mut this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; each field with a
        // destructor is moved out once.
        let (ctx, leaked) = unsafe {
            (
                std::ptr::read(&this.ctx),
                std::mem::ManuallyDrop::new(this.mapped_on.take()),
            )
        };
        if let Err(e) = unmapped {
            // Still mapped, with work possibly pending: leak the registration
            // (and the stream of the mapping).
            let _ = leaked;
            return Err(e);
        }
        let _current = ctx.ensure_current()?;
        // SAFETY: a live, unmapped resource (a live mapping borrows it, and a
        // leaked one was unmapped and waited for above), unregistered once.
        unsafe { sys::cuGraphicsUnregisterResource(this.handle) }
            .check(|| "unregistering a graphics resource")
    }
}

// Deferred-release rule: on a driver callback thread the unregistering (a CUDA
// call) is handed to the deferred queue instead of made there.
impl Drop for GraphicsResource {
    // Soundness rule (issue 26, "a leaked guard leaves the state to its
    // owner"): the resource, not the mapping guard, records whether it is
    // mapped, so a leaked guard's mapping is unmapped here (after the work
    // ordered before it) and waited for before the unregistration; if that
    // fails, the registration is leaked.
    fn drop(&mut self) {
        if self.handle.is_null() {
            return;
        }
        if crate::deferred::must_defer() {
            // On a driver callback thread: the whole resource (a leaked
            // mapping's unmapping included) is dropped later, on an ordinary
            // thread.
            let moved = GraphicsResource {
                handle: std::mem::replace(&mut self.handle, std::ptr::null_mut()),
                ctx: self.ctx.clone(),
                mapped_on: self.mapped_on.take(),
            };
            crate::deferred::defer_drop("unregistering a graphics resource", moved);
            return;
        }
        // Errors cannot be reported from drop (`close` reports them).
        if self.unmap_leaked().is_err() {
            return;
        }
        let _current = self.ctx.ensure_current();
        // SAFETY: a live, unmapped resource (a mapping borrows it; a leaked
        // one was unmapped and waited for above), unregistered once.
        let rc = unsafe { sys::cuGraphicsUnregisterResource(self.handle) };
        crate::cleanup::driver(
            rc,
            "unregistering a graphics resource (cuGraphicsUnregisterResource)",
        );
    }
}

/// One mapping of a [`GraphicsResource`], from [`GraphicsResource::map`]:
/// lends the memory, and unmaps on drop or by [`unmap`](Self::unmap), ordered
/// on the stream it was mapped on. Work this crate queues through a
/// [`MappedBuffer`] (its views' copies, fills and launches) on another stream
/// is ordered before the unmapping, as a buffer's free is ordered after its
/// work; work on a raw [`pointer`](Self::pointer) or array handle must be
/// queued on the mapping's stream or ordered before it by the caller (the
/// driver orders only that stream's work before OpenGL's).
pub struct GraphicsMapping<'r> {
    resource: &'r mut GraphicsResource,
    stream: Stream,
    mapped: bool,
}

impl std::fmt::Debug for GraphicsMapping<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphicsMapping")
            .field("resource", &self.resource)
            .field("stream", &self.stream.handle())
            .finish()
    }
}

impl GraphicsMapping<'_> {
    /// The resource mapped.
    pub fn resource(&self) -> &GraphicsResource {
        self.resource
    }

    /// The stream the mapping and the unmapping are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The device address and size in bytes of a mapped buffer object
    /// (`cuGraphicsResourceGetMappedPointer`).
    ///
    /// # Errors
    /// The driver's error: `CUDA_ERROR_NOT_MAPPED_AS_POINTER` for an image.
    pub fn pointer(&self) -> Result<(u64, usize)> {
        let _current = self.resource.ctx.ensure_current()?;
        let mut ptr: sys::CUdeviceptr = 0;
        let mut size: usize = 0;
        // SAFETY: a mapped resource; both outputs are valid for writes.
        unsafe {
            sys::cuGraphicsResourceGetMappedPointer(&mut ptr, &mut size, self.resource.handle)
        }
        .check(|| "getting the device pointer of a mapped graphics resource")?;
        Ok((ptr, size))
    }

    /// The mapped buffer object's memory as a [`Buffer`] borrowed from the
    /// mapping (`cuda.core`'s `map` returns a `Buffer` too): copies, fills and
    /// typed views ([`MappedBuffer::view`], [`MappedBuffer::view_mut`]) work
    /// on it, and it cannot outlive the mapping.
    ///
    /// # Errors
    /// As [`pointer`](Self::pointer).
    pub fn buffer(&mut self) -> Result<MappedBuffer<'_>> {
        let (ptr, size) = self.pointer()?;
        // The driver's mapped range, valid until the unmapping, which the
        // returned borrow of `self` comes before. Its "free" frees nothing: it
        // is ordered on the mapping's stream after the buffer's work on any
        // other stream, so the unmapping, queued there later, comes after it.
        let device = *self.resource.device();
        let mr: Arc<dyn MemoryResource> = Arc::new(LentMemory { device });
        let buffer = Buffer::from_parts(
            ptr,
            size,
            MemoryKind::Device,
            device,
            (mr, &self.stream),
            false,
        );
        Ok(MappedBuffer {
            buffer,
            _mapping: PhantomData,
        })
    }

    /// Layer or face `index` at mipmap level `level` of a mapped image, as
    /// an array borrowed from the mapping
    /// (`cuGraphicsSubResourceGetMappedArray`): [`OpaqueArray::copy_from_host`]
    /// and [`OpaqueArray::copy_to_host`] work on it, and its shape and format
    /// are the driver's.
    ///
    /// # Errors
    /// The driver's error: `CUDA_ERROR_NOT_MAPPED_AS_ARRAY` for a buffer
    /// object, `CUDA_ERROR_INVALID_VALUE` for an index or level the image
    /// lacks; [`Error::Unsupported`] for an element format
    /// [`ArrayFormat`](crate::ArrayFormat) does not name.
    pub fn array(&self, index: u32, level: u32) -> Result<MappedArray<'_>> {
        const WHAT: &str = "getting the array of a mapped graphics resource";
        let _current = self.resource.ctx.ensure_current()?;
        let mut handle: sys::CUarray = std::ptr::null_mut();
        // SAFETY: a mapped resource; `handle` is valid for writes.
        unsafe {
            sys::cuGraphicsSubResourceGetMappedArray(
                &mut handle,
                self.resource.handle,
                index,
                level,
            )
        }
        .check(|| format!("{WHAT} (index {index}, level {level})"))?;
        // SAFETY: the driver's array, valid until the unmapping, which the
        // returned borrow of `self` comes before.
        let array = unsafe { OpaqueArray::mapped(handle, &self.resource.ctx, WHAT) }?;
        Ok(MappedArray {
            array,
            _mapping: PhantomData,
        })
    }

    /// Unmaps the resource (`cuGraphicsUnmapResources`), ordered on the
    /// mapping's stream: CUDA work queued there before is done before OpenGL
    /// work issued after. Reports the driver's error, which drop cannot.
    ///
    /// # Errors
    /// The driver's error; the guard is given up either way (the resource
    /// then still counts as mapped, and unmaps before its next use or its
    /// unregistration).
    pub fn unmap(mut self) -> Result<()> {
        self.mapped = false;
        self.unmap_now()
    }

    fn unmap_now(&mut self) -> Result<()> {
        let _current = self.resource.ctx.ensure_current()?;
        let mut handle = self.resource.handle;
        // SAFETY: a mapped resource, unmapped once: `mapped` guards the drop,
        // and `mapped_on` is cleared on success, so the resource does not
        // unmap it again (after a failure the resource still counts it as
        // mapped, and tries again before its next use or unregistration).
        unsafe { sys::cuGraphicsUnmapResources(1, &mut handle, self.stream.handle()) }
            .check(|| "unmapping a graphics resource")?;
        self.resource.mapped_on = None;
        Ok(())
    }
}

impl Drop for GraphicsMapping<'_> {
    // Soundness rule (issue 26): not needed for soundness. A leaked guard
    // ends its borrows (no lent memory stays reachable) and leaves the
    // mapping recorded in the resource, which unmaps it before its next use
    // or its unregistration.
    fn drop(&mut self) {
        if self.mapped {
            // Errors cannot be returned from drop (`unmap` returns them): the
            // cleanup hook gets them.
            crate::cleanup::report(self.unmap_now());
        }
    }
}

/// The "resource" of a mapped buffer object's memory: the graphics API lends
/// it; nothing is allocated or freed here.
#[derive(Debug)]
struct LentMemory {
    device: Device,
}

// SAFETY: `allocate_raw` never returns memory, so `deallocate` is only ever
// handed the mapped range of `GraphicsMapping::buffer`, which it leaves to the
// unmapping.
// Soundness contract: rules 2 and 8.
unsafe impl MemoryResource for LentMemory {
    unsafe fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        Err(Error::unsupported(
            format!("allocating {size} bytes"),
            "the memory of a mapped graphics resource is lent by the graphics API: \
             nothing can be allocated from it",
        ))
    }

    unsafe fn deallocate(
        &self,
        _ptr: sys::CUdeviceptr,
        _size: usize,
        _stream: &Stream,
    ) -> Result<()> {
        Ok(())
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }

    fn device(&self) -> Device {
        self.device
    }
}

/// A mapped buffer object's memory, borrowed from its [`GraphicsMapping`]:
/// derefs to a [`Buffer`] (never freed by it); [`view_mut`](Self::view_mut)
/// lends it for writing.
#[derive(Debug)]
pub struct MappedBuffer<'m> {
    buffer: Buffer,
    _mapping: PhantomData<&'m mut ()>,
}

impl MappedBuffer<'_> {
    /// The memory as `T`s.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of `T`'s or
    /// the address is not aligned for `T`.
    pub fn view<T: Pod>(&self) -> Result<DeviceView<'_, T>> {
        self.buffer.view()
    }

    /// The memory as `T`s, for writing.
    ///
    /// # Errors
    /// As [`view`](Self::view).
    pub fn view_mut<T: Pod>(&mut self) -> Result<DeviceViewMut<'_, T>> {
        self.buffer.view_mut()
    }
}

impl Deref for MappedBuffer<'_> {
    type Target = Buffer;
    fn deref(&self) -> &Buffer {
        &self.buffer
    }
}

/// A mapped image's array, borrowed from its [`GraphicsMapping`]: derefs to
/// an [`OpaqueArray`] (never destroyed by it).
#[derive(Debug)]
pub struct MappedArray<'m> {
    array: OpaqueArray,
    _mapping: PhantomData<&'m ()>,
}

impl Deref for MappedArray<'_> {
    type Target = OpaqueArray;
    fn deref(&self) -> &OpaqueArray {
        &self.array
    }
}

/// The CUDA devices that run the OpenGL context current on this thread
/// (`cuGLGetDevices`, all frames): the devices to register its objects on.
///
/// # Errors
/// The driver's error: `CUDA_ERROR_NO_DEVICE` when no CUDA device runs the
/// context (another vendor's GPU, software rendering), no OpenGL context.
pub fn gl_devices() -> Result<Vec<Device>> {
    const WHAT: &str = "listing the CUDA devices of the current OpenGL context";
    // (`Device::count` initialises the driver.)
    let capacity = u32::try_from(Device::count()?).unwrap_or(u32::MAX);
    let mut devices: Vec<sys::CUdevice> = vec![0; capacity as usize];
    let mut found: u32 = 0;
    // SAFETY: `devices` has room for `capacity` entries; `found` is valid for
    // writes.
    unsafe {
        sys::cuGLGetDevices(
            &mut found,
            devices.as_mut_ptr(),
            capacity,
            sys::CU_GL_DEVICE_LIST_ALL,
        )
    }
    .check(|| WHAT)?;
    devices.truncate(found.min(capacity) as usize);
    devices
        .into_iter()
        .map(|d| Device::from_driver_handle(d, WHAT))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_combine_and_map_flags_are_the_drivers() {
        use GraphicsRegisterFlags as F;
        let mut f = F::SURFACE_LOAD_STORE | F::READ_ONLY;
        assert_eq!(f.bits(), 5);
        f |= F::TEXTURE_GATHER;
        assert_eq!(f.bits(), 13);
        assert_eq!(F::default(), F::NONE);
        // The driver's documented values.
        assert_eq!(GraphicsMapFlags::default().raw(), 0);
        assert_eq!(GraphicsMapFlags::ReadOnly.raw(), 1);
        assert_eq!(GraphicsMapFlags::WriteDiscard.raw(), 2);
    }
}
