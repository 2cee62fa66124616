//! Asynchronous copies that own their host side: [`ToVec`]
//! ([`DeviceView::to_vec_async`]) and the pinned copies that hand their
//! [`PinnedBuffer`] back.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytemuck::Pod;

use super::Completion;
use super::staging::StagingBlock;
use crate::error::Result;
use crate::memory::device_buffer::DeviceBuffer;
use crate::memory::pinned_buffer::PinnedBuffer;
use crate::memory::view::{DeviceView, DeviceViewMut};
use crate::stream::Stream;

/// A future of [`DeviceView::to_vec_async`]: the elements in a new vector.
#[must_use = "a future does nothing unless awaited; dropping it does not cancel the copy"]
pub struct ToVec<T: Pod + Send> {
    inner: Completion<StagingBlock>,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Pod + Send> std::fmt::Debug for ToVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToVec")
            .field("inner", &self.inner)
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Pod + Send> Future for ToVec<T> {
    type Output = Result<Vec<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<Vec<T>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Ready(Ok(block)) => {
                // SAFETY: the block holds at least `len` elements (asked for at
                // `to_vec_async`), is page-aligned (so aligned for `T`), and the
                // copy into it has completed (the future resolved after it, on
                // the same stream): nothing writes it while it is read here.
                let v = unsafe { std::slice::from_raw_parts(block.ptr().cast::<T>(), this.len) }
                    .to_vec();
                // Back to the pool (rule 13 of the soundness contract).
                drop(block);
                Poll::Ready(Ok(v))
            }
        }
    }
}

impl<T: Pod + Send> DeviceView<'_, T> {
    /// The view's elements in a new vector, copied without blocking: the copy
    /// goes through a page-locked block of the process's staging pool, which the
    /// returned future owns until the copy has completed (a copy into ordinary
    /// memory would block the thread until it finished), then gives back for the
    /// next copy. The copy is queued now, on `stream`, behind the work already
    /// there.
    ///
    /// Dropping the future before it resolves leaves the block to the reactor,
    /// which gives it back after the copy (rules 12 and 13 of the soundness
    /// contract, `docs/architecture.md`). Blocks are powers of two from 64 KiB
    /// to 16 MiB (a larger copy allocates its own); at most 64 MiB stay idle
    /// ([`trim_completion_pools`](crate::trim_completion_pools) frees them).
    ///
    /// ```no_run
    /// # async fn f(x: &cudars_core::DeviceBuffer<f32>, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// let v: Vec<f32> = x.to_vec_async(s).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Through the future: [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for a capturing stream or a stream of another device; the staging
    /// allocation's error; as [`Stream::completion`].
    pub fn to_vec_async(&self, stream: &Stream) -> ToVec<T> {
        let bytes = self.len * std::mem::size_of::<T>();
        // Taken before the gate: an allocation may run deferred releases.
        let block = match StagingBlock::take(self.device(), bytes) {
            Ok(b) => b,
            Err(e) => {
                return ToVec {
                    inner: Completion::failed(e),
                    len: self.len,
                    _t: PhantomData,
                };
            }
        };
        // Capture-gate rule (rule 12 of the soundness contract): from the
        // capture check to the completion's record, so neither the copy nor
        // the event goes into a graph that a capture begun meanwhile makes.
        // Refused, the block goes back to the pool (nothing was queued).
        let queued = stream.while_not_capturing(
            "copying device memory to a vector asynchronously",
            "the stream is capturing a graph, which would write the staging memory \
             whenever it is launched",
            || {
                // SAFETY: the block holds `bytes` writable bytes and stays
                // untouched until the copy has run: the completion keeps it
                // until the work queued so far (the copy) has completed (rules
                // 12 and 13). If the copy is refused nothing was queued, and the
                // block goes back.
                unsafe { self.span().download_uncaptured(block.ptr(), stream) }?;
                Ok(super::record_point(stream))
            },
        );
        let inner = match queued {
            Ok(recorded) => Completion::recorded(stream, block, recorded),
            Err(e) => {
                drop(block);
                Completion::failed(e)
            }
        };
        ToVec {
            inner,
            len: self.len,
            _t: PhantomData,
        }
    }

    /// Queues a copy of this view into `dst` (of equal length) on `stream`, and
    /// returns a future that owns `dst` until the copy has completed, then hands
    /// it back with the elements in it.
    ///
    /// # Errors
    /// Through the future: as [`copy_to_pinned`](Self::copy_to_pinned) (then
    /// `dst` is released, after waiting for its copies in flight).
    pub fn copy_to_pinned_async(
        &self,
        mut dst: PinnedBuffer<T>,
        stream: &Stream,
    ) -> Completion<PinnedBuffer<T>> {
        match self.copy_to_pinned(&mut dst, stream) {
            Ok(()) => stream.completion_with(dst),
            Err(e) => {
                // Its own drop waits for its copies in flight: not here.
                crate::deferred::defer_drop("freeing pinned memory", dst);
                Completion::failed(e)
            }
        }
    }
}

impl<T: Pod + Send> DeviceBuffer<T> {
    /// The elements in a new vector, copied without blocking
    /// ([`DeviceView::to_vec_async`]; rule 12 of the soundness contract).
    ///
    /// # Errors
    /// Through the future: see [`DeviceView::to_vec_async`].
    pub fn to_vec_async(&self, stream: &Stream) -> ToVec<T> {
        self.view().to_vec_async(stream)
    }
}

impl<T: Pod + Send> DeviceViewMut<'_, T> {
    /// Queues a copy of `src` (of equal length) into this view on `stream`, and
    /// returns a future that owns `src` until the copy has completed, then hands
    /// it back for reuse.
    ///
    /// For one copy awaited on an executor. To queue an upload, kernels and a
    /// download on one buffer before waiting for any of them, use the non-owning
    /// [`copy_from_pinned`](Self::copy_from_pinned) and
    /// [`DeviceView::copy_to_pinned`] (the buffer tracks its copies in flight; the
    /// `async_api` example shows the pattern).
    ///
    /// # Errors
    /// Through the future: as [`copy_from_pinned`](Self::copy_from_pinned) (then
    /// `src` is released, after waiting for its copies in flight).
    pub fn copy_from_pinned_async(
        &mut self,
        src: PinnedBuffer<T>,
        stream: &Stream,
    ) -> Completion<PinnedBuffer<T>> {
        match self.copy_from_pinned(&src, stream) {
            Ok(()) => stream.completion_with(src),
            Err(e) => {
                crate::deferred::defer_drop("freeing pinned memory", src);
                Completion::failed(e)
            }
        }
    }
}
