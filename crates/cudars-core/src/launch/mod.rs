//! Launch configuration and type-checked kernel launches.
//!
//! Here: the launch configuration, kernel arguments and the byte launch; the
//! typed launch ([`typed_kernel`]) and what kernels take by value: tensor maps
//! ([`tensor_map`]; made from arrays: [`tensor_map_array`]), textures and surfaces ([`texture`]).

#[cfg(feature = "arrays")]
pub(crate) mod array;
#[cfg(feature = "tensor-maps")]
pub(crate) mod tensor_map;
#[cfg(feature = "tensor-maps")]
pub(crate) mod tensor_map_array;
#[cfg(feature = "tensor-maps")]
pub(crate) mod tensor_map_layout;
#[cfg(feature = "tensor-maps")]
pub(crate) mod tensor_map_options;
#[cfg(feature = "arrays")]
pub(crate) mod texture;
pub(crate) mod typed_kernel;

use std::ffi::c_void;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{code::kernel::Kernel, memory::buffer::Buffer, stream::Stream};

/// Three dimensions of a grid, block or cluster. `From` a `u32`, `(u32, u32)` or
/// `(u32, u32, u32)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

impl Dim3 {
    /// `x * y * z`, which cannot overflow a `u64`.
    pub(crate) fn count(self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }

    fn has_zero(self) -> bool {
        self.x == 0 || self.y == 0 || self.z == 0
    }

    /// The three dimensions with their names, for per-axis checks.
    fn axes(self) -> [(&'static str, u32); 3] {
        [("x", self.x), ("y", self.y), ("z", self.z)]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }
}

/// `()`: one in each dimension (`cuda.core`'s `cast_to_3_tuple` of `()`).
impl From<()> for Dim3 {
    fn from((): ()) -> Self {
        Self { x: 1, y: 1, z: 1 }
    }
}

/// A one-tuple: as its number.
impl From<(u32,)> for Dim3 {
    fn from((x,): (u32,)) -> Self {
        Self { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

/// The size of a clustered launch's grid, with its unit: blocks or clusters.
///
/// Used by [`LaunchConfig::with_clusters`]. There is deliberately no `From` a
/// number: a grid with clusters must say what it counts, because Python's
/// `cuda.core` counts **clusters** (`LaunchConfig(grid=4, cluster=2, block=32)`
/// launches 8 blocks) while CUDA C's `gridDim` counts **blocks**.
///
/// ```
/// use cudars_core::{Dim3, Grid};
/// assert_eq!(Grid::clusters(4), Grid::Clusters(Dim3::from(4)));
/// assert_eq!(Grid::blocks((8, 2)), Grid::Blocks(Dim3 { x: 8, y: 2, z: 1 }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grid {
    /// This many blocks, in total (CUDA C's `gridDim`); each dimension must be a
    /// multiple of the cluster's.
    Blocks(Dim3),
    /// This many clusters (Python's `grid` when `cluster` is given); the launch has
    /// this times the cluster's blocks in each dimension.
    Clusters(Dim3),
}

impl Grid {
    /// [`Grid::Blocks`] from a `u32`, `(u32, u32)` or `(u32, u32, u32)`.
    pub fn blocks(blocks: impl Into<Dim3>) -> Self {
        Self::Blocks(blocks.into())
    }

    /// [`Grid::Clusters`] from a `u32`, `(u32, u32)` or `(u32, u32, u32)`.
    pub fn clusters(clusters: impl Into<Dim3>) -> Self {
        Self::Clusters(clusters.into())
    }
}

/// How to launch a kernel: grid and block dimensions, optional thread-block
/// cluster, dynamic shared memory and launch attributes (`cuLaunchKernelEx`).
///
/// **[`LaunchConfig::new`]'s grid counts blocks. With a cluster, Python's
/// `cuda.core` counts the grid in clusters: `LaunchConfig(grid=4, cluster=2,
/// block=32)` launches 8 blocks, and is
/// `LaunchConfig::with_clusters(Grid::clusters(4), 2, 32)?` here.** The grid and
/// cluster are therefore set only through constructors that name the grid's
/// unit, and read back through [`grid_blocks`](Self::grid_blocks),
/// [`grid_clusters`](Self::grid_clusters) and [`total_blocks`](Self::total_blocks):
///
/// | you mean | write |
/// |---|---|
/// | 8 blocks of 32 threads, no clusters | `LaunchConfig::new(8, 32)` |
/// | 4 clusters of 2 blocks (Python's `grid=4, cluster=2`) | `LaunchConfig::with_clusters(Grid::clusters(4), 2, 32)?` |
/// | 8 blocks, in clusters of 2 | `LaunchConfig::with_clusters(Grid::blocks(8), 2, 32)?` or `LaunchConfig::new(8, 32).group_blocks_into_clusters(2)?` |
///
/// ```
/// use cudars_core::{Dim3, Grid, LaunchConfig};
/// # fn main() -> cudars_core::Result<()> {
/// let python = LaunchConfig::with_clusters(Grid::clusters(4), 2, 32)?;
/// let blocks = LaunchConfig::with_clusters(Grid::blocks(8), 2, 32)?;
/// assert_eq!(python, blocks);
/// assert_eq!(python.total_blocks(), 8);
/// assert_eq!(python.grid_blocks(), Dim3::from(8));
/// assert_eq!(python.grid_clusters(), Some(Dim3::from(4)));
/// // A grid of blocks that the cluster does not divide is an error, not a smaller grid.
/// assert!(LaunchConfig::with_clusters(Grid::blocks(7), 2, 32).is_err());
/// # Ok(()) }
/// ```
///
/// Dynamic shared memory and the launch attributes are public fields:
///
/// ```
/// let mut config = cudars_core::LaunchConfig::new(1, 256);
/// config.shmem_size = 4096;
/// config.cooperative = true;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid (always blocks: a clustered grid is stored multiplied out).
    pub(crate) grid: Dim3,
    /// Threads in a block.
    pub(crate) block: Dim3,
    /// Blocks in a cluster (sm_90 and later); `grid` is a multiple of it.
    pub(crate) cluster: Option<Dim3>,
    /// Dynamic shared memory per block, in bytes.
    pub shmem_size: u32,
    /// A cooperative launch: all blocks resident at once, grid-wide sync allowed.
    pub cooperative: bool,
    /// Programmatic stream serialisation: the kernel may start before the previous
    /// one on the stream finishes (with `cudaGridDependencySynchronize`).
    pub programmatic_stream_serialization: bool,
    /// The launch's priority, overriding the stream's.
    pub priority: Option<i32>,
}

impl LaunchConfig {
    /// `grid_blocks` **blocks** (not clusters) of `block` threads, without clusters,
    /// dynamic shared memory or attributes. For clusters, see
    /// [`with_clusters`](Self::with_clusters).
    ///
    /// This cannot fail: a zero dimension is refused by the launch
    /// ([`Error::InvalidArgument`], before the driver is called), where
    /// `cuda.core`'s `LaunchConfig` raises at once. To refuse it here, as
    /// `cuda.core` does, use [`try_from_dims`](Self::try_from_dims) (or
    /// [`try_new`](Self::try_new) for `usize` counts).
    pub fn new(grid_blocks: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid_blocks.into(),
            block: block.into(),
            cluster: None,
            shmem_size: 0,
            cooperative: false,
            programmatic_stream_serialization: false,
            priority: None,
        }
    }

    /// [`new`](Self::new) for one-dimensional `usize` counts (lengths, as Rust
    /// has them): `grid_blocks` blocks of `block` threads, each checked to fit
    /// the `u32` CUDA takes.
    ///
    /// ```
    /// use cudars_core::LaunchConfig;
    /// let n: usize = 1 << 20;
    /// let config = LaunchConfig::try_new(n.div_ceil(256), 256)?;
    /// assert_eq!(config.total_blocks(), 4096);
    /// assert!(LaunchConfig::try_new(1usize << 40, 256).is_err());
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange))
    /// naming the count that does not fit; ([`InvalidKind::ZeroSize`](crate::InvalidKind::ZeroSize))
    /// for a count of 0 (`cuda.core`'s `ValueError`).
    pub fn try_new(grid_blocks: usize, block: usize) -> Result<Self> {
        let fit = |what: &str, n: usize| {
            u32::try_from(n).map_err(|_| {
                Error::out_of_range(
                    "making a launch configuration",
                    format!("{n} {what} do not fit the u32 CUDA takes"),
                )
            })
        };
        Self::try_from_dims(
            fit("grid blocks", grid_blocks)?,
            fit("threads per block", block)?,
        )
    }

    /// [`new`](Self::new), refusing a zero dimension at once, as `cuda.core`'s
    /// `LaunchConfig(grid=…, block=…)` does.
    ///
    /// ```
    /// use cudars_core::LaunchConfig;
    /// assert!(LaunchConfig::try_from_dims((4, 2), 128).is_ok());
    /// assert!(LaunchConfig::try_from_dims((1, 1, 1), (0, 1)).is_err());
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::ZeroSize`](crate::InvalidKind::ZeroSize))
    /// when a grid or block dimension is 0.
    pub fn try_from_dims(grid_blocks: impl Into<Dim3>, block: impl Into<Dim3>) -> Result<Self> {
        let config = Self::new(grid_blocks, block);
        if config.grid.has_zero() || config.block.has_zero() {
            return Err(zero_dims("making a launch configuration"));
        }
        Ok(config)
    }

    /// Enough blocks of `block` threads to cover `n` elements.
    pub fn for_elements(n: u64, block: u32) -> Self {
        let block = block.max(1);
        let grid = n.div_ceil(u64::from(block)).clamp(1, u64::from(u32::MAX)) as u32;
        Self::new(grid, block)
    }

    /// A launch in thread-block clusters of `cluster` blocks (sm_90 and later), each
    /// block of `block` threads, with a grid of `grid` **in the unit it names**:
    ///
    /// - [`Grid::Clusters`]: Python's spelling. `LaunchConfig(grid=4, cluster=2,
    ///   block=32)` is `with_clusters(Grid::clusters(4), 2, 32)`, 8 blocks.
    /// - [`Grid::Blocks`]: CUDA C's. `with_clusters(Grid::blocks(8), 2, 32)` is the
    ///   same 8 blocks; each dimension must be a multiple of the cluster's.
    ///
    /// The argument order is Python's (`grid`, `cluster`, `block`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero dimension, a grid of blocks that is not
    /// a multiple of the cluster (naming both numbers), or a grid of clusters whose
    /// blocks do not fit a `u32` in some dimension.
    pub fn with_clusters(
        grid: Grid,
        cluster: impl Into<Dim3>,
        block: impl Into<Dim3>,
    ) -> Result<Self> {
        let cluster = cluster.into();
        let block = block.into();
        let what = "making a clustered launch configuration";
        let blocks = match grid {
            Grid::Blocks(g) => g,
            Grid::Clusters(g) => {
                if g.has_zero() || cluster.has_zero() {
                    return Err(zero_dims(what));
                }
                Dim3 {
                    x: clusters_to_blocks(g.x, cluster.x, "x", what)?,
                    y: clusters_to_blocks(g.y, cluster.y, "y", what)?,
                    z: clusters_to_blocks(g.z, cluster.z, "z", what)?,
                }
            }
        };
        Self::new(blocks, block).group_blocks_into_clusters_as(cluster, what)
    }

    /// The same grid of **blocks** (and the same settings), grouped into clusters of
    /// `cluster` blocks (sm_90 and later). `LaunchConfig::new(8, 32)
    /// .group_blocks_into_clusters(2)?` launches 8 blocks, as 4 clusters. A clustered
    /// configuration is regrouped: its grid of blocks stays.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero dimension or a grid of blocks that is
    /// not a multiple of the cluster in some dimension (naming both numbers).
    pub fn group_blocks_into_clusters(self, cluster: impl Into<Dim3>) -> Result<Self> {
        let what = "grouping a grid's blocks into clusters";
        self.group_blocks_into_clusters_as(cluster.into(), what)
    }

    fn group_blocks_into_clusters_as(mut self, cluster: Dim3, what: &'static str) -> Result<Self> {
        if self.grid.has_zero() || self.block.has_zero() || cluster.has_zero() {
            return Err(zero_dims(what));
        }
        check_multiple(self.grid, cluster, what)?;
        self.cluster = Some(cluster);
        Ok(self)
    }

    /// The grid in **blocks**: what the kernel sees as `gridDim`, whether or not the
    /// launch is clustered.
    pub fn grid_blocks(&self) -> Dim3 {
        self.grid
    }

    /// The grid in **clusters** (Python's `LaunchConfig.grid` when a cluster is
    /// set); `None` without clusters.
    pub fn grid_clusters(&self) -> Option<Dim3> {
        self.cluster.map(|c| Dim3 {
            x: self.grid.x / c.x.max(1),
            y: self.grid.y / c.y.max(1),
            z: self.grid.z / c.z.max(1),
        })
    }

    /// Threads in a block.
    pub fn block(&self) -> Dim3 {
        self.block
    }

    /// Blocks in a cluster; `None` without clusters.
    pub fn cluster(&self) -> Option<Dim3> {
        self.cluster
    }

    /// How many blocks the launch runs, in all.
    pub fn total_blocks(&self) -> u64 {
        self.grid.count()
    }

    #[inline]
    pub(crate) fn validate(&self) -> Result<()> {
        if self.grid.has_zero() || self.block.has_zero() || self.cluster.is_some() {
            return self.validate_slow();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn validate_slow(&self) -> Result<()> {
        let what = "launching a kernel";
        if self.grid.has_zero() || self.block.has_zero() {
            return Err(zero_dims(what));
        }
        if let Some(c) = self.cluster {
            if c.has_zero() {
                return Err(zero_dims(what));
            }
            check_multiple(self.grid, c, what)?;
        }
        Ok(())
    }

    /// The driver's config; the attributes live in `attrs`.
    pub(crate) fn raw(&self, stream: &Stream, attrs: &mut Attrs) -> sys::CUlaunchConfig {
        attrs.n = 0;
        let mut push = |id: sys::CUlaunchAttributeID, value: sys::CUlaunchAttributeValue| {
            attrs.a[attrs.n] = sys::CUlaunchAttribute {
                id,
                value,
                ..Default::default()
            };
            attrs.n += 1;
        };
        if let Some(c) = self.cluster {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
                x: c.x,
                y: c.y,
                z: c.z,
            };
            push(sys::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, v);
        }
        if self.cooperative {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.cooperative = 1;
            push(sys::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, v);
        }
        if self.programmatic_stream_serialization {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.programmaticStreamSerializationAllowed = 1;
            push(
                sys::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                v,
            );
        }
        if let Some(p) = self.priority {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.priority = p;
            push(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
        }
        sys::CUlaunchConfig {
            gridDimX: self.grid.x,
            gridDimY: self.grid.y,
            gridDimZ: self.grid.z,
            blockDimX: self.block.x,
            blockDimY: self.block.y,
            blockDimZ: self.block.z,
            sharedMemBytes: self.shmem_size,
            hStream: stream.handle(),
            attrs: attrs.a.as_mut_ptr(),
            numAttrs: attrs.n as u32,
        }
    }
}

/// `clusters` clusters of `cluster` blocks along `axis`, in blocks.
fn clusters_to_blocks(clusters: u32, cluster: u32, axis: &str, what: &'static str) -> Result<u32> {
    clusters.checked_mul(cluster).ok_or_else(|| {
        Error::invalid(
            what,
            format!(
                "{clusters} clusters of {cluster} blocks along {axis} are {} blocks, \
                 more than a grid dimension holds ({})",
                u64::from(clusters) * u64::from(cluster),
                u32::MAX
            ),
        )
    })
}

fn zero_dims(what: &'static str) -> Error {
    Error::invalid_as(
        crate::error::InvalidKind::ZeroSize,
        what,
        "grid, block and cluster dimensions must all be at least 1",
    )
}

/// Checks that a grid of `grid` blocks is a multiple of `cluster` in each dimension.
fn check_multiple(grid: Dim3, cluster: Dim3, what: &'static str) -> Result<()> {
    for ((axis, g), (_, c)) in grid.axes().into_iter().zip(cluster.axes()) {
        if c == 0 || g % c != 0 {
            return Err(Error::invalid(
                what,
                format!(
                    "the grid of {g} blocks along {axis} is not a multiple of the cluster's \
                     {c} blocks along {axis} (to give the grid in clusters, as Python's \
                     cuda.core does, use Grid::Clusters)"
                ),
            ));
        }
    }
    Ok(())
}

/// Launch attributes, on the stack.
#[derive(Default)]
pub(crate) struct Attrs {
    a: [sys::CUlaunchAttribute; 4],
    n: usize,
}

/// A value that can be passed to a kernel parameter.
///
/// Implemented for every [`Pod`] type (integers, floats, `half::f16`/`bf16` with
/// the `half` crate's `bytemuck` feature, `#[repr(C)]` structs deriving `Pod`) and
/// for [`Buffer`] and [`DevicePtr`], which pass their device address.
///
/// **Pass device memory as `&Buffer`** (or, for an address from elsewhere, as a
/// [`DevicePtr`], which says that it is one). A bare `u64` is a legitimate scalar
/// argument (a count, a seed) and is accepted for any 8-byte parameter, pointer or
/// not: the size check cannot tell an address from a number, and a `u64` address
/// says nothing about who owns or frees the memory behind it. Allocate with
/// [`Device::allocate`](crate::Device::allocate) or a resource's `allocate`, which
/// return an owning [`Buffer`].
///
/// # Safety
/// `arg_ptr` must point to `arg_size` readable bytes that stay valid while `self`
/// is borrowed.
pub unsafe trait KernelArg {
    /// Where the argument's bytes are.
    fn arg_ptr(&self) -> *const c_void;
    /// How many bytes the kernel reads.
    fn arg_size(&self) -> usize;
    /// What must stay alive for the argument to stay valid after the call that
    /// takes it returns: a graph's kernel node ([`Graph::add_kernel`](crate::Graph::add_kernel),
    /// `set_kernel_node`) keeps it, and so does every instantiation of the graph.
    /// `Some` for an [`ArcView`](crate::ArcView) (its allocation); `None` (the
    /// default) for values, borrowed views and raw addresses.
    fn arg_owner(&self) -> Option<std::sync::Arc<dyn std::any::Any + Send + Sync>> {
        None
    }
}

// SAFETY: a `Pod` value is its own bytes.
// Soundness contract: rule 10.
unsafe impl<T: Pod> KernelArg for T {
    fn arg_ptr(&self) -> *const c_void {
        (self as *const T).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

// SAFETY: points at the buffer's stored device address (8 bytes).
// Soundness contract: rule 10.
unsafe impl KernelArg for Buffer {
    fn arg_ptr(&self) -> *const c_void {
        self.ptr_ref().cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUdeviceptr>()
    }
}

// SAFETY: points at the view's stored device address (8 bytes).
// Soundness contract: rule 10.
unsafe impl<T: Pod> KernelArg for crate::memory::view::DeviceView<'_, T> {
    fn arg_ptr(&self) -> *const c_void {
        (&self.ptr as *const sys::CUdeviceptr).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUdeviceptr>()
    }
}

// SAFETY: as above.
// Soundness contract: rule 10.
unsafe impl<T: Pod> KernelArg for crate::memory::view::DeviceViewMut<'_, T> {
    fn arg_ptr(&self) -> *const c_void {
        (&self.ptr as *const sys::CUdeviceptr).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUdeviceptr>()
    }
}

// SAFETY: points at the view's stored device address (8 bytes), which lives as
// long as the view.
// Soundness contract: rule 10.
unsafe impl<T: Pod> KernelArg for crate::memory::arc_view::ArcView<T> {
    fn arg_ptr(&self) -> *const std::ffi::c_void {
        (&self.ptr as *const sys::CUdeviceptr).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUdeviceptr>()
    }
    fn arg_owner(&self) -> Option<std::sync::Arc<dyn std::any::Any + Send + Sync>> {
        Some(crate::memory::arc_view::ArcView::keep_alive(self))
    }
}

// SAFETY: points at the underlying buffer's stored device address (8 bytes).
// Soundness contract: rule 10.
unsafe impl<T: Pod> KernelArg for crate::memory::device_buffer::DeviceBuffer<T> {
    fn arg_ptr(&self) -> *const c_void {
        self.as_buffer().ptr_ref().cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUdeviceptr>()
    }
}

/// A raw device address as a kernel argument (a pointer parameter).
///
/// For memory this program allocates, pass the [`Buffer`] itself: it owns the
/// memory and frees it. `DevicePtr` is for addresses owned elsewhere (a graph
/// allocation, another library's memory), whose lifetime the caller vouches for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct DevicePtr(pub sys::CUdeviceptr);

// SAFETY: `repr(transparent)` over `CUdeviceptr`, a `u64`: every bit pattern, zero
// included, is a value, and there is no padding. (Written out rather than derived:
// bytemuck's derive would add a proc-macro crate to every build.)
unsafe impl bytemuck::Zeroable for DevicePtr {}
// SAFETY: as above; the type is `Copy` and `'static`.
unsafe impl bytemuck::Pod for DevicePtr {}

/// The most arguments a launch takes without allocating.
const INLINE_ARGS: usize = 32;

/// Launches `kernel` on `stream` with `config` and `args` (`cuLaunchKernel`, or
/// `cuLaunchKernelEx` when the configuration has launch attributes), checking the number of
/// arguments and each one's size against the kernel's parameters.
///
/// The arguments are copied by the driver when this returns; buffers passed must
/// stay allocated until the kernel has run (free them in stream order: the
/// buffer's free stream should be `stream`, or after it). Unlike
/// [`TypedKernel::launch`](crate::TypedKernel::launch), this joins nothing back
/// to the buffers' free streams: after a launch on another stream, call
/// [`Buffer::order_free_after`] with `stream`, which orders the free and every
/// later use on the free stream (a read of the result) after the kernel.
///
/// ```no_run
/// # fn f(kernel: &cudars_core::Kernel, stream: &cudars_core::Stream, x: &cudars_core::Buffer, y: &cudars_core::Buffer) -> cudars_core::Result<()> {
/// use cudars_core::{launch, LaunchConfig};
/// let n: u64 = 1 << 20;
/// // SAFETY: saxpy reads `x` and writes `y`, both holding `n` floats.
/// unsafe { launch(stream, &LaunchConfig::for_elements(n, 256), kernel, &[&2.0f32, x, y, &n])? };
/// # Ok(()) }
/// ```
///
/// # Safety
/// A kernel is arbitrary device code: the checks above catch a wrong number of
/// arguments or a wrong size, not a pointer to too little (or freed) memory. Every
/// buffer or device pointer passed must be valid for all the accesses the kernel
/// makes with the other arguments given (sizes, counts, strides), until the kernel
/// has finished, and the kernel must not race with other work on that memory,
/// host access included: a buffer's host view ([`Buffer::host_slice_mut`]) waits
/// for the buffer's free stream, so a kernel that uses the buffer must be ordered
/// before that stream (launched on it, or waited for by it), as its free is.
/// Drivers before CUDA 12.4 cannot report a kernel's parameters: with them the
/// count and sizes are not checked, and the caller must pass exactly the kernel's
/// parameters, each of its type.
///
/// # Errors
/// [`Error::InvalidArgument`] for a wrong argument count or size, or zero
/// dimensions; the driver's error.
pub unsafe fn launch(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
) -> Result<()> {
    config.validate()?;
    let mut inline = [std::ptr::null_mut::<c_void>(); INLINE_ARGS];
    let mut heap = Vec::new();
    let ptrs: &mut [*mut c_void] = if args.len() <= INLINE_ARGS {
        &mut inline[..args.len()]
    } else {
        heap.resize(args.len(), std::ptr::null_mut());
        &mut heap
    };
    gather_args(kernel, args, ptrs)?;
    // SAFETY: the arguments match the kernel's parameter sizes (the caller vouches
    // for what they point to); the driver copies them before returning.
    unsafe { launch_raw(stream, config, kernel, ptrs.as_mut_ptr()) }
}

/// Checks `args` against the kernel's parameters (their count, and each one's
/// size, when the driver reports them) and writes each argument's address into
/// `ptrs`, as long as `args`, in one pass: the argument array of a launch or of a
/// kernel node.
#[inline(always)]
pub(crate) fn gather_args(
    kernel: &Kernel,
    args: &[&dyn KernelArg],
    ptrs: &mut [*mut c_void],
) -> Result<()> {
    match kernel.params_if_known()? {
        Some(params) => {
            if params.len() != args.len() {
                return Err(arg_count_error(kernel, params.len(), args.len()));
            }
            for (i, ((p, a), (_, size))) in ptrs.iter_mut().zip(args).zip(params).enumerate() {
                if a.arg_size() != *size {
                    return Err(arg_size_error(kernel, i, a.arg_size(), *size));
                }
                *p = a.arg_ptr().cast_mut();
            }
        }
        None => {
            for (p, a) in ptrs.iter_mut().zip(args) {
                *p = a.arg_ptr().cast_mut();
            }
        }
    }
    Ok(())
}

/// A launch given the wrong number of arguments.
#[cold]
#[inline(never)]
fn arg_count_error(kernel: &Kernel, params: usize, args: usize) -> Error {
    Error::invalid(
        format!("launching kernel `{}`", kernel.name()),
        format!("it takes {params} arguments, {args} were given"),
    )
}

/// A launch argument of the wrong size.
#[cold]
#[inline(never)]
fn arg_size_error(kernel: &Kernel, i: usize, given: usize, size: usize) -> Error {
    Error::invalid(
        format!("launching kernel `{}`", kernel.name()),
        format!("argument {i} is {given} bytes, the parameter {size}"),
    )
}

/// Launches with a prepared argument array, without checking it.
///
/// # Safety
/// `args` must point to one pointer per kernel parameter, each to a value of that
/// parameter's type, valid for the call.
///
/// # Errors
/// The driver's error; invalid configurations.
#[inline]
pub unsafe fn launch_raw(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: *mut *mut c_void,
) -> Result<()> {
    let func = kernel.launch_handle(stream.context());
    let plain = config.cluster.is_none()
        && !config.cooperative
        && !config.programmatic_stream_serialization
        && config.priority.is_none();
    // One driver call: the stream names the context (`Stream::call`).
    let rc = stream.call(|| {
        if plain {
            // No launch attributes: the classic entry point, the driver's fastest path.
            let (g, b) = (config.grid, config.block);
            // SAFETY: a live kernel and stream; `args` per the contract.
            unsafe {
                sys::cuLaunchKernel(
                    func,
                    g.x,
                    g.y,
                    g.z,
                    b.x,
                    b.y,
                    b.z,
                    config.shmem_size,
                    stream.handle(),
                    args,
                    std::ptr::null_mut(),
                )
            }
        } else {
            let mut attrs = Attrs::default();
            let cfg = config.raw(stream, &mut attrs);
            // SAFETY: `cfg` and its attributes live for the call; `args` per the contract.
            unsafe { sys::cuLaunchKernelEx(&cfg, func, args, std::ptr::null_mut()) }
        }
    })?;
    rc.check(|| format!("launching kernel `{}`", kernel.name()))
}

// Occupancy of launches with clusters: the kernel's occupancy queries that take a
// launch configuration (code/ knows no launch configuration).
impl crate::code::kernel::Occupancy<'_> {
    /// The largest cluster size a launch of `config` could use
    /// (`cuOccupancyMaxPotentialClusterSize`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn max_potential_cluster_size(
        &self,
        config: &LaunchConfig,
        stream: &crate::stream::Stream,
    ) -> Result<u32> {
        self.cluster_query(
            config,
            stream,
            "the cluster size",
            sys::cuOccupancyMaxPotentialClusterSize,
        )
    }

    /// How many clusters of `config`'s cluster size can be resident at once
    /// (`cuOccupancyMaxActiveClusters`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn max_active_clusters(
        &self,
        config: &LaunchConfig,
        stream: &crate::stream::Stream,
    ) -> Result<u32> {
        self.cluster_query(
            config,
            stream,
            "the active clusters",
            sys::cuOccupancyMaxActiveClusters,
        )
    }

    /// The one body of the cluster queries: `query` (a driver function that
    /// writes a count for a function and a launch configuration) for `config`,
    /// asking `what`.
    fn cluster_query(
        &self,
        config: &LaunchConfig,
        stream: &crate::stream::Stream,
        what: &str,
        query: unsafe fn(
            *mut std::ffi::c_int,
            sys::CUfunction,
            *const sys::CUlaunchConfig,
        ) -> sys::CUresult,
    ) -> Result<u32> {
        let f = self.kernel.function(self.device)?;
        let mut attrs = Attrs::default();
        let cfg = config.raw(stream, &mut attrs);
        let mut n = 0;
        // SAFETY: `query` is one of the driver's cluster occupancy queries; `n` is
        // valid for writes; `cfg` and the attributes it points to live for the call.
        unsafe { query(&mut n, f, &cfg) }
            .check(|| format!("asking {what} of kernel `{}`", self.kernel.name()))?;
        Ok(n.max(0) as u32)
    }
}
