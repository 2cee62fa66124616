//! Asynchronous copies that own their host side: [`ToVec`]
//! ([`DeviceView::to_vec_async`]) and the pinned copies that hand their
//! [`PinnedBuffer`] back.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytemuck::Pod;

use super::Completion;
use crate::error::Result;
use crate::memory::device_buffer::DeviceBuffer;
use crate::memory::pinned_buffer::PinnedBuffer;
use crate::memory::view::{DeviceView, DeviceViewMut};
use crate::stream::Stream;

/// A future of [`DeviceView::to_vec_async`]: the elements in a new vector.
#[must_use = "a future does nothing unless awaited; dropping it does not cancel the copy"]
#[derive(Debug)]
pub struct ToVec<T: Pod + Send> {
    inner: Completion<PinnedBuffer<T>>,
}

impl<T: Pod + Send> Future for ToVec<T> {
    type Output = Result<Vec<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<Vec<T>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Ready(Ok(staging)) => {
                // The copy is complete: the wait `as_slice` makes returns at once.
                let v = staging.as_slice().map(<[T]>::to_vec);
                // Freeing pinned memory may synchronise: through the deferred
                // queue, not in this poll.
                crate::deferred::defer_drop("freeing a staging buffer", staging);
                Poll::Ready(v)
            }
        }
    }
}

impl<T: Pod + Send> DeviceView<'_, T> {
    /// The view's elements in a new vector, copied without blocking: the copy
    /// goes through page-locked memory that the returned future owns until the
    /// copy has completed (a copy into ordinary memory would block the thread
    /// until it finished). The copy is queued now, on `stream`, behind the work
    /// already there.
    ///
    /// Dropping the future before it resolves leaves the staging memory to the
    /// reactor, which frees it after the copy (rule 12 of the soundness
    /// contract, `docs/architecture.md`).
    ///
    /// ```no_run
    /// # async fn f(x: &cudars_core::DeviceBuffer<f32>, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// let v: Vec<f32> = x.to_vec_async(s).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Through the future: as [`copy_to_pinned`](Self::copy_to_pinned) and
    /// [`Stream::completion`]; the staging allocation's error.
    pub fn to_vec_async(&self, stream: &Stream) -> ToVec<T> {
        let staging = PinnedBuffer::zeroed(self.device(), self.len);
        let inner = match staging {
            Ok(staging) => self.copy_to_pinned_async(staging, stream),
            Err(e) => Completion::failed(e),
        };
        ToVec { inner }
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
