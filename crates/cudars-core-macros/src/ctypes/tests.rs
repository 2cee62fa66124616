// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::cparse::parse;

fn types(src: &str) -> Types {
    match parse(src) {
        Ok(s) => s.types,
        Err(e) => panic!("{e}\n{src}"),
    }
}

/// `name` resolved in `src`, as a value (or a typedef'd pointer).
fn res(src: &str, name: &str) -> Result<Resolved, String> {
    resolve(&types(src), &Base::Named(name.into()), false, 0)
}

fn ok(src: &str, name: &str) -> Resolved {
    match res(src, name) {
        Ok(r) => r,
        Err(e) => panic!("{name}: {e}\n{src}"),
    }
}

fn scalar(src: &str, name: &str) -> Scalar {
    let r = ok(src, name);
    assert!(r.pointer.is_none(), "{name}: {r:?}");
    match r.elem.fin {
        Final::Scalar(s) => s,
        other => panic!("{name}: {other:?}"),
    }
}

fn unresolved(src: &str, name: &str) -> String {
    match ok(src, name).elem.fin {
        Final::Unresolved(why) => why,
        other => panic!("{name}: expected no resolution, got {other:?}"),
    }
}

#[test]
fn typedef_chains_resolve_to_the_scalar_with_every_name_on_the_way() {
    let src = "typedef double real;\ntypedef real scalar_t;\ntypedef scalar_t value_t;\n";
    let r = ok(src, "value_t");
    assert_eq!(r.elem.fin, Final::Scalar(Scalar::F64));
    assert!(!r.elem.constant);
    let names: Vec<&str> = r.elem.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["value_t", "scalar_t", "real"]);
    assert_eq!(r.elem.links[2].what, "typedef at line 1");
    let t = types(src);
    assert_eq!(
        r.elem.describe(&t),
        "`value_t` (typedef at line 3), which is `scalar_t` (typedef at line 2), which is \
         `real` (typedef at line 1), which is `double`"
    );
    // The review's case.
    assert_eq!(scalar("typedef double real;", "real"), Scalar::F64);
    assert_eq!(scalar("using real = double;", "real"), Scalar::F64);
    assert_eq!(
        scalar("using real = double; typedef real r2;", "r2"),
        Scalar::F64
    );
}

#[test]
fn const_volatile_and_restrict_in_aliases() {
    let r = ok("typedef const volatile float cvf;", "cvf");
    assert_eq!(r.elem.fin, Final::Scalar(Scalar::F32));
    assert!(r.elem.constant);
    let r = ok("typedef double real; typedef const real creal;", "creal");
    assert!(r.elem.constant);
    let r = ok("typedef float real; typedef real const creal;", "creal");
    assert!(r.elem.constant);
    // A typedef'd pointer: mutable, const, restrict.
    let r = ok("typedef float * __restrict__ fp;", "fp");
    assert_eq!(r.pointer.as_ref().map(|p| p.constant), Some(false));
    assert_eq!(r.elem.fin, Final::Scalar(Scalar::F32));
    let r = ok("typedef const double* cdp;", "cdp");
    assert_eq!(r.pointer.as_ref().map(|p| p.constant), Some(true));
    let r = ok("typedef double real; using rp = const real*;", "rp");
    assert_eq!(r.pointer.as_ref().map(|p| p.constant), Some(true));
    assert_eq!(r.elem.fin, Final::Scalar(Scalar::F64));
    // `const fp` makes the pointer const, not its element.
    let t = types("typedef float* fp; typedef const fp cfp;");
    let r = resolve(&t, &Base::Named("cfp".into()), false, 0).unwrap();
    assert_eq!(r.pointer.as_ref().map(|p| p.constant), Some(false));
    let names: Vec<&str> = r
        .pointer
        .as_ref()
        .unwrap()
        .links
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(names, ["cfp", "fp"]);
    // A written `const` on the pointer's element.
    let t = types("typedef double real;");
    let r = resolve(&t, &Base::Named("real".into()), true, 1).unwrap();
    assert_eq!(r.pointer.map(|p| p.constant), Some(true));
}

#[test]
fn every_scalar_spelling_through_an_alias() {
    let cases: &[(&str, Scalar)] = &[
        ("unsigned long long", Scalar::U64),
        ("long long int", Scalar::I64),
        ("signed", Scalar::I32),
        ("unsigned", Scalar::U32),
        ("unsigned char", Scalar::U8),
        ("signed char", Scalar::I8),
        ("char", Scalar::CChar),
        ("short int", Scalar::I16),
        ("long", Scalar::CLong),
        ("unsigned long int", Scalar::CULong),
        ("int8_t", Scalar::I8),
        ("uint8_t", Scalar::U8),
        ("int32_t", Scalar::I32),
        ("uint64_t", Scalar::U64),
        ("size_t", Scalar::Usize),
        ("std::size_t", Scalar::Usize),
        ("::uint32_t", Scalar::U32),
        ("ptrdiff_t", Scalar::Isize),
        ("__half", Scalar::F16),
        ("__nv_bfloat16", Scalar::Bf16),
        ("float", Scalar::F32),
        ("bool", Scalar::Bool),
    ];
    for (c, want) in cases {
        assert_eq!(scalar(&format!("typedef {c} t;"), "t"), *want, "{c}");
        assert_eq!(scalar(&format!("using t = {c};"), "t"), *want, "{c}");
        assert_eq!(
            scalar(&format!("typedef const {c} volatile t;"), "t"),
            *want,
            "{c}"
        );
    }
}

#[test]
fn several_declarators_in_one_typedef() {
    let src = "typedef double real, *real_ptr;";
    assert_eq!(scalar(src, "real"), Scalar::F64);
    let r = ok(src, "real_ptr");
    assert_eq!(r.pointer.map(|p| p.constant), Some(false));
    assert_eq!(r.elem.fin, Final::Scalar(Scalar::F64));
}

#[test]
fn structs_unions_and_enums_of_the_source() {
    let src = r#"
struct Affine { float scale, shift; unsigned n; };
typedef struct Affine Affine_t;
typedef struct { double v[3]; } V3;
typedef struct Node { int a; } Node, *NodePtr;
union Bits { float f; unsigned u; };
enum class Mode : unsigned char { A, B };
enum class Plain { X };
enum Old { P, Q };
typedef enum : short { S } Small;
"#;
    let t = types(src);
    let rec = |n: &str| match ok(src, n).elem.fin {
        Final::Record(i) => t.records[i].name.clone(),
        other => panic!("{n}: {other:?}"),
    };
    assert_eq!(rec("Affine"), "Affine");
    assert_eq!(rec("Affine_t"), "Affine");
    assert_eq!(rec("V3"), "V3");
    assert_eq!(rec("Node"), "Node");
    assert_eq!(rec("Bits"), "Bits");
    let r = ok(src, "NodePtr");
    assert!(r.pointer.is_some());
    assert!(matches!(r.elem.fin, Final::Record(_)));
    let under = |n: &str| match ok(src, n).elem.fin {
        Final::Enum(i) => t.enums[i].underlying.clone(),
        other => panic!("{n}: {other:?}"),
    };
    assert_eq!(under("Mode"), Ok(Scalar::U8));
    assert_eq!(under("Plain"), Ok(Scalar::I32));
    assert_eq!(under("Small"), Ok(Scalar::I16));
    assert!(under("Old").unwrap_err().contains("unscoped enum"));
    // The fields are read for the layout.
    let affine = t.records.iter().find(|r| r.name == "Affine").unwrap();
    let body = affine.body.clone().unwrap().unwrap();
    let fields: Vec<&str> = body.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(fields, ["scale", "shift", "n"]);
    let v3 = t.records.iter().find(|r| r.name == "V3").unwrap();
    let body = v3.body.clone().unwrap().unwrap();
    assert_eq!(body.fields[0].ty.dims, [Some(3)]);
}

#[test]
fn layouts_the_macro_does_not_read_say_why() {
    let why = |src: &str| {
        let t = types(src);
        match &t.records[0].body {
            Some(Err(why)) => why.clone(),
            other => panic!("expected an unread layout, got {other:?}\n{src}"),
        }
    };
    assert!(why("struct P { unsigned a : 3; unsigned b : 5; };").contains("bit-field"));
    assert!(why("struct P : Base { int a; };").contains("derives"));
    assert!(why("struct P { virtual void f(); int a; };").contains("virtual"));
    assert!(why("struct P { struct In { int x; } in; };").contains("nested type"));
    assert!(why("struct P { alignas(16) float a; };").contains("alignment"));
    assert!(why("struct P { };").contains("no fields"));
    assert!(why("struct __attribute__((packed)) P { char c; int a; };").contains("__attribute__"));
    // What does not change the layout is read past.
    let t = types(
        "struct __align__(16) P {\n public:\n  float a = 1.0f;\n  static const int k = 4;\n  \
         __device__ float get() const { return a; }\n  P() {}\n  int b{2};\n  float m[2][3];\n};",
    );
    let body = t.records[0].body.clone().unwrap().unwrap();
    assert_eq!(body.align, Some(16));
    let fields: Vec<(&str, &[Option<u64>])> = body
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.ty.dims.as_slice()))
        .collect();
    assert_eq!(
        fields,
        [
            ("a", &[][..]),
            ("b", &[][..]),
            ("m", &[Some(2), Some(3)][..])
        ]
    );
    // Declared, not defined.
    assert_eq!(types("struct Fwd;").records[0].body, None);
}

#[test]
fn what_cannot_be_resolved_says_why() {
    // Unknown, and from a header it may come from.
    let why = unresolved("", "real");
    assert!(
        why.contains("`real` is not declared in the source"),
        "{why}"
    );
    let why = unresolved("#include \"types.h\"\n#include <vec.h>\n", "Vec3");
    assert!(
        why.contains("it may come from `#include \"types.h\"`, `#include <vec.h>`"),
        "{why}"
    );
    // A macro: the preprocessor is not run.
    let why = unresolved("#define real double\n", "real");
    assert!(
        why.contains("`real` is a preprocessor macro (`#define real` at line 1)"),
        "{why}"
    );
    let why = unresolved("#define REAL double\ntypedef REAL real;\n", "real");
    assert!(why.contains("`REAL` is a preprocessor macro"), "{why}");
    // A macro that redefines a keyword a typedef is written with.
    let e = res("#define float double\ntypedef float real;\n", "real").unwrap_err();
    assert!(
        e.contains("written with `float`, which is a preprocessor macro"),
        "{e}"
    );
    // Both arms of an `#if`.
    let why = unresolved(
        "#ifdef F64\ntypedef double real;\n#else\ntypedef float real;\n#endif\n",
        "real",
    );
    assert!(
        why.contains("`real` is declared 2 times differently (lines 2, 4)"),
        "{why}"
    );
    // Declared twice the same way is one.
    assert_eq!(
        scalar("typedef double real;\ntypedef double real;", "real"),
        Scalar::F64
    );
    let why = unresolved(
        "#if A\nstruct P { float a; };\n#else\nstruct P { double a; };\n#endif\n",
        "P",
    );
    assert!(why.contains("defined 2 times differently"), "{why}");
    // A cycle.
    let why = unresolved("typedef B A; typedef A B;", "A");
    assert!(why.contains("refers to itself"), "{why}");
}

#[test]
fn aliases_with_no_rust_type_are_errors() {
    let e = res("typedef void (*fn_t)(int);", "fn_t").unwrap_err();
    assert!(
        e.contains("`fn_t` (typedef at line 1) is a function"),
        "{e}"
    );
    let e = res("typedef float vec4[4];", "vec4").unwrap_err();
    assert!(e.contains("an array type"), "{e}");
    let t = types("typedef float* fp;");
    let e = resolve(&t, &Base::Named("fp".into()), false, 1).unwrap_err();
    assert!(
        e.contains("a pointer to a pointer (`fp` is a pointer type: typedef at line 1)"),
        "{e}"
    );
    let e = res("typedef float** fpp;", "fpp").unwrap_err();
    assert!(e.contains("a pointer to a pointer"), "{e}");
}

#[test]
fn void_is_void() {
    let r = ok("typedef void* handle;", "handle");
    assert!(r.pointer.is_some());
    assert_eq!(r.elem.fin, Final::Void);
    assert_eq!(
        r.elem.describe(&types("")),
        "`void`",
        "the chain of a bare void"
    );
}
