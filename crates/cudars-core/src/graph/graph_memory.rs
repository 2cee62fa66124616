//! [`GraphMemoryResource`]: a device's graph memory (what graphs allocate when
//! they run), as `cuda.core`'s resource of that name.

use bytemuck::Pod;

use crate::error::Result;
use crate::{device::Device, memory::resource::MemoryKind};

use crate::graph::builder_rules::check_device;
use crate::{
    graph::builder::GraphBuilder, graph::memory_nodes::GraphMemUsage, graph::view::GraphView,
};

/// The memory graphs of a device allocate as they run (`cuda.core`'s
/// `GraphMemoryResource`): each allocation is an allocation node of a graph
/// being built, freed by a free node as the graph ends, and the driver keeps
/// the memory of all graphs of the device in one reserve, which this resource
/// reports on ([`attributes`](Self::attributes)) and trims
/// ([`trim`](Self::trim)).
///
/// It allocates only into a [`GraphBuilder`] ([`allocate`](Self::allocate), the
/// builder's [`GraphBuilder::allocate`]): outside a graph there is no graph
/// memory, so it is not a [`MemoryResource`](crate::MemoryResource) (whose
/// allocations any stream may take). What it hands out is a [`GraphView`],
/// which only work ordered after the allocation in that graph accepts; it is
/// freed by the graph, never by the view (Python's `deallocate` has nothing to
/// do).
///
/// ```no_run
/// # fn f() -> cudars_core::Result<()> {
/// use cudars_core::{CaptureMode, Device, GraphCompleteOptions, GraphMemoryResource};
/// let dev = Device::new(0)?;
/// let mr = GraphMemoryResource::new(&dev);
/// let mut builder = dev.create_graph_builder()?;
/// builder.begin_building(CaptureMode::default())?;
/// let scratch = mr.allocate::<f32>(&builder, 1 << 20)?;
/// builder.fill(scratch.clone(), 0.0f32)?;
/// builder.end_building()?;
/// let exec = builder.complete(GraphCompleteOptions::default())?;
/// # let _ = exec;
/// println!("graph memory in use: {} bytes", mr.attributes()?.used);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphMemoryResource {
    device: Device,
}

impl GraphMemoryResource {
    /// The graph memory of `device`.
    pub fn new(device: &Device) -> Self {
        Self { device: *device }
    }

    /// The device (Python's `device_id` is its [`ordinal`](Device::ordinal)).
    pub fn device(&self) -> Device {
        self.device
    }

    /// Device memory: [`MemoryKind::Device`] (not host-accessible, not managed).
    pub fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }

    /// Always `true`.
    pub fn is_device_accessible(&self) -> bool {
        true
    }

    /// Always `false`.
    pub fn is_host_accessible(&self) -> bool {
        false
    }

    /// Always `false`.
    pub fn is_managed(&self) -> bool {
        false
    }

    /// Allocates `len` elements of `T` in the graph `builder` is building: an
    /// allocation node, and a free node as the graph ends
    /// ([`GraphBuilder::allocate`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a builder of
    /// another device; as [`GraphBuilder::allocate`].
    pub fn allocate<T: Pod>(&self, builder: &GraphBuilder, len: usize) -> Result<GraphView<T>> {
        check_device(
            builder.device(),
            ("graph memory resource", &self.device),
            "allocating graph memory",
        )?;
        builder.allocate(len)
    }

    /// How much graph memory the device uses and reserves, with the high-water
    /// marks (`cuDeviceGetGraphMemAttribute`; Python's `attributes`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn attributes(&self) -> Result<GraphMemUsage> {
        self.device.graph_mem_usage()
    }

    /// Resets the high-water marks to the current figures.
    ///
    /// # Errors
    /// The driver's error.
    pub fn reset_high_watermarks(&self) -> Result<()> {
        self.device.reset_graph_mem_high_watermarks()
    }

    /// Returns reserved graph memory that no graph uses to the system
    /// (`cuDeviceGraphMemTrim`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn trim(&self) -> Result<()> {
        self.device.graph_mem_trim()
    }
}
