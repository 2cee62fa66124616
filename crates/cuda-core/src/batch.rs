//! Batched memory operations (CUDA 13): many copies, prefetches or discards in one
//! driver call, the counterparts of `cuda.core.utils.copy_batch`,
//! `prefetch_batch`, `discard_batch` and `discard_prefetch_batch`.
//!
//! ```no_run
//! use cuda_core::{copy_batch, BatchCopy, CopyOptions, Device, StreamOptions};
//!
//! let dev = Device::new(0)?;
//! let s = dev.create_stream(StreamOptions::default())?;
//! let (a, b) = (dev.allocate(1 << 20, &s)?, dev.allocate(4096, &s)?);
//! let (mut x, mut y) = (dev.allocate(1 << 20, &s)?, dev.allocate(4096, &s)?);
//! copy_batch(
//!     &mut [
//!         BatchCopy { dst: &mut x, src: &a, bytes: 1 << 20 },
//!         BatchCopy { dst: &mut y, src: &b, bytes: 4096 },
//!     ],
//!     &CopyOptions::default(),
//!     &s,
//! )?;
//! # Ok::<(), cuda_core::Error>(())
//! ```

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result, copy_size_kind};
use crate::{Buffer, Location, Stream};

/// When the driver may read a batch copy's sources (`CUmemcpySrcAccessOrder`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MemcpySrcAccessOrder {
    /// In stream order, like any other stream work (the default).
    #[default]
    Stream,
    /// Only during the call: the sources may be reused as soon as it returns.
    DuringApiCall,
    /// At any time until the copy completes: the driver may reorder the reads for
    /// speed. The sources must not change until then.
    Any,
}

/// Whether batch copies should overlap with kernels (`CUmemcpyFlags`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MemcpyOverlapMode {
    /// The driver's choice.
    #[default]
    Default,
    /// Prefer copy engines that overlap with compute.
    PreferOverlapWithCompute,
}

/// Options for [`copy_batch`], applied to every copy of the batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CopyOptions {
    /// When the sources may be read.
    pub src_access_order: MemcpySrcAccessOrder,
    /// Overlap with compute.
    pub overlap: MemcpyOverlapMode,
    /// Where the sources are, as a hint (`None`: the driver finds out).
    pub src_location_hint: Option<Location>,
    /// Where the destinations are, as a hint.
    pub dst_location_hint: Option<Location>,
}

/// One copy of a [`copy_batch`]: the first `bytes` of `src` into the start of `dst`.
#[derive(Debug)]
pub struct BatchCopy<'a> {
    /// Where to copy to.
    pub dst: &'a mut Buffer,
    /// What to copy.
    pub src: &'a Buffer,
    /// How many bytes.
    pub bytes: usize,
}

fn hint(l: Option<Location>) -> sys::CUmemLocation {
    l.map_or(
        sys::CUmemLocation {
            type_: sys::CU_MEM_LOCATION_TYPE_INVALID,
            id: 0,
        },
        Location::raw,
    )
}

/// Checks that a batch is not empty, and that `stream` suits every buffer; holds the
/// stream's context current.
fn check_batch<'b>(
    buffers: impl Iterator<Item = &'b Buffer>,
    stream: &Stream,
    what: &'static str,
) -> Result<crate::context::Current> {
    let mut current = None;
    for b in buffers {
        let guard = b.check_stream(stream, what)?;
        // Keep the first (outermost) guard; later ones nest inside it.
        current.get_or_insert(guard);
    }
    current.ok_or_else(|| Error::invalid(what, "an empty batch"))
}

/// Copies every entry of `copies` in one call (`cuMemcpyBatchAsync`), ordered on
/// `stream`. Buffers of any kind (device, pinned, managed) may be mixed. On a
/// green context's stream the copies are issued one by one (`cuMemcpyAsync`,
/// without `options`): the batch call crashed there with driver 580.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty batch, a copy of 0 bytes or of more
/// than either buffer holds, or a buffer of another device than `stream`'s; the
/// driver's error.
pub fn copy_batch(
    copies: &mut [BatchCopy<'_>],
    options: &CopyOptions,
    stream: &Stream,
) -> Result<()> {
    const WHAT: &str = "copying a batch of buffers";
    for (i, c) in copies.iter().enumerate() {
        if c.bytes == 0 || c.bytes > c.dst.size() || c.bytes > c.src.size() {
            return Err(Error::invalid_as(
                copy_size_kind(c.bytes),
                WHAT,
                format!(
                    "copy {i}: {} bytes from a buffer of {} into one of {}",
                    c.bytes,
                    c.src.size(),
                    c.dst.size()
                ),
            ));
        }
    }
    let _current = check_batch(copies.iter().flat_map(|c| [&*c.dst, c.src]), stream, WHAT)?;
    let mut dsts: Vec<sys::CUdeviceptr> = copies.iter().map(|c| c.dst.ptr()).collect();
    let mut srcs: Vec<sys::CUdeviceptr> = copies.iter().map(|c| c.src.ptr()).collect();
    let mut sizes: Vec<usize> = copies.iter().map(|c| c.bytes).collect();
    let mut attrs = sys::CUmemcpyAttributes {
        srcAccessOrder: match options.src_access_order {
            MemcpySrcAccessOrder::Stream => sys::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
            MemcpySrcAccessOrder::DuringApiCall => sys::CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL,
            MemcpySrcAccessOrder::Any => sys::CU_MEMCPY_SRC_ACCESS_ORDER_ANY,
        },
        srcLocHint: hint(options.src_location_hint),
        dstLocHint: hint(options.dst_location_hint),
        flags: match options.overlap {
            MemcpyOverlapMode::Default => sys::CU_MEMCPY_FLAG_DEFAULT.0,
            MemcpyOverlapMode::PreferOverlapWithCompute => {
                sys::CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE.0
            }
        },
    };
    if stream.context().is_green() {
        // cuMemcpyBatchAsync on a green context's stream crashed the process with
        // driver 580 (CUDA 13.0); there the copies go one by one.
        for c in copies.iter() {
            // SAFETY: both spans are live and hold `c.bytes` (checked above).
            unsafe { sys::cuMemcpyAsync(c.dst.ptr(), c.src.ptr(), c.bytes, stream.handle()) }
                .check(|| format!("copying {} bytes of a batch", c.bytes))?;
        }
        return crate::memory::order_frees_after(
            copies.iter().flat_map(|c| [&*c.dst, c.src]),
            stream,
        );
    }
    // One set of attributes, applying from copy 0 on.
    let mut attr_idx = [0usize];
    let rc = if crate::versions::driver_at_least(13000) {
        // SAFETY: the three arrays have `copies.len()` entries, each naming live
        // memory of at least that size (checked above); one attribute block
        // applies to all.
        unsafe {
            sys::cuMemcpyBatchAsync(
                dsts.as_mut_ptr(),
                srcs.as_mut_ptr(),
                sizes.as_mut_ptr(),
                copies.len(),
                &mut attrs,
                attr_idx.as_mut_ptr(),
                1,
                stream.handle(),
            )
        }
    } else {
        // CUDA 12.8 and 12.9 drivers take the call in its first shape (with the
        // index of a failing copy); older ones have none and the call fails with
        // `Error::Unsupported`.
        let mut fail_idx = usize::MAX;
        // SAFETY: as above; `fail_idx` is valid for writes.
        unsafe {
            sys::cuda12::cuMemcpyBatchAsync(
                dsts.as_mut_ptr(),
                srcs.as_mut_ptr(),
                sizes.as_mut_ptr(),
                copies.len(),
                &mut attrs,
                attr_idx.as_mut_ptr(),
                1,
                &mut fail_idx,
                stream.handle(),
            )
        }
    };
    rc.check(|| format!("copying a batch of {} buffers", copies.len()))?;
    crate::memory::order_frees_after(copies.iter().flat_map(|c| [&*c.dst, c.src]), stream)
}

/// Whole managed buffers for the batch calls, checked.
fn managed_ranges<'b>(
    buffers: impl Iterator<Item = &'b Buffer> + Clone,
    stream: &Stream,
    what: &'static str,
) -> Result<(Vec<sys::CUdeviceptr>, Vec<usize>, crate::context::Current)> {
    for b in buffers.clone() {
        b.require_managed(what)?;
    }
    let current = check_batch(buffers.clone(), stream, what)?;
    Ok((
        buffers.clone().map(Buffer::ptr).collect(),
        buffers.map(Buffer::size).collect(),
        current,
    ))
}

/// The signature shared by `cuMemPrefetchBatchAsync` and
/// `cuMemDiscardAndPrefetchBatchAsync`.
type PrefetchCall = unsafe fn(
    *mut sys::CUdeviceptr,
    *mut usize,
    usize,
    *mut sys::CUmemLocation,
    *mut usize,
    usize,
    std::ffi::c_ulonglong,
    sys::CUstream,
) -> sys::CUresult;

/// Runs a batched prefetch-like `call` over whole managed buffers, each to its
/// location.
fn prefetch_like<'b>(
    items: impl Iterator<Item = (&'b Buffer, Location)> + Clone,
    stream: &Stream,
    what: &'static str,
    call: PrefetchCall,
) -> Result<()> {
    let (mut ptrs, mut sizes, _current) =
        managed_ranges(items.clone().map(|(b, _)| b), stream, what)?;
    let mut locs: Vec<sys::CUmemLocation> = items.clone().map(|(_, l)| l.raw()).collect();
    let n = locs.len();
    let mut idxs: Vec<usize> = (0..n).collect();
    // SAFETY: `ptrs`/`sizes` name `n` live managed ranges; location `i` applies
    // from range `i` on; `call` is one of the two batch entry points of this shape.
    unsafe {
        call(
            ptrs.as_mut_ptr(),
            sizes.as_mut_ptr(),
            n,
            locs.as_mut_ptr(),
            idxs.as_mut_ptr(),
            n,
            0,
            stream.handle(),
        )
    }
    .check(|| format!("{what} ({n} buffers)"))?;
    crate::memory::order_frees_after(items.map(|(b, _)| b), stream)
}

/// Prefetches each managed buffer to its location in one call
/// (`cuMemPrefetchBatchAsync`), ordered on `stream`.
///
/// # Errors
/// [`Error::Unsupported`] for memory that is not managed; [`Error::InvalidArgument`]
/// for an empty batch or a buffer of another device; the driver's error.
pub fn prefetch_batch(items: &[(&Buffer, Location)], stream: &Stream) -> Result<()> {
    prefetch_like(
        items.iter().map(|&(b, l)| (b, l)),
        stream,
        "prefetching a batch of buffers",
        sys::cuMemPrefetchBatchAsync,
    )
}

/// Discards the contents of each managed buffer in one call
/// (`cuMemDiscardBatchAsync`), ordered on `stream`: the driver may drop their
/// pages instead of migrating them, and later reads see unspecified (but
/// initialised) values until they are written again.
///
/// # Errors
/// As [`prefetch_batch`].
pub fn discard_batch(buffers: &mut [&mut Buffer], stream: &Stream) -> Result<()> {
    const WHAT: &str = "discarding a batch of buffers";
    let (mut ptrs, mut sizes, _current) =
        managed_ranges(buffers.iter().map(|b| &**b), stream, WHAT)?;
    // SAFETY: `ptrs`/`sizes` name `buffers.len()` live managed ranges.
    unsafe {
        sys::cuMemDiscardBatchAsync(
            ptrs.as_mut_ptr(),
            sizes.as_mut_ptr(),
            buffers.len(),
            0,
            stream.handle(),
        )
    }
    .check(|| format!("discarding a batch of {} buffers", buffers.len()))?;
    crate::memory::order_frees_after(buffers.iter().map(|b| &**b), stream)
}

/// Discards each managed buffer's contents and prefetches its (now unspecified)
/// pages to a location, in one call (`cuMemDiscardAndPrefetchBatchAsync`): the
/// way to move memory that is about to be overwritten without copying it.
///
/// # Errors
/// As [`prefetch_batch`].
pub fn discard_prefetch_batch(
    items: &mut [(&mut Buffer, Location)],
    stream: &Stream,
) -> Result<()> {
    prefetch_like(
        items.iter().map(|(b, l)| (&**b, *l)),
        stream,
        "discarding and prefetching a batch of buffers",
        sys::cuMemDiscardAndPrefetchBatchAsync,
    )
}
