//! Buffers and the memory resources that allocate them (a map: the parts are
//! its modules): the [`MemoryResource`] trait and [`Location`] in `resource`;
//! [`Buffer`] in `buffer`; one module per resource
//! (`pool`: the device's stream-ordered pools, `pinned`, `managed`; the virtual
//! memory resource is `crate::memory::vmm`). The typed arrays ([`DeviceBuffer`],
//! [`PinnedBuffer`]), their views ([`DeviceView`], [`ArcView`]) and batched copies
//! sit here too.
//!
//! [`DeviceBuffer`]: device_buffer::DeviceBuffer
//! [`PinnedBuffer`]: pinned_buffer::PinnedBuffer
//! [`DeviceView`]: view::DeviceView
//! [`ArcView`]: arc_view::ArcView
//! [`MemoryResource`]: resource::MemoryResource
//! [`Location`]: resource::Location

pub(crate) mod allocate;
pub(crate) mod arc_view;
pub(crate) mod batch;
pub(crate) mod buffer;
pub(crate) mod device_buffer;
#[cfg(unix)]
pub(crate) mod fd;
pub(crate) mod managed;
pub(crate) mod managed_buffer;
pub(crate) mod pinned;
pub(crate) mod pinned_buffer;
pub(crate) mod pool;
mod pool_peers;
pub(crate) mod resource;
pub(crate) mod span;
pub(crate) mod view;
#[cfg(feature = "vmm")]
pub(crate) mod vmm;
#[cfg(all(unix, feature = "vmm"))]
pub(crate) mod vmm_ipc;
#[cfg(feature = "vmm")]
pub(crate) mod vmm_options;

pub use allocate::MemoryResourceExt;
pub use buffer::Buffer;
pub use managed::{ManagedMemoryResource, ManagedMemoryResourceOptions};
pub use managed_buffer::ManagedBuffer;
pub use pinned::{LegacyPinnedMemoryResource, PinnedMemoryResource, PinnedMemoryResourceOptions};
pub use pool::{DeviceMemoryPoolOptions, DeviceMemoryResource, PoolAttributes, PoolReuse};
pub use resource::{Location, MemoryKind, MemoryResource};
