//! CUDA arrays: [`OpaqueArray`] (1D, 2D or 3D, in a layout only the GPU knows)
//! and [`MipmappedArray`], with their formats and copies; what textures and
//! surfaces read.

use crate::error::{Check as _, Error, Result};
use crate::memory::{buffer::Buffer, resource::MemoryKind};
use crate::{context::Context, stream::Stream};
use bytemuck::Pod;
use cudars_bindings::driver as sys;
use std::sync::Arc;

/// The element type of an array or texture (`CUarray_format`), per channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArrayFormat {
    /// `unsigned char`.
    U8,
    /// `unsigned short`.
    U16,
    /// `unsigned int`.
    U32,
    /// `signed char`.
    I8,
    /// `short`.
    I16,
    /// `int`.
    I32,
    /// `__half`.
    F16,
    /// `float`.
    F32,
}

impl ArrayFormat {
    pub(crate) fn raw(self) -> sys::CUarray_format {
        match self {
            Self::U8 => sys::CU_AD_FORMAT_UNSIGNED_INT8,
            Self::U16 => sys::CU_AD_FORMAT_UNSIGNED_INT16,
            Self::U32 => sys::CU_AD_FORMAT_UNSIGNED_INT32,
            Self::I8 => sys::CU_AD_FORMAT_SIGNED_INT8,
            Self::I16 => sys::CU_AD_FORMAT_SIGNED_INT16,
            Self::I32 => sys::CU_AD_FORMAT_SIGNED_INT32,
            Self::F16 => sys::CU_AD_FORMAT_HALF,
            Self::F32 => sys::CU_AD_FORMAT_FLOAT,
        }
    }

    #[cfg(feature = "gl")]
    /// The format of a driver's `CUarray_format`, when it is one of these.
    pub(crate) fn from_raw(raw: sys::CUarray_format) -> Option<Self> {
        [
            Self::U8,
            Self::U16,
            Self::U32,
            Self::I8,
            Self::I16,
            Self::I32,
            Self::F16,
            Self::F32,
        ]
        .into_iter()
        .find(|f| f.raw() == raw)
    }

    /// Bytes per channel.
    pub fn size(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 | Self::F16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
        }
    }
}

/// The shape and element type of an [`OpaqueArray`] or [`MipmappedArray`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArrayOptions {
    /// The element type of each channel.
    pub format: ArrayFormat,
    /// Channels per element: 1, 2 or 4.
    pub channels: u32,
    /// Width in elements (at least 1).
    pub width: usize,
    /// Height in elements; 0 for a 1-D array.
    pub height: usize,
    /// Depth in elements (or layers, when `layered`); 0 for a 1-D or 2-D array.
    pub depth: usize,
    /// `CUDA_ARRAY3D_SURFACE_LDST`: the array can back a [`SurfaceObject`](crate::SurfaceObject).
    pub surface_load_store: bool,
    /// `CUDA_ARRAY3D_LAYERED`: `depth` counts layers of a 1-D or 2-D array.
    pub layered: bool,
}

impl ArrayOptions {
    /// A 1-D array of `width` elements.
    pub fn new_1d(format: ArrayFormat, channels: u32, width: usize) -> Self {
        Self::new_3d(format, channels, width, 0, 0)
    }

    /// A 2-D array.
    pub fn new_2d(format: ArrayFormat, channels: u32, width: usize, height: usize) -> Self {
        Self::new_3d(format, channels, width, height, 0)
    }

    /// A 3-D array.
    pub fn new_3d(
        format: ArrayFormat,
        channels: u32,
        width: usize,
        height: usize,
        depth: usize,
    ) -> Self {
        Self {
            format,
            channels,
            width,
            height,
            depth,
            surface_load_store: false,
            layered: false,
        }
    }

    /// The shape and element type in words, for error messages.
    pub(crate) fn describe(&self) -> String {
        format!(
            "a {}×{}×{} array of {:?}×{}",
            self.width, self.height, self.depth, self.format, self.channels
        )
    }

    /// Bytes per element (all channels).
    pub fn element_size(&self) -> usize {
        self.format.size() * self.channels as usize
    }

    /// Bytes in the whole array.
    pub fn bytes(&self) -> usize {
        self.element_size() * self.width * self.height.max(1) * self.depth.max(1)
    }

    pub(crate) fn check(&self, what: &'static str) -> Result<()> {
        if !matches!(self.channels, 1 | 2 | 4) {
            return Err(Error::invalid(
                what,
                format!("{} channels (1, 2 or 4)", self.channels),
            ));
        }
        if self.width == 0 || (self.depth > 0 && self.height == 0 && !self.layered) {
            return Err(Error::invalid(
                what,
                format!(
                    "a {}×{}×{} array (width must be at least 1; a 3-D array needs a height)",
                    self.width, self.height, self.depth
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn raw(&self) -> sys::CUDA_ARRAY3D_DESCRIPTOR {
        let mut flags = 0;
        if self.surface_load_store {
            flags |= sys::CUDA_ARRAY3D_SURFACE_LDST;
        }
        if self.layered {
            flags |= sys::CUDA_ARRAY3D_LAYERED;
        }
        sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: self.width,
            Height: self.height,
            Depth: self.depth,
            Format: self.format.raw(),
            NumChannels: self.channels,
            Flags: flags,
        }
    }
}

/// A CUDA array (`CUarray`): device memory laid out by the driver for 1-, 2- or
/// 3-D locality, read through textures and written through surfaces. Owned arrays
/// are destroyed on drop; a level of a [`MipmappedArray`] belongs to it.
pub struct OpaqueArray {
    pub(crate) handle: sys::CUarray,
    pub(crate) ctx: Context,
    pub(crate) options: ArrayOptions,
    /// Who destroys the array.
    pub(crate) origin: Origin,
}

/// Who destroys an [`OpaqueArray`]'s handle.
pub(crate) enum Origin {
    /// The array itself, on drop.
    Own,
    /// A mipmap level: the mipmapped array, which the level keeps alive.
    Level(#[allow(dead_code, reason = "held, never read")] Arc<MipmappedInner>),
    #[cfg(feature = "gl")]
    /// A mapped graphics resource: the graphics API, after the mapping that
    /// lends the array (and outlives it) ends.
    Mapped,
}

// SAFETY: an array handle may be used from any thread; copies take `&mut self` or
// go through the driver, which serialises.
// Soundness contract: rule 11.
unsafe impl Send for OpaqueArray {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for OpaqueArray {}

impl std::fmt::Debug for OpaqueArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpaqueArray")
            .field("handle", &self.handle)
            .field("options", &self.options)
            .field("mipmap_level", &matches!(self.origin, Origin::Level(_)))
            .field(
                "mapped",
                &!matches!(self.origin, Origin::Own | Origin::Level(_)),
            )
            .finish()
    }
}

impl OpaqueArray {
    /// A new array in `ctx` (`cuArray3DCreate`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad channels or dimensions; the driver's error.
    pub fn new(ctx: &Context, options: &ArrayOptions) -> Result<Self> {
        const WHAT: &str = "creating a CUDA array";
        options.check(WHAT)?;
        let _current = ctx.ensure_current()?;
        let desc = options.raw();
        let mut handle: sys::CUarray = std::ptr::null_mut();
        // SAFETY: `desc` is valid for the call; `handle` for writes.
        unsafe { sys::cuArray3DCreate(&mut handle, &desc) }
            .check(|| format!("creating {}", options.describe()))?;
        Ok(Self {
            handle,
            ctx: ctx.clone(),
            options: *options,
            origin: Origin::Own,
        })
    }

    #[cfg(feature = "gl")]
    /// The array of a mapped graphics resource, which the graphics API owns
    /// (never destroyed here). Its shape and format are read from the driver.
    ///
    /// # Safety
    /// `handle` must be a live array of `ctx` that stays valid for as long as
    /// the returned value (the mapping it came from outlives it).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for an element format [`ArrayFormat`] does not
    /// name; the driver's error.
    pub(crate) unsafe fn mapped(
        handle: sys::CUarray,
        ctx: &Context,
        what: &'static str,
    ) -> Result<Self> {
        let _current = ctx.ensure_current()?;
        let mut desc = sys::CUDA_ARRAY3D_DESCRIPTOR::default();
        // SAFETY: a live array (per the contract); `desc` is valid for writes.
        unsafe { sys::cuArray3DGetDescriptor(&mut desc, handle) }
            .check(|| format!("{what}: reading the mapped array's shape"))?;
        let format = ArrayFormat::from_raw(desc.Format).ok_or_else(|| {
            Error::unsupported(
                what,
                format!(
                    "the mapped array's element format ({}) is not one `ArrayFormat` names",
                    desc.Format.0
                ),
            )
        })?;
        Ok(Self {
            handle,
            ctx: ctx.clone(),
            options: ArrayOptions {
                format,
                channels: desc.NumChannels,
                width: desc.Width,
                height: desc.Height,
                depth: desc.Depth,
                surface_load_store: desc.Flags & sys::CUDA_ARRAY3D_SURFACE_LDST != 0,
                layered: desc.Flags & sys::CUDA_ARRAY3D_LAYERED != 0,
            },
            origin: Origin::Mapped,
        })
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUarray {
        self.handle
    }

    /// Its shape and element type.
    pub fn options(&self) -> &ArrayOptions {
        &self.options
    }

    /// The context it lives in.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    pub(crate) fn copy_params(
        &self,
        host_bytes: usize,
        what: &'static str,
    ) -> Result<sys::CUDA_MEMCPY3D> {
        let o = &self.options;
        if host_bytes != o.bytes() {
            return Err(Error::invalid(
                what,
                format!(
                    "{host_bytes} bytes of host data for an array of {}",
                    o.bytes()
                ),
            ));
        }
        let row = o.element_size() * o.width;
        Ok(sys::CUDA_MEMCPY3D {
            WidthInBytes: row,
            Height: o.height.max(1),
            Depth: o.depth.max(1),
            ..Default::default()
        })
    }

    /// Copies `data` (the whole array, rows of `width` elements, densely packed)
    /// into the array, ordered on `stream`, and waits for it (so `data` is free
    /// again on return). Takes `&self`: the array may be in use by textures and
    /// surfaces, whose kernels the stream orders this copy with.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `data` is not exactly the array's size or the
    /// stream is of another device; the driver's error.
    pub fn copy_from_host<T: Pod>(&self, data: &[T], stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying host data into a CUDA array";
        self.check_stream(stream, WHAT)?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut p = self.copy_params(bytes.len(), WHAT)?;
        p.srcMemoryType = sys::CU_MEMORYTYPE_HOST;
        p.srcHost = bytes.as_ptr().cast();
        p.srcPitch = p.WidthInBytes;
        p.srcHeight = p.Height;
        p.dstMemoryType = sys::CU_MEMORYTYPE_ARRAY;
        p.dstArray = self.handle;
        let _current = stream.context().ensure_current()?;
        // SAFETY: `bytes` holds the whole array's worth; the array is live; the wait
        // below ends the copy before `data` can be reused.
        unsafe { sys::cuMemcpy3DAsync(&p, stream.handle()) }
            .check(|| format!("copying {} bytes into a CUDA array", bytes.len()))?;
        stream.drain()
    }

    /// Copies the whole array into `out`, ordered on `stream`, and waits for it.
    ///
    /// # Errors
    /// As [`copy_from_host`](Self::copy_from_host).
    pub fn copy_to_host<T: Pod>(&self, out: &mut [T], stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying a CUDA array to host memory";
        self.check_stream(stream, WHAT)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        let mut p = self.copy_params(bytes.len(), WHAT)?;
        p.srcMemoryType = sys::CU_MEMORYTYPE_ARRAY;
        p.srcArray = self.handle;
        p.dstMemoryType = sys::CU_MEMORYTYPE_HOST;
        p.dstHost = bytes.as_mut_ptr().cast();
        p.dstPitch = p.WidthInBytes;
        p.dstHeight = p.Height;
        let _current = stream.context().ensure_current()?;
        // SAFETY: `bytes` has room for the whole array; the wait below ends the copy
        // before `out` is given back.
        unsafe { sys::cuMemcpy3DAsync(&p, stream.handle()) }
            .check(|| format!("copying {} bytes out of a CUDA array", bytes.len()))?;
        stream.drain()
    }

    /// Copies the array's worth of bytes from the start of `src` (rows of
    /// `width` elements, densely packed, as [`copy_from_host`](Self::copy_from_host)
    /// takes them) into the array, ordered on `stream`, and waits for it
    /// (`cuda.core`'s `OpaqueArray.copy_from(buffer, stream=…)`). `src` may be
    /// larger than the array.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)
    /// for a buffer smaller than the array, `OtherDevice` for a stream, or a
    /// buffer of device memory, of another device than the array's; the
    /// driver's error.
    pub fn copy_from_buffer(&self, src: &Buffer, stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying a buffer into a CUDA array";
        let mut p = self.buffer_copy_params(src, stream, WHAT)?;
        p.srcMemoryType = sys::CU_MEMORYTYPE_DEVICE;
        p.srcDevice = src.ptr();
        p.srcPitch = p.WidthInBytes;
        p.srcHeight = p.Height;
        p.dstMemoryType = sys::CU_MEMORYTYPE_ARRAY;
        p.dstArray = self.handle;
        let _current = stream.context().ensure_current()?;
        // SAFETY: the buffer holds at least the array's bytes (checked); both
        // are live, and the wait below ends the copy before either can go.
        unsafe { sys::cuMemcpy3DAsync(&p, stream.handle()) }
            .check(|| format!("copying {} bytes into a CUDA array", self.options.bytes()))?;
        stream.drain()
    }

    /// Copies the whole array into the start of `dst` (rows of `width`
    /// elements, densely packed), ordered on `stream`, and waits for it
    /// (`cuda.core`'s `OpaqueArray.copy_to(buffer, stream=…)`). `dst` may be
    /// larger than the array.
    ///
    /// # Errors
    /// As [`copy_from_buffer`](Self::copy_from_buffer).
    pub fn copy_to_buffer(&self, dst: &mut Buffer, stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying a CUDA array into a buffer";
        let mut p = self.buffer_copy_params(dst, stream, WHAT)?;
        p.srcMemoryType = sys::CU_MEMORYTYPE_ARRAY;
        p.srcArray = self.handle;
        p.dstMemoryType = sys::CU_MEMORYTYPE_DEVICE;
        p.dstDevice = dst.ptr();
        p.dstPitch = p.WidthInBytes;
        p.dstHeight = p.Height;
        let _current = stream.context().ensure_current()?;
        // SAFETY: the buffer has room for the array's bytes (checked); both are
        // live, and the wait below ends the copy before either can go.
        unsafe { sys::cuMemcpy3DAsync(&p, stream.handle()) }
            .check(|| format!("copying {} bytes out of a CUDA array", self.options.bytes()))?;
        stream.drain()
    }

    /// The shape of a copy between the array and `buffer`, checked: the
    /// stream's and the buffer's device, the buffer's size.
    fn buffer_copy_params(
        &self,
        buffer: &Buffer,
        stream: &Stream,
        what: &'static str,
    ) -> Result<sys::CUDA_MEMCPY3D> {
        self.check_stream(stream, what)?;
        if buffer.kind() == MemoryKind::Device && buffer.device() != self.ctx.device() {
            return Err(Error::other_device(
                what,
                format!(
                    "the array is on device {} and the buffer on device {}",
                    self.ctx.device().ordinal(),
                    buffer.device().ordinal()
                ),
            ));
        }
        let o = &self.options;
        if buffer.size() < o.bytes() {
            return Err(Error::out_of_range(
                what,
                format!(
                    "the buffer has {} bytes, smaller than the array extent ({} bytes)",
                    buffer.size(),
                    o.bytes()
                ),
            ));
        }
        Ok(sys::CUDA_MEMCPY3D {
            WidthInBytes: o.element_size() * o.width,
            Height: o.height.max(1),
            Depth: o.depth.max(1),
            ..Default::default()
        })
    }

    pub(crate) fn check_stream(&self, stream: &Stream, what: &'static str) -> Result<()> {
        if stream.device() != self.ctx.device() {
            return Err(Error::other_device(
                what,
                format!(
                    "the array is on device {} and the stream on device {}",
                    self.ctx.device().ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        Ok(())
    }
}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call) is
// handed to the deferred queue instead of made there.
impl Drop for OpaqueArray {
    fn drop(&mut self) {
        if let Origin::Own = self.origin {
            let ctx = self.ctx.clone();
            let destroy = move |h: sys::CUarray| {
                let _current = ctx.ensure_current();
                // SAFETY: an owned array, destroyed once; textures and surfaces
                // made from it hold it (in an `Arc`) and are gone.
                let rc = unsafe { sys::cuArrayDestroy(h) };
                crate::cleanup::driver(rc, "destroying an array (cuArrayDestroy)");
            };
            if crate::deferred::must_defer() {
                // SAFETY: the owned array; its one destroy moves to the queue.
                unsafe {
                    crate::deferred::defer_handle("destroying an array", self.handle, destroy)
                };
                return;
            }
            destroy(self.handle);
        }
    }
}

pub(crate) struct MipmappedInner {
    pub(crate) handle: sys::CUmipmappedArray,
    pub(crate) ctx: Context,
}

// SAFETY: a mipmapped array handle may be used from any thread.
// Soundness contract: rule 11.
unsafe impl Send for MipmappedInner {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for MipmappedInner {}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call) is
// handed to the deferred queue instead of made there.
impl Drop for MipmappedInner {
    fn drop(&mut self) {
        let ctx = self.ctx.clone();
        let destroy = move |h: sys::CUmipmappedArray| {
            let _current = ctx.ensure_current();
            // SAFETY: an owned mipmapped array, destroyed once, after every level
            // and texture (they hold this `Arc`).
            let rc = unsafe { sys::cuMipmappedArrayDestroy(h) };
            crate::cleanup::driver(rc, "destroying a mipmapped array (cuMipmappedArrayDestroy)");
        };
        if crate::deferred::must_defer() {
            // SAFETY: the owned array; its one destroy moves to the queue.
            unsafe {
                crate::deferred::defer_handle("destroying a mipmapped array", self.handle, destroy)
            };
            return;
        }
        destroy(self.handle);
    }
}

/// A mipmapped array (`CUmipmappedArray`): `levels` arrays, each half the size of
/// the one before, sampled together by a texture with level-of-detail filtering.
pub struct MipmappedArray {
    pub(crate) inner: Arc<MipmappedInner>,
    pub(crate) options: ArrayOptions,
    pub(crate) levels: u32,
}

impl std::fmt::Debug for MipmappedArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MipmappedArray")
            .field("handle", &self.inner.handle)
            .field("options", &self.options)
            .field("levels", &self.levels)
            .finish()
    }
}

impl MipmappedArray {
    /// A new mipmapped array in `ctx` (`cuMipmappedArrayCreate`); `options`
    /// describes level 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad channels, dimensions or 0 levels; the
    /// driver's error (for more levels than the size allows).
    pub fn new(ctx: &Context, options: &ArrayOptions, levels: u32) -> Result<Self> {
        const WHAT: &str = "creating a mipmapped array";
        options.check(WHAT)?;
        if levels == 0 {
            return Err(Error::invalid(WHAT, "0 levels"));
        }
        let _current = ctx.ensure_current()?;
        let desc = options.raw();
        let mut handle: sys::CUmipmappedArray = std::ptr::null_mut();
        // SAFETY: `desc` is valid for the call; `handle` for writes.
        unsafe { sys::cuMipmappedArrayCreate(&mut handle, &desc, levels) }
            .check(|| format!("creating a mipmapped array of {levels} levels"))?;
        Ok(Self {
            inner: Arc::new(MipmappedInner {
                handle,
                ctx: ctx.clone(),
            }),
            options: *options,
            levels,
        })
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUmipmappedArray {
        self.inner.handle
    }

    /// The number of levels.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// The shape and element type of level 0.
    pub fn options(&self) -> &ArrayOptions {
        &self.options
    }

    /// The context it lives in.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Level `level` as an array (`cuMipmappedArrayGetLevel`): halved in each
    /// dimension per level (at least 1). It belongs to this mipmapped array, which
    /// it keeps alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a level past the last; the driver's error.
    pub fn level(&self, level: u32) -> Result<OpaqueArray> {
        if level >= self.levels {
            return Err(Error::invalid(
                "getting a level of a mipmapped array",
                format!("level {level} of {}", self.levels),
            ));
        }
        let _current = self.inner.ctx.ensure_current()?;
        let mut handle: sys::CUarray = std::ptr::null_mut();
        // SAFETY: a live mipmapped array and a level below its count.
        unsafe { sys::cuMipmappedArrayGetLevel(&mut handle, self.inner.handle, level) }
            .check(|| format!("getting level {level} of a mipmapped array"))?;
        let mut desc = sys::CUDA_ARRAY3D_DESCRIPTOR::default();
        // SAFETY: a live level array; `desc` is valid for writes.
        unsafe { sys::cuArray3DGetDescriptor(&mut desc, handle) }
            .check(|| format!("reading the size of level {level} of a mipmapped array"))?;
        let options = ArrayOptions {
            width: desc.Width,
            height: desc.Height,
            depth: desc.Depth,
            ..self.options
        };
        Ok(OpaqueArray {
            handle,
            ctx: self.inner.ctx.clone(),
            options,
            origin: Origin::Level(self.inner.clone()),
        })
    }
}
