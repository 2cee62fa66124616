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

#[test]
fn kernel_arguments_have_their_c_sizes() {
    use cuda_core::half::{bf16, f16};
    use cuda_core::{DevicePtr, KernelArg};
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
