//! Ranges: scoped ones on one thread's stack, and start/end ones any thread ends.

use std::marker::PhantomData;

use crate::attributes::Attributes;
use crate::domain::Domain;

/// A range on the calling thread's stack, ended (popped) when the guard drops.
/// Made by [`range`](crate::range) or [`Domain::range`].
///
/// The guard stays on its thread (`!Send`): NVTX keeps one stack per thread, and a
/// pop on another thread would end that thread's innermost range. Forgetting the
/// guard leaves the range open until the thread ends; nothing else goes wrong.
#[derive(Debug)]
#[must_use = "the range ends when the guard drops"]
pub struct ScopedRange<'d> {
    domain: Option<&'d Domain>,
    _not_send: PhantomData<*const ()>,
}

impl<'d> ScopedRange<'d> {
    pub(crate) fn new(domain: Option<&'d Domain>) -> Self {
        ScopedRange {
            domain,
            _not_send: PhantomData,
        }
    }
}

impl Drop for ScopedRange<'_> {
    fn drop(&mut self) {
        match self.domain {
            Some(d) => d.pop_raw(),
            None => {
                let _ = crate::pop();
            }
        }
    }
}

/// A range that any thread may end: [`Range::end`], or dropping it. Made by
/// [`start_range`](crate::start_range) or [`Domain::start_range`].
#[derive(Debug)]
#[must_use = "the range ends when it drops"]
pub struct Range<'d> {
    id: u64,
    domain: Option<&'d Domain>,
}

impl<'d> Range<'d> {
    pub(crate) fn new(id: u64, domain: Option<&'d Domain>) -> Self {
        Range { id, domain }
    }

    /// The tool's id for the range (`nvtxRangeId_t`; 0 without a tool).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Ends the range now, on the calling thread.
    pub fn end(self) {
        drop(self);
    }
}

impl Drop for Range<'_> {
    fn drop(&mut self) {
        match self.domain {
            Some(d) => d.end_raw(self.id),
            None => crate::end_raw(self.id),
        }
    }
}

/// The range methods of [`Domain`], beside the guards they return (the domain's
/// own module knows no range).
impl Domain {
    /// A range on the calling thread, from now until the guard drops (a push now,
    /// a pop then).
    #[must_use = "the range ends when the guard drops"]
    pub fn range<'a>(&self, attributes: impl Into<Attributes<'a>>) -> ScopedRange<'_> {
        self.push(attributes);
        ScopedRange::new(Some(self))
    }

    /// Starts a range that any thread may end (with [`Range::end`] or by dropping
    /// it): a request handed from thread to thread, an asynchronous phase.
    #[must_use = "the range ends when it drops"]
    pub fn start_range<'a>(&self, attributes: impl Into<Attributes<'a>>) -> Range<'_> {
        Range::new(self.start_raw(attributes), Some(self))
    }
}
