//! What can be checked without a GPU: thread-safety markers and the no-driver path.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cuda_core::{Buffer, Device, DeviceMemoryResource, Error, Event, Stream};

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
    if cuda_pathfinder::load_nvidia_dynamic_lib("cuda").is_ok() {
        // A driver is here: the same calls succeed or fail for real.
        let n = Device::count();
        assert!(n.is_ok() || n.unwrap_err().driver_code().is_some());
        return;
    }
    let e = Device::count().unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("initialising the CUDA driver (cuInit): CUDA_ERROR_NOT_FOUND"),
        "{msg}"
    );
    assert!(msg.contains("libcuda.so.1"), "{msg}");
    assert_eq!(
        e.driver_code(),
        Some(cuda_core::cuda_bindings::driver::CUDA_ERROR_NOT_FOUND)
    );
    assert!(matches!(Device::new(0), Err(Error::Driver { .. })));
    assert!(Device::all().is_err());
}
