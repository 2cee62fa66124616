//! What can be checked without a GPU: thread-safety markers and the no-driver path.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{
    Buffer, Device, DeviceMemoryResource, Dim3, Error, Event, Grid, InvalidKind, LaunchConfig,
    Stream,
};

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Device>();
    send_sync::<Stream>();
    send_sync::<Event>();
    send_sync::<Buffer>();
    send_sync::<DeviceMemoryResource>();
    send_sync::<Error>();
}

#[test]
fn without_a_driver_the_error_says_where_it_looked() {
    if cudars_pathfinder::load_nvidia_dynamic_lib("cuda").is_ok() {
        // A driver is here: the same calls succeed or fail for real.
        let n = Device::count();
        assert!(n.is_ok() || n.unwrap_err().driver_code().is_some());
        return;
    }
    // A missing driver is not a CUDA failure: no CUDA call was made, so no code.
    let e = Device::count().unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
    assert_eq!(e.driver_code(), None);
    assert_eq!(e.to_string(), "initialising the CUDA driver (cuInit)");
    let u = e.unavailable().unwrap();
    assert_eq!(u.api(), cudars_core::cudars_bindings::ApiKind::Driver);
    assert!(u.library_error().is_some(), "{u:?}");
    let report = e.report().to_string();
    assert!(
        report.starts_with(
            "initialising the CUDA driver (cuInit): the CUDA driver library could not be loaded: \
             library `cuda` not found; searched, in order:"
        ),
        "{report}"
    );
    assert!(report.contains("libcuda.so.1"), "{report}");
    assert!(
        !report.contains("CUDA_ERROR") && !report.contains("not described"),
        "{report}"
    );
    assert!(matches!(Device::new(0), Err(Error::Unavailable { .. })));
    assert!(Device::all().is_err_and(|e| e.is_unavailable()));
    // No current device either, and so no "options for the current device":
    // compiling without a GPU takes an explicit `arch`.
    assert!(matches!(Device::current(), Err(Error::Unavailable { .. })));
    assert!(matches!(
        cudars_core::ProgramOptions::for_current_device(),
        Err(Error::Unavailable { .. })
    ));
    assert!(matches!(
        cudars_core::LinkerOptions::for_current_device(),
        Err(Error::Unavailable { .. })
    ));
}

#[test]
fn stream_captures_default_to_relaxed_as_in_cuda_core() {
    assert_eq!(
        cudars_core::CaptureMode::default(),
        cudars_core::CaptureMode::Relaxed
    );
}

#[test]
fn kernel_arguments_have_their_c_sizes() {
    use cudars_core::{DevicePtr, KernelArg};
    use half::{bf16, f16};
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        scale: f32,
        count: u32,
        base: u64,
    }
    let args: [(&dyn KernelArg, usize); 7] = [
        (&1u8, 1),
        (&f16::from_f32(1.5), 2),
        (&bf16::from_f32(1.5), 2),
        (&1.0f32, 4),
        (&7u64, 8),
        (&DevicePtr(0x1000), 8),
        (
            &Params {
                scale: 1.0,
                count: 2,
                base: 3,
            },
            16,
        ),
    ];
    for (a, size) in args {
        assert_eq!(a.arg_size(), size);
        assert!(!a.arg_ptr().is_null());
    }
    // The pointer addresses the value's own bytes.
    let v = f16::from_f32(2.0);
    // SAFETY: `arg_ptr` points at the 2 bytes of `v`.
    let bits = unsafe { *(v.arg_ptr() as *const u16) };
    assert_eq!(bits, v.to_bits());
}

#[test]
fn damaged_images_are_refused_before_the_driver_sees_them() {
    use cudars_core::{
        CompileTarget, Library, LibraryOptions, ObjectCode, Program, ProgramOptions, SourceCode,
    };
    cudars_tests::require_libs!("nvrtc");
    let good = Program::new(
        SourceCode::Cxx("extern \"C\" __global__ void k(int *p) { *p = 1; }"),
        ProgramOptions {
            arch: Some("sm_90".into()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
    let bytes = good.code().to_vec();
    // A real cubin passes the checks and reaches the driver (absent here, or loaded).
    if let Err(Error::InvalidArgument { message, .. }) =
        Library::load(&good, &LibraryOptions::default())
    {
        panic!("a valid cubin was refused: {message}");
    }
    let refused = |b: Vec<u8>, kind: fn(Vec<u8>) -> cudars_core::Result<ObjectCode>| {
        let code = kind(b).unwrap();
        match Library::load(&code, &LibraryOptions::default()) {
            Err(Error::InvalidArgument { message, .. }) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    };
    // Cut short: the section table runs past the end.
    let m = refused(bytes[..bytes.len() / 2].to_vec(), ObjectCode::from_cubin);
    assert!(m.contains("past the end"), "{m}");
    // Not an ELF file at all.
    let m = refused(
        b"definitely not a cubin, but long enough to hold a header........".to_vec(),
        ObjectCode::from_cubin,
    );
    assert!(m.contains("ELF"), "{m}");
    // A section header table offset far beyond the bytes.
    let mut forged = bytes.clone();
    forged[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let m = refused(forged, ObjectCode::from_cubin);
    assert!(m.contains("past the end"), "{m}");
    // A fat binary whose size field lies.
    let mut fat = vec![0u8; 64];
    fat[..4].copy_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fat[6..8].copy_from_slice(&16u16.to_le_bytes());
    fat[8..16].copy_from_slice(&4096u64.to_le_bytes());
    let m = refused(fat, ObjectCode::from_fatbin);
    assert!(m.contains("past the end"), "{m}");
    let m = refused(vec![1u8; 64], ObjectCode::from_fatbin);
    assert!(m.contains("magic"), "{m}");
}

/// Python's `LaunchConfig(grid=4, cluster=2, block=32)` is 8 blocks. Every spelling
/// of it here says the grid's unit and comes to the same 8 blocks.
#[test]
fn every_spelling_of_a_clustered_grid_counts_the_same_blocks() {
    let python = LaunchConfig::with_clusters(Grid::clusters(4), 2, 32).unwrap();
    let blocks = LaunchConfig::with_clusters(Grid::blocks(8), 2, 32).unwrap();
    let grouped = LaunchConfig::new(8, 32)
        .group_blocks_into_clusters(2)
        .unwrap();
    for cfg in [python, blocks, grouped] {
        assert_eq!(cfg.total_blocks(), 8);
        assert_eq!(cfg.grid_blocks(), Dim3::from(8));
        assert_eq!(cfg.grid_clusters(), Some(Dim3::from(4)));
        assert_eq!(cfg.cluster(), Some(Dim3::from(2)));
        assert_eq!(cfg.block(), Dim3::from(32));
    }
    assert_eq!(python, blocks);
    assert_eq!(python, grouped);

    // `new` counts blocks, and has no cluster.
    let plain = LaunchConfig::new(4, 32);
    assert_eq!(plain.total_blocks(), 4);
    assert_eq!(plain.grid_clusters(), None);
    assert_eq!(plain.cluster(), None);

    // Three dimensions: 2x3x1 clusters of 2x1x2 blocks are 4x3x2 blocks.
    let cfg = LaunchConfig::with_clusters(Grid::clusters((2, 3, 1)), (2, 1, 2), (8, 8)).unwrap();
    assert_eq!(cfg.grid_blocks(), Dim3 { x: 4, y: 3, z: 2 });
    assert_eq!(cfg.grid_clusters(), Some(Dim3 { x: 2, y: 3, z: 1 }));
    assert_eq!(cfg.total_blocks(), 24);
    assert_eq!(cfg.block(), Dim3 { x: 8, y: 8, z: 1 });

    // Grouping keeps the grid of blocks and the other settings; regrouping too.
    let mut base = LaunchConfig::new((4, 2), 64);
    base.shmem_size = 128;
    base.priority = Some(-1);
    base.programmatic_stream_serialization = true;
    let g = base.group_blocks_into_clusters((2, 2)).unwrap();
    assert_eq!(g.grid_blocks(), Dim3::from((4, 2)));
    assert_eq!(g.grid_clusters(), Some(Dim3::from((2, 1))));
    assert_eq!(
        (
            g.shmem_size,
            g.priority,
            g.programmatic_stream_serialization
        ),
        (128, Some(-1), true)
    );
    let r = g.group_blocks_into_clusters(4).unwrap();
    assert_eq!(r.grid_blocks(), Dim3::from((4, 2)));
    assert_eq!(r.grid_clusters(), Some(Dim3::from((1, 2))));
    assert_eq!(r.total_blocks(), 8);
}

#[test]
fn a_grid_of_blocks_the_cluster_does_not_divide_is_an_error_naming_both() {
    let check = |r: cudars_core::Result<LaunchConfig>, grid: &str, cluster: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains(grid) && msg.contains(cluster), "{msg}");
    };
    check(
        LaunchConfig::with_clusters(Grid::blocks(7), 2, 32),
        "the grid of 7 blocks along x",
        "the cluster's 2 blocks along x",
    );
    check(
        LaunchConfig::new(7, 32).group_blocks_into_clusters(2),
        "the grid of 7 blocks along x",
        "the cluster's 2 blocks along x",
    );
    check(
        LaunchConfig::with_clusters(Grid::blocks((8, 3)), (2, 2), 32),
        "the grid of 3 blocks along y",
        "the cluster's 2 blocks along y",
    );
    check(
        LaunchConfig::new((4, 4, 5), 32).group_blocks_into_clusters((2, 2, 2)),
        "the grid of 5 blocks along z",
        "the cluster's 2 blocks along z",
    );
    // Zero anywhere is refused too.
    for r in [
        LaunchConfig::with_clusters(Grid::clusters(0), 2, 32),
        LaunchConfig::with_clusters(Grid::clusters(4), 0, 32),
        LaunchConfig::with_clusters(Grid::clusters(4), 2, 0),
        LaunchConfig::with_clusters(Grid::blocks(0), 2, 32),
        LaunchConfig::with_clusters(Grid::blocks(8), (2, 0), 32),
        LaunchConfig::new(8, 32).group_blocks_into_clusters(0),
        LaunchConfig::new(0, 32).group_blocks_into_clusters(1),
    ] {
        assert!(
            matches!(
                r,
                Err(Error::InvalidArgument {
                    kind: InvalidKind::ZeroSize,
                    ..
                })
            ),
            "{r:?}"
        );
    }
}

#[test]
fn a_grid_of_clusters_too_large_for_a_u32_is_an_error() {
    let e = LaunchConfig::with_clusters(Grid::clusters(1 << 31), 2, 32).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("2147483648 clusters of 2 blocks along x are 4294967296 blocks"),
        "{msg}"
    );
    let e =
        LaunchConfig::with_clusters(Grid::clusters((1, 1 << 16)), (1, 1 << 16), 32).unwrap_err();
    assert!(e.to_string().contains("along y"), "{e}");
    let e =
        LaunchConfig::with_clusters(Grid::clusters((1, 1, u32::MAX)), (1, 1, 2), 32).unwrap_err();
    assert!(e.to_string().contains("along z"), "{e}");
    // The largest grid that fits is fine: 3 x 1431655765 = u32::MAX blocks.
    let cfg = LaunchConfig::with_clusters(Grid::clusters(u32::MAX / 3), 3, 32).unwrap();
    assert_eq!(cfg.grid_blocks().x, u32::MAX);
    assert_eq!(cfg.total_blocks(), u64::from(u32::MAX));
}

/// A resource of a user's own, for the method-resolution check below (never asked
/// to allocate: that needs a GPU).
#[cfg(feature = "vmm")]
#[derive(Debug)]
struct UserResource(Device);

// SAFETY: it never hands out memory (`allocate_raw` panics), so there is nothing
// to free.
#[cfg(feature = "vmm")]
unsafe impl cudars_core::MemoryResource for UserResource {
    unsafe fn allocate_raw(&self, _size: usize, _stream: &Stream) -> cudars_core::Result<u64> {
        panic!("never called: the resource is only type-checked")
    }

    unsafe fn deallocate(
        &self,
        _ptr: u64,
        _size: usize,
        _stream: &Stream,
    ) -> cudars_core::Result<()> {
        Ok(())
    }

    fn kind(&self) -> cudars_core::MemoryKind {
        cudars_core::MemoryKind::Device
    }

    fn device(&self) -> Device {
        self.0
    }
}

/// `allocate` on an `Arc` of every resource, `Arc<dyn MemoryResource>` first, is the
/// owning allocation: a `Buffer`. These functions only have to compile (running
/// them needs a GPU): the first with no trait in scope, the second with both.
#[cfg(feature = "vmm")]
mod owning_allocate_resolves {
    use std::sync::Arc;

    use cudars_core::{
        Buffer, DeviceMemoryResource, LegacyPinnedMemoryResource, ManagedMemoryResource,
        PinnedMemoryResource, Result, Stream, VirtualMemoryResource,
    };

    pub(super) type Resources = (
        Arc<dyn cudars_core::MemoryResource>,
        Arc<DeviceMemoryResource>,
        Arc<PinnedMemoryResource>,
        Arc<LegacyPinnedMemoryResource>,
        Arc<ManagedMemoryResource>,
        Arc<VirtualMemoryResource>,
    );

    /// No trait imported: the inherent methods.
    pub(super) fn without_traits(r: &Resources, s: &Stream) -> Result<[Buffer; 6]> {
        Ok([
            r.0.allocate(1, s)?,
            r.1.allocate(1, s)?,
            r.2.allocate(1, s)?,
            r.3.allocate(1, s)?,
            r.4.allocate(1, s)?.into_buffer(),
            r.5.allocate(1, s)?,
        ])
    }

    /// The resources that are not stream-ordered also allocate without a stream
    /// (`None`), typed or erased.
    pub(super) fn without_a_stream(r: &Resources) -> Result<[Buffer; 4]> {
        Ok([
            r.0.allocate(1, None)?,
            r.3.allocate(1, None)?,
            r.4.allocate(1, None)?.into_buffer(),
            r.5.allocate(1, None)?,
        ])
    }

    pub(super) mod with_traits {
        use std::sync::Arc;

        // In scope to show that it does not capture `allocate` (so the compiler
        // finds it unused).
        #[allow(unused_imports)]
        use cudars_core::MemoryResource as _;
        use cudars_core::{Buffer, MemoryResourceExt as _, Result, Stream};

        /// Both traits imported: still the owning `allocate`, with no ambiguity, and
        /// a user's own resource has it too (from `MemoryResourceExt`).
        pub(crate) fn f(
            r: &super::Resources,
            user: &Arc<super::super::UserResource>,
            s: &Stream,
        ) -> Result<[Buffer; 7]> {
            Ok([
                r.0.allocate(1, s)?,
                r.1.allocate(1, s)?,
                r.2.allocate(1, s)?,
                r.3.allocate(1, s)?,
                r.4.allocate(1, s)?.into_buffer(),
                r.5.allocate(1, s)?,
                user.allocate(1, s)?,
            ])
        }

        /// A resource of the user's own takes an optional stream too.
        pub(crate) fn user_without_a_stream(
            user: &Arc<super::super::UserResource>,
        ) -> Result<Buffer> {
            user.allocate(1, None)
        }
    }
}

#[cfg(feature = "vmm")]
#[test]
fn allocate_on_an_arc_of_any_resource_type_checks_as_the_owning_one() {
    // Compiling `owning_allocate_resolves` is the test; this keeps it referenced.
    let _ = owning_allocate_resolves::without_traits;
    let _ = owning_allocate_resolves::without_a_stream;
    let _ = owning_allocate_resolves::with_traits::f;
    let _ = owning_allocate_resolves::with_traits::user_without_a_stream;
}
