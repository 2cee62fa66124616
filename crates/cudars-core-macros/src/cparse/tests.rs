// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn kernels(src: &str) -> Vec<Kernel> {
    match parse(src) {
        Ok(s) => s.kernels,
        Err(e) => panic!("{e}\n{src}"),
    }
}

fn one(src: &str) -> Kernel {
    let mut k = kernels(src);
    assert_eq!(k.len(), 1, "{k:?}");
    k.remove(0)
}

fn kinds(k: &Kernel) -> Vec<(Option<&str>, ParamKind)> {
    let params = match &k.params {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    params
        .iter()
        .map(|p| (p.name.as_deref(), p.kind.clone()))
        .collect()
}

/// The source's error, or its first kernel's parameter error.
fn err(src: &str) -> String {
    match parse(src) {
        Ok(s) => match s.kernels.iter().find_map(|k| k.params.as_ref().err()) {
            Some(e) => e.to_string(),
            None => panic!("expected an error, got {s:?}"),
        },
        Err(e) => e.to_string(),
    }
}

fn params(k: &Kernel) -> &[Param] {
    k.params.as_deref().unwrap()
}

use Base::{Named, Scalar as S};
use ParamKind::{Pointer, Value};

fn cptr(s: Scalar) -> ParamKind {
    Pointer {
        elem: S(s),
        constant: true,
    }
}
fn mptr(s: Scalar) -> ParamKind {
    Pointer {
        elem: S(s),
        constant: false,
    }
}
fn val(s: Scalar) -> ParamKind {
    Value(S(s))
}

#[test]
fn saxpy_maps_pointers_and_scalars() {
    let k = one(
        "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {\n\
           int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }",
    );
    assert_eq!(k.name, "saxpy");
    assert_eq!(k.pos.line, 1);
    assert_eq!(
        kinds(&k),
        [
            (Some("a"), val(Scalar::F32)),
            (Some("x"), cptr(Scalar::F32)),
            (Some("y"), mptr(Scalar::F32)),
            (Some("n"), val(Scalar::I32)),
        ]
    );
    assert_eq!(
        k.signature,
        "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n)"
    );
    assert_eq!(params(&k)[1].decl, "const float* x");
}

#[test]
fn const_placement_restrict_and_pointer_constness() {
    let k = one(
        "extern \"C\" __global__ void k(float const *a, const float* __restrict__ b, \
                 float* const c, const float* const d, volatile int* e, float *__restrict__ f) {}",
    );
    assert_eq!(
        kinds(&k),
        [
            (Some("a"), cptr(Scalar::F32)),
            (Some("b"), cptr(Scalar::F32)),
            (Some("c"), mptr(Scalar::F32)),
            (Some("d"), cptr(Scalar::F32)),
            (Some("e"), mptr(Scalar::I32)),
            (Some("f"), mptr(Scalar::F32)),
        ]
    );
}

#[test]
fn every_scalar_spelling() {
    let cases: &[(&str, Scalar)] = &[
        ("char", Scalar::CChar),
        ("signed char", Scalar::I8),
        ("unsigned char", Scalar::U8),
        ("short", Scalar::I16),
        ("short int", Scalar::I16),
        ("signed short int", Scalar::I16),
        ("unsigned short", Scalar::U16),
        ("int", Scalar::I32),
        ("signed", Scalar::I32),
        ("signed int", Scalar::I32),
        ("unsigned", Scalar::U32),
        ("unsigned int", Scalar::U32),
        ("int unsigned", Scalar::U32),
        ("long", Scalar::CLong),
        ("long int", Scalar::CLong),
        ("unsigned long", Scalar::CULong),
        ("long long", Scalar::I64),
        ("long long int", Scalar::I64),
        ("unsigned long long", Scalar::U64),
        ("unsigned long long int", Scalar::U64),
        ("float", Scalar::F32),
        ("double", Scalar::F64),
        ("bool", Scalar::Bool),
        ("int8_t", Scalar::I8),
        ("uint8_t", Scalar::U8),
        ("int16_t", Scalar::I16),
        ("uint16_t", Scalar::U16),
        ("int32_t", Scalar::I32),
        ("uint32_t", Scalar::U32),
        ("int64_t", Scalar::I64),
        ("uint64_t", Scalar::U64),
        ("size_t", Scalar::Usize),
        ("std::size_t", Scalar::Usize),
        ("::uint32_t", Scalar::U32),
        ("ptrdiff_t", Scalar::Isize),
        ("__half", Scalar::F16),
        ("half", Scalar::F16),
        ("__nv_bfloat16", Scalar::Bf16),
        ("cudaTextureObject_t", Scalar::U64),
    ];
    for (c, want) in cases {
        let k = one(&format!(
            "extern \"C\" __global__ void k({c} v, {c} const w) {{}}"
        ));
        assert_eq!(
            kinds(&k),
            [(Some("v"), val(*want)), (Some("w"), val(*want))],
            "{c}"
        );
        if *want != Scalar::Bool {
            let k = one(&format!(
                "extern \"C\" __global__ void k(const {c}* p, {c}* q);"
            ));
            assert_eq!(
                kinds(&k),
                [(Some("p"), cptr(*want)), (Some("q"), mptr(*want))],
                "{c}"
            );
        }
    }
}

#[test]
fn unnamed_parameters_and_empty_lists() {
    let k = one("extern \"C\" __global__ void k(float, const int*, unsigned long long);");
    assert_eq!(
        kinds(&k),
        [
            (None, val(Scalar::F32)),
            (None, cptr(Scalar::I32)),
            (None, val(Scalar::U64)),
        ]
    );
    assert!(params(&one("extern \"C\" __global__ void k() {}")).is_empty());
    assert!(params(&one("extern \"C\" __global__ void k(void) {}")).is_empty());
}

#[test]
fn structs_grid_constant_and_named_types() {
    let k = one("struct Affine { float scale, shift; unsigned n; };\n\
                 extern \"C\" __global__ void affine(const __grid_constant__ Affine p, float* y,\n\
                   struct Affine q, const Vec3* v, Vec3* w) {}");
    assert_eq!(
        kinds(&k),
        [
            (Some("p"), Value(Named("Affine".into()))),
            (Some("y"), mptr(Scalar::F32)),
            (Some("q"), Value(Named("Affine".into()))),
            (
                Some("v"),
                Pointer {
                    elem: Named("Vec3".into()),
                    constant: true
                }
            ),
            (
                Some("w"),
                Pointer {
                    elem: Named("Vec3".into()),
                    constant: false
                }
            ),
        ]
    );
    assert_eq!(k.pos.line, 2);
}

#[test]
fn arrays_decay_to_pointers() {
    let k = one("extern \"C\" __global__ void k(const float x[], int y[4]) {}");
    assert_eq!(
        kinds(&k),
        [
            (Some("x"), cptr(Scalar::F32)),
            (Some("y"), mptr(Scalar::I32))
        ]
    );
}

#[test]
fn comments_strings_and_preprocessor_lines_are_skipped() {
    let src = r#"
#include <cuda_fp16.h>
#define N 256 \
   /* continued */
#if 0
#endif
// extern "C" __global__ void commented(int x) {}
/* extern "C" __global__ void block(int x) {}
   still a comment */
const char* s = "extern \"C\" __global__ void in_string(int x) {}";
const char* r = R"x(extern "C" __global__ void in_raw(int) {} )" )x";
char c = '}';
int big = 1'000'000;
extern "C" __global__ void real(/* a comment */ int a, // the count
                                float* /* out */ out) {
    const char* t = "}{";
    if (a) { out[0] = '{'; }
}
"#;
    let k = one(src);
    assert_eq!(k.name, "real");
    assert_eq!(
        kinds(&k),
        [
            (Some("a"), val(Scalar::I32)),
            (Some("out"), mptr(Scalar::F32))
        ]
    );
    assert_eq!(k.pos.line, 14);
}

#[test]
fn extern_c_blocks_namespaces_and_attributes() {
    let src = r#"
namespace detail { __device__ float sq(float x) { return x * x; } }
extern "C" {
  __global__ void __launch_bounds__(256, 2) a(float* x) { x[0] = detail::sq(x[0]); }
  __global__ void b(int n);
  __global__ void b(int n) {}
  namespace inner {
    __global__ void c(double v) {}
  }
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) d(unsigned n) {}
extern "C" __global__ __launch_bounds__(128) void e(unsigned n) {}
[[nodiscard]] int helper();
extern "C++" { __global__ void f(int) {} }
"#;
    let src_kernels = kernels(src);
    let names: Vec<&str> = src_kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    let skipped = parse(src).unwrap().skipped;
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].name, "f");
}

#[test]
fn multi_line_signatures() {
    let k = one(
        "extern \"C\"\n__global__\nvoid\nscale(\n    const float* __restrict__ x,\n\
                 float* __restrict__ y,\n    float a,\n    size_t n\n)\n{\n}\n",
    );
    assert_eq!(k.name, "scale");
    assert_eq!(k.pos.line, 4);
    assert_eq!(params(&k).len(), 4);
    assert_eq!(params(&k)[3].kind, val(Scalar::Usize));
}

#[test]
fn templates_and_cxx_kernels_are_skipped_with_a_reason() {
    let src = "template <typename T> __global__ void add(T* x) {}\n\
               __global__ void mangled(float* x) {}\n\
               static __global__ void hidden(float* x) {}\n\
               extern \"C\" __global__ void named(float* x) {}\n\
               template __global__ void add<float>(float*);\n";
    let s = parse(src).unwrap();
    assert_eq!(s.kernels.len(), 1);
    let skipped: Vec<(&str, bool)> = s
        .skipped
        .iter()
        .map(|k| (k.name.as_str(), k.why.contains("template")))
        .collect();
    assert_eq!(
        skipped,
        [
            ("add", true),
            ("mangled", false),
            ("hidden", false),
            ("add", true)
        ]
    );
}

#[test]
fn structs_functions_and_initialisers_do_not_hide_kernels() {
    let src = r#"
struct P { int a; } p0 = { 1 };
__device__ int f(int x) { return x; }
__device__ int table[] = { 1, 2, 3 };
enum Mode { A, B };
typedef struct { float v[3]; } V3;
extern "C" __global__ void k(V3 v, enum Mode m) {}
"#;
    let k = one(src);
    assert_eq!(
        kinds(&k),
        [
            (Some("v"), Value(Named("V3".into()))),
            (Some("m"), Value(Named("Mode".into())))
        ]
    );
}

#[test]
fn a_kernel_declared_twice_the_same_way_is_one() {
    let k = kernels(
        "extern \"C\" __global__ void k(float* x);\nextern \"C\" __global__ void k(float* y) {}",
    );
    assert_eq!(k.len(), 1);
    let e = err(
        "#ifdef F64\nextern \"C\" __global__ void k(double* x) {}\n#else\n\
         extern \"C\" __global__ void k(float* x) {}\n#endif\n",
    );
    assert!(e.starts_with("line 4:"), "{e}");
    assert!(
        e.contains("declared again with other parameters (first at line 2)"),
        "{e}"
    );
}

#[test]
fn unsupported_parameters_name_kernel_parameter_and_type() {
    let cases: &[(&str, &str)] = &[
        ("float** p", "a pointer to a pointer"),
        ("float& r", "a reference"),
        ("const float& r", "a reference"),
        ("int n = 4", "default arguments"),
        ("...", "variadic"),
        ("void (*f)(int)", "function pointer"),
        ("Vec<float> v", "template type"),
        ("thrust::pair p", "qualified type name"),
        ("long double x", "`long double`"),
        ("unsigned float x", "`unsigned float` is not a C type"),
        ("unsigned size_t x", "mixes `size_t`"),
        ("float m[3][3]", "multi-dimensional"),
        ("bool* flags", "pointer to `bool`"),
        ("void v", "a `void` parameter"),
        ("float* a b", "cannot tell the type from the name"),
    ];
    for (decl, want) in cases {
        let e = err(&format!(
            "\n\nextern \"C\" __global__ void kern(int first, {decl}) {{}}"
        ));
        assert!(e.starts_with("line 3:"), "{decl}: {e}");
        assert!(
            e.contains(&format!("kernel `kern`, parameter 1 (`{decl}`)")),
            "{decl}: {e}"
        );
        assert!(e.contains(want), "{decl}: {e} (expected {want:?})");
    }
}

#[test]
fn lexical_errors_say_where() {
    assert_eq!(
        err("int a;\n/* never closed"),
        "line 2:1: a `/*` comment is never closed"
    );
    assert_eq!(
        err("const char* s = \"open;\nextern \"C\" __global__ void k() {}"),
        "line 1:17: a string literal is never closed"
    );
    assert_eq!(
        err("extern \"C\" {\n__global__ void k() {}\n"),
        "line 1:12: this `{` is never closed"
    );
    assert_eq!(err("int a; }"), "line 1:8: an unmatched `}`");
    assert!(err("extern \"C\" __global__ void k(int a {}").contains("never closed"));
}

#[test]
fn no_kernels_is_an_empty_list() {
    assert!(kernels("__device__ float f(float x) { return x; }").is_empty());
    assert!(kernels("").is_empty());
}

#[test]
fn a_bad_parameter_is_the_error_of_its_kernel_only() {
    let s = parse(
        "extern \"C\" __global__ void bad(float** p) {}\n\
         extern \"C\" __global__ void good(float* p) {}\n",
    )
    .unwrap();
    assert_eq!(s.kernels.len(), 2);
    let e = s.kernels[0].params.as_ref().unwrap_err();
    assert!(e.message.contains("kernel `bad`, parameter 0"), "{e}");
    assert_eq!(kinds(&s.kernels[1]), [(Some("p"), mptr(Scalar::F32))]);
}

#[test]
fn crlf_line_ends_a_byte_order_mark_and_non_ascii_text() {
    let src = "\u{feff}// é ü\r\n#define A \\\r\n  1\r\n/* ∑ */ extern \"C\" __global__ void k(float* y,\r\n  int n) {}\r\n";
    let k = one(src);
    assert_eq!(k.pos, Pos { line: 4, col: 36 });
    assert_eq!(
        kinds(&k),
        [
            (Some("y"), mptr(Scalar::F32)),
            (Some("n"), val(Scalar::I32))
        ]
    );
    assert_eq!(
        k.signature,
        "extern \"C\" __global__ void k(float* y, int n)"
    );
}

/// Issue 41, point 1: the directive reader reads a line as the preprocessor
/// does, splices first (a backslash-newline anywhere, inside `define` too),
/// then each comment a space: each of these `#define`s `real`.
#[test]
fn directives_are_read_after_splices_and_with_comments_as_spaces() {
    for src in [
        "typedef float real;\n#define/**/real double\nextern \"C\" __global__ void k(real* y) {}\n",
        "typedef float real;\n#/**/define real double\nextern \"C\" __global__ void k(real* y) {}\n",
        "typedef float real;\n#def\\\nine real double\nextern \"C\" __global__ void k(real* y) {}\n",
        "typedef float real;\n#define re\\\r\nal double\nextern \"C\" __global__ void k(real* y) {}\n",
        "typedef float real;\n  /* a\n comment */ # /* and */ define /* another */ real double\n\
         extern \"C\" __global__ void k(real* y) {}\n",
        "typedef float real;\n%:define real double\nextern \"C\" __global__ void k(real* y) {}\n",
    ] {
        let s = parse(src).unwrap();
        let names: Vec<&str> = s
            .types
            .directives
            .macros
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names, ["real"], "{src:?}");
        // Where its `#` is.
        let line = 1 + src[..src.find(['#', '%']).unwrap()].matches('\n').count();
        assert_eq!(
            s.types.directives.macros[0].1.line as usize, line,
            "{src:?}"
        );
        assert_eq!(s.kernels.len(), 1, "{src:?}");
    }
    // A `#` after a comment that ends a line of code is not a directive's.
    if let Ok(s) = parse("int x; /* a\n */ #define real double\n") {
        assert!(s.types.directives.macros.is_empty(), "{s:?}");
    }
    // A splice inside a name joins it, and the positions after it are the
    // text's.
    let k = one("extern \"C\" __global__ void k(flo\\\nat* y,\n  int n) {}\n");
    assert_eq!(
        kinds(&k),
        [
            (
                Some("y"),
                Pointer {
                    elem: S(Scalar::F32),
                    constant: false
                }
            ),
            (Some("n"), Value(S(Scalar::I32)))
        ]
    );
    let e = parse("/* x \\\n y */\n  )").unwrap_err();
    assert_eq!((e.pos.line, e.pos.col), (3, 3), "{e}");
}

/// The namespaces a kernel is read in qualify its name in the compiler's check.
#[test]
fn kernels_know_their_namespaces() {
    let s = parse(
        "extern \"C\" __global__ void top(int n) {}\n\
         namespace a { namespace { inline namespace b {\n\
         extern \"C\" __global__ void deep(int n) {}\n} } }\n\
         namespace c::d { extern \"C\" { __global__ void nested(int n) {} } }\n",
    )
    .unwrap();
    let scopes: Vec<(&str, &str)> = s
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.scope.as_str()))
        .collect();
    assert_eq!(
        scopes,
        [("top", "::"), ("deep", "::a::b::"), ("nested", "::c::d::")]
    );
}
