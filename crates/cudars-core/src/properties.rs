//! Every device attribute (`cuDeviceGetAttribute`) as a typed property.

use cudars_bindings::driver as sys;

use crate::device::Device;
use crate::error::Result;

/// A count, size, dimension, clock rate or version: the driver never reports a
/// negative value for these, and one would be meaningless, so it reads as 0.
fn to_u32(v: i32) -> u32 {
    v.max(0) as u32
}

/// A bit mask or a packed pair of 16-bit ids: the driver's 32 bits, unchanged (the
/// top bit may be set, which as an `i32` is negative).
fn bits(v: i32) -> u32 {
    v as u32
}

/// How a property reads the driver's `int`: see `props!`.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    U32,
    I32,
    Bits,
}

impl Kind {
    /// The property's value as an `i64`, for [`DeviceProperties::all`] (`true` is 1).
    fn widen(self, v: i32) -> i64 {
        match self {
            Self::Bool => i64::from(v != 0),
            Self::U32 => i64::from(to_u32(v)),
            Self::I32 => i64::from(v),
            Self::Bits => i64::from(bits(v)),
        }
    }
}

/// One property: its method's name, its attribute, its kind and, when only newer
/// drivers know the attribute, the driver version (`1000 * major + 10 * minor`)
/// and what to call the attribute in the error.
struct Row {
    name: &'static str,
    attr: sys::CUdevice_attribute,
    kind: Kind,
    needs: Option<(i32, &'static str)>,
}

impl DeviceProperties {
    /// The driver's value of `row`'s attribute; from a driver older than the
    /// attribute, [`Error::Unsupported`](crate::Error::Unsupported).
    fn read(&self, row: &Row) -> Result<i32> {
        if let Some((needs, feature)) = row.needs {
            crate::versions::require_driver(needs, feature, || {
                format!("reading {} of device {}", row.name, self.device.ordinal())
            })?;
        }
        self.device.attribute(row.attr)
    }
}

/// Generates the property methods and [`DeviceProperties::all`] from one line per
/// attribute: its doc comment, optional `#[cfg(...)]` and `#[deprecated = ...]`, and
/// `name: kind = CU_DEVICE_ATTRIBUTE_...;`, where `kind` is `bool` (non-zero is true),
/// `u32` (see [`to_u32`]), `i32` (as reported) or `bits` (a `u32`, see [`bits`]).
macro_rules! props {
    (@ty bool) => { bool };
    (@ty u32) => { u32 };
    (@ty i32) => { i32 };
    (@ty bits) => { u32 };
    (@conv bool, $v:expr) => { $v != 0 };
    (@conv u32, $v:expr) => { to_u32($v) };
    (@conv i32, $v:expr) => { $v };
    (@conv bits, $v:expr) => { bits($v) };
    (@kind bool) => { Kind::Bool };
    (@kind u32) => { Kind::U32 };
    (@kind i32) => { Kind::I32 };
    (@kind bits) => { Kind::Bits };
    (@row $name:ident, $kind:ident, $attr:ident) => {
        Row { name: stringify!($name), attr: sys::$attr, kind: props!(@kind $kind), needs: None }
    };
    (@row $name:ident, $kind:ident, $attr:ident, $needs:literal) => {
        Row {
            name: stringify!($name),
            attr: sys::$attr,
            kind: props!(@kind $kind),
            needs: Some(($needs, concat!("the device attribute `", stringify!($attr), "`"))),
        }
    };
    ($(
        $(#[doc = $doc:literal])*
        $(#[needs_driver($needs:literal)])?
        $(#[deprecated = $dep:literal])?
        $name:ident : $kind:ident = $attr:ident;
    )*) => {
        impl DeviceProperties {
            $(
                $(#[doc = $doc])*
                ///
                /// # Errors
                /// The driver's error (`CUDA_ERROR_INVALID_VALUE` when the driver is
                /// older than the attribute).
                $(
                    #[doc = concat!(
                        "[`Error::Unsupported`](crate::Error::Unsupported) from drivers older than CUDA ",
                        stringify!($needs), " (`1000 * major + 10 * minor`), which do not know it."
                    )]
                )?
                $(#[deprecated = $dep])?
                pub fn $name(&self) -> Result<props!(@ty $kind)> {
                    let v = self.read(&props!(@row $name, $kind, $attr $(, $needs)?))?;
                    Ok(props!(@conv $kind, v))
                }
            )*

            /// Every property, named as its method, with its value as an `i64`
            /// (`true` is 1, `false` 0), in the driver's order; a property the driver
            /// cannot report (an older driver) carries the error instead. For printing
            /// a device report.
            #[allow(deprecated, reason = "the report lists deprecated attributes too")]
            pub fn all(&self) -> Vec<(&'static str, Result<i64>)> {
                // A table and a loop rather than one expression per property: as a
                // `vec![…]` of every call, this one function was 5% of the crate's
                // optimised code (and of a dependent's release build time).
                // Rows, not closures: one reader for every property.
                const ROWS: &[Row] = &[$(props!(@row $name, $kind, $attr $(, $needs)?),)*];
                ROWS.iter().map(|row| (row.name, self.read(row).map(|v| row.kind.widen(v)))).collect()
            }
        }
    };
}

/// Every attribute of a device, typed: [`Device::properties`].
///
/// Each method reads one attribute from the driver (`cuDeviceGetAttribute`) when it
/// is called; nothing is cached. Yes/no capabilities are `bool`; counts, sizes (in
/// bytes unless said otherwise), dimensions, clock rates and ids are `u32`; the NUMA
/// ids, which are -1 when there is none, are `i32`. Attributes NVIDIA deprecated are
/// `#[deprecated]`; aliases of another attribute's number are left out, and those
/// that only CUDA 13 defines need the `cuda-13` feature.
///
/// ```no_run
/// let dev = cudars_core::Device::new(0)?;
/// let props = dev.properties();
/// println!(
///     "{} SMs, {} threads per block",
///     props.multiprocessor_count()?,
///     props.max_threads_per_block()?
/// );
/// for (name, value) in props.all() {
///     match value {
///         Ok(v) => println!("{name}: {v}"),
///         Err(e) => println!("{name}: {e}"),
///     }
/// }
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceProperties {
    device: Device,
}

impl DeviceProperties {
    pub(crate) fn new(device: Device) -> Self {
        Self { device }
    }

    /// The device these are the properties of.
    pub fn device(&self) -> Device {
        self.device
    }
}

props! {
    /// Maximum number of threads per block.
    max_threads_per_block: u32 = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    /// Maximum block dimension X.
    max_block_dim_x: u32 = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X;
    /// Maximum block dimension Y.
    max_block_dim_y: u32 = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y;
    /// Maximum block dimension Z.
    max_block_dim_z: u32 = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z;
    /// Maximum grid dimension X.
    max_grid_dim_x: u32 = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X;
    /// Maximum grid dimension Y.
    max_grid_dim_y: u32 = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y;
    /// Maximum grid dimension Z.
    max_grid_dim_z: u32 = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z;
    /// Maximum shared memory available per block, in bytes.
    max_shared_memory_per_block: u32 = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    /// Memory available for `__constant__` variables, in bytes.
    total_constant_memory: u32 = CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY;
    /// Warp size, in threads.
    warp_size: u32 = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    /// Maximum pitch allowed by memory copies, in bytes.
    max_pitch: u32 = CU_DEVICE_ATTRIBUTE_MAX_PITCH;
    /// Maximum number of 32-bit registers available per block.
    max_registers_per_block: u32 = CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK;
    /// Typical clock frequency, in kilohertz.
    clock_rate: u32 = CU_DEVICE_ATTRIBUTE_CLOCK_RATE;
    /// Alignment requirement for textures, in bytes.
    texture_alignment: u32 = CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT;
    /// Whether the device can possibly copy memory and run a kernel concurrently.
    #[deprecated = "deprecated by NVIDIA: use `async_engine_count`"]
    gpu_overlap: bool = CU_DEVICE_ATTRIBUTE_GPU_OVERLAP;
    /// Number of multiprocessors on the device.
    multiprocessor_count: u32 = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    /// Whether there is a run time limit on kernels.
    kernel_exec_timeout: bool = CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT;
    /// Whether the device is integrated with host memory.
    integrated: bool = CU_DEVICE_ATTRIBUTE_INTEGRATED;
    /// Whether the device can map host memory into the CUDA address space.
    can_map_host_memory: bool = CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
    /// Compute mode, a `CUcomputemode` value (0 is default, 2 prohibited, 3 exclusive process).
    compute_mode: u32 = CU_DEVICE_ATTRIBUTE_COMPUTE_MODE;
    /// Maximum 1D texture width.
    maximum_texture1d_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH;
    /// Maximum 2D texture width.
    maximum_texture2d_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH;
    /// Maximum 2D texture height.
    maximum_texture2d_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT;
    /// Maximum 3D texture width.
    maximum_texture3d_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH;
    /// Maximum 3D texture height.
    maximum_texture3d_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT;
    /// Maximum 3D texture depth.
    maximum_texture3d_depth: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH;
    /// Maximum 2D layered texture width.
    maximum_texture2d_layered_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH;
    /// Maximum 2D layered texture height.
    maximum_texture2d_layered_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT;
    /// Maximum layers in a 2D layered texture.
    maximum_texture2d_layered_layers: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS;
    /// Alignment requirement for surfaces, in bytes.
    surface_alignment: u32 = CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT;
    /// Whether the device can possibly run several kernels concurrently.
    concurrent_kernels: bool = CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS;
    /// Whether the device has ECC support enabled.
    ecc_enabled: bool = CU_DEVICE_ATTRIBUTE_ECC_ENABLED;
    /// PCI bus id of the device.
    pci_bus_id: u32 = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID;
    /// PCI device (slot) id of the device.
    pci_device_id: u32 = CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID;
    /// Whether the device uses the TCC driver model (Windows).
    tcc_driver: bool = CU_DEVICE_ATTRIBUTE_TCC_DRIVER;
    /// Peak memory clock frequency, in kilohertz.
    memory_clock_rate: u32 = CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE;
    /// Global memory bus width, in bits.
    global_memory_bus_width: u32 = CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH;
    /// Size of the L2 cache, in bytes.
    l2_cache_size: u32 = CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
    /// Maximum resident threads per multiprocessor.
    max_threads_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR;
    /// Number of asynchronous (copy) engines.
    async_engine_count: u32 = CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT;
    /// Whether the device shares a unified address space with the host.
    unified_addressing: bool = CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING;
    /// Maximum 1D layered texture width.
    maximum_texture1d_layered_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH;
    /// Maximum layers in a 1D layered texture.
    maximum_texture1d_layered_layers: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS;
    /// Whether 2D texture gather is supported.
    #[deprecated = "deprecated by NVIDIA: do not use"]
    can_tex2d_gather: bool = CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER;
    /// Maximum 2D texture width when `CUDA_ARRAY3D_TEXTURE_GATHER` is set.
    maximum_texture2d_gather_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH;
    /// Maximum 2D texture height when `CUDA_ARRAY3D_TEXTURE_GATHER` is set.
    maximum_texture2d_gather_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT;
    /// Alternate maximum 3D texture width.
    maximum_texture3d_width_alternate: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE;
    /// Alternate maximum 3D texture height.
    maximum_texture3d_height_alternate: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE;
    /// Alternate maximum 3D texture depth.
    maximum_texture3d_depth_alternate: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE;
    /// PCI domain id of the device.
    pci_domain_id: u32 = CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID;
    /// Pitch alignment requirement for textures, in bytes.
    texture_pitch_alignment: u32 = CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT;
    /// Maximum cubemap texture width and height.
    maximum_texturecubemap_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH;
    /// Maximum cubemap layered texture width and height.
    maximum_texturecubemap_layered_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH;
    /// Maximum layers in a cubemap layered texture.
    maximum_texturecubemap_layered_layers: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS;
    /// Maximum 1D surface width.
    maximum_surface1d_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH;
    /// Maximum 2D surface width.
    maximum_surface2d_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH;
    /// Maximum 2D surface height.
    maximum_surface2d_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT;
    /// Maximum 3D surface width.
    maximum_surface3d_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH;
    /// Maximum 3D surface height.
    maximum_surface3d_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT;
    /// Maximum 3D surface depth.
    maximum_surface3d_depth: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH;
    /// Maximum 1D layered surface width.
    maximum_surface1d_layered_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH;
    /// Maximum layers in a 1D layered surface.
    maximum_surface1d_layered_layers: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS;
    /// Maximum 2D layered surface width.
    maximum_surface2d_layered_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH;
    /// Maximum 2D layered surface height.
    maximum_surface2d_layered_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT;
    /// Maximum layers in a 2D layered surface.
    maximum_surface2d_layered_layers: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS;
    /// Maximum cubemap surface width.
    maximum_surfacecubemap_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH;
    /// Maximum cubemap layered surface width.
    maximum_surfacecubemap_layered_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH;
    /// Maximum layers in a cubemap layered surface.
    maximum_surfacecubemap_layered_layers: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS;
    /// Maximum 1D linear texture width.
    #[deprecated = "deprecated by NVIDIA: use `cuDeviceGetTexture1DLinearMaxWidth`"]
    maximum_texture1d_linear_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH;
    /// Maximum 2D linear texture width.
    maximum_texture2d_linear_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH;
    /// Maximum 2D linear texture height.
    maximum_texture2d_linear_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT;
    /// Maximum 2D linear texture pitch, in bytes.
    maximum_texture2d_linear_pitch: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH;
    /// Maximum mipmapped 2D texture width.
    maximum_texture2d_mipmapped_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH;
    /// Maximum mipmapped 2D texture height.
    maximum_texture2d_mipmapped_height: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT;
    /// Major compute capability version number.
    compute_capability_major: u32 = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
    /// Minor compute capability version number.
    compute_capability_minor: u32 = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
    /// Maximum mipmapped 1D texture width.
    maximum_texture1d_mipmapped_width: u32 = CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH;
    /// Whether the device supports stream priorities.
    stream_priorities_supported: bool = CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED;
    /// Whether the device supports caching globals in L1.
    global_l1_cache_supported: bool = CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED;
    /// Whether the device supports caching locals in L1.
    local_l1_cache_supported: bool = CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED;
    /// Maximum shared memory available per multiprocessor, in bytes.
    max_shared_memory_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR;
    /// Maximum number of 32-bit registers available per multiprocessor.
    max_registers_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR;
    /// Whether the device can allocate managed memory on this system.
    managed_memory: bool = CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY;
    /// Whether the device is on a multi-GPU board.
    multi_gpu_board: bool = CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD;
    /// Unique id of the group of devices on the same multi-GPU board.
    multi_gpu_board_group_id: u32 = CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID;
    /// Whether the link between the device and the host supports all native atomic operations.
    host_native_atomic_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED;
    /// Ratio of single-precision to double-precision performance (in FLOP/s).
    single_to_double_precision_perf_ratio: u32 = CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO;
    /// Whether the device coherently accesses pageable memory without registering it.
    pageable_memory_access: bool = CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS;
    /// Whether the device can coherently access managed memory concurrently with the CPU.
    concurrent_managed_access: bool = CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS;
    /// Whether the device supports compute preemption.
    compute_preemption_supported: bool = CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED;
    /// Whether the device can access host registered memory at the CPU's virtual address.
    can_use_host_pointer_for_registered_mem: bool = CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM;
    /// Whether `cuStreamBatchMemOp` and related v1 MemOp APIs are supported.
    #[deprecated = "deprecated by NVIDIA along with the v1 MemOp API"]
    can_use_stream_mem_ops_v1: bool = CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1;
    /// Whether 64-bit operations are supported by the v1 MemOp APIs.
    #[deprecated = "deprecated by NVIDIA along with the v1 MemOp API: use `can_use_64_bit_stream_mem_ops`"]
    can_use_64_bit_stream_mem_ops_v1: bool = CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1;
    /// Whether `CU_STREAM_WAIT_VALUE_NOR` is supported by the v1 MemOp APIs.
    #[deprecated = "deprecated by NVIDIA along with the v1 MemOp API: use `can_use_stream_wait_value_nor`"]
    can_use_stream_wait_value_nor_v1: bool = CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1;
    /// Whether the device supports cooperative kernels (`cuLaunchCooperativeKernel`).
    cooperative_launch: bool = CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH;
    /// Whether the device supports `cuLaunchCooperativeKernelMultiDevice`.
    #[deprecated = "deprecated by NVIDIA, as is `cuLaunchCooperativeKernelMultiDevice`"]
    cooperative_multi_device_launch: bool = CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH;
    /// Maximum opt-in shared memory per block, in bytes.
    max_shared_memory_per_block_optin: u32 = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
    /// Whether `CU_STREAM_WAIT_VALUE_FLUSH` and `CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES` are supported.
    can_flush_remote_writes: bool = CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES;
    /// Whether the device supports registering host memory (`cuMemHostRegister`).
    host_register_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED;
    /// Whether the device accesses pageable memory through the host's page tables.
    pageable_memory_access_uses_host_page_tables: bool = CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES;
    /// Whether the host can access managed memory on the device without migration.
    direct_managed_mem_access_from_host: bool = CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST;
    /// Whether the device supports the virtual memory management APIs (`cuMemCreate`, `cuMemMap`, …).
    virtual_memory_management_supported: bool = CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
    /// Whether memory from `cuMemCreate` can be exported to a POSIX file descriptor.
    handle_type_posix_file_descriptor_supported: bool = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
    /// Whether memory from `cuMemCreate` can be exported to a Win32 NT handle.
    handle_type_win32_handle_supported: bool = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED;
    /// Whether memory from `cuMemCreate` can be exported to a Win32 KMT handle.
    handle_type_win32_kmt_handle_supported: bool = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED;
    /// Maximum number of resident blocks per multiprocessor.
    max_blocks_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR;
    /// Whether the device supports compression of memory.
    generic_compression_supported: bool = CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED;
    /// Maximum L2 persisting lines capacity setting, in bytes.
    max_persisting_l2_cache_size: u32 = CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE;
    /// Maximum `num_bytes` of an access policy window, in bytes.
    max_access_policy_window_size: u32 = CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE;
    /// Whether the GPUDirect RDMA flag can be given to `cuMemCreate`.
    gpu_direct_rdma_with_cuda_vmm_supported: bool = CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED;
    /// Shared memory reserved by the driver per block, in bytes.
    reserved_shared_memory_per_block: u32 = CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK;
    /// Whether the device supports sparse CUDA arrays and sparse mipmapped arrays.
    sparse_cuda_array_supported: bool = CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED;
    /// Whether host memory can be registered read-only (`CU_MEMHOSTREGISTER_READ_ONLY`).
    read_only_host_register_supported: bool = CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED;
    /// Whether external timeline semaphore interop is supported.
    timeline_semaphore_interop_supported: bool = CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED;
    /// Whether the device supports `cuMemAllocAsync` and the `cuMemPool` APIs.
    memory_pools_supported: bool = CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
    /// Whether the device supports the GPUDirect RDMA APIs (`nvidia_p2p_get_pages`, …).
    gpu_direct_rdma_supported: bool = CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED;
    /// Bit mask of `CUflushGPUDirectRDMAWritesOptions`.
    gpu_direct_rdma_flush_writes_options: bits = CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS;
    /// Scope within which GPUDirect RDMA writes need no flush, a `CUGPUDirectRDMAWritesOrdering` (0, 100 or 200).
    gpu_direct_rdma_writes_ordering: u32 = CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING;
    /// Bit mask of the `CUmemAllocationHandleType`s supported for memory-pool IPC.
    mempool_supported_handle_types: bits = CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES;
    /// Whether the device supports cluster launch.
    cluster_launch: bool = CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH;
    /// Whether the device supports deferred mapping of CUDA arrays and mipmapped arrays.
    deferred_mapping_cuda_array_supported: bool = CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED;
    /// Whether 64-bit operations are supported by `cuStreamBatchMemOp` and the MemOp APIs.
    can_use_64_bit_stream_mem_ops: bool = CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS;
    /// Whether `CU_STREAM_WAIT_VALUE_NOR` is supported by the MemOp APIs.
    can_use_stream_wait_value_nor: bool = CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR;
    /// Whether the device supports buffer sharing through dma_buf.
    dma_buf_supported: bool = CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED;
    /// Whether the device supports IPC events.
    ipc_event_supported: bool = CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED;
    /// Number of memory synchronization domains the device supports.
    mem_sync_domain_count: u32 = CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT;
    /// Whether the device supports accessing memory through a tensor map.
    tensor_map_access_supported: bool = CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED;
    /// Whether memory from `cuMemCreate` can be exported to a fabric handle.
    handle_type_fabric_supported: bool = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED;
    /// Whether the device supports unified function pointers.
    unified_function_pointers: bool = CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS;
    /// NUMA configuration, a `CUdeviceNumaConfig` (0: not a NUMA node, 1: a NUMA node).
    numa_config: u32 = CU_DEVICE_ATTRIBUTE_NUMA_CONFIG;
    /// NUMA node id of the device's memory (-1 when it is not a NUMA node).
    numa_id: i32 = CU_DEVICE_ATTRIBUTE_NUMA_ID;
    /// Whether the device supports switch multicast and reduction operations.
    multicast_supported: bool = CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED;
    /// Whether contexts created on this device are shared through MPS.
    mps_enabled: bool = CU_DEVICE_ATTRIBUTE_MPS_ENABLED;
    /// NUMA id of the host node closest to the device (-1 when the system has no NUMA).
    host_numa_id: i32 = CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID;
    /// Whether the device supports CIG (CUDA in graphics) with D3D12.
    d3d12_cig_supported: bool = CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED;
    /// Bit mask of the `CUmemDecompressAlgorithm`s supported.
    mem_decompress_algorithm_mask: bits = CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK;
    /// Maximum length of a single decompress operation, in bytes.
    mem_decompress_maximum_length: u32 = CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH;
    /// Whether the device supports CIG (CUDA in graphics) with Vulkan.
    vulkan_cig_supported: bool = CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED;
    /// PCI device id (high 16 bits) and PCI vendor id (low 16 bits) of the GPU.
    gpu_pci_device_id: bits = CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID;
    /// PCI subsystem id (high 16 bits) and subsystem vendor id (low 16 bits) of the GPU.
    gpu_pci_subsystem_id: bits = CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID;
    /// Whether host NUMA locations work with the virtual memory management APIs.
    host_numa_virtual_memory_management_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
    /// Whether host NUMA locations work with `cuMemAllocAsync` and the `cuMemPool` APIs.
    host_numa_memory_pools_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED;
    /// Whether host NUMA location IPC works between nodes of a multi-node system.
    host_numa_multinode_ipc_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED;
    /// Whether host locations work with `cuMemAllocAsync` and the `cuMemPool` APIs.
    #[needs_driver(13000)]
    host_memory_pools_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED;
    /// Whether host locations work with the virtual memory management APIs.
    #[needs_driver(13000)]
    host_virtual_memory_management_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
    /// Whether page-locked host memory can be shared through dma_buf.
    #[needs_driver(13000)]
    host_alloc_dma_buf_supported: bool = CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED;
    /// Whether the link between the device and the host supports only some native atomic operations.
    #[needs_driver(13000)]
    only_partial_host_native_atomic_supported: bool = CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED;
}

// Every attribute, typed.
impl Device {
    /// Every device attribute as a typed property.
    pub fn properties(&self) -> crate::properties::DeviceProperties {
        crate::properties::DeviceProperties::new(*self)
    }
}
