//! The staging pool: page-locked blocks that asynchronous copies between device
//! memory and ordinary host memory go through ([`DeviceView::to_vec_async`](crate::DeviceView::to_vec_async)),
//! reused instead of allocated per copy (`cuMemHostAlloc` and `cuMemFreeHost` cost
//! tens of microseconds for a megabyte, and freeing waits for a stream).
//!
//! Architecture Invariant (rule 13 of the soundness contract,
//! `docs/architecture.md`): a block goes back to the pool only when it is
//! dropped, and a block is dropped only where freeing it would be allowed: it is
//! only ever kept by a [`Completion`](super::Completion), whose slot releases
//! what it keeps after the work completed, or after the context was waited for
//! following a failure (rules 12 and 4). So a block handed out again is touched
//! by no work queued before. `mem::forget` of the future leaks the block; it never
//! returns to the pool.
//!
//! Blocks come in power-of-two sizes from [`MIN_BLOCK`] to [`MAX_POOLED_BLOCK`];
//! a larger copy gets a block of its own, freed after it. At most
//! [`MAX_IDLE_BYTES`] stay idle; a block given back beyond that is freed (off
//! the returning thread, through the deferred queue: the free may wait).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::device::Device;
use crate::error::Result;
use crate::memory::buffer::Buffer;
use crate::memory::pinned::LegacyPinnedMemoryResource;

/// The smallest block.
const MIN_BLOCK: usize = 64 * 1024;
/// The largest block the pool keeps.
const MAX_POOLED_BLOCK: usize = 16 * 1024 * 1024;
/// The most idle bytes the pool keeps.
const MAX_IDLE_BYTES: usize = 64 * 1024 * 1024;

#[derive(Default)]
struct Idle {
    blocks: Vec<Buffer>,
    bytes: usize,
}

static IDLE: Mutex<Idle> = Mutex::new(Idle {
    blocks: Vec::new(),
    bytes: 0,
});

fn lock() -> MutexGuard<'static, Idle> {
    IDLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A page-locked block of the pool, of at least the bytes asked for.
pub(crate) struct StagingBlock {
    buf: Option<Buffer>,
    /// Whether it goes back to the pool when dropped.
    pooled: bool,
}

impl std::fmt::Debug for StagingBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagingBlock")
            .field("size", &self.buf.as_ref().map_or(0, Buffer::size))
            .field("pooled", &self.pooled)
            .finish()
    }
}

impl StagingBlock {
    /// A block of at least `bytes` bytes: an idle one, or a new one allocated
    /// through `device`'s context (the memory is portable to every context).
    ///
    /// # Errors
    /// The allocation's error.
    pub(crate) fn take(device: &Device, bytes: usize) -> Result<Self> {
        let size = bytes.max(MIN_BLOCK).checked_next_power_of_two();
        let (size, pooled) = match size {
            Some(s) if s <= MAX_POOLED_BLOCK => (s, true),
            _ => (bytes, false),
        };
        if pooled {
            let mut g = lock();
            if let Some(i) = g.blocks.iter().rposition(|b| b.size() == size) {
                let buf = g.blocks.swap_remove(i);
                g.bytes -= size;
                return Ok(Self {
                    buf: Some(buf),
                    pooled,
                });
            }
        }
        let mr = Arc::new(LegacyPinnedMemoryResource::new(device));
        let buf = mr.allocate(size, None)?;
        Ok(Self {
            buf: Some(buf),
            pooled,
        })
    }

    /// The block's host address.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.buf
            .as_ref()
            .map_or(std::ptr::null_mut(), |b| b.ptr() as usize as *mut u8)
    }
}

// Rule 13 of the soundness contract: dropped only where it could be freed (it
// is kept by a `Completion`, rule 12), so the next owner finds no work on it.
impl Drop for StagingBlock {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        if self.pooled {
            let mut g = lock();
            if g.bytes + buf.size() <= MAX_IDLE_BYTES {
                g.bytes += buf.size();
                g.blocks.push(buf);
                return;
            }
        }
        // Freeing page-locked memory waits for a stream: not on this thread.
        crate::deferred::defer_drop("freeing a staging block", buf);
    }
}

/// Frees every idle block; returns the bytes freed.
pub(crate) fn trim() -> usize {
    let idle = std::mem::take(&mut *lock());
    let bytes = idle.bytes;
    drop(idle);
    bytes
}

/// Destroys the events and frees the page-locked staging blocks that the
/// asynchronous API keeps idle for reuse (an event per completion point, a
/// staging block per [`to_vec_async`](crate::DeviceView::to_vec_async)), on
/// this thread; returns the bytes of page-locked memory freed. What is in use
/// stays in use and returns to the pools later. For a program that is done
/// awaiting GPU work, or a test that counts what is left.
pub fn trim_completion_pools() -> usize {
    super::event_pool::trim();
    trim()
}
