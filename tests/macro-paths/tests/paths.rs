//! Issue 43 point 11: `kernels!` expands in a crate with no dependency named
//! `cudars_core`: through the `cudars` umbrella, under a renamed dependency,
//! and with `crate = path;`. This file compiling is most of the test (before,
//! each expansion named `::cudars_core` and failed to resolve); the asserts
//! check that the three structs are the same crate's types.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

const SRC: &str = r#"extern "C" __global__ void scale(float a, float* y, unsigned long long n) {}"#;

// Through the umbrella, with no `crate =`.
cudars::core::kernels! {
    struct ViaUmbrella = source r#"extern "C" __global__ void scale(float a, float* y, unsigned long long n) {}"#;
}

// Under a renamed dependency (`cuda-core = { package = "cudars-core" }`).
cuda_core::kernels! {
    struct ViaRenamed = source SRC;
    declare r#"extern "C" __global__ void scale(float a, float* y, unsigned long long n);"#;
}

// Named explicitly, as serde's `crate = "…"`.
cuda_core::kernels! {
    crate = ::cudars::core;
    struct ViaExplicit = source r#"extern "C" __global__ void scale(float a, float* y, unsigned long long n) {}"#;
}

/// One type, however it was reached.
fn kernel_types<'a>(
    a: &'a ViaUmbrella,
    b: &'a ViaRenamed,
    c: &'a ViaExplicit,
) -> [&'a cuda_core::TypedKernel<(f32, cuda_core::MutPtr<f32>, u64)>; 3] {
    [a.scale_kernel(), b.scale_kernel(), c.scale_kernel()]
}

#[test]
fn kernels_macro_expands_without_a_crate_named_cudars_core() {
    let _ = kernel_types;
    assert_eq!(ViaUmbrella::KERNELS, ["scale"]);
    assert_eq!(ViaRenamed::KERNELS, ["scale"]);
    assert_eq!(ViaExplicit::KERNELS, ["scale"]);
    assert_eq!(ViaRenamed::SOURCE, SRC);
    let sigs: [&[cudars::core::kernel_check::Signature]; 3] = [
        ViaUmbrella::SIGNATURES,
        ViaRenamed::SIGNATURES,
        ViaExplicit::SIGNATURES,
    ];
    for s in sigs {
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name, "scale");
    }
}
