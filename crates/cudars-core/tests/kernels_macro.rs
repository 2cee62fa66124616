//! `cudars_core::kernels!`: typed launch functions generated from
//! `tests/kernels/generated.cu`. That this file compiles tests the expansion;
//! the compile tests need only NVRTC, the launch tests a GPU (without one they
//! print `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` they fail).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::cache::InMemoryProgramCache;
use cudars_core::half::{bf16, f16};
use cudars_core::{
    CodeType, Device, DeviceBuffer, Error, InvalidKind, LaunchConfig, ProgramOptions, Stream,
    StreamOptions,
};
use cudars_tests::{require_gpu, require_libs};

/// The C `struct Affine` of the source.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Affine {
    scale: f32,
    shift: f32,
    n: u32,
}

/// A Rust type two bytes short of the C struct: loading must refuse it.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct ShortAffine {
    scale: f32,
    shift: f32,
}

cudars_core::kernels! {
    /// The kernels of the test source.
    pub struct Generated = "tests/kernels/generated.cu";
    type Affine = Affine;
}

cudars_core::kernels! {
    /// A wrong Rust type for an `Affine` whose layout the macro does not read
    /// (a bit-field), so that only the load-time check can catch it: a checked
    /// mapping of the wrong size does not compile.
    struct Mismatched = source r#"
        struct Affine { float scale; float shift; unsigned n : 32; };
        extern "C" __global__ void affine(const __grid_constant__ Affine p, float* __restrict__ y) {}
    "#;
    unsafe type Affine = crate::ShortAffine;
}

/// The C `struct Pair` of `typedefs.cu` (`double`, `int`, 4 bytes of padding).
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Pair {
    a: f64,
    n: i32,
    pad: u32,
}

cudars_core::kernels! {
    /// Kernels over `typedef double real;` and other aliases, resolved by the
    /// macro (`real*` takes a view of `f64`).
    struct Typedefs = "tests/kernels/typedefs.cu";
    type Pair = Pair;
}

cudars_core::kernels! {
    /// An inline source, with C names that are Rust keywords or the launch's own,
    /// and a kernel with no Rust signature, left out by `only`.
    struct Inline = source r#"
        extern "C" __global__ void type(int* in, int stream, int config) {}
        extern "C" __global__ void rows(float** r) {}
        extern "C" __global__ void scale(float* type, float match, unsigned) {}
        extern "C" __global__ void Fill(float* Out, float V, int N) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < N) Out[i] = V;
        }
    "#;
    only r#type, scale, Fill;
}

cudars_core::kernels! {
    /// Half-precision parameters and views (`cuda_fp16.h`, `cuda_bf16.h`: the
    /// toolkit's headers).
    struct Halves = source r#"
        #include <cuda_fp16.h>
        #include <cuda_bf16.h>
        extern "C" __global__ void axpy_half(__half a, const __half* x, __half* y, unsigned n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = __hadd(__hmul(a, x[i]), y[i]);
        }
        extern "C" __global__ void add_bf16(__nv_bfloat16 b, __nv_bfloat16* y, unsigned n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = __hadd(y[i], b);
        }
    "#;
}

cudars_core::kernels! {
    /// The longest parameter list: 16.
    struct Wide = source r#"
        extern "C" __global__ void sum16(long long* out, char a, signed char b, unsigned char c,
            short d, unsigned short e, int f, unsigned g, long h, unsigned long i, long long j,
            unsigned long long k, float l, double m, bool n, size_t o) {
            *out = a + b + c + d + e + f + g + h + (long long)i + j + (long long)k
                 + (long long)l + (long long)m + n + (long long)o;
        }
    "#;
}

/// A porter's source in a `const`, as NVIDIA's Python examples keep theirs in a
/// module-level string (issue 28, point 13).
const SCALE_SRC: &str = r#"
struct Affine { float scale; float shift; unsigned n; };
extern "C" {
__global__ void scale(float a, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}
// Laid out differently from `declare` below: the comparison leaves whitespace out.
__global__ void affine_of(const __grid_constant__ Affine p,
                          float*  y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * y[i] + p.shift;
}
}
"#;

cudars_core::kernels! {
    /// A `const` source: the signatures come from `declare`, which the macro
    /// checks against `SCALE_SRC` at compile time.
    struct FromConst = source SCALE_SRC;
    declare r#"
        struct Affine { float scale; float shift; unsigned n; };
        extern "C" __global__ void scale(float a, float* y, unsigned long long n);
        extern "C" __global__ void affine_of(const __grid_constant__ Affine p, float* y);
    "#;
    type Affine = crate::Affine;
}

/// A `static` source.
static SPIN_SRC: &str =
    r#"extern "C" __global__ void spin_a_little(int n) { for (int i = 0; i < n; i++) {} }"#;

cudars_core::kernels! {
    /// A `static` source.
    struct FromStatic = source SPIN_SRC;
    declare r#"extern "C" __global__ void spin_a_little(int n);"#;
}

cudars_core::kernels! {
    /// `include_str!` (relative to this file), with the one kernel wanted
    /// declared.
    struct FromInclude = source include_str!("kernels/generated.cu");
    declare r#"extern "C" __global__ void saxpy(float a, const float* x, float* y, int n);"#;
}

/// A Rust alias of `f64`: the macro cannot compare it by name with `real`'s
/// type, so it checks the mapping at compile time.
type Real = f64;

cudars_core::kernels! {
    /// A mapping of `real` to a Rust alias of its type.
    struct Aliased = source r#"typedef double real;
        extern "C" __global__ void k(real* out, int n) {}"#;
    type real = crate::Real;
}

/// The C `union Bits` below.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Bits {
    u: u32,
}

/// The C `struct Outer` below: a nested struct, a pointer and an array, with
/// the 16-byte alignment `__align__(16)` gives it.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(16))]
struct Outer {
    inner: Pair,
    ptr: u64,
    v: [f32; 3],
    pad: [u32; 3],
}

cudars_core::kernels! {
    /// Mappings the macro checks against layouts it builds from the source (a
    /// union, an aligned struct with a nested one, an enum class): that this
    /// compiles is the test.
    struct Layouts = source r#"
        struct Pair { double a; int n; };
        union Bits { float f; unsigned u; };
        struct __align__(16) Outer { struct Pair inner; int* ptr; float v[3]; };
        enum class Mode : unsigned short { A, B };
        extern "C" __global__ void k(Bits b, const Outer* o, Mode m, Outer* w) {}
    "#;
    type Bits = Bits;
    type Outer = Outer;
    type Mode = u16;
}

const SOURCE: &str = include_str!("kernels/generated.cu");

/// The launch functions of `typedefs.cu` have the Rust types of the C types
/// behind the aliases: `real` is `f64`, `count_t` `u64`, `index_t` `u32`.
#[test]
// The function types spelled out are what the test checks.
#[allow(clippy::type_complexity)]
fn aliases_resolve_to_the_rust_types_of_their_c_types() {
    use cudars_core::{DeviceView, DeviceViewMut, Result};
    let _: unsafe fn(
        &Typedefs,
        &Stream,
        &LaunchConfig,
        DeviceViewMut<'_, f64>,
        f64,
        i32,
    ) -> Result<()> = Typedefs::fill_real;
    let _: unsafe fn(
        &Typedefs,
        &Stream,
        &LaunchConfig,
        f64,
        DeviceView<'_, f64>,
        DeviceViewMut<'_, f64>,
        u64,
    ) -> Result<()> = Typedefs::axpy_real;
    let _: unsafe fn(
        &Typedefs,
        &Stream,
        &LaunchConfig,
        &Pair,
        DeviceViewMut<'_, f64>,
        DeviceViewMut<'_, u32>,
    ) -> Result<()> = Typedefs::pair_scale;
    assert_eq!(Typedefs::KERNELS, ["fill_real", "axpy_real", "pair_scale"]);
    let _: unsafe fn(&Aliased, &Stream, &LaunchConfig, DeviceViewMut<'_, Real>, i32) -> Result<()> =
        Aliased::k;
}

/// Whether the toolkit's headers are found; skips (or, on a GPU run, fails)
/// without them.
fn toolkit_headers(required_by: &str) -> bool {
    let found = cudars_core::toolkit_include_dirs()
        .map(|_| ())
        .map_err(|e| e.to_string());
    cudars_tests::require_or_skip(
        &cudars_tests::current_test_name(),
        "the CUDA runtime headers",
        required_by,
        found,
    )
}

fn sm90() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

#[test]
fn the_struct_embeds_the_source_and_lists_the_extern_c_kernels() {
    assert_eq!(Generated::SOURCE, SOURCE);
    assert_eq!(Generated::PROGRAM_NAME, "generated.cu");
    // Source order; the template `twice` has no C name and is left out.
    assert_eq!(
        Generated::KERNELS,
        ["saxpy", "affine", "add_scaled", "fill_if"]
    );
    assert_eq!(Inline::KERNELS, ["type", "scale", "Fill"]);
    assert_eq!(Inline::PROGRAM_NAME, "Inline.cu");
}

#[test]
fn the_embedded_source_compiles_with_nvrtc_through_the_cache() {
    require_libs!("nvrtc");
    let cache = InMemoryProgramCache::new();
    let cubin = Generated::compile(sm90(), Some(&cache)).unwrap();
    assert_eq!(cubin.code_type(), CodeType::Cubin);
    assert!(cubin.code().starts_with(b"\x7fELF"));
    assert_eq!(cubin.name(), "generated.cu");
    assert_eq!(cache.len(), 1);
    // The second compilation is the cache's entry.
    let again = Generated::compile(sm90(), Some(&cache)).unwrap();
    assert_eq!(again.code(), cubin.code());
    assert_eq!(cache.len(), 1);
    // For a virtual architecture: PTX, whose entry points are the C names.
    let ptx = Generated::compile(
        ProgramOptions {
            arch: Some("compute_75".into()),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    let text = String::from_utf8_lossy(ptx.code());
    for k in Generated::KERNELS {
        assert!(text.contains(&format!(".entry {k}(")), "{k} in\n{text}");
    }
    // A name given in the options is kept.
    let named = Generated::compile(
        ProgramOptions {
            name: Some("mine.cu".into()),
            ..sm90()
        },
        None,
    )
    .unwrap();
    assert_eq!(named.name(), "mine.cu");
    assert!(
        Wide::compile(sm90(), None)
            .unwrap()
            .code()
            .starts_with(b"\x7fELF")
    );
    let inline = Inline::compile(sm90(), None).unwrap();
    assert!(inline.code().starts_with(b"\x7fELF"));
    let typedefs = Typedefs::compile(sm90(), None).unwrap();
    assert!(typedefs.code().starts_with(b"\x7fELF"));
    let layouts = Layouts::compile(sm90(), None).unwrap();
    assert!(layouts.code().starts_with(b"\x7fELF"));
    let mismatched = Mismatched::compile(sm90(), None).unwrap();
    assert!(mismatched.code().starts_with(b"\x7fELF"));
}

#[test]
fn half_precision_kernels_compile_with_the_toolkit_headers() {
    require_libs!("nvrtc");
    if !toolkit_headers(cudars_tests::REQUIRE_WHEELS_VAR) {
        return;
    }
    let code = Halves::compile(sm90().with_toolkit_headers().unwrap(), None).unwrap();
    assert!(code.code().starts_with(b"\x7fELF"));
}

#[test]
fn a_compile_error_carries_the_log_under_the_program_name() {
    require_libs!("nvrtc");
    cudars_core::kernels! {
        struct Broken = source r#"extern "C" __global__ void k(float* y) { y[0] = undefined_name; }"#;
    }
    let e = Broken::compile(sm90(), None).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Compile { .. }), "{e:?}");
    assert!(text.contains("Broken.cu"), "{text}");
    assert!(text.contains("undefined_name"), "{text}");
}

/// Issue 28, point 13: kernels from a `const`, a `static` and `include_str!`
/// sources load (their declarations checked at compile time, their sizes at
/// load) and run.
#[test]
fn kernels_from_a_const_static_or_included_source_run() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    assert_eq!(FromConst::SOURCE, SCALE_SRC);
    assert_eq!(FromConst::KERNELS, ["scale", "affine_of"]);
    let k = FromConst::load(&d).unwrap();
    let mut y = DeviceBuffer::from_host(&d, &[1.0f32, 2.0, 3.0, 4.0], &s).unwrap();
    let cfg = LaunchConfig::for_elements(4, 32);
    // SAFETY: scale touches y[0..n], n = 4 = the view's length.
    unsafe { k.scale(&s, &cfg, 3.0, y.view_mut(), 4) }.unwrap();
    let p = Affine {
        scale: 0.5,
        shift: 1.0,
        n: 4,
    };
    // SAFETY: affine_of touches y[0..p.n], p.n = 4 = the view's length.
    unsafe { k.affine_of(&s, &cfg, &p, y.view_mut()) }.unwrap();
    assert_eq!(y.to_vec(&s).unwrap(), [2.5, 4.0, 5.5, 7.0]);

    let spin = FromStatic::load(&d).unwrap();
    // SAFETY: the kernel touches no memory.
    unsafe { spin.spin_a_little(&s, &LaunchConfig::for_elements(1, 1), 10) }.unwrap();

    let inc = FromInclude::load(&d).unwrap();
    assert_eq!(inc.saxpy_kernel().kernel().name(), "saxpy");
    let x = DeviceBuffer::from_host(&d, &[1.0f32; 4], &s).unwrap();
    // SAFETY: saxpy touches x[0..n] and y[0..n], n = 4, both views' length.
    unsafe { inc.saxpy(&s, &cfg, 2.0, x.view(), y.view_mut(), 4) }.unwrap();
    assert_eq!(y.to_vec(&s).unwrap(), [4.5, 6.0, 7.5, 9.0]);
}

/// A `PinnedBuffer` is a `kernels!` argument as a `DeviceBuffer` is: the
/// launch functions take its `view` and `view_mut` (issue 28, point 13).
#[test]
fn generated_launches_take_pinned_buffers() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let k = FromInclude::load(&d).unwrap();
    let x = cudars_core::PinnedBuffer::from_slice(&d, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut y = cudars_core::PinnedBuffer::from_slice(&d, &[10.0f32; 4]).unwrap();
    let cfg = LaunchConfig::for_elements(4, 32);
    // SAFETY: saxpy touches x[0..n] and y[0..n], n = 4, both views' length.
    unsafe { k.saxpy(&s, &cfg, 2.0, x.view(), y.view_mut().unwrap(), 4) }.unwrap();
    assert_eq!(y.as_slice().unwrap(), [12.0, 14.0, 16.0, 18.0]);
}

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

#[test]
fn generated_launches_on_sub_ranges_structs_integers_and_bools() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let cache = InMemoryProgramCache::new();
    let k = Generated::load_cached(&d, &cache).unwrap();
    assert_eq!(cache.len(), 1);
    assert!(k.saxpy_kernel().is_checked());
    assert_eq!(k.affine_kernel().kernel().name(), "affine");

    // saxpy on views at offsets: y[256..768] = 2 * x[0..512] + y[256..768].
    let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let dx = DeviceBuffer::from_host(&d, &x, &s).unwrap();
    let mut dy = DeviceBuffer::<f32>::zeroed(&d, 1024, &s).unwrap();
    dy.fill(1.0, &s).unwrap();
    let cfg = LaunchConfig::for_elements(512, 128);
    // SAFETY: saxpy touches x[0..512] and y[0..512] of the views, which hold 512.
    unsafe {
        k.saxpy(
            &s,
            &cfg,
            2.0,
            dx.slice(0..512).unwrap(),
            dy.slice_mut(256..768).unwrap(),
            512,
        )
    }
    .unwrap();
    let y = dy.to_vec(&s).unwrap();
    for (i, v) in y.iter().enumerate() {
        let want = if (256..768).contains(&i) {
            2.0 * (i - 256) as f32 + 1.0
        } else {
            1.0
        };
        assert_eq!(*v, want, "y[{i}]");
    }

    // A `__grid_constant__` struct, on the second half only.
    let p = Affine {
        scale: 0.5,
        shift: -1.0,
        n: 512,
    };
    // SAFETY: affine touches y[0..p.n] of the view, which holds 512.
    unsafe {
        k.affine(
            &s,
            &LaunchConfig::for_elements(512, 256),
            &p,
            dy.slice_mut(512..).unwrap(),
        )
    }
    .unwrap();
    let y2 = dy.to_vec(&s).unwrap();
    for i in 0..1024 {
        let want = if i < 512 { y[i] } else { 0.5 * y[i] - 1.0 };
        assert_eq!(y2[i], want, "y[{i}]");
    }

    // Integers: b[10..110] += 3 * a[0..100] with a size_t count.
    let a: Vec<u64> = (0..100).map(|i| (i as u64) << 33).collect();
    let da = DeviceBuffer::from_host(&d, &a, &s).unwrap();
    let mut db = DeviceBuffer::from_host(&d, &[7u64; 128], &s).unwrap();
    // SAFETY: add_scaled touches a[0..n] and b[0..n]; both views hold n = 100.
    unsafe {
        k.add_scaled(
            &s,
            &LaunchConfig::for_elements(100, 64),
            da.view(),
            db.slice_mut(10..110).unwrap(),
            3,
            100,
        )
    }
    .unwrap();
    let b = db.to_vec(&s).unwrap();
    for (i, v) in b.iter().enumerate() {
        let want = if (10..110).contains(&i) {
            7 + 3 * a[i - 10]
        } else {
            7
        };
        assert_eq!(*v, want, "b[{i}]");
    }

    // A bool: false writes nothing, true writes.
    let mut out = DeviceBuffer::<i64>::zeroed(&d, 64, &s).unwrap();
    let cfg = LaunchConfig::for_elements(64, 64);
    // SAFETY: fill_if touches out[0..n], n = 64 = the view's length.
    unsafe { k.fill_if(&s, &cfg, out.view_mut(), false, -5, 64) }.unwrap();
    assert!(out.to_vec(&s).unwrap().iter().all(|&v| v == 0));
    // SAFETY: as above, on the first 32.
    unsafe { k.fill_if(&s, &cfg, out.slice_mut(..32).unwrap(), true, -5, 32) }.unwrap();
    let o = out.to_vec(&s).unwrap();
    assert!(o[..32].iter().all(|&v| v == -5) && o[32..].iter().all(|&v| v == 0));

    // Sixteen parameters of every scalar width.
    let wide = Wide::load(&d).unwrap();
    let mut sum = DeviceBuffer::<i64>::zeroed(&d, 1, &s).unwrap();
    // SAFETY: one thread writes out[0], which the view holds.
    unsafe {
        wide.sum16(
            &s,
            &LaunchConfig::for_elements(1, 1),
            sum.view_mut(),
            1,
            -2,
            3,
            -4,
            5,
            -6,
            7,
            -8,
            9,
            -10,
            11,
            12.0,
            -13.0,
            true,
            15,
        )
    }
    .unwrap();
    assert_eq!(
        sum.to_vec(&s).unwrap(),
        [1 - 2 + 3 - 4 + 5 - 6 + 7 - 8 + 9 - 10 + 11 + 12 - 13 + 1 + 15]
    );

    // The inline kernels with renamed parameters load and launch too.
    let inline = Inline::load(&d).unwrap();
    let mut ints = DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap();
    let one = LaunchConfig::for_elements(1, 1);
    // SAFETY: the kernel does nothing.
    unsafe { inline.r#type(&s, &one, ints.view_mut(), 1, 2) }.unwrap();
    let mut floats = DeviceBuffer::<f32>::zeroed(&d, 1, &s).unwrap();
    // SAFETY: the kernel does nothing.
    unsafe { inline.scale(&s, &one, floats.view_mut(), 1.0, 0) }.unwrap();
    // SAFETY: Fill writes Out[0..N], N = 1 = the view's length.
    unsafe { inline.Fill(&s, &one, floats.view_mut(), 4.5, 1) }.unwrap();
    assert_eq!(floats.to_vec(&s).unwrap(), [4.5]);
    s.sync().unwrap();
}

#[test]
fn half_precision_launches() {
    require_gpu!();
    require_libs!("nvrtc");
    if !toolkit_headers(cudars_tests::REQUIRE_GPU_VAR) {
        return;
    }
    let (d, s) = setup();
    let options = ProgramOptions::for_device(&d)
        .unwrap()
        .with_toolkit_headers()
        .unwrap();
    let k = Halves::load_with(options, None).unwrap();
    let x: Vec<f16> = (0..100).map(|i| f16::from_f32(i as f32)).collect();
    let dx = DeviceBuffer::from_host(&d, &x, &s).unwrap();
    let mut dy = DeviceBuffer::from_host(&d, &[f16::ONE; 100], &s).unwrap();
    let cfg = LaunchConfig::for_elements(100, 128);
    // SAFETY: axpy_half touches x[0..n] and y[0..n]; both hold n = 100.
    unsafe { k.axpy_half(&s, &cfg, f16::from_f32(0.5), dx.view(), dy.view_mut(), 100) }.unwrap();
    let y = dy.to_vec(&s).unwrap();
    for (i, v) in y.iter().enumerate() {
        assert_eq!(v.to_f32(), 0.5 * i as f32 + 1.0, "y[{i}]");
    }
    let mut db = DeviceBuffer::from_host(&d, &[bf16::from_f32(2.0); 64], &s).unwrap();
    // SAFETY: add_bf16 touches y[0..n] of the view, which holds 32.
    unsafe {
        k.add_bf16(
            &s,
            &cfg,
            bf16::from_f32(0.25),
            db.slice_mut(32..).unwrap(),
            32,
        )
    }
    .unwrap();
    let b = db.to_vec(&s).unwrap();
    assert!(b[..32].iter().all(|v| v.to_f32() == 2.0));
    assert!(b[32..].iter().all(|v| v.to_f32() == 2.25));
}

#[test]
fn a_rust_type_of_the_wrong_size_is_refused_at_load() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let probe = Generated::load(&d).unwrap();
    if !probe.affine_kernel().is_checked() {
        println!("SKIPPED: this driver does not report kernels' parameters (before CUDA 12.4)");
        return;
    }
    let e = Mismatched::load(&d).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                kind: InvalidKind::Other,
                ..
            }
        ),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("typing kernel `affine`"), "{text}");
    assert!(
        text.contains(
            "parameter 0 (`const __grid_constant__ Affine p`) is 12 bytes, the signature's 8"
        ),
        "{text}"
    );
}

/// The review's case: a kernel over `typedef double real;` writing `n`
/// elements. Its wrapper takes an `f64` view, so `n` = the view's length stays
/// within it: the guard elements after the view are untouched. (Before the
/// macro resolved `real`, a mapping to `f32` compiled, and the same launch on a
/// 512-element `f32` view wrote 512 elements past it.)
#[test]
fn a_typedef_kernel_writes_only_its_view() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let k = Typedefs::load(&d).unwrap();
    const N: usize = 512;
    const GUARD: f64 = -7.25;
    let mut buf = DeviceBuffer::from_host(&d, &[GUARD; 2 * N], &s).unwrap();
    let cfg = LaunchConfig::for_elements(N as u64, 128);
    // SAFETY: fill_real writes out[0..n], n = 512 = the view's length.
    unsafe { k.fill_real(&s, &cfg, buf.slice_mut(..N).unwrap(), 3.5, N as i32) }.unwrap();
    let out = buf.to_vec(&s).unwrap();
    assert!(out[..N].iter().all(|&v| v == 3.5), "{:?}", &out[..8]);
    for (i, v) in out[N..].iter().enumerate() {
        assert_eq!(
            *v, GUARD,
            "guard element {i} after the view was overwritten"
        );
    }

    // The chain, the const typedef and the using: y = 2 * x + y.
    let x: Vec<f64> = (0..N).map(|i| i as f64).collect();
    let dx = DeviceBuffer::from_host(&d, &x, &s).unwrap();
    // SAFETY: axpy_real touches x[0..n] and y[0..n]; both views hold n = 512.
    unsafe {
        k.axpy_real(
            &s,
            &cfg,
            2.0,
            dx.view(),
            buf.slice_mut(..N).unwrap(),
            N as u64,
        )
    }
    .unwrap();
    let y = buf.to_vec(&s).unwrap();
    for (i, v) in y[..N].iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f64 + 3.5, "y[{i}]");
    }
    assert!(y[N..].iter().all(|&v| v == GUARD));

    // A struct laid out from the source, by value.
    let p = Pair {
        a: 0.5,
        n: 256,
        pad: 0,
    };
    let mut idx = DeviceBuffer::<u32>::zeroed(&d, 256, &s).unwrap();
    // SAFETY: pair_scale touches y[0..p.n] and idx[0..p.n]; both views hold 256.
    unsafe {
        k.pair_scale(
            &s,
            &LaunchConfig::for_elements(256, 128),
            &p,
            buf.slice_mut(..256).unwrap(),
            idx.view_mut(),
        )
    }
    .unwrap();
    let z = buf.to_vec(&s).unwrap();
    for (i, (v, before)) in z[..N].iter().zip(&y).enumerate() {
        let want = if i < 256 { 0.5 * before } else { *before };
        assert_eq!(*v, want, "z[{i}]");
    }
    assert!(z[N..].iter().all(|&v| v == GUARD));
    let idx = idx.to_vec(&s).unwrap();
    assert!(idx.iter().enumerate().all(|(i, &v)| v as usize == i));
}

#[cfg(feature = "arrays")]
/// The C `struct Span2d` of `Porting` below: a pointer and two extents, as an
/// `mdspan` holds them (issue 28, point 7).
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Span2d {
    data: cudars_core::ViewPtr<f32>,
    rows: u32,
    cols: u32,
}

#[cfg(feature = "arrays")]
cudars_core::kernels! {
    /// Kernels that take a struct of pointers and a texture (issue 28, point 7).
    struct Porting = source r#"
        struct Span2d { float* data; unsigned rows; unsigned cols; };
        extern "C" __global__ void transpose_add(Span2d out, const __grid_constant__ Span2d in, float v) {
            unsigned r = blockIdx.x, c = threadIdx.x;
            if (r < in.rows && c < in.cols) out.data[c * out.cols + r] = in.data[r * in.cols + c] + v;
        }
        extern "C" __global__ void fetch_twice(cudaTextureObject_t tex, float* out, unsigned n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) out[i] = tex1Dfetch<float>(tex, (int)i) * 2.0f;
        }
    "#;
    type Span2d = crate::Span2d;
}

#[cfg(feature = "arrays")]
/// Issue 28, point 7: an `mdspan`-like struct of pointers is a typed parameter
/// made from views (`LentVal`, `ViewPtr`), and a texture is a typed parameter
/// taken by reference, through `kernels!`.
#[test]
fn structs_of_pointers_and_textures_are_typed_parameters() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let k = Porting::load(&d).unwrap();
    let (rows, cols) = (3u32, 5u32);
    let a: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let x = DeviceBuffer::from_host(&d, &a, &s).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&d, a.len(), &s).unwrap();
    let out = cudars_core::LentVal::new(|l| Span2d {
        data: l.ptr_mut(y.view_mut()),
        rows: cols,
        cols: rows,
    });
    let input = cudars_core::LentVal::new(|l| Span2d {
        data: l.ptr(x.view()),
        rows,
        cols,
    });
    // SAFETY: one block per row and one thread per column of `in`, each within
    // `rows * cols` elements of both spans.
    unsafe { k.transpose_add(&s, &LaunchConfig::new(rows, cols), out, input, 0.5) }.unwrap();
    let got = y.to_vec(&s).unwrap();
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(got[(c * rows + r) as usize], (r * cols + c) as f32 + 0.5);
        }
    }
    // A texture over a buffer: the typed parameter takes `&TextureObject`.
    let n = 64u32;
    let src = std::sync::Arc::new({
        let mut b = d.allocate(n as usize * 4, &s).unwrap();
        b.copy_from_host(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), &s)
            .unwrap();
        b
    });
    let tex = d
        .create_texture_object(
            cudars_core::TextureResource::Linear {
                buffer: src,
                format: cudars_core::ArrayFormat::F32,
                channels: 1,
                size: None,
            },
            &cudars_core::TextureOptions::default(),
        )
        .unwrap();
    let mut twice = DeviceBuffer::<f32>::zeroed(&d, n as usize, &s).unwrap();
    // SAFETY: the kernel reads n texels and writes n floats.
    unsafe {
        k.fetch_twice(
            &s,
            &LaunchConfig::for_elements(n.into(), 32),
            &tex,
            twice.view_mut(),
            n,
        )
    }
    .unwrap();
    assert_eq!(
        twice.to_vec(&s).unwrap(),
        (0..n).map(|i| 2.0 * i as f32).collect::<Vec<_>>()
    );
    s.sync().unwrap();
}

// Issue 41, point 1: the compiler is the authority on kernel signatures. Each
// source below makes NVRTC compile `k(double*)` while `declare` (which the
// macro reads instead of the source, whose text it cannot see) says
// `k(float*)`; the compile-time check of `declare` passes, and the compiler's
// check refuses the source before anything is loaded.

/// The prototype `declare` repeats stands only in a comment.
const COMMENTED: &str = r#"
// extern "C" __global__ void k(float* y);
extern "C" __global__ void k(double* y) { y[0] = 1.0; }
"#;

cudars_core::kernels! {
    /// `declare` matches a comment of the source.
    struct Commented = source COMMENTED;
    declare r#"extern "C" __global__ void k(float* y);"#;
}

/// `#define/**/real double` after `typedef float real;`.
const DEFINE_COMMENT: &str = "typedef float real;\n#define/**/real double\n\
    extern \"C\" __global__ void k(real* y) { y[0] = 1.0; }\n";
/// `#/**/define real double` after `typedef float real;`.
const HASH_COMMENT: &str = "typedef float real;\n#/**/define real double\n\
    extern \"C\" __global__ void k(real* y) { y[0] = 1.0; }\n";
/// A line splice inside `#define`.
const SPLICED: &str = "typedef float real;\n#def\\\nine real double\n\
    extern \"C\" __global__ void k(real* y) { y[0] = 1.0; }\n";

cudars_core::kernels! {
    /// `real` is `double` to the preprocessor.
    struct DefineComment = source DEFINE_COMMENT;
    declare r#"typedef float real; extern "C" __global__ void k(real* y);"#;
}

cudars_core::kernels! {
    /// `real` is `double` to the preprocessor.
    struct HashComment = source HASH_COMMENT;
    declare r#"typedef float real; extern "C" __global__ void k(real* y);"#;
}

cudars_core::kernels! {
    /// `real` is `double` to the preprocessor.
    struct Spliced = source SPLICED;
    declare r#"typedef float real; extern "C" __global__ void k(real* y);"#;
}

/// A source whose type a `-D` of the options changes.
const WIDENED: &str = "#ifdef WIDE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n\
    extern \"C\" __global__ void k(real* y) { y[0] = 1; }\n";

cudars_core::kernels! {
    /// `real` is `float` unless the options define `WIDE`.
    struct Widened = source WIDENED;
    declare r#"typedef float real; extern "C" __global__ void k(real* y);"#;
}

/// The signature error a hostile source must be: the kernel named, the C
/// signature of its launch function and the type the compiler sees.
fn assert_refused_by_the_compiler(what: &str, r: cudars_core::Result<cudars_core::ObjectCode>) {
    assert_refused_as(what, r, "void (double *)");
}

/// As `assert_refused_by_the_compiler`, the compiler seeing `seen` (as NVRTC
/// writes it: with the source's typedef names).
fn assert_refused_as(what: &str, r: cudars_core::Result<cudars_core::ObjectCode>, seen: &str) {
    let e = match r {
        Ok(_) => panic!("{what}: compiled, with an `f32` view for a `double*` kernel"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert_eq!(
        e.invalid_kind(),
        Some(InvalidKind::KernelSignature),
        "{what}: {e:?}"
    );
    assert!(text.contains("kernel `k`"), "{what}: {text}");
    assert!(text.contains("void k(float*)"), "{what}: {text}");
    assert!(
        text.contains(&format!("the compiler sees `{seen}`")),
        "{what}: {text}"
    );
}

#[test]
fn a_declare_only_in_a_comment_is_refused_by_the_compiler() {
    require_libs!("nvrtc");
    assert_refused_by_the_compiler("commented", Commented::compile(sm90(), None));
}

#[test]
fn defines_behind_comments_and_splices_are_refused_by_the_compiler() {
    require_libs!("nvrtc");
    assert_refused_by_the_compiler("#define/**/", DefineComment::compile(sm90(), None));
    assert_refused_by_the_compiler("#/**/define", HashComment::compile(sm90(), None));
    assert_refused_by_the_compiler("#def\\ine", Spliced::compile(sm90(), None));
    // PTX is checked as a cubin is.
    let ptx = ProgramOptions {
        arch: Some("compute_75".into()),
        ..Default::default()
    };
    assert_refused_by_the_compiler("PTX", Spliced::compile(ptx, None));
}

/// The options are compiled with the check, in one translation unit: a `-D`
/// that changes a type is seen.
#[test]
fn the_options_defines_are_seen_by_the_check() {
    require_libs!("nvrtc");
    assert!(Widened::compile(sm90(), None).is_ok());
    let wide = ProgramOptions {
        define_macro: vec![("WIDE".into(), None)],
        ..sm90()
    };
    assert_refused_as(
        "-DWIDE",
        Widened::compile(wide.clone(), None),
        "void (real *)",
    );
    // A `-D` of a name the check uses changes nothing in it.
    let hostile = ProgramOptions {
        define_macro: vec![
            ("WIDE".into(), None),
            ("static_assert(a, b)".into(), None),
            ("decltype(x)".into(), Some("float*".into())),
        ],
        ..wide
    };
    assert_refused_as(
        "-Dstatic_assert",
        Widened::compile(hostile, None),
        "void (real *)",
    );
}

/// Through a cache: the check is part of the key (an entry compiled without
/// it is not found), a refused source leaves no entry, and what is cached was
/// compiled with the check.
#[test]
fn the_cache_keys_the_source_with_its_check() {
    use cudars_core::cache::{ProgramCache, make_program_cache_key};
    use cudars_core::{CompileTarget, SourceCode, kernel_check};
    require_libs!("nvrtc");
    let cache = InMemoryProgramCache::new();
    assert_refused_by_the_compiler("cached", Spliced::compile(sm90(), Some(&cache)));
    assert_eq!(cache.len(), 0);
    let options = ProgramOptions {
        name: Some(Typedefs::PROGRAM_NAME.into()),
        ..sm90()
    };
    Typedefs::compile(sm90(), Some(&cache)).unwrap();
    assert_eq!(cache.len(), 1);
    let plain = make_program_cache_key(
        &SourceCode::Cxx(Typedefs::SOURCE),
        &options,
        CompileTarget::Cubin,
        &[],
        &[],
    )
    .unwrap();
    assert!(cache.get(&plain).unwrap().is_none());
    let checked = kernel_check::checked_source(Typedefs::SOURCE, Typedefs::SIGNATURES);
    let key = make_program_cache_key(
        &SourceCode::Cxx(&checked),
        &options,
        CompileTarget::Cubin,
        &[],
        &[],
    )
    .unwrap();
    assert!(cache.get(&key).unwrap().is_some());
}

/// Every kind of parameter the macro maps passes the compiler's check when
/// the macro read it right (the other kernels of this file are compiled in
/// `the_embedded_source_compiles_with_nvrtc_through_the_cache`).
#[test]
fn the_check_passes_every_parameter_kind_read_right() {
    require_libs!("nvrtc");
    cudars_core::kernels! {
        /// Namespaces, `const` in every place, arrays, `volatile`, unnamed
        /// parameters, an `unsafe type` of a header's type and `void*`.
        struct Kinds = source r#"
            typedef const float cfloat;
            typedef double* dptr;
            struct P { float a; int b; };
            namespace outer { namespace { inline namespace v1 {
            extern "C" __global__ void in_ns(const float* __restrict__ a, float* const b,
                                             const int c, cfloat* d, dptr e, const P p,
                                             const P* ps, P* pm, float f[], const double g[4],
                                             volatile int* h, unsigned) {}
            } } }
            extern "C" {
            __global__ void in_block(void* raw, const void* craw, float2 v, float2* vs) {}
            }
        "#;
        type P = crate::Bits64;
        unsafe type void = u8;
        unsafe type float2 = [f32; 2];
    }
    Kinds::compile(sm90(), None).unwrap();
    #[cfg(feature = "arrays")]
    Porting::compile(sm90(), None).unwrap();
}

/// Eight bytes, aligned to 4: the C `struct P { float a; int b; }`.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Bits64 {
    a: f32,
    b: i32,
}

/// A mapped struct whose layout the compiler sees otherwise is refused, as is
/// an `unsafe type` value the compiler sees as a pointer.
#[test]
fn a_layout_or_a_shape_the_compiler_sees_otherwise_is_refused() {
    require_libs!("nvrtc");
    const PADDED: &str = "#pragma pack(push, 1)\nstruct P { char c; float a; };\n\
        #pragma pack(pop)\nextern \"C\" __global__ void k(P p) {}\n";
    cudars_core::kernels! {
        /// The macro lays `P` out as 8 bytes; `#pragma pack` makes it 5.
        struct Packed = source PADDED;
        declare "struct P { char c; float a; }; extern \"C\" __global__ void k(P p);";
        type P = crate::CharFloat;
    }
    let e = Packed::compile(sm90(), None).unwrap_err();
    assert_eq!(
        e.invalid_kind(),
        Some(InvalidKind::KernelSignature),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("the compiler sees `void (P)`"),
        "{e}"
    );
}

/// The C `struct P { char c; float a; }`, laid out without packing.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct CharFloat {
    c: u8,
    pad: [u8; 3],
    a: f32,
}

/// The function the macro read must be the one the name loads: here the macro
/// reads both `#if` arms and takes `ns::k(float*)` for the `extern "C"`
/// kernel, while the compiler makes `ns::k` a C++ function and the C-linkage
/// `k`, which `get_kernel("k")` loads, takes a `double*` (written through a
/// macro the reader does not expand). `decltype(&::ns::k)` alone would match.
#[test]
fn the_function_checked_is_the_one_the_name_loads() {
    require_libs!("nvrtc");
    cudars_core::kernels! {
        /// `ns::k` is C++ to the compiler, C to the reader.
        struct Relinked = source r#"
            #define DECL(T) extern "C" __global__ void k(T* y) { y[0] = 1; }
            DECL(double);
            namespace ns {
            #ifndef NEVER
            extern "C++" {
            #else
            extern "C" {
            #endif
            __global__ void k(float* y) {}
            #ifndef NEVER
            }
            #else
            }
            #endif
            }
        "#;
    }
    let e = Relinked::compile(sm90(), None).unwrap_err();
    assert_eq!(
        e.invalid_kind(),
        Some(InvalidKind::KernelSignature),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("kernel `k`"), "{text}");
    assert!(text.contains("void k(float*)"), "{text}");
    assert!(text.contains("declaration is incompatible"), "{text}");
}
