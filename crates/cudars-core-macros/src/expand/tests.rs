// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn run(input: &str) -> Result<String, String> {
    let input: Input = syn::parse_str(input).map_err(|e| format!("parse: {e}"))?;
    expand(&input)
        .map(|t| t.to_string())
        .map_err(|e| e.to_string())
}

fn fails(input: &str, want: &str) {
    match run(input) {
        Ok(code) => panic!("expected an error containing {want:?}, got\n{code}"),
        Err(e) => assert!(e.contains(want), "{e}\n(expected {want:?})"),
    }
}

#[test]
fn generates_typed_methods_with_views_scalars_and_mapped_structs() {
    let code = run(r##"
            pub struct K = source r#"
                struct P { float a; };
                extern "C" __global__ void k(const float* x, float* y, P p, unsigned n, void* raw) {}
            "#;
            type P = crate::P;
            unsafe type void = u8;
        "##)
    .unwrap();
    let code = code.replace(' ', "");
    assert!(code.contains("pubstructK{k:::cudars_core::TypedKernel<(::cudars_core::ConstPtr<f32>,::cudars_core::MutPtr<f32>,::cudars_core::Val<crate::P>,u32,::cudars_core::MutPtr<u8>,)>,}"), "{code}");
    assert!(code.contains("x:::cudars_core::DeviceView<'_,f32>,y:::cudars_core::DeviceViewMut<'_,f32>,p:&crate::P,n:u32,raw:::cudars_core::DeviceViewMut<'_,u8>"), "{code}");
    assert!(code.contains("(x,y,*p,n,raw,)"), "{code}");
    assert!(code.contains("with_param_names(code.get_kernel(\"k\")?,&[\"constfloat*x\",\"float*y\",\"Pp\",\"unsignedn\",\"void*raw\"])"), "{code}");
    assert!(code.contains("pubfnk_kernel(&self)"), "{code}");
}

/// Issue 28, point 7: textures, surfaces and tensor maps are typed
/// parameters taken by reference; a mapped struct that holds pointers is
/// `Lent` (its views borrowed for the launch), one without stays `Val`.
#[test]
fn handles_and_structs_of_pointers_take_typed_arguments() {
    let code = run(r##"
            pub struct K = source r#"
                struct Span { float* data; unsigned n; };
                struct Plain { float a; };
                extern "C" __global__ void k(cudaTextureObject_t t, cudaSurfaceObject_t s,
                                             const __grid_constant__ CUtensorMap m, Span sp, Plain p) {}
            "#;
            type Span = crate::Span;
            type Plain = crate::Plain;
        "##)
    .unwrap()
    .replace(' ', "");
    assert!(code.contains("TypedKernel<(::cudars_core::TextureObject,::cudars_core::SurfaceObject,::cudars_core::TensorMapDescriptor<'static>,::cudars_core::Lent<crate::Span>,::cudars_core::Val<crate::Plain>,)>"), "{code}");
    assert!(code.contains("t:&::cudars_core::TextureObject,s:&::cudars_core::SurfaceObject,m:&::cudars_core::TensorMapDescriptor<'_>,sp:::cudars_core::LentVal<'_,crate::Span>,p:&crate::Plain"), "{code}");
    assert!(code.contains("(t,s,m,sp,*p,)"), "{code}");
}

#[test]
fn keywords_and_the_launch_names_are_renamed() {
    let code = run(r##"struct K = source r#"extern "C" __global__ void type(int* in, int stream, int config, int self, float) {}"#;"##).unwrap();
    let code = code.replace(' ', "");
    assert!(code.contains("pubunsafefnr#type(&self,stream:&::cudars_core::Stream,config:&::cudars_core::LaunchConfig,r#in:::cudars_core::DeviceViewMut<'_,i32>,stream_:i32,config_:i32,self_:i32,arg4:f32)"), "{code}");
}

#[test]
fn errors_name_the_file_line_kernel_parameter_and_type() {
    fails(
        r##"struct K = source r#"

                extern "C" __global__ void k(float* y, Params p) {}"#;"##,
        "the inline source line 3: kernel `k`, parameter 1 (`Params p`): `Params` is not declared in the source as a `typedef`, `using`, `struct`, `class`, `union` or `enum`; the macro proves every element and value type from the source and cannot resolve this one",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void k(const void* p) {}"#;"##,
        "parameter 0 (`const void* p`): `void` has no element type the macro can check: declare the pointer with its real element type, or take the element type on yourself with `unsafe type void = u8;`",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void k(float** p) {}"#;"##,
        "the inline source line 1:30: kernel `k`, parameter 0 (`float** p`): a pointer to a pointer",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void k(float* p) {}"#; type Unused = u32;"##,
        "no kernel parameter of the inline source has the type `Unused`",
    );
    fails(
        r##"struct K = source r#"__global__ void k(float* p) {} template <int N> __global__ void t() {}"#;"##,
        "the inline source has no `extern \"C\" __global__` function (the preprocessor is not run: write `extern \"C\"` and `__global__` out, not through macros); `k` (line 1) is not `extern \"C\"` (its name is mangled); `t` (line 1) is a template",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void load(float* p) {}"#;"##,
        "kernel `load`: its name is one of the generated type's own functions",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void f() {} extern "C" __global__ void f_kernel() {}"#;"##,
        "kernel `f_kernel`: its name is that of the accessor of kernel `f`",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void self() {}"#;"##,
        "kernel `self`: its name cannot be a Rust function's",
    );
    fails(r#"struct K = "no/such/file.cu";"#, "cannot read");
    fails(
        r#"struct K = "a.cu"; type T = u8; type T = u16;"#,
        "parse: `T` is mapped twice",
    );
    fails(r#"struct K = 5;"#, "expected the source's path");
    let many = (0..17)
        .map(|i| format!("int p{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    fails(
        &format!("struct K = source r#\"extern \"C\" __global__ void k({many}) {{}}\"#;"),
        "kernel `k`: 17 parameters; a typed kernel takes up to 16",
    );
    let sixteen = (0..16)
        .map(|i| format!("int p{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(
        run(&format!(
            "struct K = source r#\"extern \"C\" __global__ void k({sixteen}) {{}}\"#;"
        ))
        .is_ok()
    );
}

#[test]
fn only_selects_kernels_and_names_what_cannot_be_selected() {
    let src = r##"struct K = source r#"
            extern "C" __global__ void bad(float** p) {}
            extern "C" __global__ void good(float* p) {}
            extern "C" __global__ void type(int n) {}
            template <typename T> __global__ void tmpl(T* p) {}
            __global__ void mangled(float* p) {}
        "#;"##;
    let code = run(&format!("{src} only good, r#type;")).unwrap();
    assert!(code.contains("pub unsafe fn good"), "{code}");
    assert!(code.contains("pub unsafe fn r#type"), "{code}");
    assert!(!code.contains("fn bad"), "{code}");
    assert!(code.contains("[`type`](Self::r#type)"), "{code}");
    assert!(
        code.contains("KERNELS : & 'static [& 'static str] = & [\"good\" , \"type\"]"),
        "{code}"
    );
    fails(src, "line 2:44: kernel `bad`, parameter 0 (`float** p`)");
    fails(
        &format!("{src} only tmpl;"),
        "`tmpl` (the inline source line 5) is a template (templates have no C name",
    );
    fails(
        &format!("{src} only mangled;"),
        "`mangled` (the inline source line 6) is not `extern \"C\"`",
    );
    fails(
        &format!("{src} only nothere;"),
        "the inline source has no `extern \"C\" __global__` function `nothere`; it has: bad, good, type",
    );
    fails(
        &format!("{src} only good, good;"),
        "parse: `good` is listed twice",
    );
    fails(
        &format!("{src} only good; only bad;"),
        "parse: `only` is given twice",
    );
}

/// The review's case: `typedef double real;` with a mapping to `f32`
/// compiled, and the launch wrote twice the view's bytes.
#[test]
fn a_typedef_maps_to_its_c_type_and_a_mapping_that_says_otherwise_is_refused() {
    let src = r##"struct K = source r#"typedef double real;
            extern "C" __global__ void k(real* out, const real* in, real v, int n) {}"#;"##;
    let code = run(src).unwrap().replace(' ', "");
    assert!(
        code.contains(
            "TypedKernel<(::cudars_core::MutPtr<f64>,::cudars_core::ConstPtr<f64>,f64,i32,)>"
        ),
        "{code}"
    );
    assert!(
        code.contains("out:::cudars_core::DeviceViewMut<'_,f64>,r#in:::cudars_core::DeviceView<'_,f64>,v:f64,n:i32"),
        "{code}"
    );
    fails(
        &format!("{src} type real = f32;"),
        "the inline source line 2: kernel `k`, parameter 0 (`real* out`): `type real = f32;` \
         contradicts the source: `real` (typedef at line 1), which is `double`, whose Rust \
         type is `f64`",
    );
    fails(
        &format!("{src} type real = ::core::primitive::f32;"),
        "`type real = ::core::primitive::f32;` contradicts the source",
    );
    // The same type, written out: accepted, nothing to check at run time.
    let code = run(&format!("{src} type real = f64;")).unwrap();
    assert!(!code.contains("SameType"), "{code}");
    // A path the macro cannot compare: a compile-time identity check.
    let code = run(&format!("{src} type real = crate::Real;")).unwrap();
    let flat = code.replace(' ', "");
    assert!(flat.contains("same::<crate::Real,f64>()"), "{code}");
    assert!(
        code.contains("contradicts the source: `real` (typedef at line 1), which is `double`"),
        "{code}"
    );
    // `unsafe` for what the macro checks is refused.
    fails(
        &format!("{src} unsafe type real = f64;"),
        "which the macro checks the Rust type against: write `type real = f64;` (without `unsafe`)",
    );
}

#[test]
fn chains_usings_stdint_and_pointer_typedefs() {
    let code = run(r##"struct K = source r#"
            typedef double real; typedef real scalar_t; using count_t = unsigned long long;
            typedef const float* cfp; typedef int32_t i32_t;
            extern "C" __global__ void k(scalar_t* y, count_t n, cfp x, i32_t m, const scalar_t* __restrict__ z) {}"#;"##)
    .unwrap()
    .replace(' ', "");
    assert!(
        code.contains("y:::cudars_core::DeviceViewMut<'_,f64>,n:u64,x:::cudars_core::DeviceView<'_,f32>,m:i32,z:::cudars_core::DeviceView<'_,f64>"),
        "{code}"
    );
    fails(
        r##"struct K = source r#"typedef float* fp; extern "C" __global__ void k(fp x) {}"#; type fp = u8;"##,
        "`fp` is a pointer type (typedef at line 1); the macro gives it a view of its element type",
    );
    fails(
        r##"struct K = source r#"typedef float* fp; extern "C" __global__ void k(fp* x) {}"#;"##,
        "parameter 0 (`fp* x`): a pointer to a pointer (`fp` is a pointer type: typedef at line 1)",
    );
    fails(
        r##"struct K = source r#"typedef bool flag; extern "C" __global__ void k(flag* x) {}"#;"##,
        "a pointer to `bool` (`flag` (typedef at line 1), which is `bool`)",
    );
    fails(
        r##"struct K = source r#"typedef double real; typedef real r2;
                extern "C" __global__ void k(r2* x) {}"#; type r2 = f64; type real = f64;"##,
        "both `r2` and `real` are mapped, and the source makes them one type",
    );
}

#[test]
fn what_the_macro_cannot_resolve_is_refused_with_what_to_do() {
    fails(
        r##"struct K = source r#"#define real double
                extern "C" __global__ void k(real* x, int n) {}"#;"##,
        "parameter 0 (`real* x`): `real` is a preprocessor macro (`#define real` at line 1), \
         and the macro reads the source without running the preprocessor; the macro proves \
         every element and value type from the source and cannot resolve this one: write the \
         type out (`double* x`), or declare it in the source (`typedef double real;`",
    );
    fails(
        r##"struct K = source r#"#define real double
                extern "C" __global__ void k(real* x, int n) {}"#; type real = f64;"##,
        "so `type real = f64;` cannot be checked; declare the type in the source so that the \
         macro can read it, or write `unsafe type real = f64;`",
    );
    fails(
        r##"struct K = source r#"#define float double
                extern "C" __global__ void k(float* x) {}"#;"##,
        "parameter 0 (`float* x`): `float` is a preprocessor macro (`#define float` at line 1)",
    );
    // Qualifiers that do not change a type may be defined away.
    assert!(
        run(r##"struct K = source r#"#define __restrict__
                #define __grid_constant__
                extern "C" __global__ void k(float* __restrict__ x) {}"#;"##)
        .is_ok()
    );
    fails(
        r##"struct K = source r#"#define const
                extern "C" __global__ void k(const float* x) {}"#;"##,
        "`const` is a preprocessor macro",
    );
    fails(
        r##"struct K = source r#"#include "vec.h"
                extern "C" __global__ void k(const Vec3* v) {}"#;"##,
        "`Vec3` is not declared in the source as a `typedef`, `using`, `struct`, `class`, \
         `union` or `enum` (it may come from `#include \"vec.h\"`, which the macro does not \
         read)",
    );
    fails(
        r##"struct K = source r#"#ifdef F64
                typedef double real;
                #else
                typedef float real;
                #endif
                extern "C" __global__ void k(real* x) {}"#;"##,
        "`real` is declared 2 times differently (lines 2, 4)",
    );
    fails(
        r##"struct K = source r#"extern "C" __global__ void k(void* p) {}"#; type void = u8;"##,
        "has no layout to check `u8` against: declare the pointer with its real element type, \
         or write `unsafe type void = u8;`",
    );
    // The escape hatch: accepted, and the launch function's `# Safety` says
    // what the caller takes on.
    let code = run(r##"struct K = source r#"#include "vec.h"
                extern "C" __global__ void k(const Vec3* v, void* raw, float* y) {}"#;
                unsafe type Vec3 = [f32; 3]; unsafe type void = u8;"##)
    .unwrap();
    assert!(
        code.contains("`v` (`const Vec3* v`): `Vec3` is not declared in the source"),
        "{code}"
    );
    assert!(
        code.contains("it is the caller's to prove that `[f32; 3]` is the type the compiled source gives `Vec3`"),
        "{code}"
    );
    assert!(
        code.contains("`raw` (`void* raw`) points to `void`, given the element type `u8`"),
        "{code}"
    );
    let flat = code.replace(' ', "");
    assert!(
        flat.contains("v:::cudars_core::DeviceView<'_,[f32;3]>"),
        "{code}"
    );
}

#[test]
fn struct_and_enum_mappings_are_checked_against_the_source_layout() {
    let src = r##"struct K = source r#"
            struct __align__(8) P { float a; double b[2]; unsigned char c; long d; };
            struct Q { P inner; int* ptr; };
            enum class Mode : unsigned short { A, B };
            extern "C" __global__ void k(P p, const Q* q, Mode m) {}"#;"##;
    let code = run(&format!(
        "{src} type P = crate::P; type Q = crate::Q; type Mode = u16;"
    ))
    .unwrap();
    let flat = code.replace(' ', "");
    // The mirror of P (with its alignment) and the check of each mapping.
    assert!(
        flat.contains("#[repr(C,align(8))]#[derive(Clone,Copy)]#[allow(dead_code,non_camel_case_types)]struct__CudarsLayout0{f0:f32,f1:[f64;2],f2:u8,f3:::core::ffi::c_long,}"),
        "{code}"
    );
    assert!(
        flat.contains("struct__CudarsLayout1{f0:__CudarsLayout0,f1:*constu8,}"),
        "{code}"
    );
    assert!(
        flat.contains("::core::mem::size_of::<crate::P>()==::core::mem::size_of::<__CudarsLayout0>()&&::core::mem::align_of::<crate::P>()==::core::mem::align_of::<__CudarsLayout0>()"),
        "{code}"
    );
    assert!(
        flat.contains("::core::mem::size_of::<u16>()==::core::mem::size_of::<u16>()"),
        "{code}"
    );
    assert!(
        code.contains("`type P = crate::P;`: the Rust type's size or alignment differs from that of `P` (struct at line 2)"),
        "{code}"
    );
    assert!(
        code.contains("that its fields are the C fields, in order and of the same types, is the caller's to prove"),
        "{code}"
    );
    fails(
        &format!("{src} unsafe type P = crate::P; type Q = crate::Q; type Mode = u16;"),
        "(without `unsafe`)",
    );
    fails(
        &format!("{src} type Q = crate::Q; type Mode = u16;"),
        "parameter 0 (`P p`): the C type `P` (struct at line 2) has no Rust type: name a `Pod` type of the same layout (`type P = MyType;`)",
    );
    // Layouts the macro does not read need `unsafe type`.
    let bits = r##"struct K = source r#"
            struct B { unsigned a : 3; };
            enum Old { X };
            extern "C" __global__ void k(B b, Old o) {}"#;"##;
    fails(
        &format!("{bits} type B = u32; unsafe type Old = i32;"),
        "`B` (struct at line 2): the macro does not read its layout (it has a bit-field (`unsigned a:3`)), so `type B = u32;` cannot be checked",
    );
    fails(
        &format!("{bits} unsafe type B = u32; type Old = i32;"),
        "an unscoped enum without a fixed underlying type",
    );
    let code = run(&format!(
        "{bits} unsafe type B = u32; unsafe type Old = i32;"
    ))
    .unwrap();
    assert!(
        code.contains("`b` (`B b`): `B` (struct at line 2) has a layout the macro does not read (it has a bit-field"),
        "{code}"
    );
    assert!(!code.contains("size_of"), "{code}");
}

#[test]
fn the_safety_section_says_what_is_left_to_the_caller() {
    let code = run(r##"struct K = source r#"extern "C" __global__ void k(float* y, int n) {}"#;"##)
        .unwrap();
    for want in [
        "the macro proves its signature",
        "every pointer's element type and",
        "a type the macro cannot",
        "proven by the compiler when",
        "Left to the caller",
        "only within their views: the counts, indices and strides among",
        "it writes only through its non-`const` pointers",
        "for its parameters' sizes only",
    ] {
        assert!(code.contains(want), "{want:?} in\n{code}");
    }
}

#[test]
fn a_file_is_read_relative_to_the_manifest_and_embedded() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let code = run(r#"struct K = "tests/sample.cu";"#).unwrap();
    let path = std::path::Path::new(&dir).join("tests/sample.cu");
    assert!(
        code.contains(&format!("include_str ! ({:?})", path.to_str().unwrap())),
        "{code}"
    );
    assert!(code.contains("\"sample.cu\""), "{code}");
}

/// Issue 28, point 13: a source given as a constant expression takes its
/// signatures from `declare`, embeds the expression, and checks at compile
/// time that the text declares each of them.
#[test]
fn a_source_expression_takes_its_signatures_from_declare() {
    let code = run(r##"
            pub struct K = source crate::KERNELS;
            declare r#"
                // The kernels of KERNELS.
                struct P { float a; unsigned n; };
                extern "C" __global__ void scale(const P* p, float* y,
                                                 unsigned long long n);
            "#;
            type P = crate::P;
        "##)
    .unwrap()
    .replace(' ', "");
    assert!(
        code.contains("pubconstSOURCE:&'staticstr=crate::KERNELS;"),
        "{code}"
    );
    assert!(
        code.contains(
            "p:::cudars_core::DeviceView<'_,crate::P>,y:::cudars_core::DeviceViewMut<'_,f32>,n:u64"
        ),
        "{code}"
    );
    assert!(
        code.contains("has(K::SOURCE.as_bytes(),\"structP{floata;unsignedn;}\".as_bytes())"),
        "{code}"
    );
    assert!(code.contains("has(K::SOURCE.as_bytes(),\"__global__voidscale(constP*p,float*y,unsignedlonglongn)\".as_bytes())"), "{code}");
}

#[test]
fn a_source_expression_without_declare_says_what_to_write() {
    fails(
        "struct K = source KERNELS;",
        "cannot see the value of `KERNELS`: repeat the declarations the kernels need with `declare",
    );
    fails(
        r#"struct K = include_str!("ops.cu");"#,
        "`kernels!` reads the file itself: write its path relative to the crate's manifest directory",
    );
    fails(
        "struct K = KERNELS;",
        "or `source EXPR` (a constant `&str` expression, with `declare \"…\";`)",
    );
    fails(
        r#"struct K = "ops.cu"; declare "extern \"C\" __global__ void k();";"#,
        "`declare` is for a source the macro cannot read",
    );
}

#[test]
fn declarations_are_split_at_the_top_level_without_comments_or_directives() {
    let d = declared::declarations(
        "#include <x.h>\n#define A \\\n  1\n/* a\n comment; */ typedef double real; // real; \n\
         struct S { int a; float b; };\nextern \"C\" __global__ void k(real* y, S s)\n;",
    );
    let needles: Vec<&str> = d.iter().map(|d| d.needle.as_str()).collect();
    assert_eq!(
        needles,
        [
            "typedefdoublereal",
            "structS{inta;floatb;}",
            "__global__voidk(real*y,Ss)"
        ]
    );
    assert_eq!(d[2].shown, "__global__ void k(real* y, S s)");
}

/// Issue 41, point 1: a `#define` the preprocessor sees through a comment or a
/// line splice is one to the macro too: the `f32` view it would have given
/// `real*` (which the compiler makes `double*`) is refused at compile time.
#[test]
fn a_define_behind_a_comment_or_a_splice_is_refused() {
    for src in [
        "typedef float real;\n#define/**/real double\nextern \"C\" __global__ void k(real* y) {}",
        "typedef float real;\n#/**/define real double\nextern \"C\" __global__ void k(real* y) {}",
        "typedef float real;\n#def\\\nine real double\nextern \"C\" __global__ void k(real* y) {}",
    ] {
        let input = format!("struct K = source {src:?};");
        fails(
            &input,
            "`real` is a preprocessor macro (`#define real` at line 2)",
        );
    }
}

/// The table the compiler's check is generated from: each parameter as the
/// Rust side takes it, the C spelling of each scalar's Rust type, a mapped
/// struct's Rust size and alignment, `unsafe type`s as any type, the kernel's
/// namespace.
#[test]
fn the_signatures_table_says_what_the_launch_functions_take() {
    let code = run(r##"
            pub struct K = source r#"
                struct P { float a; };
                namespace ns {
                extern "C" __global__ void k(const float* x, long* y, P p, unsigned n, void* raw,
                                             size_t s, const P* ps, cudaTextureObject_t t) {}
                }
            "#;
            type P = crate::P;
            unsafe type void = u8;
        "##)
    .unwrap()
    .replace(' ', "");
    let want = "pubconstSIGNATURES:&'static[::cudars_core::kernel_check::Signature]=&[\
        ::cudars_core::kernel_check::Signature{name:\"k\",scope:\"::ns::\",params:&[\
        ::cudars_core::kernel_check::Param::Pointer{constant:true,elem:::cudars_core::kernel_check::CType::Named(\"float\"),},\
        ::cudars_core::kernel_check::Param::Pointer{constant:false,elem:::cudars_core::kernel_check::CType::Named(\"long\"),},\
        ::cudars_core::kernel_check::Param::Value(::cudars_core::kernel_check::CType::Layout{name:\"P\",size:::core::mem::size_of::<crate::P>(),align:::core::mem::align_of::<crate::P>(),}),\
        ::cudars_core::kernel_check::Param::Value(::cudars_core::kernel_check::CType::Named(\"unsignedint\")),\
        ::cudars_core::kernel_check::Param::Pointer{constant:false,elem:::cudars_core::kernel_check::CType::Named(\"void\"),},\
        ::cudars_core::kernel_check::Param::Value(::cudars_core::kernel_check::CType::Named(\"decltype(sizeof(0))\")),\
        ::cudars_core::kernel_check::Param::Pointer{constant:true,elem:::cudars_core::kernel_check::CType::Layout{name:\"P\",size:::core::mem::size_of::<crate::P>(),align:::core::mem::align_of::<crate::P>(),},},\
        ::cudars_core::kernel_check::Param::Value(::cudars_core::kernel_check::CType::Named(\"unsignedlonglong\"))\
        ],}];";
    assert!(code.contains(want), "{code}");
    assert!(
        code.contains("::cudars_core::kernel_check::compile(Self::SOURCE,Self::SIGNATURES,options,target,cache)"),
        "{code}"
    );
}

/// Each scalar's C spelling for the check is the C type of its Rust type, one
/// spelling a Rust type (the inverse of `scalar_type`).
#[test]
fn each_rust_scalar_has_one_c_spelling() {
    use crate::cparse::Scalar::*;
    let all = [
        CChar, I8, U8, I16, U16, I32, U32, CLong, CULong, I64, U64, Usize, Isize, F32, F64, F16,
        Bf16, Bool,
    ];
    let mut seen = std::collections::HashMap::new();
    for s in all {
        let rust = params::scalar_type_text(s);
        let c = params::c_spelling(s);
        if let Some(prev) = seen.insert(rust.clone(), c) {
            panic!("{rust} is both {prev} and {c}");
        }
        // The spelling is the C type's where C++ has one without a header.
        if !matches!(s, Usize | Isize) {
            assert_eq!(c, s.c_name(), "{rust}");
        }
    }
    assert_eq!(seen.len(), all.len());
}

/// Issue 43 point 11: `crate = path;` names cudars-core in every path the
/// expansion writes (under a renamed dependency, or `::cudars::core` through
/// the umbrella); without it the paths are `::cudars_core`.
#[test]
fn crate_option_names_the_crate_in_every_generated_path() {
    let src = r##"
            pub struct K = source r#"
                extern "C" __global__ void k(const float* x, float* y, __half h, unsigned n) {}
            "#;
        "##;
    let plain = run(src).unwrap().replace(' ', "");
    let n = plain.matches("::cudars_core::").count();
    assert!(n > 10, "{plain}");
    let renamed = run(&format!("crate = ::cudars::core;{src}"))
        .unwrap()
        .replace(' ', "");
    // (The documentation's text may still say `cudars_core::…`.)
    assert!(!renamed.contains("::cudars_core::"), "{renamed}");
    assert_eq!(renamed.matches("::cudars::core::").count(), n, "{renamed}");
    assert!(renamed.contains("k:::cudars::core::TypedKernel<(::cudars::core::ConstPtr<f32>,::cudars::core::MutPtr<f32>,::cudars::core::half::f16,u32,)>"), "{renamed}");
    // A relative path (a renamed dependency, `use`d) is taken as written.
    let local = run(&format!("crate = cuda_core;{src}"))
        .unwrap()
        .replace(' ', "");
    assert!(
        local.contains("cuda_core::TypedKernel") && !local.contains("::cudars_core"),
        "{local}"
    );
    fails(&format!("crate = ;{src}"), "needs the path to cudars-core");
    fails(&format!("crate = ::cudars::core {src}"), "expected");
}
