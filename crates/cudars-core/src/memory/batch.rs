//! Batched memory operations (CUDA 13): many copies, prefetches or discards in one
//! driver call, the counterparts of `cuda.core.utils.copy_batch`,
//! `prefetch_batch`, `discard_batch` and `discard_prefetch_batch`.
//!
//! ```no_run
//! use cudars_core::{copy_batch, BatchCopy, CopyOptions, Device, StreamOptions};
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
//! # Ok::<(), cudars_core::Error>(())
//! ```
//!
//! Typed views take part too: a [`BatchViewCopy`] copies a view into another
//! of equal length, at any offsets, and the prefetches and discards take views
//! of managed memory ([`BatchRange`], [`BatchRangeMut`]).
//!
//! ```no_run
//! # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
//! use cudars_core::{copy_batch, BatchViewCopy, CopyOptions, DeviceBuffer};
//! let x = DeviceBuffer::from_host(dev, &[1.0f32; 1000], s)?;
//! let mut y = DeviceBuffer::<f32>::zeroed(dev, 1000, s)?;
//! let (mut lo, mut hi) = y.split_at_mut(500)?;
//! copy_batch(
//!     &mut [
//!         BatchViewCopy { dst: lo.slice_mut(..100)?, src: x.slice(900..)? },
//!         BatchViewCopy { dst: hi.reborrow(), src: x.slice(..500)? },
//!     ],
//!     &CopyOptions::default(),
//!     s,
//! )?;
//! # Ok(()) }
//! ```

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result, copy_size_kind};
use crate::{
    memory::arc_view::ArcView, memory::buffer::Buffer, memory::resource::Location,
    memory::view::DeviceView, memory::view::DeviceViewMut, stream::Stream,
};

/// What the batch traits read from their implementors; not nameable outside
/// the crate, so the traits are sealed.
pub(crate) mod sealed {
    use crate::memory::buffer::Buffer;

    /// Bytes in a buffer: where they are and how many.
    #[derive(Clone, Copy)]
    pub struct Range<'a> {
        /// The buffer they lie in.
        pub buffer: &'a Buffer,
        /// The address of the first.
        pub ptr: u64,
        /// How many.
        pub bytes: usize,
    }

    /// Memory a batch operation names.
    pub trait AsRange {
        /// Its bytes.
        fn range(&self) -> Range<'_>;
    }

    /// One copy of a batch.
    pub struct Copy<'a> {
        /// Where to.
        pub dst: Range<'a>,
        /// From where.
        pub src: Range<'a>,
        /// How many bytes.
        pub bytes: usize,
        /// Whether both sides must hold exactly `bytes` (views).
        pub exact: bool,
    }

    /// An entry of a copy batch.
    pub trait AsCopy {
        /// The copy it asks for.
        fn copy(&self) -> Copy<'_>;
    }
}

use sealed::{AsCopy, AsRange, Range};

/// Memory that [`prefetch_batch`] takes: a whole [`Buffer`] or [`ManagedBuffer`](crate::ManagedBuffer)
/// (by reference), a [`DeviceView`], a [`DeviceViewMut`] or an [`ArcView`]
/// (by reference or value). Sealed: implemented by this crate only.
pub trait BatchRange: AsRange {}

/// Memory that [`discard_batch`] and [`discard_prefetch_batch`] may drop the
/// contents of: a whole buffer (`&mut Buffer`, `&mut ManagedBuffer`) or a
/// [`DeviceViewMut`], all exclusive borrows. Sealed: implemented by this crate only.
pub trait BatchRangeMut: BatchRange {}

/// An entry of [`copy_batch`]: a [`BatchCopy`] (bytes, between whole buffers)
/// or a [`BatchViewCopy`] (typed views of equal length, at any offsets).
/// Sealed: implemented by this crate only.
pub trait BatchCopyEntry: AsCopy {}

impl AsRange for Buffer {
    fn range(&self) -> Range<'_> {
        Range {
            buffer: self,
            ptr: self.ptr(),
            bytes: self.size(),
        }
    }
}
impl BatchRange for Buffer {}
impl BatchRangeMut for Buffer {}

/// Typed views name their own bytes.
macro_rules! view_ranges {
    ($($view:ty),*) => {
        $(impl<T: Pod> AsRange for $view {
            fn range(&self) -> Range<'_> {
                Range {
                    buffer: self.buffer(),
                    ptr: self.ptr(),
                    bytes: self.byte_len(),
                }
            }
        }
        impl<T: Pod> BatchRange for $view {})*
    };
}

view_ranges!(DeviceView<'_, T>, DeviceViewMut<'_, T>, ArcView<T>);
impl<T: Pod> BatchRangeMut for DeviceViewMut<'_, T> {}

impl<R: AsRange + ?Sized> AsRange for &R {
    fn range(&self) -> Range<'_> {
        (**self).range()
    }
}
impl<R: BatchRange + ?Sized> BatchRange for &R {}

impl<R: AsRange + ?Sized> AsRange for &mut R {
    fn range(&self) -> Range<'_> {
        (**self).range()
    }
}
impl<R: BatchRange + ?Sized> BatchRange for &mut R {}
impl<R: BatchRangeMut + ?Sized> BatchRangeMut for &mut R {}

/// When the driver may read a batch copy's sources (`CUmemcpySrcAccessOrder`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MemcpySrcAccessOrder {
    /// In stream order, like any other stream work (the default).
    #[default]
    Stream,
    /// Only during the call: the sources may be reused as soon as it returns.
    ///
    /// The driver then reads the sources out of stream order, before work
    /// queued ahead of the copy: so [`copy_batch`] first waits on the host for
    /// `stream` and for each source's free stream (where every use of it is
    /// ordered: rule 2 of the soundness contract, `docs/architecture.md`), and
    /// the copy reads no memory that queued work still writes.
    DuringApiCall,
    /// At any time until the copy completes: the driver may reorder the reads for
    /// speed. The sources must not change until then. As for
    /// [`DuringApiCall`](Self::DuringApiCall), [`copy_batch`] first waits for
    /// `stream` and each source's free stream.
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

impl<'a> BatchCopy<'a> {
    /// One copy per pair of `dsts` and `srcs`, each of all of its source's bytes:
    /// Python's `copy_batch(dst_buffers, src_buffers)` over two lists.
    ///
    /// ```no_run
    /// # fn f(dsts: &mut Vec<cudars_core::Buffer>, srcs: &Vec<cudars_core::Buffer>, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use cudars_core::{copy_batch, BatchCopy, CopyOptions};
    /// copy_batch(&mut BatchCopy::zip(dsts, srcs)?, &CopyOptions::default(), s)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the two lists differ in length (a
    /// destination smaller than its source is refused by the copy).
    pub fn zip(
        dsts: impl IntoIterator<Item = &'a mut Buffer>,
        srcs: impl IntoIterator<Item = &'a Buffer>,
    ) -> Result<Vec<Self>> {
        zip_pairs(dsts, srcs, |dst, src| BatchCopy {
            bytes: src.size(),
            dst,
            src,
        })
    }
}

impl<'a, T: Pod> BatchViewCopy<'a, T> {
    /// One copy per pair of `dsts` and `srcs` (views of equal length), e.g. over
    /// two `Vec<DeviceBuffer<T>>`s:
    /// `BatchViewCopy::zip(dsts.iter_mut().map(|b| b.view_mut()), srcs.iter().map(|b| b.view()))?`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the two lists differ in length (views of
    /// different lengths are refused by the copy).
    pub fn zip(
        dsts: impl IntoIterator<Item = DeviceViewMut<'a, T>>,
        srcs: impl IntoIterator<Item = DeviceView<'a, T>>,
    ) -> Result<Vec<Self>> {
        zip_pairs(dsts, srcs, |dst, src| BatchViewCopy { dst, src })
    }
}

/// Pairs two lists of equal length.
fn zip_pairs<D, S, C>(
    dsts: impl IntoIterator<Item = D>,
    srcs: impl IntoIterator<Item = S>,
    make: impl Fn(D, S) -> C,
) -> Result<Vec<C>> {
    let (mut dsts, mut srcs) = (dsts.into_iter(), srcs.into_iter());
    let mut out = Vec::new();
    loop {
        match (dsts.next(), srcs.next()) {
            (Some(d), Some(s)) => out.push(make(d, s)),
            (None, None) => return Ok(out),
            (d, _) => {
                let (n_dst, n_src) = if d.is_some() {
                    (out.len() + 1 + dsts.count(), out.len())
                } else {
                    (out.len(), out.len() + 1 + srcs.count())
                };
                return Err(Error::invalid(
                    "pairing the buffers of a batch copy",
                    format!("{n_dst} destinations and {n_src} sources"),
                ));
            }
        }
    }
}

impl AsCopy for BatchCopy<'_> {
    fn copy(&self) -> sealed::Copy<'_> {
        sealed::Copy {
            dst: self.dst.range(),
            src: self.src.range(),
            bytes: self.bytes,
            exact: false,
        }
    }
}
impl BatchCopyEntry for BatchCopy<'_> {}

/// One copy of a [`copy_batch`] between typed views: all of `src` into `dst`,
/// which must have the same length. Either may be a sub-range of its buffer
/// (`slice`, `split_at`), of any memory kind.
#[derive(Debug)]
pub struct BatchViewCopy<'a, T> {
    /// Where to copy to.
    pub dst: DeviceViewMut<'a, T>,
    /// What to copy.
    pub src: DeviceView<'a, T>,
}

impl<T: Pod> AsCopy for BatchViewCopy<'_, T> {
    fn copy(&self) -> sealed::Copy<'_> {
        sealed::Copy {
            dst: self.dst.range(),
            src: self.src.range(),
            bytes: self.src.byte_len(),
            exact: true,
        }
    }
}
impl<T: Pod> BatchCopyEntry for BatchViewCopy<'_, T> {}

/// Checks the sizes of copy `i` of a batch, before any driver call.
fn check_copy(i: usize, c: &sealed::Copy<'_>, what: &'static str) -> Result<()> {
    if c.exact && c.dst.bytes != c.src.bytes {
        return Err(Error::out_of_range(
            what,
            format!(
                "copy {i}: views of {} and {} bytes (they must be of equal length)",
                c.src.bytes, c.dst.bytes
            ),
        ));
    }
    if c.bytes == 0 || c.bytes > c.dst.bytes || c.bytes > c.src.bytes {
        return Err(Error::invalid_as(
            copy_size_kind(c.bytes),
            what,
            format!(
                "copy {i}: {} bytes from a span of {} into one of {}",
                c.bytes, c.src.bytes, c.dst.bytes
            ),
        ));
    }
    Ok(())
}

fn hint(l: Option<Location>) -> sys::CUmemLocation {
    l.map_or(
        crate::memory::resource::mem_location(sys::CU_MEM_LOCATION_TYPE_INVALID, 0),
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
/// `stream`: [`BatchCopy`]s (bytes between whole buffers) or [`BatchViewCopy`]s
/// (typed views of equal length, at any offsets). Memory of any kind (device,
/// pinned, managed) may be mixed. On a green context's stream the copies are
/// issued one by one (`cuMemcpyAsync`, without `options`): the batch call
/// crashed there with driver 580. `options` applies to every copy;
/// [`copy_batch_with`] takes options per copy, still in one call.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty batch, a copy of 0 bytes or of more
/// than either side holds, views of different lengths, or memory of another
/// device than `stream`'s; the driver's error.
pub fn copy_batch<C: BatchCopyEntry>(
    copies: &mut [C],
    options: &CopyOptions,
    stream: &Stream,
) -> Result<()> {
    let copies: Vec<sealed::Copy<'_>> = copies.iter().map(AsCopy::copy).collect();
    copy_blocks(&copies, &[(0, *options)], stream)
}

/// [`copy_batch`] with options per copy (Python's `copy_batch(…, options=[…])`,
/// a heterogeneous batch): `options[i]` applies to `copies[i]`. Still one driver
/// call: each run of equal options is one attribute block of
/// `cuMemcpyBatchAsync` (`attrs` and `attrsIdxs`), so a batch with one set of
/// options makes one block, as [`copy_batch`] does.
///
/// As for [`copy_batch`]: every buffer's free is ordered after the batch (rule 2
/// of the soundness contract, `docs/architecture.md`), and a copy whose options
/// read its source out of stream order first waits for the stream and that
/// source's free stream (rule 3).
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use cudars_core::{copy_batch_with, BatchCopy, CopyOptions, MemcpySrcAccessOrder};
/// let (a, b) = (dev.allocate(4096, s)?, dev.allocate(4096, s)?);
/// let (mut x, mut y) = (dev.allocate(4096, s)?, dev.allocate(4096, s)?);
/// let any = CopyOptions { src_access_order: MemcpySrcAccessOrder::Any, ..Default::default() };
/// copy_batch_with(
///     &mut [
///         BatchCopy { dst: &mut x, src: &a, bytes: 4096 },
///         BatchCopy { dst: &mut y, src: &b, bytes: 4096 },
///     ],
///     &[CopyOptions::default(), any],
///     s,
/// )?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`copy_batch`]; [`Error::InvalidArgument`] when `options` and `copies` differ
/// in length.
pub fn copy_batch_with<C: BatchCopyEntry>(
    copies: &mut [C],
    options: &[CopyOptions],
    stream: &Stream,
) -> Result<()> {
    const WHAT: &str = "copying a batch of buffers";
    if options.len() != copies.len() {
        return Err(Error::invalid(
            WHAT,
            format!(
                "{} copies and {} sets of options (one per copy)",
                copies.len(),
                options.len()
            ),
        ));
    }
    let copies: Vec<sealed::Copy<'_>> = copies.iter().map(AsCopy::copy).collect();
    copy_blocks(&copies, &attribute_blocks(options), stream)
}

/// The attribute blocks of a batch with per-copy `options`: one `(first copy,
/// options)` per run of equal options, in order.
fn attribute_blocks(options: &[CopyOptions]) -> Vec<(usize, CopyOptions)> {
    let mut blocks: Vec<(usize, CopyOptions)> = Vec::new();
    for (i, o) in options.iter().enumerate() {
        if blocks.last().is_none_or(|(_, last)| last != o) {
            blocks.push((i, *o));
        }
    }
    blocks
}

/// The options of copy `i`, given the blocks (sorted by first copy, the first
/// at 0).
fn options_of(blocks: &[(usize, CopyOptions)], i: usize) -> &CopyOptions {
    let k = blocks.partition_point(|(first, _)| *first <= i);
    &blocks[k.saturating_sub(1)].1
}

fn raw_attributes(options: &CopyOptions) -> sys::CUmemcpyAttributes {
    sys::CUmemcpyAttributes {
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
    }
}

/// The one body of the batch copies: `copies` with attribute `blocks` (each a
/// first copy and its options; the first at copy 0), in one driver call.
fn copy_blocks(
    copies: &[sealed::Copy<'_>],
    blocks: &[(usize, CopyOptions)],
    stream: &Stream,
) -> Result<()> {
    const WHAT: &str = "copying a batch of buffers";
    for (i, c) in copies.iter().enumerate() {
        check_copy(i, c, WHAT)?;
    }
    let buffers = || copies.iter().flat_map(|c| [c.dst.buffer, c.src.buffer]);
    let _current = check_batch(buffers(), stream, WHAT)?;
    // Soundness contract: rule 3. Out-of-stream-order reads: nothing queued may
    // still write a source when the driver reads it, copy by copy.
    let mut drained = false;
    for (i, c) in copies.iter().enumerate() {
        if options_of(blocks, i).src_access_order == MemcpySrcAccessOrder::Stream {
            continue;
        }
        if !drained {
            stream.drain()?;
            drained = true;
        }
        if let Some(free) = c.src.buffer.free_stream() {
            free.drain()?;
        }
    }
    let mut dsts: Vec<sys::CUdeviceptr> = copies.iter().map(|c| c.dst.ptr).collect();
    let mut srcs: Vec<sys::CUdeviceptr> = copies.iter().map(|c| c.src.ptr).collect();
    let mut sizes: Vec<usize> = copies.iter().map(|c| c.bytes).collect();
    let mut attrs: Vec<sys::CUmemcpyAttributes> =
        blocks.iter().map(|(_, o)| raw_attributes(o)).collect();
    let mut attr_idx: Vec<usize> = blocks.iter().map(|(first, _)| *first).collect();
    if stream.context().is_green() {
        // cuMemcpyBatchAsync on a green context's stream crashed the process with
        // driver 580 (CUDA 13.0); there the copies go one by one.
        for c in copies {
            // SAFETY: both spans are live and hold `c.bytes` (checked above).
            unsafe { sys::cuMemcpyAsync(c.dst.ptr, c.src.ptr, c.bytes, stream.handle()) }
                .check(|| format!("copying {} bytes of a batch", c.bytes))?;
        }
        return crate::memory::buffer::order_frees_after(buffers(), stream);
    }
    let rc = if crate::versions::driver_at_least(13000) {
        // SAFETY: the three arrays have `copies.len()` entries, each naming live
        // memory of at least that size (checked above); `attrs` and `attr_idx`
        // have one entry per block, the first block starting at copy 0 and the
        // others at increasing copies below `copies.len()`.
        unsafe {
            sys::cuMemcpyBatchAsync(
                dsts.as_mut_ptr(),
                srcs.as_mut_ptr(),
                sizes.as_mut_ptr(),
                copies.len(),
                attrs.as_mut_ptr(),
                attr_idx.as_mut_ptr(),
                attrs.len(),
                stream.handle(),
            )
        }
    } else {
        // CUDA 12.8 and 12.9 drivers take the call in its first shape (with the
        // index of a failing copy); older ones have none and the call fails with
        // `Error::Unsupported`.
        let mut fail_idx = usize::MAX;
        // CUDA 12's attributes are their own type, of the same C layout (the
        // headers since 13.4 spell its `CUmemLocation` with a union).
        const _: () = assert!(
            std::mem::size_of::<sys::CUmemcpyAttributes>()
                == std::mem::size_of::<sys::cuda12::CUmemcpyAttributes>()
        );
        // SAFETY: as above; `fail_idx` is valid for writes; the attributes are
        // passed as CUDA 12's type, of the same layout.
        unsafe {
            sys::cuda12::cuMemcpyBatchAsync(
                dsts.as_mut_ptr(),
                srcs.as_mut_ptr(),
                sizes.as_mut_ptr(),
                copies.len(),
                attrs.as_mut_ptr().cast::<sys::cuda12::CUmemcpyAttributes>(),
                attr_idx.as_mut_ptr(),
                attrs.len(),
                &mut fail_idx,
                stream.handle(),
            )
        }
    };
    rc.check(|| format!("copying a batch of {} buffers", copies.len()))?;
    crate::memory::buffer::order_frees_after(buffers(), stream)
}

/// Managed ranges for the batch calls (CUDA 13 drivers: `feature` names the
/// call for an older one), checked.
fn managed_ranges(
    ranges: &[Range<'_>],
    stream: &Stream,
    what: &'static str,
    feature: &'static str,
) -> Result<(Vec<sys::CUdeviceptr>, Vec<usize>, crate::context::Current)> {
    // The caller's mistakes first, whatever the driver: then the driver's version.
    for r in ranges {
        r.buffer.require_managed(what)?;
    }
    let current = check_batch(ranges.iter().map(|r| r.buffer), stream, what)?;
    crate::versions::require_driver(13000, feature, || what)?;
    Ok((
        ranges.iter().map(|r| r.ptr).collect(),
        ranges.iter().map(|r| r.bytes).collect(),
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

/// Runs a batched prefetch-like `call` over managed ranges, each to its
/// location.
fn prefetch_like(
    items: &[(Range<'_>, Location)],
    stream: &Stream,
    (what, feature): (&'static str, &'static str),
    call: PrefetchCall,
) -> Result<()> {
    let ranges: Vec<Range<'_>> = items.iter().map(|(r, _)| *r).collect();
    let (mut ptrs, mut sizes, _current) = managed_ranges(&ranges, stream, what, feature)?;
    let mut locs: Vec<sys::CUmemLocation> = items.iter().map(|(_, l)| l.raw()).collect();
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
    .check(|| batch_context(what, n))?;
    crate::memory::buffer::order_frees_after(ranges.iter().map(|r| r.buffer), stream)
}

/// Prefetches each managed range (a whole buffer or a view, [`BatchRange`]) to
/// its location in one call (`cuMemPrefetchBatchAsync`), ordered on `stream`.
///
/// # Errors
/// [`Error::Unsupported`] for memory that is not managed; [`Error::InvalidArgument`]
/// for an empty batch or a buffer of another device; the driver's error.
pub fn prefetch_batch<R: BatchRange>(items: &[(R, Location)], stream: &Stream) -> Result<()> {
    let items: Vec<(Range<'_>, Location)> = items.iter().map(|(r, l)| (r.range(), *l)).collect();
    prefetch_like(
        &items,
        stream,
        ("prefetching a batch of buffers", "batched prefetches"),
        sys::cuMemPrefetchBatchAsync,
    )
}

/// Discards the contents of each managed range (a whole `&mut Buffer` or a
/// [`DeviceViewMut`]) in one call (`cuMemDiscardBatchAsync`), ordered on
/// `stream`: the driver may drop their pages instead of migrating them, and
/// later reads see unspecified (but initialised) values until they are written
/// again.
///
/// # Errors
/// As [`prefetch_batch`].
pub fn discard_batch<R: BatchRangeMut>(buffers: &mut [R], stream: &Stream) -> Result<()> {
    let ranges: Vec<Range<'_>> = buffers.iter().map(AsRange::range).collect();
    discard_ranges(&ranges, stream, "discarding a batch of buffers")
}

/// Discards one managed buffer ([`ManagedBuffer::discard`](crate::ManagedBuffer::discard)).
pub(crate) fn discard_one(buffer: &mut Buffer, stream: &Stream) -> Result<()> {
    discard_ranges(&[buffer.range()], stream, "discarding a buffer")
}

/// Discards one managed buffer and prefetches it to `location`
/// ([`ManagedBuffer::discard_prefetch`](crate::ManagedBuffer::discard_prefetch)).
pub(crate) fn discard_prefetch_one(
    buffer: &mut Buffer,
    location: Location,
    stream: &Stream,
) -> Result<()> {
    prefetch_like(
        &[(buffer.range(), location)],
        stream,
        ("discarding and prefetching a buffer", DISCARD_PREFETCH),
        sys::cuMemDiscardAndPrefetchBatchAsync,
    )
}

/// The feature [`discard_prefetch_batch`] and [`discard_prefetch_one`] need.
const DISCARD_PREFETCH: &str = "discarding and prefetching managed memory";

/// What a batch call of `n` ranges was doing, for its error.
fn batch_context(what: &'static str, n: usize) -> std::borrow::Cow<'static, str> {
    if n == 1 {
        what.into()
    } else {
        format!("{what} ({n} ranges)").into()
    }
}

/// `cuMemDiscardBatchAsync` over managed ranges.
fn discard_ranges(ranges: &[Range<'_>], stream: &Stream, what: &'static str) -> Result<()> {
    let (mut ptrs, mut sizes, _current) =
        managed_ranges(ranges, stream, what, "discarding managed memory")?;
    // SAFETY: `ptrs`/`sizes` name `ranges.len()` live managed ranges.
    unsafe {
        sys::cuMemDiscardBatchAsync(
            ptrs.as_mut_ptr(),
            sizes.as_mut_ptr(),
            ranges.len(),
            0,
            stream.handle(),
        )
    }
    .check(|| batch_context(what, ranges.len()))?;
    crate::memory::buffer::order_frees_after(ranges.iter().map(|r| r.buffer), stream)
}

/// Discards each managed range's contents and prefetches its (now unspecified)
/// pages to a location, in one call (`cuMemDiscardAndPrefetchBatchAsync`): the
/// way to move memory that is about to be overwritten without copying it.
///
/// # Errors
/// As [`prefetch_batch`].
pub fn discard_prefetch_batch<R: BatchRangeMut>(
    items: &mut [(R, Location)],
    stream: &Stream,
) -> Result<()> {
    let items: Vec<(Range<'_>, Location)> = items.iter().map(|(r, l)| (r.range(), *l)).collect();
    prefetch_like(
        &items,
        stream,
        (
            "discarding and prefetching a batch of buffers",
            DISCARD_PREFETCH,
        ),
        sys::cuMemDiscardAndPrefetchBatchAsync,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;
    use crate::memory::arc_view::host_backed;

    #[test]
    fn batch_copies_are_checked_before_the_driver() {
        // `u32`s, so that the bytes are aligned for them.
        let mut mem = [0u32; 16];
        let mut other = [0u32; 16];
        let a = host_backed(bytemuck::cast_slice_mut(&mut mem));
        let b = host_backed(bytemuck::cast_slice_mut(&mut other));
        let x = a.view::<u32>().unwrap();
        let y = b.view::<u32>().unwrap();
        let copy = |dst, src, bytes, exact| sealed::Copy {
            dst,
            src,
            bytes,
            exact,
        };
        let (x4, y4) = (x.slice(..4).unwrap(), y.slice(12..).unwrap());
        // A view copy at offsets: the lengths match.
        check_copy(0, &copy(y4.range(), x4.range(), 16, true), "t").unwrap();
        assert_eq!((y4.range().ptr, y4.range().bytes), (b.ptr() + 48, 16));
        let x3 = x.slice(1..4).unwrap();
        let e = check_copy(2, &copy(y4.range(), x3.range(), 12, true), "t");
        assert_eq!(kind(e), InvalidKind::OutOfRange);
        let e = check_copy(2, &copy(y4.range(), x3.range(), 12, true), "copying").unwrap_err();
        assert!(
            e.to_string().contains("copy 2: views of 12 and 16 bytes"),
            "{e}"
        );
        let none = x.slice(4..4).unwrap();
        let e = check_copy(0, &copy(none.range(), none.range(), 0, true), "t");
        assert_eq!(kind(e), InvalidKind::ZeroSize);
        // Byte copies: a prefix of either side, not more.
        check_copy(0, &copy(a.range(), b.range(), 64, false), "t").unwrap();
        check_copy(0, &copy(y4.range(), b.range(), 16, false), "t").unwrap();
        let e = check_copy(0, &copy(y4.range(), b.range(), 17, false), "t");
        assert_eq!(kind(e), InvalidKind::OutOfRange);
        let e = check_copy(0, &copy(a.range(), b.range(), 0, false), "t");
        assert_eq!(kind(e), InvalidKind::ZeroSize);
        // Every kind of range names its own bytes.
        let arc = crate::memory::arc_view::ArcView::<u32>::of_buffer(&a)
            .unwrap()
            .slice(2..5)
            .unwrap();
        assert_eq!((arc.range().ptr, arc.range().bytes), (a.ptr() + 8, 12));
        assert_eq!((&&arc).range().ptr, a.ptr() + 8);
    }

    fn order(o: MemcpySrcAccessOrder) -> CopyOptions {
        CopyOptions {
            src_access_order: o,
            ..CopyOptions::default()
        }
    }

    #[test]
    fn per_copy_options_become_one_block_per_run() {
        use MemcpySrcAccessOrder::{Any, DuringApiCall, Stream};
        let opts = [
            order(Stream),
            order(Stream),
            order(Any),
            order(Stream),
            order(DuringApiCall),
            order(DuringApiCall),
        ];
        let blocks = attribute_blocks(&opts);
        let firsts: Vec<usize> = blocks.iter().map(|(i, _)| *i).collect();
        assert_eq!(firsts, [0, 2, 3, 4]);
        // Every copy gets its own options back from the blocks.
        for (i, o) in opts.iter().enumerate() {
            assert_eq!(options_of(&blocks, i), o, "copy {i}");
        }
        // One set of options: one block, as `copy_batch` makes.
        assert_eq!(attribute_blocks(&[order(Any); 5]).len(), 1);
        assert!(attribute_blocks(&[]).is_empty());
        // The raw blocks say what the options say.
        let raw = raw_attributes(&order(DuringApiCall));
        assert_eq!(
            raw.srcAccessOrder,
            sys::CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
        );
    }

    #[test]
    fn zipping_lists_of_different_lengths_is_refused() {
        let pairs = zip_pairs([1, 2, 3], ["a", "b", "c"], |d, s| (d, s)).unwrap();
        assert_eq!(pairs, [(1, "a"), (2, "b"), (3, "c")]);
        let e = zip_pairs([1, 2, 3], ["a"], |d, s| (d, s)).unwrap_err();
        assert!(
            e.to_string().contains("3 destinations and 1 sources"),
            "{e}"
        );
        let e = zip_pairs([1], ["a", "b"], |d, s| (d, s)).unwrap_err();
        assert!(
            e.to_string().contains("1 destinations and 2 sources"),
            "{e}"
        );
        // Two `Vec`s of buffers: each copy takes all of its source.
        let (mut m, mut n, mut o, mut p) = ([0u32; 4], [0u32; 8], [0u32; 4], [0u32; 8]);
        let own = |b: std::sync::Arc<Buffer>| std::sync::Arc::into_inner(b).unwrap();
        let srcs = vec![
            own(host_backed(bytemuck::cast_slice_mut(&mut m))),
            own(host_backed(bytemuck::cast_slice_mut(&mut n))),
        ];
        let mut dsts = vec![
            own(host_backed(bytemuck::cast_slice_mut(&mut o))),
            own(host_backed(bytemuck::cast_slice_mut(&mut p))),
        ];
        let copies = BatchCopy::zip(&mut dsts, &srcs).unwrap();
        let sizes: Vec<usize> = copies.iter().map(|c| c.bytes).collect();
        assert_eq!(sizes, [16, 32]);
        assert_eq!(copies[1].src.ptr(), srcs[1].ptr());
        drop(copies);
        assert!(BatchCopy::zip(&mut dsts, &srcs[..1]).is_err());
    }
}
