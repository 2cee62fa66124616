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

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::launch::array::{ArrayFormat, ArrayOptions, MipmappedArray, OpaqueArray};
use crate::{context::Context, device::Device, launch::KernelArg, memory::buffer::Buffer};

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
                    let rc = unsafe { sys::$destroy(h) };
                    crate::cleanup::driver(
                        rc,
                        concat!(
                            "destroying a texture or surface object (",
                            stringify!($destroy),
                            ")"
                        ),
                    );
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

        // SAFETY: a `cudaTextureObject_t` / `cudaSurfaceObject_t` parameter
        // takes the 64-bit handle by value; the pointer is to the handle inside
        // the object the launch borrows. The memory it reads, where that is a
        // buffer, is reported for the launch's checks and ordering.
        // Soundness contract: rules 2 and 10.
        unsafe impl crate::launch::typed_kernel::Param for $ty {
            type Arg<'a> = &'a $ty;
            const SIZE: usize = std::mem::size_of::<sys::CUtexObject>();
            fn addr(arg: &&$ty) -> *mut c_void {
                (&raw const arg.handle).cast_mut().cast()
            }
            fn memory<'b>(arg: &'b &$ty) -> Option<&'b Buffer> {
                arg.buffer()
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
        /// The bytes read, from the buffer's start (`size_bytes` in Python):
        /// at least one element, a whole number of elements, at most the
        /// buffer's size. `None`: the whole buffer.
        size: Option<usize>,
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
    pub(crate) fn raw(&self, what: &'static str) -> Result<sys::CUDA_RESOURCE_DESC> {
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
                size,
            } => {
                let elem = format.size() * *channels as usize;
                if !matches!(channels, 1 | 2 | 4) {
                    return Err(Error::invalid(
                        what,
                        format!(
                            "{channels} channels of {format:?} over a buffer of {} bytes (1, 2 \
                             or 4 channels)",
                            buffer.size()
                        ),
                    ));
                }
                let bytes = size.unwrap_or(buffer.size());
                if bytes > buffer.size() {
                    return Err(Error::out_of_range(
                        what,
                        format!(
                            "`size` ({bytes} bytes) exceeds the buffer's size ({} bytes)",
                            buffer.size()
                        ),
                    ));
                }
                if bytes < elem || bytes % elem != 0 {
                    return Err(Error::invalid(
                        what,
                        format!(
                            "{bytes} bytes of linear memory: at least one element, and a \
                             multiple of the element size ({elem} bytes for {format:?}×{channels})"
                        ),
                    ));
                }
                r.resType = sys::CU_RESOURCE_TYPE_LINEAR;
                r.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
                    devPtr: buffer.ptr(),
                    format: format.raw(),
                    numChannels: *channels,
                    sizeInBytes: bytes,
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
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Array(a) => a.options.describe(),
            Self::Mipmapped(m) => format!("a mipmapped array of {} levels", m.levels),
            Self::Linear {
                buffer,
                format,
                channels,
                size,
            } => format!(
                "{} bytes of linear memory as {format:?}×{channels}",
                size.unwrap_or(buffer.size())
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

    pub(crate) fn device(&self) -> Device {
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
    pub(crate) fn raw(&self) -> sys::CUDA_TEXTURE_DESC {
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
    pub(crate) handle: sys::CUtexObject,
    pub(crate) ctx: Context,
    pub(crate) resource: TextureResource,
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

    /// The buffer it reads, for a linear or pitched texture.
    fn buffer(&self) -> Option<&Buffer> {
        match &self.resource {
            TextureResource::Linear { buffer, .. } | TextureResource::Pitch2D { buffer, .. } => {
                Some(buffer)
            }
            _ => None,
        }
    }
}

handle_object!(TextureObject, cuTexObjectDestroy);

/// A surface object (`CUsurfObject`): read and write access by coordinate to an
/// array made with `surface_load_store`. Pass it to a kernel as a
/// `cudaSurfaceObject_t`.
#[derive(Debug)]
pub struct SurfaceObject {
    pub(crate) handle: sys::CUsurfObject,
    pub(crate) ctx: Context,
    pub(crate) array: Arc<OpaqueArray>,
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

    /// No buffer: a surface accesses an array.
    fn buffer(&self) -> Option<&Buffer> {
        None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_mode_and_coordinates_become_the_descriptor_flags() {
        let default = TextureOptions::default().raw();
        assert_eq!(default.flags, sys::CU_TRSF_READ_AS_INTEGER);
        let normalized = TextureOptions {
            read_mode: ReadMode::NormalizedFloat,
            normalized_coords: true,
            filter_mode: FilterMode::Linear,
            ..Default::default()
        }
        .raw();
        assert_eq!(normalized.flags, sys::CU_TRSF_NORMALIZED_COORDINATES);
        assert_eq!(normalized.filterMode, sys::CU_TR_FILTER_MODE_LINEAR);
    }
}
