//! A buffer's bytes copied and filled: [`Span`], the byte range every typed
//! copy and fill goes through, the device-to-device copy, and the byte
//! [`Buffer`]'s own copies and fills (here, below the views, so that `buffer`
//! names neither).

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::memory::buffer::{Buffer, order_frees_after};
use crate::memory::resource::MemoryKind;
use crate::stream::Stream;
use crate::{context::Context, device::Device};

/// A byte buffer's copies and fills.
impl Buffer {
    /// Copies `src` into the start of the buffer on `stream`, and waits for the copy
    /// (so `src` may be reused at once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is larger than the buffer or the stream
    /// is of another device; the driver's error.
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(src);
        self.check_len(bytes, "copying host memory into a buffer")?;
        // SAFETY: `src` holds `bytes` readable bytes and the buffer at least as many;
        // the stream is drained before `src` can be touched again.
        unsafe { self.span(bytes, 1).upload(src.as_ptr().cast(), stream) }?;
        // Waits before the caller's memory is handed back (the whole context if
        // the stream cannot be waited for).
        stream.drain()
    }

    /// Copies the start of the buffer into `dst` on `stream`, and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `dst` is larger than the buffer or the stream
    /// is of another device; the driver's error.
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        self.check_len(bytes, "copying a buffer to host memory")?;
        // SAFETY: `dst` holds `bytes` writable bytes (any bit pattern is a valid `T`:
        // `Pod`); the stream is drained before `dst` is handed back.
        unsafe {
            self.span(bytes, 1)
                .download(dst.as_mut_ptr().cast(), stream)
        }?;
        stream.drain()
    }

    /// The first `len` elements of `elem` bytes, as a span.
    fn span(&self, len: usize, elem: usize) -> crate::memory::span::Span<'_> {
        crate::memory::span::Span {
            buf: self,
            ptr: self.ptr(),
            len,
            elem,
        }
    }

    /// Copies all of `src` into the start of this buffer, ordered on `stream`
    /// (asynchronous: both buffers are freed in stream order, so put their free
    /// streams after `stream`, or use one stream).
    ///
    /// Between buffers of two devices the copy is a peer copy
    /// (`cuMemcpyPeerAsync`), which needs neither peer access nor pool access (the
    /// driver stages it through the host where the devices cannot reach each
    /// other), and `stream` may belong to either device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is larger than this buffer or the stream
    /// belongs to neither buffer's device; the driver's error.
    pub fn copy_from(&mut self, src: &Buffer, stream: &Stream) -> Result<()> {
        self.check_len(src.size(), "copying between buffers")?;
        copy_device(self, self.ptr(), src, src.ptr(), src.size(), stream)?;
        order_frees_after([&*self, src].into_iter(), stream)
    }

    /// Copies this buffer into the start of `dst` (see [`copy_from`](Self::copy_from)).
    ///
    /// # Errors
    /// As [`copy_from`](Self::copy_from).
    pub fn copy_to(&self, dst: &mut Buffer, stream: &Stream) -> Result<()> {
        dst.copy_from(self, stream)
    }

    /// Fills every byte of the buffer with `value`, ordered on `stream`
    /// (`cuMemsetD8Async`): Python's `buf.fill(42, stream)`.
    ///
    /// The value is a byte, so an unsuffixed literal (`buf.fill(42, &s)`) fills
    /// bytes, as in Python; one that does not fit a byte (`buf.fill(300, &s)`,
    /// `buf.fill(-1, &s)`) or a wider integer variable does not compile. A wider
    /// pattern (Python's `buf.fill(np.uint32(v), stream)`, or a float) is
    /// [`fill_pattern`](Self::fill_pattern), which takes the width from the value's
    /// type.
    ///
    /// ```
    /// # fn f(buf: &mut cudars_core::Buffer, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// buf.fill(42, s)?; // every byte is 42
    /// # Ok(()) }
    /// ```
    ///
    /// ```compile_fail
    /// # fn f(buf: &mut cudars_core::Buffer, s: &cudars_core::Stream, i: usize) -> cudars_core::Result<()> {
    /// buf.fill((i + 1) % 256, s)?; // a usize: say `as u8`, or use `fill_pattern`
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The driver's error; a stream of another device.
    pub fn fill(&mut self, value: u8, stream: &Stream) -> Result<()> {
        self.fill_pattern(value, stream)
    }

    /// Fills the buffer with a byte, ordered on `stream` (the same as
    /// [`fill`](Self::fill)).
    ///
    /// # Errors
    /// The driver's error; a stream of another device.
    pub fn fill_u8(&mut self, value: u8, stream: &Stream) -> Result<()> {
        self.fill_pattern(value, stream)
    }

    /// Fills the buffer with a 2-byte pattern, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of 2; the driver's error.
    pub fn fill_u16(&mut self, value: u16, stream: &Stream) -> Result<()> {
        self.fill_pattern(value, stream)
    }

    /// Fills the buffer with a 4-byte pattern, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of 4; the driver's error.
    pub fn fill_u32(&mut self, value: u32, stream: &Stream) -> Result<()> {
        self.fill_pattern(value, stream)
    }

    /// Fills the buffer with copies of `value`, a 1-, 2-, 4- or 8-byte [`Pod`] value
    /// (`f32`, `i16`, `half::f16`, `u8`, `f64`, a `#[repr(C)]` pair of `u16`s, …),
    /// ordered on `stream`: `buf.fill_pattern(1.5f32, &stream)` where Python writes
    /// `buf.fill(np.float32(1.5), stream)`. The bytes of `value` are repeated as they
    /// are in memory (`cuMemsetD8/D16/D32Async`).
    ///
    /// The width is the value's type, so give a literal its suffix: an unsuffixed
    /// integer is an `i32` (4 bytes) and an unsuffixed float an `f64` (8 bytes), as
    /// anywhere in Rust. Python's `buf.fill(42)` (bytes) is [`fill`](Self::fill).
    ///
    /// The size is checked when the call is compiled to code (`cargo build`, not
    /// `cargo check`): 1, 2 and 4 bytes are one driver memset, 8 bytes (`f64`,
    /// `u64`) two strided 4-byte memsets; a value of another size does not build.
    ///
    /// ```
    /// # fn f(buf: &mut cudars_core::Buffer, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// buf.fill_pattern(1.5f32, s)?;
    /// buf.fill_pattern(0x3c00u16, s)?; // the bits of a half-precision 1.0
    /// buf.fill_pattern(7i8, s)?;
    /// buf.fill_pattern(0.25f64, s)?;
    /// # Ok(()) }
    /// ```
    ///
    /// ```compile_fail,E0080
    /// # fn f(buf: &mut cudars_core::Buffer, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// buf.fill_pattern([1u8, 2, 3], s)?; // 3 bytes: no such memset
    /// # Ok(()) }
    /// # fn main() {
    /// #     let g: fn(&mut cudars_core::Buffer, &cudars_core::Stream) -> cudars_core::Result<()> = f;
    /// #     std::hint::black_box(g);
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the buffer's size or address is not a
    /// multiple of the value's size; the driver's error; a stream of another device.
    pub fn fill_pattern<T: Pod>(&mut self, value: T, stream: &Stream) -> Result<()> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8),
                "Buffer::fill_pattern takes a value of 1, 2, 4 or 8 bytes"
            );
        }
        let len = self.typed_len::<T>("filling a buffer")?;
        self.span(len, std::mem::size_of::<T>())
            .fill(bytemuck::bytes_of(&value), stream)
    }
}

/// Copies `bytes` bytes from `src_ptr` (inside `src`) to `dst_ptr` (inside `dst`),
/// ordered on `stream`: `cuMemcpyAsync` on one device, `cuMemcpyPeerAsync` between
/// two (the stream may then be either device's). The caller checked that both
/// spans lie in their buffers, and orders both buffers' frees after the copy
/// ([`order_frees_after`]) unless a graph being captured keeps them alive.
pub(crate) fn copy_device(
    dst: &Buffer,
    dst_ptr: sys::CUdeviceptr,
    src: &Buffer,
    src_ptr: sys::CUdeviceptr,
    bytes: usize,
    stream: &Stream,
) -> Result<()> {
    const WHAT: &str = "copying between buffers";
    if bytes == 0 {
        return Ok(());
    }
    if src.device() == dst.device() {
        dst.check_stream_device(stream, WHAT)?;
        stream
            .call(|| {
                // SAFETY: both spans are live and large enough; the copy is
                // stream-ordered.
                unsafe { sys::cuMemcpyAsync(dst_ptr, src_ptr, bytes, stream.handle()) }
            })?
            .check(|| format!("copying {bytes} bytes between buffers"))?;
    } else {
        if stream.device() != dst.device() && stream.device() != src.device() {
            return Err(Error::other_device(
                WHAT,
                format!(
                    "the buffers are on devices {} and {}, the stream on device {}",
                    src.device().ordinal(),
                    dst.device().ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        // The context of each side: the stream's for its own device, the primary
        // context for the other.
        let on = |d: &Device| -> Result<Context> {
            if stream.device() == d {
                Ok(stream.context().clone())
            } else {
                d.context()
            }
        };
        let (dst_ctx, src_ctx) = (on(dst.device())?, on(src.device())?);
        let _current = stream.context().ensure_current()?;
        // SAFETY: both spans are live and large enough, each in its device's
        // context; the copy is stream-ordered.
        unsafe {
            sys::cuMemcpyPeerAsync(
                dst_ptr,
                dst_ctx.handle(),
                src_ptr,
                src_ctx.handle(),
                bytes,
                stream.handle(),
            )
        }
        .check(|| {
            format!(
                "copying {bytes} bytes from device {} to device {}",
                src.device().ordinal(),
                dst.device().ordinal()
            )
        })?;
    }
    Ok(())
}

/// Which way a host copy goes.
#[derive(Clone, Copy)]
enum Direction {
    ToDevice,
    ToHost,
}

/// The bytes a typed operation touches, in the buffer that holds them.
pub(crate) struct Span<'a> {
    pub(crate) buf: &'a Buffer,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) elem: usize,
}

impl Span<'_> {
    pub(crate) fn bytes(&self) -> usize {
        self.len * self.elem
    }

    pub(crate) fn check_len(&self, other: usize, what: &'static str) -> Result<()> {
        if other != self.len {
            return Err(Error::out_of_range(
                what,
                format!("the lengths differ: {other} and {} elements", self.len),
            ));
        }
        Ok(())
    }

    /// Queues a copy of `bytes()` bytes from `src` into the span.
    ///
    /// # Safety
    /// `src` must stay readable for `bytes()` bytes until the copy has run.
    pub(crate) unsafe fn upload(&self, src: *const u8, stream: &Stream) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { self.host_copy(src as usize, Direction::ToDevice, stream) }
    }

    /// Queues a copy of the span into `dst`.
    ///
    /// # Safety
    /// `dst` must stay writable for `bytes()` bytes, and untouched, until the copy
    /// has run.
    pub(crate) unsafe fn download(&self, dst: *mut u8, stream: &Stream) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { self.host_copy(dst as usize, Direction::ToHost, stream) }
    }

    /// As [`upload`](Self::upload), for a caller that holds `stream`'s capture
    /// gate and found it not capturing ([`Stream::while_not_capturing`]): the
    /// buffer's free is ordered after the copy without taking the free
    /// stream's gate (the event the free stream waits for is an ordinary one).
    ///
    /// # Safety
    /// As [`upload`](Self::upload).
    pub(crate) unsafe fn upload_uncaptured(&self, src: *const u8, stream: &Stream) -> Result<()> {
        if self.bytes() == 0 {
            return Ok(());
        }
        // SAFETY: per this function's contract.
        unsafe { self.host_copy_queued(src as usize, Direction::ToDevice, stream) }?;
        crate::memory::buffer::order_frees_after_uncaptured(std::iter::once(self.buf), stream)
    }

    /// As [`download`](Self::download), for a caller that holds `stream`'s
    /// capture gate and found it not capturing (see
    /// [`upload_uncaptured`](Self::upload_uncaptured)).
    ///
    /// # Safety
    /// As [`download`](Self::download).
    pub(crate) unsafe fn download_uncaptured(&self, dst: *mut u8, stream: &Stream) -> Result<()> {
        if self.bytes() == 0 {
            return Ok(());
        }
        // SAFETY: per this function's contract.
        unsafe { self.host_copy_queued(dst as usize, Direction::ToHost, stream) }?;
        crate::memory::buffer::order_frees_after_uncaptured(std::iter::once(self.buf), stream)
    }

    /// A copy between the span and host memory at `host`, either way, then the
    /// buffer's free ordered after it (rule 2).
    ///
    /// # Safety
    /// As [`host_copy_queued`](Self::host_copy_queued).
    unsafe fn host_copy(&self, host: usize, dir: Direction, stream: &Stream) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { self.host_copy_queued(host, dir, stream) }?;
        if self.bytes() == 0 {
            return Ok(());
        }
        self.buf.order_free_after(stream)
    }

    /// A copy between the span and host memory at `host`, either way, without
    /// ordering the buffer's free (the caller does). Device memory takes the
    /// explicit path, host-visible memory the unified one (which infers both
    /// sides).
    ///
    /// # Safety
    /// `host` must address `bytes()` bytes, readable (to the device) or writable
    /// and untouched (to the host), until the copy has run.
    unsafe fn host_copy_queued(&self, host: usize, dir: Direction, stream: &Stream) -> Result<()> {
        let n = self.bytes();
        if n == 0 {
            return Ok(());
        }
        let what = match dir {
            Direction::ToDevice => "copying host memory to the device",
            Direction::ToHost => "copying device memory to the host",
        };
        let _current = self.buf.check_stream(stream, what)?;
        let explicit = self.buf.kind() == MemoryKind::Device;
        let s = stream.handle();
        // SAFETY: the span lies in the live buffer; `host` per the contract.
        let rc = unsafe {
            match (dir, explicit) {
                (Direction::ToDevice, true) => sys::cuMemcpyHtoDAsync(self.ptr, host as _, n, s),
                (Direction::ToHost, true) => sys::cuMemcpyDtoHAsync(host as _, self.ptr, n, s),
                (Direction::ToDevice, false) => sys::cuMemcpyAsync(self.ptr, host as u64, n, s),
                (Direction::ToHost, false) => sys::cuMemcpyAsync(host as u64, self.ptr, n, s),
            }
        };
        rc.check(|| {
            let dev = self.buf.device().ordinal();
            match dir {
                Direction::ToDevice => format!("copying {n} bytes from the host to device {dev}"),
                Direction::ToHost => format!("copying {n} bytes from device {dev} to the host"),
            }
        })?;
        Ok(())
    }

    /// Fills the span with the element `pattern` (1, 2, 4 or 8 bytes).
    pub(crate) fn fill(&self, pattern: &[u8], stream: &Stream) -> Result<()> {
        self.fill_queued(pattern, stream)?;
        self.buf.order_free_after(stream)
    }

    /// As [`fill`](Self::fill), without ordering the buffer's free after the
    /// fill: for a capturing stream, whose graph keeps the memory alive instead
    /// (an event of the capture waited for by another stream would pull that
    /// stream into the capture).
    pub(crate) fn fill_queued(&self, pattern: &[u8], stream: &Stream) -> Result<()> {
        let what = "filling device memory";
        let n = self.len;
        let rc = |r: sys::CUresult| {
            r.check(|| format!("filling {n} elements of {} bytes", pattern.len()))
        };
        if !matches!(pattern.len(), 1 | 2 | 4 | 8) {
            return Err(Error::invalid(
                what,
                format!(
                    "elements of {} bytes cannot be filled by the driver (1, 2, 4 or 8 can)",
                    pattern.len()
                ),
            ));
        }
        if self.ptr % pattern.len() as u64 != 0 {
            return Err(Error::invalid(
                what,
                format!("the address is not aligned to {} bytes", pattern.len()),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        let _current = self.buf.check_stream(stream, what)?;
        let s = stream.handle();
        let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        match *pattern {
            // SAFETY: the span's `n` elements lie in the live buffer.
            [b] => rc(unsafe { sys::cuMemsetD8Async(self.ptr, b, n, s) })?,
            [a, b] => {
                let v = u16::from_ne_bytes([a, b]);
                // SAFETY: as above.
                rc(unsafe { sys::cuMemsetD16Async(self.ptr, v, n, s) })?
            }
            // SAFETY: as above.
            [_, _, _, _] => rc(unsafe { sys::cuMemsetD32Async(self.ptr, word(pattern), n, s) })?,
            _ => {
                // Two 4-byte columns of `n` rows with a pitch of 8 bytes: the low
                // and the high half of every element.
                for (off, half) in [(0u64, &pattern[..4]), (4, &pattern[4..])] {
                    // SAFETY: rows of 8 bytes, `n` of them, inside the span.
                    rc(unsafe { sys::cuMemsetD2D32Async(self.ptr + off, 8, word(half), 1, n, s) })?;
                }
            }
        }
        Ok(())
    }
}
