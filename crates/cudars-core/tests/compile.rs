//! Compilation and linking without a GPU: C++ through NVRTC, NVVM IR through NVVM,
//! PTX and relocatable code through nvJitLink, option checking and error logs.
//! Each test skips (saying so) without the library it needs, and fails without it
//! when `CUDA_RS_REQUIRE_WHEELS=1`. One test, `fatbin_runs_the_sm_90_cubin`, loads
//! what the others build on a GPU (skipped without one).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::cudars_pathfinder::{self, ArtifactKind, PathfinderError};
use cudars_core::{
    CodeType, CompileTarget, Device, Error, FatbinBuilder, Linker, LinkerBackend, LinkerOptions,
    ObjectCode, Program, ProgramBackend, ProgramOptions, SourceCode, ToolError, nvrtc,
    toolkit_include_dirs,
};
use cudars_tests::require_libs;

const ELF: &[u8] = b"\x7fELF";

const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {\n\
  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

const CALLER: &str = "extern __device__ float scale(float x);\n\
extern \"C\" __global__ void apply(float* p) { p[threadIdx.x] = scale(p[threadIdx.x]); }\n";
const CALLEE: &str = "__device__ float scale(float x) { return 3.0f * x; }\n";

/// The NVVM IR sample of `crates/cudars-bindings/tests/cpu.rs`.
const NVVM_IR: &str = r#"target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @ave(i32 %a, i32 %b, i32* %c) {
entry:
  %add = add nsw i32 %a, %b
  %div = sdiv i32 %add, 2
  store i32 %div, i32* %c, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32, i32, i32*)* @ave, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
"#;

fn sm90() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

fn rdc(lto: bool) -> ProgramOptions {
    ProgramOptions {
        relocatable_device_code: true,
        link_time_optimization: lto,
        ..sm90()
    }
}

fn cxx(src: &str, options: ProgramOptions, target: CompileTarget) -> ObjectCode {
    Program::new(SourceCode::Cxx(src), options)
        .unwrap()
        .compile(target, &[])
        .unwrap()
}

fn is_invalid(r: Result<impl std::fmt::Debug, Error>, needle: &str) {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => {
            assert!(e.to_string().contains(needle), "{e} (expected {needle:?})")
        }
        other => panic!("expected InvalidArgument mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn cxx_compiles_to_ptx_cubin_and_ltoir() {
    require_libs!("nvrtc");
    let major = nvrtc::version().unwrap().major;
    assert!(major >= 12);
    let archs = nvrtc::supported_archs().unwrap();
    assert!(archs.contains(&90), "{archs:?}");
    assert!(archs.windows(2).all(|w| w[0] < w[1]), "{archs:?}");

    let program = Program::new(
        SourceCode::Cxx(SAXPY),
        ProgramOptions {
            name: Some("saxpy.cu".into()),
            ..sm90()
        },
    )
    .unwrap();
    assert_eq!(program.backend(), ProgramBackend::Nvrtc);
    assert_eq!(program.backend().to_string(), "NVRTC");
    let ptx = program.compile(CompileTarget::Ptx, &[]).unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    assert_eq!(ptx.name(), "saxpy.cu");
    // Without name expressions, as Python's `program.compile("ptx")`.
    assert_eq!(
        program.compile_to(CompileTarget::Ptx).unwrap().code(),
        ptx.code()
    );
    let text = std::str::from_utf8(ptx.code()).unwrap();
    assert!(
        text.contains(".entry saxpy") && text.contains(".target sm_90"),
        "{text}"
    );
    assert!(!text.ends_with('\0'));
    assert!(ptx.symbol_mapping().is_empty());

    let cubin = program.compile(CompileTarget::Cubin, &[]).unwrap();
    assert_eq!(cubin.code_type(), CodeType::Cubin);
    assert!(cubin.code().starts_with(ELF));

    // A virtual architecture gives PTX, and no architecture NVRTC's default.
    let virt = ProgramOptions {
        arch: Some("compute_90".into()),
        ..Default::default()
    };
    assert!(!cxx(SAXPY, virt, CompileTarget::Ptx).code().is_empty());
    assert!(
        !cxx(SAXPY, ProgramOptions::default(), CompileTarget::Ptx)
            .code()
            .is_empty()
    );

    let lto = ProgramOptions {
        link_time_optimization: true,
        ..sm90()
    };
    let ltoir = cxx(SAXPY, lto, CompileTarget::Ltoir);
    assert_eq!(ltoir.code_type(), CodeType::Ltoir);
    assert!(!ltoir.code().is_empty());
    // With -dlto NVRTC makes LTO-IR only.
    let lto_only = Program::new(
        SourceCode::Cxx(SAXPY),
        ProgramOptions {
            link_time_optimization: true,
            ..sm90()
        },
    )
    .unwrap();
    is_invalid(lto_only.compile(CompileTarget::Ptx, &[]), "LTO-IR only");
    is_invalid(lto_only.compile(CompileTarget::Cubin, &[]), "LTO-IR only");
    // The log is kept after success (empty or warnings only here).
    assert!(!program.log().contains("error"), "{}", program.log());
}

#[test]
fn template_kernels_by_name_expression() {
    require_libs!("nvrtc");
    let src = "template<typename T> __global__ void add(T* x, T v) { x[threadIdx.x] += v; }\n";
    let program = Program::new(SourceCode::Cxx(src), sm90()).unwrap();
    let ptx = program
        .compile(
            CompileTarget::Ptx,
            &["add<float>", "add<int>", "add<float>"],
        )
        .unwrap();
    let map = ptx.symbol_mapping();
    assert_eq!(map.len(), 2, "{map:?}");
    assert_eq!(map["add<float>"], "_Z3addIfEvPT_S0_");
    assert_eq!(map["add<int>"], "_Z3addIiEvPT_S0_");
    let text = std::str::from_utf8(ptx.code()).unwrap();
    for mangled in map.values() {
        assert!(
            text.contains(&format!(".entry {mangled}")),
            "{mangled}\n{text}"
        );
    }
    assert_eq!(ptx.lowered_name("add<int>"), "_Z3addIiEvPT_S0_");
    assert_eq!(ptx.lowered_name("other"), "other");
    // The mapping comes with every target, and survives linking.
    let rdc_program = Program::new(SourceCode::Cxx(src), rdc(false)).unwrap();
    let cubin = rdc_program
        .compile(CompileTarget::Cubin, &["add<float>"])
        .unwrap();
    assert_eq!(cubin.symbol_mapping()["add<float>"], "_Z3addIfEvPT_S0_");
    let linked = Linker::new(&[&cubin], LinkerOptions::new("sm_90"))
        .unwrap()
        .link()
        .unwrap();
    assert_eq!(linked.symbol_mapping()["add<float>"], "_Z3addIfEvPT_S0_");
    // A name expression that names nothing fails to compile, with a log.
    let e = program
        .compile(CompileTarget::Ptx, &["no_such_kernel<float>"])
        .unwrap_err();
    assert!(matches!(e, Error::Compile { .. }), "{e}");
    assert!(e.log().unwrap().contains("no_such_kernel"), "{e}");
}

#[test]
fn prebuilt_code_takes_a_name_and_a_symbol_mapping() {
    require_libs!("nvrtc");
    let src = "template<typename T> __global__ void add(T* x, T v) { x[threadIdx.x] += v; }\n";
    let program = Program::new(SourceCode::Cxx(src), sm90()).unwrap();
    let cubin = program
        .compile(CompileTarget::Cubin, &["add<float>"])
        .unwrap();
    let mangled = cubin.symbol_mapping()["add<float>"].clone();
    // Saved bytes come back without the mapping...
    let bare = ObjectCode::from_cubin(cubin.code().to_vec()).unwrap();
    assert_eq!(bare.name(), "cubin");
    assert!(bare.symbol_mapping().is_empty());
    assert_eq!(bare.lowered_name("add<float>"), "add<float>");
    // ...and take it again, with a name, as cuda.core's from_cubin(name=,
    // symbol_mapping=) does.
    let prebuilt = bare
        .with_name("saved.cubin")
        .with_symbol_mapping([("add<float>", mangled.as_str())]);
    assert_eq!(prebuilt.name(), "saved.cubin");
    assert_eq!(prebuilt.code(), cubin.code());
    assert_eq!(prebuilt.code_type(), CodeType::Cubin);
    assert_eq!(prebuilt.lowered_name("add<float>"), mangled);
    // A shared handle keeps its own name and mapping.
    let shared = prebuilt.clone();
    let renamed = prebuilt
        .with_name("other")
        .with_symbol_mapping(Vec::<(String, String)>::new());
    assert_eq!(shared.name(), "saved.cubin");
    assert_eq!(shared.lowered_name("add<float>"), mangled);
    assert_eq!(renamed.name(), "other");
    assert!(renamed.symbol_mapping().is_empty());
}

#[test]
fn relocatable_objects_and_the_quiet_options() {
    // ObjectCode::from_object: a relocatable object, typed as such.
    let object = ObjectCode::from_object(ELF.to_vec()).unwrap();
    assert_eq!(object.code_type(), CodeType::Object);
    assert_eq!(object.name(), "object");
    assert_eq!(object.code(), ELF);
    let e = ObjectCode::from_object(Vec::new()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    // ObjectCode::from_library: a static library (an `ar` archive).
    let archive = b"!<arch>\n".to_vec();
    let library = ObjectCode::from_library(archive.clone()).unwrap();
    assert_eq!(library.code_type(), CodeType::Library);
    assert_eq!((library.name(), library.code()), ("library", &archive[..]));
    // disable_warnings and minimal reach NVRTC as --disable-warnings and --minimal.
    let quiet = ProgramOptions {
        disable_warnings: true,
        minimal: true,
        ..sm90()
    };
    let args = quiet.to_nvrtc_args().unwrap();
    assert!(args.iter().any(|a| a == "--disable-warnings"), "{args:?}");
    assert!(args.iter().any(|a| a == "--minimal"), "{args:?}");
    require_libs!("nvrtc");
    // A warning NVRTC would print (an unused variable) is gone with --disable-warnings.
    let src = "extern \"C\" __global__ void k(int* p) { int unused = 1; *p = 0; }\n";
    let loud = Program::new(SourceCode::Cxx(src), sm90()).unwrap();
    loud.compile(CompileTarget::Ptx, &[]).unwrap();
    let quiet_program = Program::new(
        SourceCode::Cxx(src),
        ProgramOptions {
            disable_warnings: true,
            ..sm90()
        },
    )
    .unwrap();
    quiet_program.compile(CompileTarget::Ptx, &[]).unwrap();
    assert!(
        !quiet_program.log().contains("warning"),
        "{}",
        quiet_program.log()
    );
    assert!(loud.log().contains("warning"), "{}", loud.log());
    // --minimal compiles a kernel that needs none of the implicit headers.
    let minimal = Program::new(SourceCode::Cxx(src), quiet).unwrap();
    match minimal.compile(CompileTarget::Ptx, &[]) {
        Ok(ptx) => assert!(
            std::str::from_utf8(ptx.code())
                .unwrap()
                .contains(".entry k")
        ),
        Err(e) => panic!("--minimal: {e}\n{}", minimal.log()),
    }
}

#[test]
fn compile_errors_carry_the_log() {
    require_libs!("nvrtc");
    let program = Program::new(
        SourceCode::Cxx("__global__ void k(int* p) { *p = undefined_name; }\n"),
        ProgramOptions {
            name: Some("bad.cu".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let e = program.compile(CompileTarget::Ptx, &[]).unwrap_err();
    let Error::Compile {
        log,
        source,
        context,
        ..
    } = &e
    else {
        panic!("expected a compile error, got {e:?}");
    };
    assert!(matches!(source, ToolError::Nvrtc(_)), "{source:?}");
    assert!(context.contains("bad.cu"), "{context}");
    assert!(
        log.contains("undefined_name") && log.contains("bad.cu"),
        "{log}"
    );
    assert_eq!(e.log(), Some(log.as_str()));
    // The message is the context and the log; NVRTC's code is the source's.
    let msg = e.to_string();
    assert!(
        !msg.contains("NVRTC_ERROR_COMPILATION") && msg.contains("undefined_name"),
        "{msg}"
    );
    let report = e.report().to_string();
    assert!(
        report.contains("NVRTC_ERROR_COMPILATION") && report.contains("undefined_name"),
        "{report}"
    );
    assert_eq!(program.log(), *log);
    // An option the crate's parser does not know is refused before NVRTC sees
    // it (it might forward a split compile to ptxas) …
    let opts = ProgramOptions {
        extra: vec!["--no-such-option".into()],
        ..Default::default()
    };
    let e = Program::new(SourceCode::Cxx(SAXPY), opts).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("extra_unchecked"),
        "{e}"
    );
    // … and passed unchecked, NVRTC refuses it and fails the compile.
    let opts = ProgramOptions {
        // SAFETY: NVRTC refuses an option it does not know; it starts nothing.
        extra_unchecked: unsafe { cudars_core::UncheckedOptions::new(["--no-such-option"]) },
        ..Default::default()
    };
    let e = Program::new(SourceCode::Cxx(SAXPY), opts)
        .unwrap()
        .compile(CompileTarget::Ptx, &[])
        .unwrap_err();
    let report = e.report().to_string();
    assert!(report.contains("NVRTC_ERROR_INVALID_OPTION"), "{report}");
}

#[test]
fn options_are_checked_before_compiling() {
    require_libs!("nvrtc");
    let args = ProgramOptions {
        name: Some("x.cu".into()),
        std: Some("c++17".into()),
        debug: true,
        lineinfo: true,
        device_code_optimize: Some(false),
        max_register_count: Some(32),
        ftz: Some(true),
        fma: Some(false),
        use_fast_math: true,
        relocatable_device_code: true,
        link_time_optimization: true,
        define_macro: vec![("A".into(), None), ("F(x)".into(), Some("(x)*2".into()))],
        undefine_macro: vec!["B".into()],
        include_path: vec!["/inc".into()],
        pre_include: vec!["pre.h".into()],
        diag_suppress: vec![177, 550],
        split_compile: Some(0),
        ptxas_options: vec!["-v".into()],
        extra: vec!["-w".into()],
        ..sm90()
    }
    .to_nvrtc_args()
    .unwrap();
    assert_eq!(
        args,
        [
            "-arch=sm_90",
            "--relocatable-device-code=true",
            "--device-debug",
            "--generate-line-info",
            "--dopt=off",
            "--ptxas-options=-v",
            "--maxrregcount=32",
            "--ftz=true",
            "--fmad=false",
            "--use_fast_math",
            "-dlto",
            "--define-macro=A",
            "--define-macro=F(x)=(x)*2",
            "--undefine-macro=B",
            "--include-path=/inc",
            "--pre-include=pre.h",
            "--std=c++17",
            "--diag-suppress=177",
            "--diag-suppress=550",
            "--split-compile=0",
            "-w",
        ]
    );
    let nvvm = ProgramOptions {
        arch: Some("sm_90a".into()),
        debug: true,
        device_code_optimize: Some(true),
        use_fast_math: true,
        prec_div: Some(true),
        link_time_optimization: true,
        ..Default::default()
    }
    .to_nvvm_args()
    .unwrap();
    assert_eq!(
        nvvm,
        [
            "-arch=compute_90a",
            "-opt=3",
            "-g",
            "-ftz=1",
            "-prec-div=1",
            "-prec-sqrt=0",
            "-fma=1"
        ]
    );

    let bad = |o: ProgramOptions, needle: &str| {
        is_invalid(o.to_nvrtc_args(), needle);
        is_invalid(Program::new(SourceCode::Cxx(SAXPY), o), needle);
    };
    for arch in ["sm90", "sm_9", "gfx90a", "compute_90x", ""] {
        bad(
            ProgramOptions {
                arch: Some(arch.into()),
                ..Default::default()
            },
            "`arch`",
        );
    }
    for name in ["1X", "A-B", "", "F(1)", "A B"] {
        bad(
            ProgramOptions {
                define_macro: vec![(name.into(), None)],
                ..Default::default()
            },
            "`define_macro`",
        );
    }
    bad(
        ProgramOptions {
            undefine_macro: vec!["X=1".into()],
            ..Default::default()
        },
        "`undefine_macro`",
    );
    bad(
        ProgramOptions {
            define_macro: vec![("X".into(), Some("a\0b".into()))],
            ..Default::default()
        },
        "NUL",
    );
    bad(
        ProgramOptions {
            extra: vec!["-a\0".into()],
            ..Default::default()
        },
        "NUL",
    );
    bad(
        ProgramOptions {
            std: Some("gnu++17".into()),
            ..Default::default()
        },
        "`std`",
    );
    bad(
        ProgramOptions {
            max_register_count: Some(0),
            ..Default::default()
        },
        "max_register_count",
    );
    bad(
        ProgramOptions {
            ofast_compile: Some("fastest".into()),
            ..Default::default()
        },
        "ofast_compile",
    );
    bad(
        ProgramOptions {
            name: Some("a\0b".into()),
            ..Default::default()
        },
        "`name`",
    );
    // NVVM IR modules do not go with C++.
    let extra = ProgramOptions {
        extra_sources: vec![("m".into(), b"x".to_vec())],
        ..Default::default()
    };
    is_invalid(Program::new(SourceCode::Cxx(SAXPY), extra), "extra_sources");
    is_invalid(
        Program::new(SourceCode::Cxx("a\0b"), ProgramOptions::default()),
        "NUL",
    );

    // Targets the options cannot produce: an unset `arch` without a GPU to ask
    // gives no cubin (with one, it is the GPU's).
    let no_arch = Program::new(SourceCode::Cxx(SAXPY), ProgramOptions::default()).unwrap();
    match gpu_arch() {
        None => is_invalid(
            no_arch.compile(CompileTarget::Cubin, &[]),
            "real architecture",
        ),
        Some(arch) => {
            assert_eq!(no_arch.options().arch.as_deref(), Some(arch.as_str()));
            assert!(no_arch.compile(CompileTarget::Cubin, &[]).is_ok());
        }
    }
    let virt = ProgramOptions {
        arch: Some("compute_90".into()),
        ..Default::default()
    };
    let virt = Program::new(SourceCode::Cxx(SAXPY), virt).unwrap();
    is_invalid(virt.compile(CompileTarget::Cubin, &[]), "compute_90");
    let no_lto = Program::new(SourceCode::Cxx(SAXPY), sm90()).unwrap();
    is_invalid(
        no_lto.compile(CompileTarget::Ltoir, &[]),
        "link_time_optimization",
    );
    is_invalid(no_lto.compile(CompileTarget::Ptx, &["a\0"]), "NUL");

    // The linker's options.
    let args = LinkerOptions {
        link_time_optimization: true,
        optimization_level: Some(3),
        max_register_count: Some(64),
        ftz: Some(false),
        kernels_used: vec!["apply".into()],
        ptxas_options: vec!["-v".into()],
        ..LinkerOptions::new("sm_90")
    }
    .to_nvjitlink_args()
    .unwrap();
    assert_eq!(
        args,
        [
            "-arch=sm_90",
            "-maxrregcount=64",
            "-lto",
            "-O3",
            "-ftz=false",
            "-kernels-used=apply",
            "-Xptxas=-v"
        ]
    );
    is_invalid(LinkerOptions::default().to_nvjitlink_args(), "required");
    is_invalid(LinkerOptions::new("sm90").to_nvjitlink_args(), "`arch`");
    is_invalid(
        LinkerOptions::new("compute_90").to_nvjitlink_args(),
        "virtual",
    );
    let ptx_out = LinkerOptions {
        ptx: true,
        ..LinkerOptions::new("compute_90")
    };
    assert!(ptx_out.to_nvjitlink_args().is_ok());
    let o = LinkerOptions {
        optimization_level: Some(4),
        ..LinkerOptions::new("sm_90")
    };
    is_invalid(o.to_nvjitlink_args(), "optimization_level");
    let o = LinkerOptions {
        extra: vec![String::new()],
        ..LinkerOptions::new("sm_90")
    };
    is_invalid(o.to_nvjitlink_args(), "`extra`");
    is_invalid(Linker::new(&[], LinkerOptions::new("sm_90")), "no inputs");
}

#[test]
fn defines_and_include_paths_take_effect() {
    require_libs!("nvrtc");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("scale.h"),
        "#pragma once\n#define SCALE_BY 7.0f\n",
    )
    .unwrap();
    let src = "#include \"scale.h\"\n\
        #ifndef LIMIT\n#error LIMIT is not defined\n#endif\n\
        #ifdef GONE\n#error GONE is defined\n#endif\n\
        extern \"C\" __global__ void scaled(float* p) {\n\
          if (threadIdx.x < LIMIT) p[threadIdx.x] *= SCALE_BY * TWICE(1.5f);\n}\n\
        #if ENABLE_EXTRA\nextern \"C\" __global__ void extra_kernel() {}\n#endif\n";
    let options = ProgramOptions {
        include_path: vec![dir.path().to_path_buf()],
        define_macro: vec![
            ("LIMIT".into(), Some("12345".into())),
            ("TWICE(x)".into(), Some("((x) * 2)".into())),
            ("ENABLE_EXTRA".into(), None),
            ("GONE".into(), None),
        ],
        undefine_macro: vec!["GONE".into()],
        name: Some("scaled.cu".into()),
        ..sm90()
    };
    let ptx = cxx(src, options.clone(), CompileTarget::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    assert!(text.contains(".entry scaled"), "{text}");
    // `i < 12345` compiles to `i > 12344` or the like.
    assert!(
        text.contains("12345") || text.contains("12344"),
        "LIMIT did not reach the code:\n{text}"
    );
    assert!(text.contains(".entry extra_kernel"), "{text}");
    // 7 * 3 = 21 = 0x41A80000: SCALE_BY and TWICE folded into one constant.
    assert!(text.contains("0f41A80000"), "{text}");

    // Without the include path the header is not found; the log says which.
    let e = Program::new(
        SourceCode::Cxx(src),
        ProgramOptions {
            include_path: Vec::new(),
            ..options.clone()
        },
    )
    .unwrap()
    .compile(CompileTarget::Ptx, &[])
    .unwrap_err();
    assert!(e.log().unwrap().contains("scale.h"), "{e}");
    // Without LIMIT the #error fires.
    let e = Program::new(
        SourceCode::Cxx(src),
        ProgramOptions {
            define_macro: Vec::new(),
            ..options
        },
    )
    .unwrap()
    .compile(CompileTarget::Ptx, &[])
    .unwrap_err();
    assert!(e.log().unwrap().contains("LIMIT is not defined"), "{e}");
}

#[test]
fn nvvm_ir_compiles_to_ptx_and_ltoir() {
    require_libs!("nvvm");
    let options = ProgramOptions {
        arch: Some("sm_90".into()),
        name: Some("ave".into()),
        ..Default::default()
    };
    let program = Program::new(SourceCode::Nvvm(NVVM_IR.as_bytes()), options.clone()).unwrap();
    assert_eq!(program.backend(), ProgramBackend::Nvvm);
    let ptx = program.compile(CompileTarget::Ptx, &[]).unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    assert!(text.contains(".entry ave"), "{text}");
    assert!(text.contains(".target sm_90"), "{text}");
    // The target decides `-gen-lto`, as in `cuda.core`: LTO-IR without
    // `link_time_optimization`.
    let ltoir = program.compile(CompileTarget::Ltoir, &[]).unwrap();
    assert_eq!(ltoir.code_type(), CodeType::Ltoir);
    assert!(!ltoir.code().starts_with(b"//"), "LTO-IR, not PTX");
    is_invalid(program.compile(CompileTarget::Ptx, &["ave"]), "C++");
    // Line information and explicit optimisation are NVVM options too.
    let lineinfo = ProgramOptions {
        lineinfo: true,
        device_code_optimize: Some(false),
        ..options.clone()
    };
    let ptx = Program::new(SourceCode::Nvvm(NVVM_IR.as_bytes()), lineinfo)
        .unwrap()
        .compile(CompileTarget::Ptx, &[])
        .unwrap();
    assert!(ptx.code().starts_with(b"//"), "{ptx:?}");

    let lto = ProgramOptions {
        link_time_optimization: true,
        ..options.clone()
    };
    let program = Program::new(SourceCode::Nvvm(NVVM_IR.as_bytes()), lto).unwrap();
    let ltoir = program.compile(CompileTarget::Ltoir, &[]).unwrap();
    assert_eq!(ltoir.code_type(), CodeType::Ltoir);
    assert!(!ltoir.code().is_empty());
    // `link_time_optimization` does not stop NVVM making PTX (real PTX).
    let ptx = program.compile(CompileTarget::Ptx, &[]).unwrap();
    assert!(
        std::str::from_utf8(ptx.code())
            .unwrap()
            .contains(".entry ave")
    );
    // `-gen-lto` asked for in `extra` with a PTX target would be LTO-IR
    // labelled PTX: refused.
    let extra_lto = ProgramOptions {
        extra: vec!["-gen-lto".into()],
        ..options
    };
    is_invalid(
        Program::new(SourceCode::Nvvm(NVVM_IR.as_bytes()), extra_lto)
            .unwrap()
            .compile(CompileTarget::Ptx, &[]),
        "-gen-lto",
    );

    // Garbage is a compile error with NVVM's error.
    let bad = Program::new(
        SourceCode::Nvvm(b"this is not IR"),
        ProgramOptions::default(),
    )
    .unwrap()
    .compile(CompileTarget::Ptx, &[])
    .unwrap_err();
    assert!(
        matches!(
            bad,
            Error::Compile {
                source: ToolError::Nvvm(_),
                ..
            }
        ),
        "{bad:?}"
    );
    is_invalid(
        Program::new(SourceCode::Nvvm(b""), ProgramOptions::default()),
        "empty",
    );
}

#[test]
fn nvvm_ir_links_into_a_cubin() {
    require_libs!("nvvm", "nvJitLink");
    for lto in [false, true] {
        let options = ProgramOptions {
            link_time_optimization: lto,
            ..sm90()
        };
        let cubin = Program::new(SourceCode::Nvvm(NVVM_IR.as_bytes()), options)
            .unwrap()
            .compile(CompileTarget::Cubin, &[])
            .unwrap();
        assert_eq!(cubin.code_type(), CodeType::Cubin);
        assert!(cubin.code().starts_with(ELF), "lto: {lto}");
    }
}

#[test]
fn ptx_is_kept_or_linked_into_a_cubin() {
    require_libs!("nvrtc", "nvJitLink");
    let ptx = cxx(SAXPY, sm90(), CompileTarget::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    let program = Program::new(
        SourceCode::Ptx(text),
        ProgramOptions {
            name: Some("saxpy.ptx".into()),
            ..sm90()
        },
    )
    .unwrap();
    assert_eq!(program.backend(), ProgramBackend::NvJitLink);
    let same = program.compile(CompileTarget::Ptx, &[]).unwrap();
    assert_eq!(same.code(), ptx.code());
    assert_eq!(same.code_type(), CodeType::Ptx);
    let cubin = program.compile(CompileTarget::Cubin, &[]).unwrap();
    assert!(cubin.code().starts_with(ELF));
    assert_eq!(cubin.name(), "saxpy.ptx");
    is_invalid(program.compile(CompileTarget::Ltoir, &[]), "LTO-IR");
    let no_arch = Program::new(SourceCode::Ptx(text), ProgramOptions::default()).unwrap();
    match gpu_arch() {
        None => is_invalid(
            no_arch.compile(CompileTarget::Cubin, &[]),
            "real architecture",
        ),
        Some(_) => assert!(no_arch.compile(CompileTarget::Cubin, &[]).is_ok()),
    }

    // Through the linker directly, with the info log.
    let linker = Linker::new(
        &[&ptx],
        LinkerOptions {
            verbose: true,
            ..LinkerOptions::new("sm_90")
        },
    )
    .unwrap();
    assert_eq!(linker.backend(), LinkerBackend::NvJitLink);
    let linked = linker.link().unwrap();
    assert!(linked.code().starts_with(ELF));
    assert_eq!(linked.code_type(), CodeType::Cubin);
    // The raw handle is the live nvJitLink handle: nvJitLink reports the same cubin.
    let cudars_core::LinkerHandle::NvJitLink(h) = linker.handle() else {
        panic!("an nvJitLink linker's handle: {:?}", linker.handle());
    };
    let mut size = 0usize;
    // SAFETY: `h` is the linker's live handle, used by this thread only.
    let r = unsafe {
        cudars_core::cudars_bindings::nvjitlink::nvJitLinkGetLinkedCubinSize(h, &mut size)
    };
    assert_eq!(
        r,
        cudars_core::cudars_bindings::nvjitlink::NVJITLINK_SUCCESS
    );
    assert_eq!(size, linked.code().len());
    // A second link returns the same result.
    assert_eq!(linker.link().unwrap().code(), linked.code());
    assert!(linker.error_log().is_empty(), "{}", linker.error_log());

    // Broken PTX fails when added, with nvJitLink's log.
    let broken = ObjectCode::from_ptx(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n",
    )
    .unwrap();
    let e = Linker::new(&[&broken], LinkerOptions::new("sm_90"))
        .and_then(|l| l.link())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Compile {
                source: ToolError::NvJitLink(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.log().unwrap().is_empty(), "{e}");
}

#[test]
fn relocatable_cubins_and_ltoir_link() {
    require_libs!("nvrtc", "nvJitLink");
    let caller = cxx(CALLER, rdc(false), CompileTarget::Cubin);
    let callee = cxx(CALLEE, rdc(false), CompileTarget::Cubin);
    let linker = Linker::new(&[&caller, &callee], LinkerOptions::new("sm_90")).unwrap();
    assert_eq!(linker.backend(), LinkerBackend::NvJitLink);
    let linked = linker.link().unwrap();
    assert!(linked.code().starts_with(ELF));
    assert_eq!(linked.name(), "linked");

    let caller = cxx(CALLER, rdc(true), CompileTarget::Ltoir);
    let callee = cxx(CALLEE, rdc(true), CompileTarget::Ltoir);
    let lto = LinkerOptions {
        name: Some("lto".into()),
        link_time_optimization: true,
        ..LinkerOptions::new("sm_90")
    };
    let linker = Linker::new(&[&caller, &callee], lto.clone()).unwrap();
    let linked = linker.link().unwrap();
    assert!(linked.code().starts_with(ELF));
    assert_eq!(linked.name(), "lto");
    // LTO to PTX.
    let to_ptx = LinkerOptions {
        ptx: true,
        ..lto.clone()
    };
    let ptx = Linker::new(&[&caller, &callee], to_ptx)
        .unwrap()
        .link()
        .unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    assert!(text.contains(".entry apply"), "{text}");

    // Without the callee, `scale` is undefined: a link error with a log.
    let linker = Linker::new(&[&caller], lto).unwrap();
    let e = linker.link().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Compile {
                source: ToolError::NvJitLink(_),
                ..
            }
        ),
        "{e:?}"
    );
    let log = e.log().unwrap();
    assert!(!log.is_empty(), "{e}");
    assert_eq!(linker.error_log(), log);
    let caller = cxx(CALLER, rdc(false), CompileTarget::Cubin);
    let e = Linker::new(&[&caller], LinkerOptions::new("sm_90"))
        .unwrap()
        .link()
        .unwrap_err();
    assert!(e.log().is_some_and(|l| l.contains("scale")), "{e}");
}

#[test]
fn programs_and_linkers_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Program>();
    send_sync::<Linker>();
    send_sync::<ProgramOptions>();
    send_sync::<LinkerOptions>();
}

/// PTX for any architecture from sm_52 up, written by hand so that the driver's
/// linker can be tried without NVRTC.
const HAND_PTX: &str = ".version 7.0\n.target sm_52\n.address_size 64\n\n\
.visible .entry twice(.param .u64 p)\n{\n\
  .reg .b64 %rd<3>;\n  .reg .f32 %f<3>;\n\
  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n\
  ld.global.f32 %f1, [%rd2];\n  add.f32 %f2, %f1, %f1;\n  st.global.f32 [%rd2], %f2;\n  ret;\n}\n";

/// `no_cache` with the driver's linker: `cuda.core` passes `CU_JIT_CACHE_MODE` =
/// `CU_JIT_CACHE_OPTION_NONE`, so the linker is made (it was refused as having no
/// counterpart) and, on a GPU, links as usual.
#[test]
fn driver_linker_takes_no_cache() {
    let ptx = ObjectCode::from_ptx(HAND_PTX).unwrap();
    let no_cache = |arch: String| LinkerOptions {
        no_cache: true,
        ..LinkerOptions::new(arch)
    };
    // Without a GPU the driver fails to create the link state: not a refusal.
    if let Err(e) = Linker::with_backend(&[&ptx], no_cache("sm_90".into()), LinkerBackend::Driver) {
        assert!(!matches!(e, Error::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("cuLinkCreate"), "{e}");
    }
    cudars_tests::require_gpu!();
    let device = cudars_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let linker = Linker::with_backend(
        &[&ptx],
        no_cache(device.arch().unwrap()),
        LinkerBackend::Driver,
    )
    .unwrap();
    assert!(linker.link().unwrap().code().starts_with(ELF));
}

/// The driver's JIT linker, chosen explicitly: without a GPU it fails to start and
/// says why; with one (and a current context) it links PTX into a cubin.
#[test]
fn driver_linker_backend() {
    let ptx = ObjectCode::from_ptx(HAND_PTX).unwrap();
    // Options it has no counterpart for are refused before the driver is called.
    let timed = LinkerOptions {
        time: true,
        ..LinkerOptions::new("sm_90")
    };
    let e = Linker::with_backend(&[&ptx], timed, LinkerBackend::Driver).unwrap_err();
    assert!(
        matches!(e, Error::Unsupported { .. }) && e.to_string().contains("`time`"),
        "{e}"
    );
    let Ok(_) = cudars_tests::gpu_status() else {
        let e = Linker::with_backend(&[&ptx], LinkerOptions::new("sm_90"), LinkerBackend::Driver)
            .unwrap_err();
        // No driver at all: unavailable; a driver without a GPU: its error.
        if cudars_pathfinder::load_nvidia_dynamic_lib("cuda").is_err() {
            assert!(e.is_unavailable(), "{e:?}");
        } else {
            assert!(matches!(e, Error::Driver { .. }), "{e:?}");
        }
        assert!(e.to_string().contains("cuLinkCreate"), "{e}");
        return;
    };
    let device = cudars_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let arch = device.arch().unwrap();
    let options = LinkerOptions {
        verbose: true,
        optimization_level: Some(3),
        lineinfo: true,
        ..LinkerOptions::new(arch.clone())
    };
    let linker = Linker::with_backend(&[&ptx], options, LinkerBackend::Driver).unwrap();
    assert_eq!(linker.backend(), LinkerBackend::Driver);
    let cubin = linker.link().unwrap();
    assert!(cubin.code().starts_with(ELF));
    assert_eq!(linker.link().unwrap().code(), cubin.code());
    println!("driver linker info log: {}", linker.info_log());
    assert!(linker.error_log().is_empty(), "{}", linker.error_log());
    // Broken PTX: the driver's error log comes back in the error.
    let broken = ObjectCode::from_ptx(
        ".version 7.0\n.target sm_52\n.address_size 64\n\
        .visible .entry k() { bogus_instruction; }\n",
    )
    .unwrap();
    let e = Linker::with_backend(&[&broken], LinkerOptions::new(arch), LinkerBackend::Driver)
        .and_then(|l| l.link())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Compile {
                source: ToolError::Driver(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.log().is_some_and(|l| l.contains("bogus")), "{e}");
}

/// NVVM IR calling libdevice's `__nv_sinf`.
const NVVM_SINF: &str = r#"target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare float @__nv_sinf(float)

define void @sine(float* %p) {
entry:
  %x = load float, float* %p, align 4
  %y = call float @__nv_sinf(float %x)
  store float %y, float* %p, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float*)* @sine, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
"#;

#[test]
fn libdevice_is_linked_into_nvvm_programs_on_request() {
    require_libs!("nvvm");
    let compile = |use_libdevice: bool| {
        let options = ProgramOptions {
            use_libdevice,
            ..sm90()
        };
        let code = Program::new(SourceCode::Nvvm(NVVM_SINF.as_bytes()), options)
            .unwrap()
            .compile(CompileTarget::Ptx, &[])
            .unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(code.code().to_vec()).unwrap()
    };
    let without = compile(false);
    assert!(
        without.contains(".extern .func") && without.contains("__nv_sinf"),
        "without libdevice the call stays external:\n{without}"
    );
    let with = compile(true);
    assert!(
        !with.contains(".extern .func") && with.contains(".entry sine"),
        "libdevice's sinf is linked in:\n{with}"
    );
    // Only for NVVM IR.
    assert!(matches!(
        Program::new(
            SourceCode::Cxx("__global__ void k() {}"),
            ProgramOptions {
                use_libdevice: true,
                ..sm90()
            }
        ),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn precompiled_headers_are_created_and_reported() {
    require_libs!("nvrtc");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("big.h"),
        "#pragma once\ntemplate <typename T> __device__ T twice(T x) { return x + x; }\n",
    )
    .unwrap();
    let pch_dir = dir.path().join("pch");
    std::fs::create_dir(&pch_dir).unwrap();
    let options = ProgramOptions {
        include_path: vec![dir.path().to_path_buf()],
        pch: true,
        pch_dir: Some(pch_dir.clone()),
        pch_messages: Some(true),
        pch_verbose: Some(true),
        ..sm90()
    };
    let args = options.to_nvrtc_args().unwrap();
    for flag in ["--pch", "--pch-messages=true", "--pch-verbose=true"] {
        assert!(args.iter().any(|a| a == flag), "{args:?}");
    }
    assert!(args.iter().any(|a| a.starts_with("--pch-dir=")));
    let src =
        "#include \"big.h\"\nextern \"C\" __global__ void k(float *p) { p[0] = twice(p[0]); }\n";
    let program = Program::new(SourceCode::Cxx(src), options).unwrap();
    assert_eq!(program.pch_status(), None);
    program.compile(CompileTarget::Ptx, &[]).unwrap();
    let status = program.pch_status();
    println!("PCH status {status:?}; log:\n{}", program.log());
    assert_eq!(
        status,
        Some(cudars_core::PchStatus::Created),
        "{}",
        program.log()
    );
    assert!(
        std::fs::read_dir(&pch_dir).unwrap().count() > 0,
        "no PCH file was written"
    );
    // A second program with the same headers uses it.
    let again = Program::new(SourceCode::Cxx(src), program.options().clone()).unwrap();
    again.compile(CompileTarget::Ptx, &[]).unwrap();
    assert_eq!(
        again.pch_status(),
        Some(cudars_core::PchStatus::NotAttempted)
    );
    assert!(
        again.log().contains("using precompiled header"),
        "{}",
        again.log()
    );
    // The heap size can be read and set back.
    let heap = cudars_core::nvrtc::pch_heap_size().unwrap();
    assert!(heap > 0);
    cudars_core::nvrtc::set_pch_heap_size(heap).unwrap();
    assert_eq!(cudars_core::nvrtc::pch_heap_size().unwrap(), heap);
    // Without PCH options there is nothing to report.
    let plain = Program::new(
        SourceCode::Cxx(src),
        ProgramOptions {
            include_path: vec![dir.path().to_path_buf()],
            ..sm90()
        },
    )
    .unwrap();
    plain.compile(CompileTarget::Ptx, &[]).unwrap();
    assert_eq!(plain.pch_status(), None);
}

/// `versions()` says which toolkit libraries were loaded, of which version, from
/// where: the CUDA 12.9 ones in the CUDA 12 pass of `cargo xtask test`, the 13.0
/// ones in the other, from the same binary.
#[test]
fn versions_report_each_library_and_its_major() {
    cudars_tests::require_libs!("nvrtc", "nvJitLink", "cudart");
    let v = cudars_core::versions();
    let mut found = vec![("nvrtc", &v.nvrtc), ("nvjitlink", &v.nvjitlink)];
    if cfg!(feature = "runtime") {
        found.push(("runtime", &v.runtime));
    } else {
        // Without the feature the runtime is not looked for, and says why.
        let why = v.runtime.error.as_deref().unwrap_or_default();
        assert!(why.contains("`runtime` feature"), "{:?}", v.runtime);
    }
    for (name, c) in found {
        let version = c.version.unwrap_or_else(|| panic!("{name}: {c:?}"));
        cudars_tests::assert_expected_major(name, version.major);
        assert!(c.path.is_some() && c.found_via.is_some(), "{name}: {c:?}");
    }
    let text = v.to_string();
    assert!(
        text.lines().count() == 6
            && text.contains(if cfg!(windows) {
                "nvrtc64_"
            } else {
                "libnvrtc.so"
            }),
        "{text}"
    );
    println!("{text}");
}

/// The architecture of the GPU an unset `arch` is filled in from (the current
/// device's), or `None` where there is no GPU to ask (no driver, no device).
fn gpu_arch() -> Option<String> {
    match Device::current().and_then(|d| d.arch()) {
        Ok(arch) => Some(arch),
        Err(e) => {
            assert!(
                e.is_unavailable()
                    || matches!(
                        e.driver_code(),
                        Some(sys::CUDA_ERROR_NO_DEVICE | sys::CUDA_ERROR_INVALID_DEVICE)
                    ),
                "not a missing GPU: {e}"
            );
            None
        }
    }
}

/// The architecture an unset `arch` compiles for: the current device's (Python's
/// `ProgramOptions()`), or without a GPU the compiler's oldest (`sm_75` for CUDA
/// 13, `sm_52` for CUDA 12).
fn default_arch(major: i32) -> String {
    gpu_arch().unwrap_or_else(|| if major >= 13 { "sm_75" } else { "sm_52" }.into())
}

#[test]
fn an_unset_arch_is_the_current_devices_or_without_a_gpu_the_compilers_oldest() {
    require_libs!("nvrtc");
    let major = nvrtc::version().unwrap().major;
    let ptx = cxx(SAXPY, ProgramOptions::default(), CompileTarget::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    let target = format!(".target {}", default_arch(major));
    assert!(text.contains(&target), "expected {target:?} in:\n{text}");
    // The program shows what it compiles for, as Python's options do.
    let program = Program::new(SourceCode::Cxx(SAXPY), ProgramOptions::default()).unwrap();
    assert_eq!(program.options().arch, gpu_arch());
    // LTO-IR is made for the same; a cubin needs a real `arch`: the GPU's.
    let lto = ProgramOptions {
        link_time_optimization: true,
        ..Default::default()
    };
    assert!(!cxx(SAXPY, lto, CompileTarget::Ltoir).code().is_empty());
    match gpu_arch() {
        None => is_invalid(
            program.compile(CompileTarget::Cubin, &[]),
            "a cubin needs a real architecture",
        ),
        Some(_) => {
            let cubin = program.compile(CompileTarget::Cubin, &[]).unwrap();
            assert!(cubin.code().starts_with(ELF));
        }
    }
    // The options alone never ask the driver: no architecture, and the
    // linker's options need one.
    assert!(
        !ProgramOptions::default()
            .to_nvrtc_args()
            .unwrap()
            .iter()
            .any(|a| a.starts_with("-arch"))
    );
    is_invalid(ProgramOptions::default().to_linker_options(), "`arch`");
    // A given `arch` is kept.
    let virt = ProgramOptions {
        arch: Some("compute_80".into()),
        ..Default::default()
    };
    let program = Program::new(SourceCode::Cxx(SAXPY), virt).unwrap();
    assert_eq!(program.options().arch.as_deref(), Some("compute_80"));
}

#[test]
fn an_unset_arch_is_the_same_for_nvvm() {
    // NVVM reports its own version; the toolkit's major is NVRTC's (one wheel set).
    require_libs!("nvvm", "nvrtc");
    let major = nvrtc::version().unwrap().major;
    let program = Program::new(
        SourceCode::Nvvm(NVVM_IR.as_bytes()),
        ProgramOptions::default(),
    )
    .unwrap();
    let ptx = program.compile(CompileTarget::Ptx, &[]).unwrap();
    let text = std::str::from_utf8(ptx.code()).unwrap();
    let target = format!(".target {}", default_arch(major));
    assert!(text.contains(&target), "expected {target:?} in:\n{text}");
}

/// Cooperative groups (the CUDA runtime's headers) and CCCL: libcu++ and CUB.
const WITH_HEADERS: &str = r#"
#include <cooperative_groups.h>
#include <cuda/std/type_traits>
#include <cub/block/block_reduce.cuh>
namespace cg = cooperative_groups;
static_assert(cuda::std::is_integral<int>::value, "libcu++ works");
extern "C" __global__ void block_sum(const int *in, int *out) {
    using Reduce = cub::BlockReduce<int, 128>;
    __shared__ typename Reduce::TempStorage tmp;
    cg::thread_block block = cg::this_thread_block();
    int sum = Reduce(tmp).Sum(in[block.thread_rank()]);
    if (block.thread_rank() == 0) *out = sum;
}
"#;

#[test]
fn toolkit_headers_compile_cooperative_groups_and_cccl() {
    require_libs!("nvrtc");
    let dirs = toolkit_include_dirs();
    let found = dirs.as_ref().map(|_| ()).map_err(|e| e.to_string());
    if !cudars_tests::require_or_skip(
        &cudars_tests::current_test_name(),
        "the CUDA runtime and CCCL headers (the wheels, or a toolkit)",
        cudars_tests::REQUIRE_WHEELS_VAR,
        found,
    ) {
        return;
    }
    let dirs = dirs.unwrap();
    // CCCL first, then the runtime's headers (one directory if they share it).
    assert!(
        dirs[0].join("cuda/std/type_traits").is_file(),
        "{}",
        dirs[0].display()
    );
    let runtime = dirs.last().unwrap();
    assert!(
        runtime.join("cooperative_groups.h").is_file(),
        "{}",
        runtime.display()
    );
    // Under `cargo xtask test` they are the wheels' (nvidia-cuda-cccl, -runtime).
    if let Ok(venv) = std::env::var("CUDA_RS_TEST_VENV") {
        for d in &dirs {
            assert!(d.starts_with(&venv), "{} is not in {venv}", d.display());
        }
    }

    // Without them NVRTC cannot open the headers: the compile error names one.
    let e = Program::new(SourceCode::Cxx(WITH_HEADERS), sm90())
        .unwrap()
        .compile(CompileTarget::Ptx, &[])
        .unwrap_err();
    assert!(matches!(e, Error::Compile { .. }), "{e}");
    let log = e.log().unwrap();
    assert!(
        log.contains("cooperative_groups.h") && log.contains("could not open"),
        "{log}"
    );

    let options = sm90().with_toolkit_headers().unwrap();
    assert_eq!(options.include_path, dirs);
    // Adding them again adds nothing; include paths given before are kept first.
    let again = options.clone().with_toolkit_headers().unwrap();
    assert_eq!(again.include_path, dirs);
    let mine = ProgramOptions {
        include_path: vec!["/opt/mine".into()],
        ..sm90()
    }
    .with_toolkit_headers()
    .unwrap();
    assert_eq!(mine.include_path[0], std::path::Path::new("/opt/mine"));
    assert_eq!(mine.include_path[1..], dirs[..]);

    let ptx = cxx(WITH_HEADERS, options.clone(), CompileTarget::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    assert!(text.contains(".entry block_sum"), "{text}");
    // And to a cubin, for the GPU machines' architecture.
    assert!(
        cxx(WITH_HEADERS, options, CompileTarget::Cubin)
            .code()
            .starts_with(ELF)
    );
}

#[test]
fn missing_cccl_headers_are_a_pathfinder_error_naming_them() {
    const TEST: &str = "missing_cccl_headers_are_a_pathfinder_error_naming_them";
    if !cudars_tests::in_child() {
        // A site-packages directory with the runtime's headers and no CCCL, as the
        // only Python environment of a child process with nothing else set.
        let site = tempfile::tempdir().unwrap();
        let include = site.path().join("nvidia/cu13/include");
        std::fs::create_dir_all(&include).unwrap();
        std::fs::write(include.join("cuda_runtime.h"), "").unwrap();
        cudars_tests::run_test_in_child(TEST, &[("PYTHONPATH", site.path().as_os_str())]);
        return;
    }
    let site = std::env::var_os("PYTHONPATH").unwrap();
    let cudart = cudars_pathfinder::find_nvidia_header_directory("cudart").unwrap();
    assert!(cudart.abs_path.starts_with(&site), "{cudart:?}");
    match cudars_pathfinder::find_nvidia_header_directory("cccl") {
        // A toolkit on this machine has CCCL: then it is what the helper adds.
        Ok(cccl) => {
            println!("CCCL found outside the test's site-packages: {cccl:?}");
            let options = ProgramOptions::default().with_toolkit_headers().unwrap();
            assert_eq!(options.include_path[0], cccl.abs_path);
        }
        Err(_) => {
            let e = ProgramOptions::default()
                .with_toolkit_headers()
                .unwrap_err();
            match &e {
                PathfinderError::NotFound {
                    kind: ArtifactKind::HeaderDir,
                    name,
                    searched,
                } => {
                    assert_eq!(name, "cccl");
                    assert!(
                        searched.iter().any(|s| s.place.contains("cccl")),
                        "{searched:?}"
                    );
                }
                other => panic!("expected NotFound for cccl, got {other:?}"),
            }
            let msg = e.to_string();
            assert!(
                msg.starts_with("header directory `cccl` not found"),
                "{msg}"
            );
            assert!(toolkit_include_dirs().is_err());
        }
    }
}

#[test]
fn bundled_headers_need_nvrtc_13_3_and_say_so() {
    require_libs!("nvrtc");
    const CCCL_ONLY: &str = "#include <cuda/std/type_traits>\n\
        extern \"C\" __global__ void k(int *o) { *o = cuda::std::is_integral<int>::value; }\n";
    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("bundled");
    let options = ProgramOptions {
        use_bundled_headers: true,
        bundled_headers_dir: Some(headers.clone()),
        ..sm90()
    };
    let expected = format!("--use-bundled-headers={}", headers.display());
    assert!(
        options.to_nvrtc_args().unwrap().contains(&expected),
        "{expected}"
    );
    let result = Program::new(SourceCode::Cxx(CCCL_ONLY), options)
        .unwrap()
        .compile(CompileTarget::Ptx, &[]);
    let version = nvrtc::version().unwrap();
    if (version.major, version.minor) < (13, 3) {
        match result {
            Err(e @ Error::Unsupported { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("NVRTC 13.3") && msg.contains(&format!("{version}")),
                    "{msg}"
                );
                assert!(msg.contains("with_toolkit_headers"), "{msg}");
            }
            other => panic!("expected Unsupported on NVRTC {version}, got {other:?}"),
        }
        assert!(
            !headers.exists(),
            "nothing is made for an NVRTC without them"
        );
    } else {
        let ptx = result.unwrap();
        assert!(!ptx.code().is_empty());
        assert!(headers.join("cccl/cuda/std/type_traits").is_file());
    }
}

/// `split_compile` above `i32::MAX` made NVRTC abort the whole process (its
/// `std::stoi` throws, and nothing catches it); found by the property test below.
/// It is refused before NVRTC is called (as is any count above 1024: see
/// `a_split_compile_of_more_threads_than_a_machine_has_is_refused`).
#[test]
fn a_split_compile_count_nvrtc_cannot_read_is_refused() {
    let options = |n| ProgramOptions {
        split_compile: Some(n),
        ..Default::default()
    };
    for n in [i32::MAX as u32 + 1, 3_836_487_377, u32::MAX] {
        let e = options(n).to_nvrtc_args().unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("`split_compile`"),
            "{e}"
        );
    }
    require_libs!("nvrtc");
    // Through a compilation: a typed error, and this process is still here.
    let e = Program::new(SourceCode::Cxx(SAXPY), options(u32::MAX))
        .and_then(|p| p.compile(CompileTarget::Ptx, &[]));
    assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
}

/// A ptxas option of only whitespace is refused before any compiler sees it:
/// NVRTC 12.9 passes it to its ptxas, which aborts the process (found by the
/// hostile-input test below, which reached it one run in a few).
#[test]
fn a_ptxas_option_of_only_whitespace_is_refused() {
    const WHITESPACE: [&str; 4] = [" ", "  ", "\t", " \n "];
    for ws in WHITESPACE {
        let o = ProgramOptions {
            ptxas_options: vec![ws.to_string()],
            ..Default::default()
        };
        let e = o.to_nvrtc_args().unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("whitespace"),
            "{e}"
        );
        let l = LinkerOptions {
            ptxas_options: vec![ws.to_string()],
            ..LinkerOptions::new("sm_90")
        };
        let e = l.to_nvjitlink_args().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }
    // Options with spaces around a real one still reach ptxas.
    let o = ProgramOptions {
        ptxas_options: vec![" -v".into(), "-O3 ".into()],
        ..Default::default()
    };
    assert!(o.to_nvrtc_args().is_ok());
    // Through NVRTC: a typed error, where the option would abort the process.
    require_libs!("nvrtc");
    for ws in WHITESPACE {
        let o = ProgramOptions {
            ptxas_options: vec![ws.to_string()],
            ..Default::default()
        };
        let r = Program::new(SourceCode::Cxx(SAXPY), o)
            .and_then(|p| p.compile(CompileTarget::Ptx, &[]));
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    }
}

/// A split compile of more threads than a machine has is refused before NVRTC
/// is called. Compiling for a real architecture, NVRTC 12.9 and 13.0 start
/// exactly that many threads for ptxas: where the system will not allocate
/// their table (1962186399 threads on a 24 GiB machine) the process dies of
/// SIGSEGV; where it cannot start them all (65536, past a 32768 `pid_max`) it
/// waits forever. Both found by the hostile-input test below
/// (`--gpu-architecture=sm_90 --split-compile=1962186399`, and `1529562070`).
#[test]
fn a_split_compile_of_more_threads_than_a_machine_has_is_refused() {
    const TOO_MANY: [u32; 5] = [1025, 32_256, 65_536, 1_529_562_070, 1_962_186_399];
    let options = |n| ProgramOptions {
        split_compile: Some(n),
        ..sm90()
    };
    for n in TOO_MANY.into_iter().chain([i32::MAX as u32]) {
        let e = options(n).to_nvrtc_args().unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { .. })
                && e.to_string().contains("`split_compile`")
                && e.to_string().contains("1024"),
            "{e}"
        );
    }
    for n in [0, 1, 2, 1024] {
        assert!(options(n).to_nvrtc_args().is_ok(), "{n}");
    }
    // The same count asked of ptxas directly, in each spelling ptxas reads.
    let ptxas = |opts: &[&str]| ProgramOptions {
        ptxas_options: opts.iter().map(|o| o.to_string()).collect(),
        ..sm90()
    };
    let refused: [&[&str]; 9] = [
        // A spelling of a split compile the parser does not know is refused too.
        &["--split-compile-x=99999"],
        &["--split-compile=65536"],
        &["-split-compile=1962186399"],
        &[" --split-compile=1025 "],
        &["--split-compile", "65536"],
        &["--split-compile=0x10000"],
        &["--split-compile=+2000"],
        &["--split-compile=-1"],
        &["--split-compile="],
    ];
    for opts in refused {
        let e = ptxas(opts).to_nvrtc_args().unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("split compile"),
            "{opts:?}: {e}"
        );
        let l = LinkerOptions {
            ptxas_options: opts.iter().map(|o| o.to_string()).collect(),
            ..LinkerOptions::new("sm_90")
        };
        let e = l.to_nvjitlink_args().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{opts:?}: {e}");
    }
    for opts in [
        &["--split-compile=4"][..],
        &["-split-compile", " 1024"],
        &["-v", "--split-compile=0"],
    ] {
        assert!(ptxas(opts).to_nvrtc_args().is_ok(), "{opts:?}");
    }
    // And through `extra`, which reaches NVRTC verbatim: NVRTC's own option, and
    // ptxas's through NVRTC's two ways of passing ptxas options.
    let extra = |opts: &[&str]| ProgramOptions {
        extra: opts.iter().map(|o| o.to_string()).collect(),
        ..sm90()
    };
    let refused_extra: [&[&str]; 7] = [
        &["--split-compile=65536"],
        &["-split-compile", "1962186399"],
        &["--ptxas-options=--split-compile=65536"],
        &["-Xptxas=-v,--split-compile=2000"],
        &["-Xptxas", "--split-compile=0x10000"],
        &["--ptxas-options", "-split-compile=1025"],
        &["-Xptxas=--split-compile", "-Xptxas=99999"],
    ];
    for opts in refused_extra {
        let e = extra(opts).to_nvrtc_args().unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { .. })
                && e.to_string().contains("`extra`")
                && e.to_string().contains("1024"),
            "{opts:?}: {e}"
        );
    }
    for opts in [
        &["--split-compile=8"][..],
        &["-Xptxas=-v,--split-compile=1024"],
        &["--ptxas-options", "-v"],
        &["-lineinfo"],
    ] {
        assert!(extra(opts).to_nvrtc_args().is_ok(), "{opts:?}");
    }
    // Through NVRTC, for a real architecture: typed errors where the process
    // crashed or hung, and the bound itself compiles.
    require_libs!("nvrtc");
    let compile = |o| {
        Program::new(SourceCode::Cxx(SAXPY), o).and_then(|p| p.compile(CompileTarget::Ptx, &[]))
    };
    for n in TOO_MANY {
        let r = compile(options(n));
        assert!(
            matches!(r, Err(Error::InvalidArgument { .. })),
            "{n}: {r:?}"
        );
    }
    for opts in [
        &["--split-compile=65536"][..],
        &["--split-compile", "1962186399"],
    ] {
        let r = compile(ptxas(opts));
        assert!(
            matches!(r, Err(Error::InvalidArgument { .. })),
            "{opts:?}: {r:?}"
        );
    }
    let ptx = compile(options(1024)).unwrap();
    assert!(!ptx.code().is_empty());
    let ptx = compile(ptxas(&["--split-compile=1024"])).unwrap();
    assert!(!ptx.code().is_empty());
}

mod hostile {
    //! Hostile options and sources: every option string a user may pass, and any
    //! source text and name expressions, give arguments, a compiled object or a
    //! typed error, never a panic.

    use super::*;
    use proptest::prelude::*;

    /// Text with the characters that break command lines and C strings.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("sm_90".to_string()),
            Just("compute_90a".to_string()),
            Just("c++17".to_string()),
            "[ -~]{0,16}",
            "(?s).{0,16}",
            "[a-z_=\\- \u{0}\"']{0,12}",
        ]
    }

    fn options() -> impl Strategy<Value = ProgramOptions> {
        (
            (
                proptest::option::of(text()),
                proptest::option::of(text()),
                proptest::option::of(text()),
                proptest::collection::vec(text(), 0..3),
                proptest::collection::vec((text(), proptest::option::of(text())), 0..3),
            ),
            (
                proptest::collection::vec(text(), 0..2),
                proptest::collection::vec(text(), 0..2),
                proptest::option::of(text()),
                proptest::option::of(text()),
                proptest::option::of(any::<u32>()),
                proptest::option::of(any::<u32>()),
                proptest::collection::vec(text(), 0..2),
            ),
        )
            .prop_map(
                |(
                    (name, arch, std, ptxas_options, define_macro),
                    (
                        undefine_macro,
                        pre_include,
                        optimization_info,
                        frandom_seed,
                        regs,
                        split,
                        paths,
                    ),
                )| ProgramOptions {
                    name,
                    arch,
                    std,
                    ptxas_options,
                    define_macro,
                    undefine_macro,
                    pre_include,
                    optimization_info,
                    frandom_seed,
                    max_register_count: regs,
                    split_compile: split,
                    include_path: paths.into_iter().map(Into::into).collect(),
                    ..Default::default()
                },
            )
    }

    fn typed<T: std::fmt::Debug>(
        r: cudars_core::Result<T>,
        what: &str,
    ) -> Result<(), TestCaseError> {
        match r {
            Ok(_) | Err(Error::InvalidArgument { .. } | Error::Unsupported { .. }) => Ok(()),
            Err(other) => Err(TestCaseError::fail(format!("{what}: {other:?}"))),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(512)))]

        /// The option translations need no library: arguments or a refusal.
        #[test]
        fn hostile_options_translate_or_are_refused(o in options()) {
            typed(o.to_nvrtc_args(), "NVRTC arguments")?;
            typed(o.to_nvvm_args(), "NVVM arguments")?;
            if let Ok(l) = o.to_linker_options() {
                typed(l.to_nvjitlink_args(), "nvJitLink arguments")?;
            }
        }
    }

    /// NVRTC itself, on hostile sources, options and name expressions (few cases:
    /// each is a compilation).
    #[test]
    fn hostile_sources_compile_or_fail_typed() {
        require_libs!("nvrtc");
        let config = ProptestConfig::with_cases(cudars_tests::proptest_cases(8));
        let sources = prop_oneof![
            Just(SAXPY.to_string()),
            "(?s).{0,64}",
            Just(format!("{SAXPY}\0trailing")),
        ];
        let exprs =
            proptest::collection::vec(prop_oneof![Just("saxpy".to_string()), "(?s).{0,8}"], 0..3);
        // A fixed seed: the same cases every run. With random ones, long runs
        // (PROPTEST_CASES=20000) found inputs on which NVRTC itself takes the
        // process down, now refused: a ptxas option of only whitespace
        // (`a_ptxas_option_of_only_whitespace_is_refused`) and split compiles of
        // more threads than the machine can start
        // (`a_split_compile_of_more_threads_than_a_machine_has_is_refused`); a CI
        // run must not depend on drawing one. Set CUDARS_HOSTILE_RANDOM=1 to draw
        // new cases, CUDARS_HOSTILE_PRINT=1 (with --nocapture) to see each one
        // before NVRTC does.
        let rng = if std::env::var_os("CUDARS_HOSTILE_RANDOM").is_some() {
            proptest::test_runner::TestRng::from_seed(
                config.rng_algorithm,
                &std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
                    .to_le_bytes()
                    .repeat(2),
            )
        } else {
            proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm)
        };
        let mut runner = proptest::test_runner::TestRunner::new_with_rng(config, rng);
        let compiled = std::cell::Cell::new(0);
        let outcome = runner.run(
            &(sources, exprs, options(), any::<bool>()),
            |(src, exprs, mut o, plain)| {
                if plain {
                    // Options NVRTC accepts, so that the source reaches it.
                    o = ProgramOptions::default();
                }
                let exprs: Vec<&str> = exprs.iter().map(String::as_str).collect();
                if std::env::var_os("CUDARS_HOSTILE_PRINT").is_some() {
                    // Each case before NVRTC sees it: the last one printed is the
                    // one that took the process down (run with --nocapture).
                    eprintln!(
                        "hostile case: args {:?} exprs {exprs:?} source {src:?} options {o:?}",
                        o.to_nvrtc_args()
                    );
                }
                match Program::new(SourceCode::Cxx(&src), o) {
                    Ok(p) => match p.compile(CompileTarget::Ptx, &exprs) {
                        Ok(code) => {
                            compiled.set(compiled.get() + 1);
                            prop_assert!(!code.code().is_empty());
                        }
                        Err(
                            Error::InvalidArgument { .. }
                            | Error::Compile { .. }
                            | Error::Tool { .. },
                        ) => {}
                        Err(other) => prop_assert!(false, "compiling: {other:?}"),
                    },
                    Err(e) => typed::<()>(Err(e), "making the program")?,
                }
                Ok(())
            },
        );
        if let Err(e) = outcome {
            panic!("{e}");
        }
        println!("{} hostile programs compiled", compiled.get());
    }
}

/// Compiles `code` with `numba_debug`: it compiles, or the compiler says it
/// does not know the option (NVRTC 13.0 does not), typed and naming it.
fn numba_debug_compile(code: SourceCode<'_>, invalid: &str) {
    let options = ProgramOptions {
        numba_debug: true,
        debug: true,
        ..sm90()
    };
    let program = Program::new(code, options).unwrap();
    match program.compile(CompileTarget::Ptx, &[]) {
        Ok(ptx) => {
            println!("{}: compiled with numba_debug", program.backend());
            assert_eq!(ptx.code_type(), CodeType::Ptx);
        }
        Err(e) => {
            println!("{}: {}", program.backend(), e.report());
            let Error::Compile { log, source, .. } = &e else {
                panic!("{e:?}")
            };
            assert!(source.to_string().contains(invalid), "{source}");
            assert!(log.contains("numba-debug"), "{log}");
        }
    }
}

#[test]
fn numba_debug_reaches_nvrtc_and_nvvm_and_ptx_refuses_cxx_options() {
    require_libs!("nvrtc", "nvvm");
    numba_debug_compile(SourceCode::Cxx(SAXPY), "NVRTC_ERROR_INVALID_OPTION");
    numba_debug_compile(
        SourceCode::Nvvm(NVVM_IR.as_bytes()),
        "NVVM_ERROR_INVALID_OPTION",
    );
    // The C++ front-end options are refused by name for NVVM IR and PTX.
    let cxx = ProgramOptions {
        std: Some("c++17".into()),
        ..sm90()
    };
    for code in [
        SourceCode::Nvvm(NVVM_IR.as_bytes()),
        SourceCode::Ptx(".version 8.0"),
    ] {
        let e = Program::new(code, cxx.clone()).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        assert!(e.to_string().contains("`std`"), "{e}");
    }
}

/// A kernel that writes `__CUDA_ARCH__ * 10 + FROM`: which entry of a fatbin ran
/// (`FROM` is 1 for the cubins, 2 for the PTX).
const WHICH_ARCH: &str =
    "extern \"C\" __global__ void which_arch(int* out) { *out = __CUDA_ARCH__ * 10 + FROM; }\n";

fn which_arch(arch: &str, from: u32, target: CompileTarget) -> ObjectCode {
    let options = ProgramOptions {
        arch: Some(arch.into()),
        define_macro: vec![("FROM".into(), Some(from.to_string()))],
        ..Default::default()
    };
    cxx(WHICH_ARCH, options, target)
}

/// nvFatbin packs sm_80 and sm_90 cubins and compute_90 PTX into one fatbin,
/// on the CPU; the GPU test `fatbin_runs_the_sm_90_cubin` loads it.
#[test]
fn fatbin_holds_cubins_for_two_architectures_and_ptx() {
    require_libs!("nvrtc", "nvfatbin");
    let sm80 = which_arch("sm_80", 1, CompileTarget::Cubin);
    let sm90 = which_arch("sm_90", 1, CompileTarget::Cubin);
    let ptx = which_arch("compute_90", 2, CompileTarget::Ptx);
    let builder = FatbinBuilder::new()
        .cubin(&sm80, "sm_80")
        .unwrap()
        .cubin(&sm90, "90")
        .unwrap()
        .ptx(&ptx, "compute_90", "-O3")
        .unwrap();
    assert_eq!(builder.len(), 3);
    let fatbin = builder.clone().build().unwrap();
    assert_eq!(fatbin.code_type(), CodeType::Fatbin);
    let code = fatbin.code();
    // The fatbin header's magic, little-endian.
    assert_eq!(code[..4], 0xBA55_ED50u32.to_le_bytes());
    // Uncompressed, both cubins are in it whole.
    let plain = builder.compress(false).build().unwrap();
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(
        find(plain.code(), sm80.code()),
        "the sm_80 cubin is in the fatbin"
    );
    assert!(
        find(plain.code(), sm90.code()),
        "the sm_90 cubin is in the fatbin"
    );
    assert!(plain.code().len() > sm80.code().len() + sm90.code().len());
    // LTO-IR goes in too (for a later JIT link), with its JIT options.
    let lto = cxx(SAXPY, rdc(true), CompileTarget::Ltoir);
    assert_eq!(lto.code_type(), CodeType::Ltoir);
    let with_lto = FatbinBuilder::new()
        .add(&sm90, "sm_90")
        .unwrap()
        .ltoir(&lto, "lto_90", "-O3")
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(with_lto.code()[..4], 0xBA55_ED50u32.to_le_bytes());
}

#[test]
fn fatbin_builder_rejects_bad_entries_with_typed_errors() {
    let sm90 = ObjectCode::from_cubin(ELF.to_vec()).unwrap();
    let ptx = ObjectCode::from_ptx(".version 8.0\n").unwrap();
    is_invalid(FatbinBuilder::new().cubin(&ptx, "sm_90"), "not cubin");
    is_invalid(
        FatbinBuilder::new().cubin(&sm90, "sm_9"),
        "not an architecture",
    );
    is_invalid(FatbinBuilder::new().ptx(&ptx, "compute_90", "-O3\0"), "NUL");
    let fatbin = ObjectCode::from_fatbin(vec![1u8]).unwrap();
    is_invalid(
        FatbinBuilder::new().add(&fatbin, "90"),
        "cannot go into a fatbin",
    );
    is_invalid(FatbinBuilder::new().build(), "no entries");
    if cudars_pathfinder::load_nvidia_dynamic_lib("nvfatbin").is_err() {
        // Without nvFatbin, building says so (its source lists where it looked).
        let r = FatbinBuilder::new().cubin(&sm90, "sm_90").unwrap().build();
        assert!(matches!(r, Err(Error::Unavailable { .. })), "{r:?}");
    }
    require_libs!("nvfatbin");
    // nvFatbin's own errors come back as Tool errors naming the entry.
    match FatbinBuilder::new().cubin(&sm90, "sm_90").unwrap().build() {
        Err(
            e @ Error::Tool {
                source: ToolError::NvFatbin(_),
                ..
            },
        ) => {
            assert!(
                e.to_string()
                    .contains("adding cubin `cubin` for architecture 90 (entry 0)"),
                "{e}"
            );
        }
        other => panic!("expected an nvFatbin error, got {other:?}"),
    }
    match FatbinBuilder::new()
        .option("-no-such-option")
        .cubin(&sm90, "sm_90")
        .unwrap()
        .build()
    {
        Err(Error::Tool {
            source: ToolError::NvFatbin(e),
            context,
        }) => {
            assert_eq!(e.name(), "NVFATBIN_ERROR_UNRECOGNIZED_OPTION", "{context}");
            assert!(context.contains("-no-such-option"), "{context}");
        }
        other => panic!("expected an nvFatbin error, got {other:?}"),
    }
}

/// On an sm_90 GPU (the H100) the fatbin's sm_90 cubin runs: not the sm_80 one,
/// not the PTX. On another GPU, the entry the driver picks is checked against
/// the device's architecture.
#[test]
fn fatbin_runs_the_sm_90_cubin() {
    cudars_tests::require_gpu!();
    require_libs!("nvrtc", "nvfatbin");
    let d = cudars_core::Device::new(0).unwrap();
    d.set_current().unwrap();
    let fatbin = FatbinBuilder::new()
        .cubin(&which_arch("sm_80", 1, CompileTarget::Cubin), "sm_80")
        .unwrap()
        .cubin(&which_arch("sm_90", 1, CompileTarget::Cubin), "sm_90")
        .unwrap()
        .ptx(
            &which_arch("compute_90", 2, CompileTarget::Ptx),
            "compute_90",
            "",
        )
        .unwrap()
        .build()
        .unwrap();
    let s = d
        .create_stream(cudars_core::StreamOptions::default())
        .unwrap();
    let out = cudars_core::DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap();
    // Through a library (cuLibraryLoadData) …
    let kernel = cudars_core::Library::load(&fatbin, &Default::default())
        .unwrap()
        .get_kernel("which_arch")
        .unwrap();
    // SAFETY: `which_arch` takes one `int*`, and `out` holds one `i32`.
    unsafe { cudars_core::launch(&s, &cudars_core::LaunchConfig::new(1, 1), &kernel, &[&out]) }
        .unwrap();
    let got = out.to_vec(&s).unwrap()[0];
    let (major, minor) = d.compute_capability().unwrap();
    let cc = (major * 10 + minor) as i32;
    let want = match cc {
        90 => 9001,
        // Another Hopper-or-newer GPU JIT-compiles the compute_90 PTX.
        c if c > 90 => 9002,
        // sm_80 binaries run on every 8.x GPU.
        80..=89 => 8001,
        c => panic!("the fatbin has nothing for sm_{c}"),
    };
    assert_eq!(got, want, "sm_{cc}");
    // … and through a module (cuModuleLoadData) in the primary context.
    let ctx = cudars_core::Context::primary(&d).unwrap();
    let module = cudars_core::Module::load(&ctx, &fatbin, &Default::default()).unwrap();
    let kernel = module.get_function("which_arch").unwrap();
    let out2 = cudars_core::DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap();
    // SAFETY: as above.
    unsafe { cudars_core::launch(&s, &cudars_core::LaunchConfig::new(1, 1), &kernel, &[&out2]) }
        .unwrap();
    assert_eq!(out2.to_vec(&s).unwrap()[0], want, "sm_{cc}");
}

/// `LinkerOptions::numba_debug` reaches nvJitLink as `-numba-debug`, which
/// decides (the releases of CUDA 12 and 13 refuse it with their
/// unrecognised-option error; the error's context lists the options); the driver's linker has no
/// counterpart and refuses it before the driver is called. Never ignored.
#[test]
fn linker_numba_debug_reaches_nvjitlink_or_is_refused() {
    let options = LinkerOptions {
        numba_debug: true,
        ..LinkerOptions::new("sm_90")
    };
    assert_eq!(
        options.to_nvjitlink_args().unwrap(),
        ["-arch=sm_90", "-numba-debug"]
    );
    let ptx = ObjectCode::from_ptx(HAND_PTX).unwrap();
    let e = Linker::with_backend(&[&ptx], options.clone(), LinkerBackend::Driver).unwrap_err();
    assert!(
        matches!(e, Error::Unsupported { .. }) && e.to_string().contains("`numba_debug`"),
        "{e}"
    );

    require_libs!("nvJitLink");
    match Linker::with_backend(&[&ptx], options, LinkerBackend::NvJitLink).and_then(|l| l.link()) {
        // An nvJitLink that knows the option links as usual.
        Ok(cubin) => assert!(cubin.code().starts_with(ELF)),
        Err(e) => {
            let report = e.report().to_string();
            println!("{report}");
            let code = match &e {
                Error::Tool {
                    source: ToolError::NvJitLink(source),
                    ..
                } => source.code(),
                other => panic!("not nvJitLink's error: {other:?}"),
            };
            assert_eq!(
                code,
                cudars_core::cudars_bindings::nvjitlink::NVJITLINK_ERROR_UNRECOGNIZED_OPTION,
                "{report}"
            );
            assert!(report.contains("numba-debug"), "{report}");
        }
    }
}

/// Incremental linking (`LinkerOptions::relocatable`, nvJitLink 13.2+) and linked
/// LTO-IR (`Linker::link_ltoir`, nvJitLink 13.3+): a caller with an undefined
/// `scale` links on its own into a relocatable stage, which a final link with the
/// callee resolves. On an older nvJitLink each is the typed `Unsupported` naming
/// the version it needs and the loaded one, before nvJitLink is called.
#[test]
fn incremental_links_and_linked_ltoir_or_say_which_nvjitlink_they_need() {
    require_libs!("nvrtc", "nvJitLink");
    let version = cudars_core::cudars_bindings::nvjitlink::version().unwrap();
    let have = (version.major, version.minor);
    let loaded = format!("{}.{}", version.major, version.minor);
    let unsupported = |r: Result<ObjectCode, Error>, needs: &str| match r {
        Err(e @ Error::Unsupported { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("nvJitLink {needs}")) && msg.contains(&loaded),
                "{msg}"
            );
        }
        other => panic!("expected Unsupported (needs {needs}) on nvJitLink {loaded}: {other:?}"),
    };
    let relocatable = LinkerOptions {
        relocatable: true,
        ..LinkerOptions::new("sm_90")
    };
    assert!(
        relocatable
            .to_nvjitlink_args()
            .unwrap()
            .contains(&"-r".to_owned())
    );
    // Relocatable PTX does not exist; the driver's linker has no `-r`.
    is_invalid(
        LinkerOptions {
            ptx: true,
            link_time_optimization: true,
            ..relocatable.clone()
        }
        .to_nvjitlink_args(),
        "relocatable",
    );

    // Native stages: the caller alone (its `scale` undefined), then the callee.
    let caller = cxx(CALLER, rdc(false), CompileTarget::Cubin);
    let callee = cxx(CALLEE, rdc(false), CompileTarget::Cubin);
    let stage = Linker::new(&[&caller], relocatable.clone()).and_then(|l| l.link());
    if have < (13, 2) {
        unsupported(stage, "13.2");
    } else {
        let stage = stage.unwrap();
        assert_eq!(stage.code_type(), CodeType::Cubin);
        assert!(stage.code().starts_with(ELF));
        let last = Linker::new(&[&stage, &callee], LinkerOptions::new("sm_90"))
            .unwrap()
            .link()
            .unwrap();
        assert!(last.code().starts_with(ELF));
    }

    // LTO-IR stages: the caller's LTO-IR joined without its callee, then finished.
    let caller = cxx(CALLER, rdc(true), CompileTarget::Ltoir);
    let callee = cxx(CALLEE, rdc(true), CompileTarget::Ltoir);
    let lto = LinkerOptions {
        link_time_optimization: true,
        ..LinkerOptions::new("sm_90")
    };
    // Without -lto there is no linked LTO-IR, whatever the version.
    let plain = Linker::new(&[&callee], LinkerOptions::new("sm_90"));
    if let Ok(plain) = plain {
        is_invalid(plain.link_ltoir(), "link_time_optimization");
    }
    let joined = Linker::new(&[&caller, &callee], lto.clone()).and_then(|l| l.link_ltoir());
    if have < (13, 3) {
        unsupported(joined, "13.3");
    } else {
        let joined = joined.unwrap();
        assert_eq!(joined.code_type(), CodeType::Ltoir);
        assert!(!joined.code().is_empty());
        let cubin = Linker::new(&[&joined], lto.clone())
            .unwrap()
            .link()
            .unwrap();
        assert!(cubin.code().starts_with(ELF));
        // Both outputs of one linker, each read once and then the same again.
        let linker = Linker::new(&[&caller, &callee], lto.clone()).unwrap();
        let a = linker.link_ltoir().unwrap();
        assert!(linker.link().unwrap().code().starts_with(ELF));
        assert_eq!(linker.link_ltoir().unwrap().code(), a.code());
        // An incremental LTO chain: the caller alone, then with its callee.
        let stage = Linker::new(
            &[&caller],
            LinkerOptions {
                relocatable: true,
                ..lto.clone()
            },
        )
        .unwrap()
        .link_ltoir()
        .unwrap();
        let last = Linker::new(&[&stage, &callee], lto)
            .unwrap()
            .link()
            .unwrap();
        assert!(last.code().starts_with(ELF));
    }
}

/// `Program.handle`: a compiler program of its own, for raw NVRTC calls, made
/// from the program's source and name; compiled here by hand with the program's
/// options, it gives what `compile` gives.
#[test]
fn a_program_hands_out_a_compiler_program_for_raw_calls() {
    require_libs!("nvrtc");
    use cudars_core::cudars_bindings::nvrtc as raw_nvrtc;
    use cudars_core::{ProgramHandle, RawProgramHandle};
    use std::ffi::{CString, c_char};
    let options = ProgramOptions {
        name: Some("saxpy.cu".into()),
        ..sm90()
    };
    let program = Program::new(SourceCode::Cxx(SAXPY), options.clone()).unwrap();
    let handle: ProgramHandle = program.create_handle().unwrap();
    assert_eq!(handle.backend(), ProgramBackend::Nvrtc);
    assert!(handle.linker().is_none());
    let RawProgramHandle::Nvrtc(raw) = handle.as_raw() else {
        panic!("a C++ program's handle is NVRTC's: {handle:?}")
    };
    assert!(!raw.is_null());
    // Each call makes a program of its own.
    let other = program.create_handle().unwrap();
    assert_ne!(other.as_raw(), handle.as_raw());
    let args: Vec<CString> = options
        .to_nvrtc_args()
        .unwrap()
        .into_iter()
        .map(|a| CString::new(a).unwrap())
        .collect();
    let ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: a live program, owned by `handle`; `ptrs` holds `args.len()`
    // NUL-terminated strings, alive for the call.
    let rc = unsafe { raw_nvrtc::nvrtcCompileProgram(raw, ptrs.len() as i32, ptrs.as_ptr()) };
    assert_eq!(rc, raw_nvrtc::NVRTC_SUCCESS);
    let mut size = 0usize;
    // SAFETY: a compiled program; `size` is valid for writes.
    let rc = unsafe { raw_nvrtc::nvrtcGetPTXSize(raw, &mut size) };
    assert_eq!(rc, raw_nvrtc::NVRTC_SUCCESS);
    let mut ptx = vec![0u8; size];
    // SAFETY: `ptx` holds the `size` bytes NVRTC said it writes.
    let rc = unsafe { raw_nvrtc::nvrtcGetPTX(raw, ptx.as_mut_ptr().cast()) };
    assert_eq!(rc, raw_nvrtc::NVRTC_SUCCESS);
    let text = String::from_utf8_lossy(&ptx);
    assert!(
        text.contains(".entry saxpy") && text.contains(".target sm_90"),
        "{text}"
    );
    // The same PTX as the program's own compile.
    let own = program.compile(CompileTarget::Ptx, &[]).unwrap();
    assert_eq!(
        text.trim_end_matches('\0'),
        std::str::from_utf8(own.code()).unwrap()
    );
    drop(handle);
    // `ProgramHandle` is `Send` (rule 11): destroyed on another thread.
    std::thread::spawn(move || drop(other)).join().unwrap();
}

/// An NVVM IR program's handle is an NVVM program holding the IR; a PTX
/// program's is the linker holding the PTX (which needs an `arch`).
#[test]
fn nvvm_and_ptx_programs_hand_out_their_compilers_handles() {
    require_libs!("nvvm", "nvJitLink");
    use cudars_core::RawProgramHandle;
    use cudars_core::cudars_bindings::nvvm;
    let program = Program::new(SourceCode::Nvvm(NVVM_IR.as_bytes()), sm90()).unwrap();
    let handle = program.create_handle().unwrap();
    assert_eq!(handle.backend(), ProgramBackend::Nvvm);
    let RawProgramHandle::Nvvm(raw) = handle.as_raw() else {
        panic!("an NVVM IR program's handle is NVVM's: {handle:?}")
    };
    // The module is in the program: it verifies (NVVM reads the IR now).
    // SAFETY: a live program holding one module; no options.
    let rc = unsafe { nvvm::nvvmVerifyProgram(raw, 0, std::ptr::null_mut()) };
    assert_eq!(rc, nvvm::NVVM_SUCCESS);
    let ptx = cxx(SAXPY, sm90(), CompileTarget::Ptx);
    let text = std::str::from_utf8(ptx.code()).unwrap();
    let program = Program::new(SourceCode::Ptx(text), sm90()).unwrap();
    let handle = program.create_handle().unwrap();
    assert_eq!(handle.backend(), ProgramBackend::NvJitLink);
    let linker = handle.linker().expect("a PTX program's handle is a linker");
    assert!(matches!(handle.as_raw(), RawProgramHandle::Linker(h) if h == linker.handle()));
    assert!(linker.link().unwrap().code().starts_with(ELF));
}

/// `GraphCondition::DEVICE_DECLARATIONS` is all NVRTC needs for a kernel that sets a
/// condition: the PTX calls `cudaGraphSetConditional`, and the whole-program cubin
/// (no relocatable code, nothing linked) still compiles: ptxas resolves the call itself,
/// as it does `vprintf`'s, so no `cudadevrt` is needed.
#[test]
fn the_condition_declarations_compile_without_cudadevrt() {
    require_libs!("nvrtc");
    let src = format!(
        "{}{}",
        cudars_core::GraphCondition::DEVICE_DECLARATIONS,
        r#"extern "C" __global__ void step(int *left, cudaGraphConditionalHandle h) {
            cudaGraphSetConditional(h, --*left > 0 ? 1u : 0u);
        }"#
    );
    let cubin = cxx(&src, sm90(), CompileTarget::Cubin);
    assert!(!cubin.code().is_empty());
    let ptx = cxx(&src, sm90(), CompileTarget::Ptx);
    let text = String::from_utf8_lossy(ptx.code());
    assert!(text.contains(".entry step"), "{text}");
    assert!(text.contains("cudaGraphSetConditional"), "{text}");
    // Without the declarations NVRTC does not know the names.
    let bare = src.replace(cudars_core::GraphCondition::DEVICE_DECLARATIONS, "");
    assert!(
        Program::new(SourceCode::Cxx(&bare), sm90())
            .unwrap()
            .compile(CompileTarget::Ptx, &[])
            .is_err()
    );
}
