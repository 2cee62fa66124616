//! Owning allocations: the `allocate` that turns a [`MemoryResource`] into a
//! [`Buffer`] that frees itself (on `dyn MemoryResource`, on each resource type of
//! the crate, and through [`MemoryResourceExt`] on any other). Here, above both,
//! so that the resource trait names no buffer.

use std::sync::Arc;

use crate::error::Result;
use crate::memory::buffer::Buffer;
use crate::memory::resource::MemoryResource;
use crate::stream::Stream;

impl dyn MemoryResource {
    /// Allocates an owning [`Buffer`] of `size` bytes from this resource, ordered on
    /// `stream` (see [`Buffer::allocate`]): `dev.memory_resource()?.allocate(n,
    /// &stream)?` is a buffer that frees itself. `None` for the stream allocates at
    /// once from a resource that is not stream-ordered.
    ///
    /// # Errors
    /// As [`Buffer::allocate`] (`None` for a stream-ordered resource is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument)).
    pub fn allocate<'s>(
        self: &Arc<Self>,
        size: usize,
        stream: impl Into<Option<&'s Stream>>,
    ) -> Result<Buffer> {
        Buffer::allocate(Arc::clone(self), size, stream)
    }
}

/// The owning `allocate` for an `Arc` of any sized resource type, your own
/// included: `Arc::new(MyResource::new()).allocate(size, &stream)?` is a [`Buffer`].
///
/// The crate's resource types and `dyn MemoryResource` have the same method as an
/// inherent one, which method resolution picks first (no import needed); this trait
/// adds it for other types. It is sealed: implemented for `Arc<R>` only.
pub trait MemoryResourceExt: sealed::Sealed {
    /// Allocates an owning [`Buffer`] of `size` bytes from this resource, ordered on
    /// `stream` (see [`Buffer::allocate`]); `None` allocates at once from a resource
    /// that is not stream-ordered.
    ///
    /// # Errors
    /// As [`Buffer::allocate`].
    fn allocate<'s>(&self, size: usize, stream: impl Into<Option<&'s Stream>>) -> Result<Buffer>;
}

mod sealed {
    pub trait Sealed {}
    impl<R: crate::memory::resource::MemoryResource + 'static> Sealed for std::sync::Arc<R> {}
}

impl<R: MemoryResource + 'static> MemoryResourceExt for Arc<R> {
    fn allocate<'s>(&self, size: usize, stream: impl Into<Option<&'s Stream>>) -> Result<Buffer> {
        Buffer::allocate(self.clone(), size, stream)
    }
}

/// An inherent owning `allocate` for a resource type of the crate, so that
/// `Arc<Type>::allocate` needs no import (method resolution picks it before
/// [`MemoryResourceExt::allocate`]). `ordered` resources take a `&Stream`;
/// `unordered` ones an optional stream (`None`: allocate at once).
macro_rules! owning_allocate {
    (ordered $t:ty $(, $doc:literal)?) => {
        impl $t {
            /// Allocates an owning [`Buffer`](crate::Buffer) of `size` bytes from this
            /// resource, ordered on `stream`, which becomes the buffer's free stream
            /// (see [`Buffer::allocate`](crate::Buffer::allocate)). The resource is
            /// stream-ordered: the stream is required.
            $(#[doc = ""] #[doc = $doc])?
            ///
            /// # Errors
            /// As [`Buffer::allocate`](crate::Buffer::allocate).
            pub fn allocate(
                self: &::std::sync::Arc<Self>,
                size: usize,
                stream: &$crate::stream::Stream,
            ) -> $crate::error::Result<$crate::memory::buffer::Buffer> {
                let mr: ::std::sync::Arc<dyn $crate::memory::resource::MemoryResource> = self.clone();
                $crate::memory::buffer::Buffer::allocate(mr, size, stream)
            }
        }
    };
    (unordered $t:ty $(, $doc:literal)?) => {
        impl $t {
            /// Allocates an owning [`Buffer`](crate::Buffer) of `size` bytes from this
            /// resource. The resource is not stream-ordered: the memory is allocated
            /// at once, and the stream, optional, only becomes the buffer's free
            /// stream (`None`: the device's legacy default stream; see
            /// [`Buffer::allocate`](crate::Buffer::allocate)). `mr.allocate(n, None)`
            /// and `mr.allocate(n, &stream)` both work.
            $(#[doc = ""] #[doc = $doc])?
            ///
            /// # Errors
            /// As [`Buffer::allocate`](crate::Buffer::allocate).
            pub fn allocate<'s>(
                self: &::std::sync::Arc<Self>,
                size: usize,
                stream: impl Into<Option<&'s $crate::stream::Stream>>,
            ) -> $crate::error::Result<$crate::memory::buffer::Buffer> {
                let mr: ::std::sync::Arc<dyn $crate::memory::resource::MemoryResource> = self.clone();
                $crate::memory::buffer::Buffer::allocate(mr, size, stream)
            }
        }
    };
}
pub(crate) use owning_allocate;
