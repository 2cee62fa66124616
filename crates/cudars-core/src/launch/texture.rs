//! CUDA arrays, textures and surfaces: opaque (driver-laid-out) arrays and
//! mipmapped arrays, texture objects that sample them (or linear and pitched
//! buffers) with hardware filtering and addressing, and surface objects that
//! kernels read and write by coordinate.
//!
//! Texture and surface objects are kernel arguments ([`KernelArg`]): a kernel takes
//! them as `cudaTextureObject_t` / `cudaSurfaceObject_t` (64-bit handles).
//!
//! ```no_run
//! use std::sync::Arc;
//! use cudars_core::{ArrayFormat, ArrayOptions, Device, FilterMode, StreamOptions, TextureOptions, TextureResource};
//!
//! let dev = Device::new(0)?;
//! let s = dev.create_stream(StreamOptions::default())?;
//! let image = dev.create_opaque_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 640, 480))?;
//! image.copy_from_host(&vec![0.5f32; 640 * 480], &s)?;
//! let tex = dev.create_texture_object(
//!     TextureResource::Array(Arc::new(image)),
//!     &TextureOptions { filter_mode: FilterMode::Linear, ..Default::default() },
//! )?;
//! // … pass `&tex` to a kernel that calls tex2D<float>(tex, x, y) …
//! # Ok::<(), cudars_core::Error>(())
//! ```
//!
//! Arrays, textures and surfaces are destroyed when dropped, not in stream order:
//! keep them until the kernels that use them have finished (as [`launch`](crate::launch)'s
//! safety contract asks of every argument). A texture or surface keeps what it
//! reads alive.

use std::ffi::c_void;
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{
    context::Context, device::Device, launch::KernelArg, memory::buffer::Buffer, stream::Stream,
};

/// `Drop` (destroy the handle in its context) and `KernelArg` (the 64-bit handle,
/// by value) for a texture or surface object.
macro_rules! handle_object {
    ($ty:ident, $destroy:ident) => {
        // Deferred-release rule: on a driver callback thread the destroy (a
        // CUDA call) is handed to the deferred queue instead of made there.
        impl Drop for $ty {
            fn drop(&mut self) {
                let ctx = self.ctx.clone();
                let destroy = move |h| {
                    let _current = ctx.ensure_current();
                    // SAFETY: an owned object handle, destroyed once.
                    let _ = unsafe { sys::$destroy(h) };
                };
                if crate::deferred::must_defer() {
                    // SAFETY: the owned handle; its one destroy moves to the queue.
                    unsafe {
                        crate::deferred::defer_handle(stringify!($destroy), self.handle, destroy)
                    };
                    return;
                }
                destroy(self.handle);
            }
        }

        // SAFETY: the object is a 64-bit handle passed by value; as a kernel
        // argument it is its own bytes.
        // Soundness contract: rule 10.
        unsafe impl KernelArg for $ty {
            fn arg_ptr(&self) -> *const c_void {
                (&raw const self.handle).cast()
            }
            fn arg_size(&self) -> usize {
                std::mem::size_of_val(&self.handle)
            }
        }
    };
}

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
    fn raw(self) -> sys::CUarray_format {
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

    /// The format of a driver's `CUarray_format`, when it is one of these.
    fn from_raw(raw: sys::CUarray_format) -> Option<Self> {
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
    /// `CUDA_ARRAY3D_SURFACE_LDST`: the array can back a [`SurfaceObject`].
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
    fn describe(&self) -> String {
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

    fn check(&self, what: &'static str) -> Result<()> {
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

    fn raw(&self) -> sys::CUDA_ARRAY3D_DESCRIPTOR {
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
    handle: sys::CUarray,
    ctx: Context,
    options: ArrayOptions,
    /// Who destroys the array.
    origin: Origin,
}

/// Who destroys an [`OpaqueArray`]'s handle.
enum Origin {
    /// The array itself, on drop.
    Own,
    /// A mipmap level: the mipmapped array, which the level keeps alive.
    Level(#[allow(dead_code, reason = "held, never read")] Arc<MipmappedInner>),
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
            .field("mapped", &matches!(self.origin, Origin::Mapped))
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

    fn copy_params(&self, host_bytes: usize, what: &'static str) -> Result<sys::CUDA_MEMCPY3D> {
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

    fn check_stream(&self, stream: &Stream, what: &'static str) -> Result<()> {
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
                let _ = unsafe { sys::cuArrayDestroy(h) };
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

struct MipmappedInner {
    handle: sys::CUmipmappedArray,
    ctx: Context,
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
            let _ = unsafe { sys::cuMipmappedArrayDestroy(h) };
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
    inner: Arc<MipmappedInner>,
    options: ArrayOptions,
    levels: u32,
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

/// What a texture reads (`CUDA_RESOURCE_DESC`). The texture keeps it alive.
#[derive(Debug, Clone)]
pub enum TextureResource {
    /// A CUDA array.
    Array(Arc<OpaqueArray>),
    /// A mipmapped array.
    Mipmapped(Arc<MipmappedArray>),
    /// A buffer as a 1-D array of `format`×`channels` elements (read with
    /// `tex1Dfetch`; no filtering or addressing modes).
    Linear {
        /// The memory.
        buffer: Arc<Buffer>,
        /// Element type per channel.
        format: ArrayFormat,
        /// Channels per element: 1, 2 or 4.
        channels: u32,
    },
    /// A buffer as a 2-D image of `height` rows of `width` elements, each row
    /// starting `pitch` bytes after the last (a multiple of the device's texture
    /// pitch alignment).
    Pitch2D {
        /// The memory.
        buffer: Arc<Buffer>,
        /// Element type per channel.
        format: ArrayFormat,
        /// Channels per element: 1, 2 or 4.
        channels: u32,
        /// Elements per row.
        width: usize,
        /// Rows.
        height: usize,
        /// Bytes from one row to the next.
        pitch: usize,
    },
}

impl TextureResource {
    fn raw(&self, what: &'static str) -> Result<sys::CUDA_RESOURCE_DESC> {
        let mut r = sys::CUDA_RESOURCE_DESC::default();
        match self {
            Self::Array(a) => {
                r.resType = sys::CU_RESOURCE_TYPE_ARRAY;
                r.res.array.hArray = a.handle;
            }
            Self::Mipmapped(m) => {
                r.resType = sys::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
                r.res.mipmap.hMipmappedArray = m.inner.handle;
            }
            Self::Linear {
                buffer,
                format,
                channels,
            } => {
                let elem = format.size() * *channels as usize;
                if !matches!(channels, 1 | 2 | 4) || buffer.size() % elem != 0 {
                    return Err(Error::invalid(
                        what,
                        format!(
                            "{channels} channels of {format:?} over a buffer of {} bytes",
                            buffer.size()
                        ),
                    ));
                }
                r.resType = sys::CU_RESOURCE_TYPE_LINEAR;
                r.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
                    devPtr: buffer.ptr(),
                    format: format.raw(),
                    numChannels: *channels,
                    sizeInBytes: buffer.size(),
                };
            }
            Self::Pitch2D {
                buffer,
                format,
                channels,
                width,
                height,
                pitch,
            } => {
                let row = format.size() * *channels as usize * width;
                let fits = pitch
                    .checked_mul(height.saturating_sub(1))
                    .and_then(|b| b.checked_add(row))
                    .is_some_and(|b| b <= buffer.size());
                if !matches!(channels, 1 | 2 | 4)
                    || row == 0
                    || *height == 0
                    || row > *pitch
                    || !fits
                {
                    return Err(Error::invalid(
                        what,
                        format!(
                            "{height} rows of {width}×{channels} {format:?} with a pitch of {pitch} \
                             over a buffer of {} bytes",
                            buffer.size()
                        ),
                    ));
                }
                r.resType = sys::CU_RESOURCE_TYPE_PITCH2D;
                r.res.pitch2D = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 {
                    devPtr: buffer.ptr(),
                    format: format.raw(),
                    numChannels: *channels,
                    width: *width,
                    height: *height,
                    pitchInBytes: *pitch,
                };
            }
        }
        Ok(r)
    }

    /// In words, for error messages.
    fn describe(&self) -> String {
        match self {
            Self::Array(a) => a.options.describe(),
            Self::Mipmapped(m) => format!("a mipmapped array of {} levels", m.levels),
            Self::Linear {
                buffer,
                format,
                channels,
            } => format!(
                "{} bytes of linear memory as {format:?}×{channels}",
                buffer.size()
            ),
            Self::Pitch2D {
                format,
                channels,
                width,
                height,
                pitch,
                ..
            } => {
                format!("{width}×{height} pitched memory (pitch {pitch}) as {format:?}×{channels}")
            }
        }
    }

    fn device(&self) -> Device {
        match self {
            Self::Array(a) => *a.ctx.device(),
            Self::Mipmapped(m) => *m.inner.ctx.device(),
            Self::Linear { buffer, .. } | Self::Pitch2D { buffer, .. } => *buffer.device(),
        }
    }
}

/// What a texture does with coordinates outside the image (`CUaddress_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AddressMode {
    /// Repeat (normalised coordinates only).
    Wrap,
    /// Clamp to the edge (the default).
    #[default]
    Clamp,
    /// Mirror at each edge (normalised coordinates only).
    Mirror,
    /// Read the border colour.
    Border,
}

/// How a texture filters between texels (`CUfilter_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// The nearest texel (the default).
    #[default]
    Point,
    /// Linear interpolation (floating-point reads only).
    Linear,
}

/// What a texture read returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// The stored type (the default).
    #[default]
    ElementType,
    /// 8- and 16-bit integers as floats normalised to [0, 1] or [-1, 1].
    NormalizedFloat,
}

/// How a texture samples (`CUDA_TEXTURE_DESC`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextureOptions {
    /// Per dimension (x, y, z).
    pub address_mode: [AddressMode; 3],
    /// Between texels.
    pub filter_mode: FilterMode,
    /// What reads return.
    pub read_mode: ReadMode,
    /// Coordinates in [0, 1) rather than in texels.
    pub normalized_coords: bool,
    /// sRGB to linear conversion on reads.
    pub srgb: bool,
    /// Colour read outside the image with [`AddressMode::Border`].
    pub border_color: [f32; 4],
    /// Maximum anisotropy (0 or 1 for none, up to 16).
    pub max_anisotropy: u32,
    /// Between mipmap levels.
    pub mipmap_filter_mode: FilterMode,
    /// Added to the level of detail.
    pub mipmap_level_bias: f32,
    /// The least level of detail used.
    pub min_mipmap_level_clamp: f32,
    /// The greatest level of detail used.
    pub max_mipmap_level_clamp: f32,
    /// `CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`.
    pub disable_trilinear_optimization: bool,
    /// `CU_TRSF_SEAMLESS_CUBEMAP`.
    pub seamless_cubemap: bool,
}

impl Default for TextureOptions {
    fn default() -> Self {
        Self {
            address_mode: [AddressMode::Clamp; 3],
            filter_mode: FilterMode::Point,
            read_mode: ReadMode::ElementType,
            normalized_coords: false,
            srgb: false,
            border_color: [0.0; 4],
            max_anisotropy: 0,
            mipmap_filter_mode: FilterMode::Point,
            mipmap_level_bias: 0.0,
            min_mipmap_level_clamp: 0.0,
            max_mipmap_level_clamp: 0.0,
            disable_trilinear_optimization: false,
            seamless_cubemap: false,
        }
    }
}

impl TextureOptions {
    fn raw(&self) -> sys::CUDA_TEXTURE_DESC {
        let am = |m: AddressMode| match m {
            AddressMode::Wrap => sys::CU_TR_ADDRESS_MODE_WRAP,
            AddressMode::Clamp => sys::CU_TR_ADDRESS_MODE_CLAMP,
            AddressMode::Mirror => sys::CU_TR_ADDRESS_MODE_MIRROR,
            AddressMode::Border => sys::CU_TR_ADDRESS_MODE_BORDER,
        };
        let fm = |m: FilterMode| match m {
            FilterMode::Point => sys::CU_TR_FILTER_MODE_POINT,
            FilterMode::Linear => sys::CU_TR_FILTER_MODE_LINEAR,
        };
        let mut flags = 0;
        if self.read_mode == ReadMode::ElementType {
            flags |= sys::CU_TRSF_READ_AS_INTEGER;
        }
        if self.normalized_coords {
            flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
        }
        if self.srgb {
            flags |= sys::CU_TRSF_SRGB;
        }
        if self.disable_trilinear_optimization {
            flags |= sys::CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
        }
        if self.seamless_cubemap {
            flags |= sys::CU_TRSF_SEAMLESS_CUBEMAP;
        }
        sys::CUDA_TEXTURE_DESC {
            addressMode: self.address_mode.map(am),
            filterMode: fm(self.filter_mode),
            flags,
            maxAnisotropy: self.max_anisotropy,
            mipmapFilterMode: fm(self.mipmap_filter_mode),
            mipmapLevelBias: self.mipmap_level_bias,
            minMipmapLevelClamp: self.min_mipmap_level_clamp,
            maxMipmapLevelClamp: self.max_mipmap_level_clamp,
            borderColor: self.border_color,
            reserved: [0; 12],
        }
    }
}

/// A texture object (`CUtexObject`): read-only, filtered, addressed access to an
/// array or buffer from kernels. Pass it to a kernel as a `cudaTextureObject_t`.
#[derive(Debug)]
pub struct TextureObject {
    handle: sys::CUtexObject,
    ctx: Context,
    resource: TextureResource,
}

impl TextureObject {
    /// A texture over `resource` in `ctx` (`cuTexObjectCreate`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a resource of another device or a buffer
    /// that does not fit its description; the driver's error (for example, linear
    /// filtering of integer reads).
    pub fn new(ctx: &Context, resource: TextureResource, options: &TextureOptions) -> Result<Self> {
        const WHAT: &str = "creating a texture object";
        if resource.device() != *ctx.device() {
            return Err(Error::other_device(
                WHAT,
                "the resource is on another device",
            ));
        }
        let res = resource.raw(WHAT)?;
        let tex = options.raw();
        let _current = ctx.ensure_current()?;
        let mut handle: sys::CUtexObject = 0;
        // SAFETY: both descriptions are valid for the call and name live memory
        // that `resource` (kept below) holds.
        unsafe { sys::cuTexObjectCreate(&mut handle, &res, &tex, std::ptr::null()) }
            .check(|| format!("creating a texture object over {}", resource.describe()))?;
        Ok(Self {
            handle,
            ctx: ctx.clone(),
            resource,
        })
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUtexObject {
        self.handle
    }

    /// What it reads.
    pub fn resource(&self) -> &TextureResource {
        &self.resource
    }
}

handle_object!(TextureObject, cuTexObjectDestroy);

/// A surface object (`CUsurfObject`): read and write access by coordinate to an
/// array made with `surface_load_store`. Pass it to a kernel as a
/// `cudaSurfaceObject_t`.
#[derive(Debug)]
pub struct SurfaceObject {
    handle: sys::CUsurfObject,
    ctx: Context,
    array: Arc<OpaqueArray>,
}

impl SurfaceObject {
    /// A surface over `array` (`cuSurfObjectCreate`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an array made without `surface_load_store`;
    /// the driver's error.
    pub fn new(array: Arc<OpaqueArray>) -> Result<Self> {
        const WHAT: &str = "creating a surface object";
        if !array.options.surface_load_store {
            return Err(Error::invalid(
                WHAT,
                "the array was made without `surface_load_store`",
            ));
        }
        let ctx = array.ctx.clone();
        let res = TextureResource::Array(array.clone()).raw(WHAT)?;
        let _current = ctx.ensure_current()?;
        let mut handle: sys::CUsurfObject = 0;
        // SAFETY: `res` names the live array, kept below.
        unsafe { sys::cuSurfObjectCreate(&mut handle, &res) }.check(|| {
            format!(
                "creating a surface object over {}",
                array.options.describe()
            )
        })?;
        Ok(Self { handle, ctx, array })
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUsurfObject {
        self.handle
    }

    /// The array it accesses.
    pub fn array(&self) -> &Arc<OpaqueArray> {
        &self.array
    }
}

handle_object!(SurfaceObject, cuSurfObjectDestroy);

// Arrays, textures and surfaces.
impl Device {
    /// A CUDA array in the primary context (see [`OpaqueArray::new`]).
    ///
    /// # Errors
    /// As [`OpaqueArray::new`].
    pub fn create_opaque_array(&self, options: &ArrayOptions) -> Result<OpaqueArray> {
        OpaqueArray::new(&self.context()?, options)
    }

    /// A mipmapped array in the primary context (see [`MipmappedArray::new`]).
    ///
    /// # Errors
    /// As [`MipmappedArray::new`].
    pub fn create_mipmapped_array(
        &self,
        options: &ArrayOptions,
        levels: u32,
    ) -> Result<MipmappedArray> {
        MipmappedArray::new(&self.context()?, options, levels)
    }

    /// A texture object in the primary context (see [`TextureObject::new`]).
    ///
    /// # Errors
    /// As [`TextureObject::new`].
    pub fn create_texture_object(
        &self,
        resource: TextureResource,
        options: &TextureOptions,
    ) -> Result<TextureObject> {
        TextureObject::new(&self.context()?, resource, options)
    }

    /// A surface object over `array` (see [`SurfaceObject::new`]).
    ///
    /// # Errors
    /// As [`SurfaceObject::new`], and [`Error::InvalidArgument`] for an array of
    /// another device.
    pub fn create_surface_object(&self, array: Arc<OpaqueArray>) -> Result<SurfaceObject> {
        if array.context().device() != self {
            return Err(Error::other_device(
                "creating a surface object",
                "the array is on another device",
            ));
        }
        SurfaceObject::new(array)
    }
}
