//! Each error says each thing once. The chains of real failures (no driver, no
//! NVRTC, a compile error, a driver call that fails) are walked through
//! `source()`, as `anyhow` and other reporters do, and every level must say only
//! its own part: no message contains the message of a level below it, and each
//! piece of text (the context, the reason, each place searched, the CUDA code)
//! appears exactly once in the whole chain.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::error::Error as StdError;

use cudars_core::cudars_bindings::{ApiKind, Unavailable};
use cudars_core::{
    CompileTarget, Device, Error, Program, ProgramOptions, Report, SourceCode, StreamOptions,
};

/// The messages of an error and of each of its sources, in order.
fn chain(e: &(dyn StdError + 'static)) -> Vec<String> {
    std::iter::successors(Some(e), |&e| e.source())
        .map(ToString::to_string)
        .collect()
}

/// Checks that no level of `e` repeats a level below it, and that each of
/// `pieces` appears exactly once in the chain and in [`Error::report`].
fn assert_said_once(e: &Error, pieces: &[&str]) {
    let levels = chain(e);
    for (i, outer) in levels.iter().enumerate() {
        for inner in &levels[i + 1..] {
            assert!(
                !outer.contains(inner.as_str()),
                "level {i} repeats a level below it:\n{levels:#?}"
            );
        }
    }
    let joined = levels.join("\n");
    let report = e.report().to_string();
    for piece in pieces {
        assert_eq!(
            joined.matches(piece).count(),
            1,
            "{piece:?} is not said exactly once in the chain:\n{levels:#?}"
        );
        assert_eq!(
            report.matches(piece).count(),
            1,
            "{piece:?} is not said exactly once in the report:\n{report}"
        );
    }
    // The report is the chain, in order.
    assert!(report.starts_with(&levels[0]), "{report}");
    assert!(report.ends_with(&levels[levels.len() - 1]), "{report}");
    println!("{report}");
    // `{e:?}`, what `fn main() -> Result<(), Error>` prints, is the report as
    // `anyhow` lays it out: the error, then each cause under "Caused by:", in
    // order, each piece once.
    let debug = format!("{e:?}");
    assert!(debug.starts_with(&levels[0]), "{debug}");
    if levels.len() > 1 {
        let (_, causes) = debug
            .split_once("\n\nCaused by:\n")
            .unwrap_or_else(|| panic!("no \"Caused by:\" in {debug}"));
        let mut at = 0;
        for level in &levels[1..] {
            let first = level.lines().next().unwrap_or_default();
            let i = causes[at..]
                .find(first)
                .unwrap_or_else(|| panic!("{first:?} is not among the causes, in order:\n{debug}"));
            at += i + first.len();
        }
    } else {
        assert_eq!(debug, levels[0]);
    }
    for piece in pieces {
        assert_eq!(debug.matches(piece).count(), 1, "{piece:?} in:\n{debug}");
    }
}

/// The search list of a library that could not be loaded, one line a place.
fn search_steps(e: &cudars_pathfinder::PathfinderError) -> Vec<String> {
    let steps: Vec<String> = e.searched().iter().map(ToString::to_string).collect();
    assert!(!steps.is_empty(), "{e}");
    steps
}

/// Without a driver, `Device::count()` is unavailable (not a CUDA code): the
/// context, the reason and each place searched are said once. With a driver,
/// a driver call that fails for real is checked the same way.
#[test]
fn a_missing_driver_or_a_failing_driver_call_is_said_once() {
    let pf = match cudars_pathfinder::load_nvidia_dynamic_lib("cuda") {
        Ok(_) => return a_failing_driver_call_is_said_once(),
        Err(pf) => pf,
    };
    let e = Device::count().unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
    assert!(matches!(
        e.unavailable(),
        Some(Unavailable::Library {
            api: ApiKind::Driver,
            ..
        })
    ));
    let levels = chain(&e);
    assert_eq!(levels.len(), 3, "{levels:#?}");
    let steps = search_steps(&pf);
    let mut pieces = vec![
        "initialising the CUDA driver (cuInit)",
        "the CUDA driver library could not be loaded",
        "library `cuda` not found; searched, in order:",
    ];
    pieces.extend(steps.iter().map(String::as_str));
    assert_said_once(&e, &pieces);
    // What used to stand in for the missing library is gone.
    let report = e.report().to_string();
    for noise in ["CUDA_ERROR_NOT_FOUND", "not described", "(500)"] {
        assert!(!report.contains(noise), "{noise:?} in {report}");
    }
}

/// A driver call that fails: the context, then the driver's code and
/// description, each once.
fn a_failing_driver_call_is_said_once() {
    let e = match Device::count().and_then(|_| Device::new(0)) {
        // A driver but no usable GPU: cuInit's own error.
        Err(e) => e,
        Ok(dev) => {
            // More memory than any GPU has.
            let stream = dev.create_stream(StreamOptions::default()).unwrap();
            dev.allocate(1 << 60, &stream).unwrap_err()
        }
    };
    let Error::Driver { context, source } = &e else {
        panic!("expected a driver error, got {e:?}");
    };
    let code = format!("{} ({})", source.name(), source.code().0);
    assert_said_once(&e, &[context.as_ref(), &code]);
    assert_eq!(chain(&e).len(), 2);
}

/// Compiling without NVRTC (the pathfinder pointed at nothing, in a child
/// process with an empty environment) is unavailable, not
/// `NVRTC_ERROR_INTERNAL_ERROR`: each place searched is said once.
#[test]
fn a_missing_nvrtc_is_said_once() {
    const TEST: &str = "a_missing_nvrtc_is_said_once";
    if !cudars_tests::in_child() {
        // Nothing but a virtual environment that does not exist: no PATH, no
        // CONDA_PREFIX, no CUDA_PATH, no LD_LIBRARY_PATH.
        let nowhere = std::env::temp_dir().join("cuda-rs-no-such-venv");
        cudars_tests::run_test_in_child(TEST, &[("VIRTUAL_ENV", nowhere.as_os_str())]);
        return;
    }
    let pf = match cudars_pathfinder::load_nvidia_dynamic_lib("nvrtc") {
        Ok(lib) => {
            println!(
                "NVRTC is found even with an empty environment ({}): the missing-NVRTC \
                 path is not exercised here",
                lib.abs_path().display()
            );
            return;
        }
        Err(pf) => pf,
    };
    let e = Program::new(
        SourceCode::Cxx("extern \"C\" __global__ void k() {}"),
        ProgramOptions {
            name: Some("k.cu".into()),
            ..Default::default()
        },
    )
    .and_then(|p| p.compile(CompileTarget::Ptx, &[]))
    .unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
    assert_eq!(
        e.unavailable().map(Unavailable::api),
        Some(ApiKind::Nvrtc),
        "{e:?}"
    );
    let steps = search_steps(&pf);
    let mut pieces = vec![
        "the NVRTC library could not be loaded",
        "library `nvrtc` not found; searched, in order:",
    ];
    pieces.extend(steps.iter().map(String::as_str));
    assert_said_once(&e, &pieces);
    assert!(e.to_string().contains("k.cu"), "{e}");
    let report = e.report().to_string();
    for noise in ["NVRTC_ERROR", "not described"] {
        assert!(!report.contains(noise), "{noise:?} in {report}");
    }
    // The same for a call that asks NVRTC something.
    let e = cudars_core::nvrtc::version().unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
    assert_said_once(&e, &["querying the NVRTC version"]);
}

/// A compile error: the context and the log at the top, NVRTC's code below,
/// each once (NVRTC describes its codes by their names: said once, too).
#[test]
fn a_compile_error_is_said_once() {
    cudars_tests::require_libs!("nvrtc");
    let e = Program::new(
        SourceCode::Cxx("__global__ void k(int *p) { *p = undefined_name; }\n"),
        ProgramOptions {
            name: Some("bad.cu".into()),
            ..Default::default()
        },
    )
    .and_then(|p| p.compile(CompileTarget::Ptx, &[]))
    .unwrap_err();
    assert!(matches!(e, Error::Compile { .. }), "{e:?}");
    let levels = chain(&e);
    assert_eq!(levels.len(), 2, "{levels:#?}");
    assert_eq!(levels[1], "NVRTC_ERROR_COMPILATION (6)");
    assert_said_once(
        &e,
        &[
            "compiling bad.cu with NVRTC",
            "identifier \"undefined_name\" is undefined",
            "NVRTC_ERROR_COMPILATION",
        ],
    );
    // The log's last line and NVRTC's code do not run together in the report.
    let report = e.report().to_string();
    assert!(
        report.ends_with("\nNVRTC_ERROR_COMPILATION (6)"),
        "{report}"
    );
}

/// [`Report`] works for any error, a `cudars_bindings` one included.
#[test]
fn a_report_joins_any_chain() {
    use cudars_core::cudars_bindings::IntoResult as _;
    let e = cudars_core::cudars_bindings::nvrtc::NVRTC_ERROR_COMPILATION
        .result()
        .unwrap_err();
    assert_eq!(Report::new(&e).to_string(), e.to_string());
    let io = std::io::Error::other("disk on fire");
    let outer = std::io::Error::other(Wrapped(io));
    assert_eq!(Report::new(&outer).to_string(), "wrapped: disk on fire");
}

#[derive(Debug)]
struct Wrapped(std::io::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("wrapped")
    }
}

impl StdError for Wrapped {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

/// The pathfinder's error (what `ProgramOptions::with_toolkit_headers` returns)
/// goes through `?` in a function returning this crate's `Result`, kept as the source.
#[test]
fn a_pathfinder_error_converts_with_its_source() {
    fn find() -> cudars_core::Result<()> {
        Err(
            cudars_core::cudars_pathfinder::PathfinderError::NotAvailable {
                kind: cudars_core::cudars_pathfinder::ArtifactKind::HeaderDir,
                name: "cccl".into(),
                platform: "nowhere",
            },
        )?;
        Ok(())
    }
    let e = find().unwrap_err();
    assert!(matches!(e, Error::Pathfinder { .. }), "{e:#?}");
    let report = e.report().to_string();
    assert!(
        report.starts_with("looking for NVIDIA's files: "),
        "{report}"
    );
    assert!(report.contains("`cccl`"), "{report}");
}
