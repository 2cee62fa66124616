//! Unit tests of `ProgramOptions` and the argument vector it renders.

use super::*;
use crate::{code::compile::program::Program, code::compile::program::SourceCode};

fn sm90() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

#[test]
fn numba_debug_is_spelled_per_backend_and_ignored_for_ptx() {
    let o = ProgramOptions {
        numba_debug: true,
        debug: true,
        // SAFETY: `-X` starts no threads in NVRTC or NVVM (both refuse it);
        // this test only renders the options.
        extra_unchecked: unsafe { crate::code::tool_args::UncheckedOptions::new(["-X"]) },
        ..sm90()
    };
    assert_eq!(
        o.to_nvrtc_args().unwrap(),
        ["-arch=sm_90", "--device-debug", "--numba-debug", "-X"]
    );
    assert_eq!(
        o.to_nvvm_args().unwrap(),
        ["-arch=compute_90", "-g", "--numba-debug", "-X"]
    );
    let e = Program::new(SourceCode::Ptx(".version 8.0"), o).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    assert!(
        e.to_string()
            .ends_with("the PTX linker has no counterpart for `extra_unchecked`"),
        "{e}"
    );
}

#[test]
fn backends_refuse_every_option_they_cannot_take_by_name() {
    let cxx_only = ProgramOptions {
        std: Some("c++17".into()),
        define_macro: vec![("N".into(), None)],
        max_register_count: Some(32),
        pch: true,
        lineinfo: true,
        ..sm90()
    };
    let e = cxx_only.to_nvvm_args().unwrap_err();
    assert!(e.required_driver().is_none());
    assert!(
        e.to_string().ends_with(
            "NVVM has no counterpart for `std`, `max_register_count`, `define_macro`, `pch`"
        ),
        "{e}"
    );
    // The linker takes `max_register_count` and `lineinfo`, not the C++ ones.
    let e = Program::new(SourceCode::Ptx(".version 8.0"), cxx_only).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("the PTX linker has no counterpart for `std`, `define_macro`, `pch`"),
        "{e}"
    );
    // What each backend takes is accepted.
    let nvvm = ProgramOptions {
        name: Some("k".into()),
        debug: true,
        lineinfo: true,
        device_code_optimize: Some(false),
        ftz: Some(true),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fma: Some(false),
        use_fast_math: true,
        link_time_optimization: true,
        extra: vec!["-opt=2".into()],
        ..sm90()
    };
    assert!(nvvm.to_nvvm_args().is_ok());
    let ptx = ProgramOptions {
        name: Some("k".into()),
        max_register_count: Some(64),
        time: Some("t.csv".into()),
        debug: true,
        lineinfo: true,
        ftz: Some(true),
        prec_div: Some(false),
        prec_sqrt: Some(false),
        fma: Some(true),
        split_compile: Some(2),
        ptxas_options: vec!["-v".into()],
        no_cache: true,
        ..sm90()
    };
    assert!(Program::new(SourceCode::Ptx(".version 8.0"), ptx).is_ok());
    // Every field of the struct is known to the check. The literal below
    // names each field (no `..`), so a new field must be added to it, and
    // the count to `set_fields`.
    let all_set = ProgramOptions {
        name: Some("n".into()),
        arch: Some("sm_90".into()),
        std: Some("c++17".into()),
        relocatable_device_code: true,
        extensible_whole_program: true,
        debug: true,
        lineinfo: true,
        device_code_optimize: Some(true),
        ptxas_options: vec!["-v".into()],
        max_register_count: Some(1),
        ftz: Some(true),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fma: Some(true),
        use_fast_math: true,
        extra_device_vectorization: true,
        link_time_optimization: true,
        gen_opt_lto: true,
        define_macro: vec![("A".into(), None)],
        undefine_macro: vec!["B".into()],
        include_path: vec!["/i".into()],
        pre_include: vec!["p.h".into()],
        no_source_include: true,
        builtin_move_forward: Some(true),
        builtin_initializer_list: Some(true),
        disable_warnings: true,
        restrict: true,
        device_as_default_execution_space: true,
        device_int128: true,
        device_float128: true,
        optimization_info: Some("inline".into()),
        no_display_error_number: true,
        diag_error: vec![1],
        diag_suppress: vec![2],
        diag_warn: vec![3],
        brief_diagnostics: Some(true),
        time: Some("t".into()),
        split_compile: Some(0),
        fdevice_syntax_only: true,
        minimal: true,
        no_cache: true,
        fdevice_time_trace: Some("t.json".into()),
        frandom_seed: Some("1".into()),
        ofast_compile: Some("min".into()),
        extra_sources: vec![("m".into(), b"x".to_vec())],
        use_libdevice: true,
        pch: true,
        create_pch: Some("a.pch".into()),
        use_pch: Some("b.pch".into()),
        pch_dir: Some("d".into()),
        pch_messages: Some(true),
        pch_verbose: Some(true),
        instantiate_templates_in_pch: Some(true),
        use_bundled_headers: true,
        bundled_headers_dir: Some("h".into()),
        numba_debug: true,
        extra: vec!["-x".into()],
        // SAFETY: never passed to a compiler (this test only renders options).
        extra_unchecked: unsafe { crate::code::tool_args::UncheckedOptions::new(["-y"]) },
    };
    assert_eq!(all_set.set_fields().len(), 58);
    let refused = all_set.to_nvvm_args().unwrap_err().to_string();
    assert_eq!(
        refused.matches('`').count() / 2,
        58 - NVVM_FIELDS.len(),
        "{refused}"
    );
}

#[test]
fn options_as_bytes_per_backend() {
    let o = ProgramOptions {
        debug: true,
        ..sm90()
    };
    assert_eq!(
        o.as_bytes(CompilerBackend::Nvrtc, Some(CompileTarget::Ltoir))
            .unwrap(),
        [b"-arch=sm_90".to_vec(), b"--device-debug".to_vec()]
    );
    assert_eq!(
        o.as_bytes(CompilerBackend::Nvvm, Some(CompileTarget::Ltoir))
            .unwrap(),
        [
            b"-arch=compute_90".to_vec(),
            b"-g".to_vec(),
            b"-gen-lto".to_vec()
        ]
    );
    assert_eq!(o.as_bytes(CompilerBackend::Nvvm, None).unwrap().len(), 2);
    let lto = ProgramOptions {
        link_time_optimization: true,
        ..o
    };
    // `-gen-lto` once, however it is asked for.
    let args = lto
        .as_bytes(CompilerBackend::Nvvm, Some(CompileTarget::Ltoir))
        .unwrap();
    assert_eq!(args.iter().filter(|a| *a == b"-gen-lto").count(), 1);
    assert_eq!(
        "NVRTC".parse::<CompilerBackend>().unwrap(),
        CompilerBackend::Nvrtc
    );
    assert_eq!(
        "nvvm".parse::<CompilerBackend>().unwrap(),
        CompilerBackend::Nvvm
    );
    let e = "nvjitlink".parse::<CompilerBackend>().unwrap_err();
    assert_eq!(e.invalid_kind(), Some(crate::error::InvalidKind::Other));
}

#[test]
#[cfg_attr(miri, ignore = "loads NVRTC (dlopen), which Miri cannot run")]
fn bundled_headers_are_one_option_with_their_directory() {
    let dir = PathBuf::from("/tmp/headers here");
    let options = ProgramOptions {
        use_bundled_headers: true,
        bundled_headers_dir: Some(dir.clone()),
        ..Default::default()
    };
    assert_eq!(
        options.to_nvrtc_args().ok(),
        Some(vec!["--use-bundled-headers=/tmp/headers here".to_owned()])
    );
    // The directory alone passes nothing.
    let options = ProgramOptions {
        bundled_headers_dir: Some(dir),
        ..Default::default()
    };
    assert_eq!(options.to_nvrtc_args().ok(), Some(Vec::new()));
    // Without a directory, the default one (under the user's cache).
    let options = ProgramOptions {
        use_bundled_headers: true,
        ..Default::default()
    };
    if let Ok(default) = ProgramOptions::default_bundled_headers_dir() {
        let shown = default.display().to_string();
        assert!(shown.contains("cuda-rs/nvrtc-bundled-headers"), "{shown}");
        assert_eq!(
            options.to_nvrtc_args().ok(),
            Some(vec![format!("--use-bundled-headers={}", default.display())])
        );
    }
}

#[test]
fn macro_names() {
    for ok in ["N", "_x1", "F(a,b)", "F()", "F(a, ...)"] {
        assert!(is_macro_name(ok), "{ok}");
    }
    for bad in ["", "1N", "A-B", "F(a", "F(1)", "A B"] {
        assert!(!is_macro_name(bad), "{bad}");
    }
}
