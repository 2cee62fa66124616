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

#[test]
fn damaged_images_are_refused_before_the_driver_sees_them() {
    use cuda_core::{
        CompileTarget, Library, LibraryOptions, ObjectCode, Program, ProgramOptions, SourceCode,
    };
    cuda_rs_tests::require_libs!("nvrtc");
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
    let refused = |b: Vec<u8>, kind: fn(Vec<u8>) -> cuda_core::Result<ObjectCode>| {
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
