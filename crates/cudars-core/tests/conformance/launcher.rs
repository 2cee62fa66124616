//! `cuda_core/tests/test_launcher.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says:
//! so far the tests of `LaunchConfig` alone, which need no GPU here (`cuda.core`
//! asks the device whether it has thread-block clusters when a configuration
//! names one; `cudars-core` leaves that to the launch).
//!
//! `LaunchConfig(grid=g, block=b)` is `LaunchConfig::new(g, b)`, and with a cluster
//! `LaunchConfig(grid=g, cluster=c, block=b)` (`g` counted in clusters) is
//! `LaunchConfig::with_clusters(Grid::clusters(g), c, b)`; Python's `config.grid`
//! (clusters when there is a cluster, else blocks) is `grid_clusters()` or
//! `grid_blocks()`, and the native configuration's `gridDim` is `grid_blocks()`.


use cudars_core::{Dim3, Grid, LaunchConfig};

fn dim(x: u32, y: u32, z: u32) -> Dim3 {
    Dim3::from((x, y, z))
}

/// `LaunchConfig(grid=…, cluster=…, block=…)`.
fn clustered(
    grid: impl Into<Dim3>,
    cluster: impl Into<Dim3>,
    block: impl Into<Dim3>,
) -> LaunchConfig {
    LaunchConfig::with_clusters(Grid::clusters(grid), cluster, block).unwrap()
}

#[test]
fn test_launch_config_init() {
    let mut config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    config.shmem_size = 0;
    assert_eq!(config.grid_blocks(), dim(1, 1, 1));
    assert_eq!(config.block(), dim(1, 1, 1));
    assert_eq!(config.shmem_size, 0);

    let mut config = LaunchConfig::new((2, 2, 2), (2, 2, 2));
    config.shmem_size = 1024;
    assert_eq!(config.grid_blocks(), dim(2, 2, 2));
    assert_eq!(config.block(), dim(2, 2, 2));
    assert_eq!(config.shmem_size, 1024);
}

/// Python's four configurations each raise `ValueError`: the fallible
/// constructors refuse them (`try_new` for the one-dimensional counts,
/// `try_from_dims` for the tuple forms). `LaunchConfig::new` cannot fail; the
/// launch refuses a zero dimension instead.
#[test]
fn test_launch_config_invalid_values() {
    let zero = |r: cudars_core::Result<LaunchConfig>| {
        assert!(
            matches!(r, Err(cudars_core::Error::InvalidArgument { .. })),
            "{r:?}"
        );
    };
    zero(LaunchConfig::try_new(0, 1));
    zero(LaunchConfig::try_from_dims((0, 1), 1));
    zero(LaunchConfig::try_from_dims((1, 1, 1), 0));
    zero(LaunchConfig::try_from_dims((1, 1, 1), (0, 1)));
    // The one-dimensional forms, each way round.
    zero(LaunchConfig::try_new(1, 0));
}

#[test]
fn test_launch_config_shmem_size() {
    let mut config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    config.shmem_size = 2048;
    assert_eq!(config.shmem_size, 2048);

    let config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    assert_eq!(config.shmem_size, 0);
}

#[test]
fn test_launch_config_cluster_grid_conversion() {
    // Test case 1: 1D
    let config = clustered(4, 2, 32);
    assert_eq!(config.grid_clusters(), Some(dim(4, 1, 1)));
    assert_eq!(config.cluster(), Some(dim(2, 1, 1)));
    assert_eq!(config.block(), dim(32, 1, 1));

    // Test case 2: 2D grid and cluster
    let config = clustered((2, 3), (2, 2), 32);
    assert_eq!(config.grid_clusters(), Some(dim(2, 3, 1)));
    assert_eq!(config.cluster(), Some(dim(2, 2, 1)));

    // Test case 3: 3D full specification
    let config = clustered((2, 2, 2), (3, 3, 3), (8, 8, 8));
    assert_eq!(config.grid_clusters(), Some(dim(2, 2, 2)));
    assert_eq!(config.cluster(), Some(dim(3, 3, 3)));

    // Test case 4: Identity case
    let config = clustered(1, 1, 32);
    assert_eq!(config.grid_clusters(), Some(dim(1, 1, 1)));

    // Test case 5: No cluster (should not convert grid)
    let config = LaunchConfig::new(4, 32);
    assert_eq!(config.grid_blocks(), dim(4, 1, 1));
    assert_eq!(config.cluster(), None);
}

#[test]
fn test_launch_config_native_conversion() {
    // Test case 1: 1D
    assert_eq!(clustered(4, 2, 32).grid_blocks(), dim(8, 1, 1));
    // Test case 2: 2D grid and cluster
    assert_eq!(clustered((2, 3), (2, 2), 32).grid_blocks(), dim(4, 6, 1));
    // Test case 3: No cluster (should not convert grid)
    assert_eq!(LaunchConfig::new(4, 32).grid_blocks(), dim(4, 1, 1));
}
