//! Typing a kernel on a thread where no context is current, without a GPU: a
//! child process loads the shim as `libcuda.so.1` in its fake-driver mode
//! (`CUDA_RS_SHIM_FAKE_DRIVER=1`), whose `cuKernelGetParamInfo` fails with
//! `CUDA_ERROR_INVALID_CONTEXT` without a current context, as the driver's does.
//! Loading the code and looking the kernel up need none (a library is
//! context-independent); `TypedKernel::new`, which reads the parameters, makes
//! the one it needs current itself (issue 28: a porter who never called
//! `set_current` got "invalid device context" there).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{Error, MutPtr, ObjectCode, TypedKernel};

/// Set in the child: run the check.
const CHILD: &str = "CUDA_RS_NO_CURRENT_CONTEXT_CHILD";

/// Whether a context is current on this thread.
fn has_current_context() -> bool {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `ctx` is valid for writes.
    let rc = unsafe { sys::cuCtxGetCurrent(&mut ctx) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    !ctx.is_null()
}

/// The child's side, against the fake driver.
fn child() {
    // The fake loads any image; the crate checks a cubin's ELF header. Every
    // kernel of the fake is `(float*, int)`.
    let mut elf = vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    let code = ObjectCode::from_cubin(elf).unwrap();
    let kernel = code.get_kernel("empty").unwrap();
    assert!(
        !has_current_context(),
        "loading and looking up made a context current"
    );
    // What the porter ran into: the driver itself refuses without a context.
    let mut off = 0usize;
    let mut size = 0usize;
    let raw = kernel.kernel_handle().unwrap();
    // SAFETY: a live kernel of the fake; both out-pointers are valid for writes.
    let rc = unsafe { sys::cuKernelGetParamInfo(raw, 0, &mut off, &mut size) };
    assert_eq!(rc, sys::CUDA_ERROR_INVALID_CONTEXT);
    // The typed handle is made, checked, with a context it made current.
    let typed = TypedKernel::<(MutPtr<f32>, i32)>::new(kernel.clone()).unwrap();
    assert!(typed.is_checked());
    assert!(has_current_context());
    // A wrong signature is still refused there, on another fresh thread.
    std::thread::spawn(move || {
        assert!(!has_current_context());
        let e = TypedKernel::<(MutPtr<f32>,)>::new(kernel).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    })
    .join()
    .unwrap();
    println!("typed without a current context: ok");
}

#[test]
fn a_kernel_is_typed_where_no_context_is_current() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    common::run_fake_driver_child(
        "a_kernel_is_typed_where_no_context_is_current",
        CHILD,
        "typed without a current context: ok",
    );
}
