//! Free-form options and images from outside, as a hostile user gives them
//! (issue 41, points 3 and 9): every option vector reaches NVRTC or nvJitLink
//! only after one parser has read it as the tool does, and every image reaches
//! the driver's loaders only after a check chosen by what its bytes are. These
//! tests need no GPU; those that reach a tool skip without its library (and
//! fail without it when `CUDA_RS_REQUIRE_WHEELS=1`). The inputs that crashed
//! the process are never handed to a tool here: each is asserted refused by the
//! option check first.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{
    CodeType, CompileTarget, Error, InvalidKind, Library, Linker, LinkerBackend, LinkerOptions,
    ObjectCode, Program, ProgramOptions, SourceCode,
};
use cudars_tests::require_libs;
use proptest::prelude::*;

const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {\n\
  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry k() { ret; }\n";

fn sm90() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A typed refusal of a split compile: [`InvalidKind::OutOfRange`].
fn out_of_range<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => {
            assert_eq!(
                e.invalid_kind(),
                Some(InvalidKind::OutOfRange),
                "{what}: {e}"
            );
            assert!(e.to_string().contains("1024"), "{what}: {e}");
        }
        other => panic!("{what}: expected a refused split compile, got {other:?}"),
    }
}

/// `ptxas_options: ["--split-compile"]` and `extra: ["-Xptxas=1962186399"]`
/// each passed the old per-field check; NVRTC joins them into ptxas's
/// `--split-compile 1962186399` and dies of SIGSEGV (exit 139, seen with NVRTC
/// 13.0 on a CPU). Read as one vector, it is refused.
#[test]
fn a_split_compile_split_across_fields_is_refused() {
    let options = ProgramOptions {
        ptxas_options: strings(&["--split-compile"]),
        extra: strings(&["-Xptxas=1962186399"]),
        ..sm90()
    };
    // First without NVRTC, so that the old code fails here, not in NVRTC.
    out_of_range(options.to_nvrtc_args(), "to_nvrtc_args");
    let e = options.to_nvrtc_args().unwrap_err().to_string();
    assert!(e.contains("`extra`"), "the count is in `extra`: {e}");
    out_of_range(
        Program::new(SourceCode::Cxx(SAXPY), options.clone()),
        "Program::new",
    );
    // The same through `extra` alone, in each of NVRTC's forwarding spellings.
    for extra in [
        &["-Xptxas=--split-compile", "-Xptxas=1962186399"][..],
        &[
            "--ptxas-options=--split-compile",
            "--ptxas-options",
            "1962186399",
        ],
        &["-Xptxas", "--split-compile,1962186399"],
        &["--ptxas-options=-v,--split-compile", "-Xptxas=0x74f4b79f"],
    ] {
        let o = ProgramOptions {
            extra: strings(extra),
            ..sm90()
        };
        out_of_range(o.to_nvrtc_args(), &format!("{extra:?}"));
    }
}

/// `LinkerOptions::extra: ["-Xptxas=--split-compile=1962186399"]` was not
/// checked at all; nvJitLink dies of SIGSEGV. Now refused before nvJitLink is
/// created.
#[test]
fn a_split_compile_in_the_linkers_extra_is_refused() {
    for extra in [
        &["-Xptxas=--split-compile=1962186399"][..],
        &["-Xptxas", "--split-compile=1962186399"],
        &["-split-compile=1962186399"],
        &["-split-compile-extended", "1962186399"],
        &["-Xptxas=--split-compile", "-Xptxas=1962186399"],
    ] {
        let options = LinkerOptions {
            extra: strings(extra),
            ..LinkerOptions::new("sm_90")
        };
        out_of_range(options.to_nvjitlink_args(), &format!("{extra:?}"));
    }
    let options = LinkerOptions {
        extra: strings(&["-Xptxas=--split-compile=1962186399"]),
        ..LinkerOptions::new("sm_90")
    };
    // Checked above, so nvJitLink is never given the count: a typed error.
    assert!(options.to_nvjitlink_args().is_err());
    require_libs!("nvJitLink");
    let ptx = ObjectCode::from_ptx(PTX).unwrap();
    out_of_range(Linker::new(&[&ptx], options), "Linker::new");
}

/// `ProgramOptions::split_compile` for PTX went to nvJitLink with no bound,
/// and `LinkerOptions::split_compile`/`split_compile_extended` had none: 1500
/// started about 1400 threads. Each is bounded now.
#[test]
fn every_typed_split_compile_is_bounded() {
    for (n, ok) in [
        (0, true),
        (1024, true),
        (1025, false),
        (1500, false),
        (u32::MAX, false),
    ] {
        let linker = LinkerOptions {
            split_compile: Some(n),
            ..LinkerOptions::new("sm_90")
        };
        let extended = LinkerOptions {
            split_compile_extended: Some(n),
            ..LinkerOptions::new("sm_90")
        };
        let ptx = ProgramOptions {
            split_compile: Some(n),
            ..sm90()
        };
        if ok {
            assert!(linker.to_nvjitlink_args().is_ok(), "{n}");
            assert!(extended.to_nvjitlink_args().is_ok(), "{n}");
            assert!(ptx.to_linker_options().unwrap().to_nvjitlink_args().is_ok());
            assert!(Program::new(SourceCode::Ptx(PTX), ptx).is_ok(), "{n}");
        } else {
            out_of_range(linker.to_nvjitlink_args(), "split_compile");
            out_of_range(extended.to_nvjitlink_args(), "split_compile_extended");
            out_of_range(
                ptx.to_linker_options().unwrap().to_nvjitlink_args(),
                "PTX through to_linker_options",
            );
            out_of_range(Program::new(SourceCode::Ptx(PTX), ptx), "Program::new(PTX)");
        }
    }
}

/// An option the parser does not know is refused, not passed: it may forward
/// its argument to another tool, where a count could hide.
#[test]
fn options_the_parser_cannot_read_are_refused() {
    for extra in [
        &["-Xcompiler=--split-compile=99999"][..],
        &["-Xlinker", "-v"],
        &["--no-such-option"],
        &["sm_90"],
        &["-Xptxas"],
        &["-Xptxas=--split-compile-x=99999"],
        &["--split-compile=1e3"],
    ] {
        let o = ProgramOptions {
            extra: strings(extra),
            ..sm90()
        };
        let e = o.to_nvrtc_args().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{extra:?}: {e}");
        let l = LinkerOptions {
            extra: strings(extra),
            ..LinkerOptions::new("sm_90")
        };
        assert!(l.to_nvjitlink_args().is_err(), "{extra:?}");
    }
    // NVVM runs no ptxas and takes its own options only.
    let nvvm = ProgramOptions {
        extra: strings(&["-Xptxas=--split-compile=99999"]),
        ..sm90()
    };
    assert!(nvvm.to_nvvm_args().is_err());
    // What the tools document passes, in each spelling.
    for extra in [
        &["-Xptxas=-v,-O3", "--ptxas-options", "-v"][..],
        &[
            "-DN=1",
            "-D",
            "M",
            "--define-macro=K",
            "-I/inc",
            "-lineinfo",
            "-G",
            "-w",
        ],
        &[
            "--maxrregcount=32",
            "-maxrregcount",
            "64",
            "--split-compile",
            "0x400",
        ],
        &["-Xptxas", "--split-compile", "-Xptxas", "1024"],
    ] {
        let o = ProgramOptions {
            extra: strings(extra),
            ..sm90()
        };
        o.to_nvrtc_args()
            .unwrap_or_else(|e| panic!("{extra:?}: {e}"));
    }
}

mod model {
    //! The property: any option vector the parser accepts has every
    //! split-compile count within the bound as the tool would read it. The
    //! model below is written apart from the parser, as simply as the tools'
    //! documentation reads: a split-compile option (any of the spellings, one
    //! or two dashes) takes its count after `=` or from the next entry; a
    //! forwarding option (`-Xptxas`, `--ptxas-options`, `-Xnvvm`) takes a list
    //! after `=` or from the next entry, split at commas and whitespace, and
    //! the forwarded lists are read, joined, the same way; a count is read as
    //! C's `strtoul` with base 0 and with base 10, and both readings must stand.

    use super::*;

    const BOUND: u64 = 1024;

    fn is_split(name: &str) -> bool {
        let n = name
            .trim_start_matches('-')
            .to_ascii_lowercase()
            .replace('_', "-");
        n == "split-compile" || n == "split-compile-extended"
    }

    /// The tool a forwarding option hands its list to: ptxas (0) or NVVM (1).
    fn forwards_to(name: &str) -> Option<usize> {
        match name {
            "-Xptxas" | "--Xptxas" | "--ptxas-options" | "-ptxas-options" => Some(0),
            "-Xnvvm" | "--Xnvvm" => Some(1),
            _ => None,
        }
    }

    /// Every reading of `s` by `strtoul` with base 0 and base 10 that takes
    /// the whole string; `None` when one of them cannot.
    fn readings(s: &str) -> Option<Vec<u64>> {
        let base10 = if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
            s.parse::<u64>().ok()?
        } else if s.starts_with("0x") || s.starts_with("0X") {
            0 // base 10 stops at the `x`: a count of 0
        } else {
            return None;
        };
        let base0 = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            u64::from_str_radix(h, 16).ok()?
        } else if s.len() > 1 && s.starts_with('0') {
            // Octal up to the first digit that is not one.
            let digits: String = s.chars().take_while(|c| ('0'..='7').contains(c)).collect();
            u64::from_str_radix(&digits, 8).ok()?
        } else {
            base10
        };
        Some(vec![base10, base0])
    }

    /// The counts in `args` (top level, then what each forwarded-to tool
    /// reads: its lists joined in order), as the tools read them.
    fn counts(args: &[String]) -> Vec<String> {
        let mut found = Vec::new();
        let mut streams: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut i = 0;
        while i < args.len() {
            let (name, value) = match args[i].split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (args[i].clone(), None),
            };
            i += 1;
            if is_split(&name) || forwards_to(&name).is_some() {
                let value = match value {
                    Some(v) => v,
                    None if i < args.len() => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => String::new(),
                };
                match forwards_to(&name) {
                    Some(tool) => streams[tool].extend(
                        value
                            .split([',', ' ', '\t'])
                            .filter(|t| !t.is_empty())
                            .map(str::to_string),
                    ),
                    None => found.push(value),
                }
            }
        }
        for forwarded in &streams {
            let mut j = 0;
            while j < forwarded.len() {
                let (name, value) = match forwarded[j].split_once('=') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (forwarded[j].clone(), None),
                };
                j += 1;
                if name.starts_with('-') && is_split(&name) {
                    found.push(match value {
                        Some(v) => v,
                        None if j < forwarded.len() => {
                            j += 1;
                            forwarded[j - 1].clone()
                        }
                        None => String::new(),
                    });
                }
            }
        }
        found
    }

    fn within(count: &str) -> bool {
        readings(count).is_some_and(|r| r.iter().all(|&n| n <= BOUND))
    }

    fn piece() -> impl Strategy<Value = Vec<String>> {
        let split = prop_oneof![
            Just("--split-compile"),
            Just("-split-compile"),
            Just("-split-compile-extended"),
            Just("--split-compile-extended"),
            Just("--SPLIT_COMPILE"),
        ];
        let count = prop_oneof![
            Just("0"),
            Just("4"),
            Just("1024"),
            Just("1025"),
            Just("0x400"),
            Just("0x401"),
            Just("02000"),
            Just("0777"),
            Just("08"),
            Just("1962186399"),
            Just("-1"),
            Just("+5"),
            Just(""),
            Just("x"),
            Just(" 8"),
        ];
        let forward = prop_oneof![
            Just("-Xptxas"),
            Just("--ptxas-options"),
            Just("-Xnvvm"),
            Just("-Xfoo")
        ];
        let harmless = prop_oneof![
            Just("-v"),
            Just("--maxrregcount=32"),
            Just("-lineinfo"),
            Just("-O3"),
            Just("-G"),
        ];
        let sep = prop_oneof![Just(","), Just(" ")];
        prop_oneof![
            (split.clone(), count.clone()).prop_map(|(s, c)| vec![format!("{s}={c}")]),
            (split.clone(), count.clone()).prop_map(|(s, c)| vec![s.to_string(), c.to_string()]),
            (forward.clone(), split.clone(), count.clone(), sep.clone())
                .prop_map(|(f, s, c, sep)| vec![format!("{f}={s}{sep}{c}")]),
            (forward.clone(), split.clone(), count.clone())
                .prop_map(|(f, s, c)| vec![f.to_string(), format!("{s}={c}")]),
            (forward.clone(), split).prop_map(|(f, s)| vec![format!("{f}={s}")]),
            (forward.clone(), count).prop_map(|(f, c)| vec![format!("{f}={c}")]),
            (forward, harmless.clone()).prop_map(|(f, h)| vec![format!("{f}={h}")]),
            harmless.prop_map(|h| vec![h.to_string()]),
        ]
    }

    fn vector() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(piece(), 0..5).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(2048)))]

        #[test]
        #[cfg_attr(miri, ignore = "a property test of safe code, run natively; slow under Miri")]
        fn accepted_vectors_keep_every_split_compile_within_the_bound(
            extra in vector(),
            ptxas in proptest::collection::vec(
                prop_oneof![Just("--split-compile"), Just("1962186399"), Just("4"), Just("-v")],
                0..3,
            ),
            split in proptest::option::of(prop_oneof![Just(0u32), Just(1024), Just(1025), Just(u32::MAX)]),
        ) {
            let nvrtc = ProgramOptions {
                extra: extra.clone(),
                ptxas_options: strings(&ptxas),
                split_compile: split,
                ..sm90()
            };
            if let Ok(args) = nvrtc.to_nvrtc_args() {
                for c in counts(&args) {
                    prop_assert!(within(&c), "NVRTC would read {c:?} in {args:?}");
                }
            }
            let linker = LinkerOptions {
                extra,
                ptxas_options: strings(&ptxas),
                split_compile_extended: split,
                ..LinkerOptions::new("sm_90")
            };
            if let Ok(args) = linker.to_nvjitlink_args() {
                for c in counts(&args) {
                    prop_assert!(within(&c), "nvJitLink would read {c:?} in {args:?}");
                }
            }
        }
    }
}

/// The 64-byte ELF of the review: a valid header whose section table lies
/// 1 GiB past its end.
fn lying_elf() -> Vec<u8> {
    let mut b = vec![0u8; 64];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2; // 64-bit
    b[5] = 1; // little-endian
    b[6] = 1; // version
    b[40..48].copy_from_slice(&(1u64 << 30).to_le_bytes()); // e_shoff
    b[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    b[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
    b[60..62].copy_from_slice(&4u16.to_le_bytes()); // e_shnum
    b
}

/// A fat binary of one uncompressed cubin entry holding `elf`.
fn fatbin_of(elf: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(&(64 + elf.len() as u64).to_le_bytes());
    let mut entry = [0u8; 64];
    entry[..2].copy_from_slice(&2u16.to_le_bytes()); // a cubin
    entry[4..8].copy_from_slice(&64u32.to_le_bytes());
    entry[8..16].copy_from_slice(&(elf.len() as u64).to_le_bytes());
    b.extend_from_slice(&entry);
    b.extend_from_slice(elf);
    b
}

fn refused_image<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => {
            assert!(e.to_string().contains("not a valid image"), "{what}: {e}");
        }
        other => panic!("{what}: expected the image refused, got {other:?}"),
    }
}

/// The image check follows the bytes, not the declared kind (the driver's
/// loaders read the magic): the lying ELF is refused declared as PTX through
/// every path, and inside a fat binary. Needs no driver: the check comes
/// before the driver is asked.
#[test]
fn images_are_checked_by_what_they_are() {
    let elf = lying_elf();
    let options = Default::default();
    refused_image(
        Library::load(&ObjectCode::from_cubin(elf.clone()).unwrap(), &options),
        "declared a cubin",
    );
    refused_image(
        Library::load(&ObjectCode::from_ptx(elf.clone()).unwrap(), &options),
        "ObjectCode::from_ptx",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lying.ptx");
    std::fs::write(&path, &elf).unwrap();
    for kind in [CodeType::Ptx, CodeType::Cubin, CodeType::Fatbin] {
        refused_image(
            Library::load(&ObjectCode::from_file(&path, kind).unwrap(), &options),
            &format!("from_file as {kind}"),
        );
        refused_image(
            Library::load_file(&path, kind, &options),
            &format!("Library::load_file as {kind}"),
        );
    }
    // A fat binary holding the ELF as an entry, declared as what it is or as PTX.
    let fat = fatbin_of(&elf);
    refused_image(
        Library::load(&ObjectCode::from_fatbin(fat.clone()).unwrap(), &options),
        "the ELF in a fat binary",
    );
    refused_image(
        Library::load(&ObjectCode::from_ptx(fat).unwrap(), &options),
        "the fat binary declared as PTX",
    );
    // Compressed into the entry (an LZ4 block, a Zstandard frame).
    for codec in [0x2000, 0x8000] {
        refused_image(
            Library::load(
                &ObjectCode::from_fatbin(compressed_fatbin_of(&elf, codec)).unwrap(),
                &options,
            ),
            &format!("the ELF compressed ({codec:#x}) in a fat binary"),
        );
    }
    // The driver's linker checks its inputs the same way, before it is created.
    for input in [
        ObjectCode::from_ptx(elf.clone()),
        ObjectCode::from_fatbin(fatbin_of(&elf)),
    ] {
        let input = input.unwrap();
        let r = Linker::with_backend(
            &[&input],
            LinkerOptions::new("sm_90"),
            LinkerBackend::Driver,
        );
        refused_image(r, "an input of the driver's linker");
    }
    // A cache entry tagged PTX is checked by its bytes too.
    #[cfg(feature = "cache")]
    {
        use cudars_core::cache::{FileProgramCache, ProgramCache as _, ProgramCacheKey};
        let cache = FileProgramCache::new(dir.path().join("cache")).unwrap();
        let key = ProgramCacheKey::from_bytes([7; 32]);
        cache
            .put(&key, &ObjectCode::from_ptx(elf.clone()).unwrap())
            .unwrap();
        let entry = cache.get(&key).unwrap().unwrap();
        assert_eq!(entry.code_type(), CodeType::Ptx);
        refused_image(Library::load(&entry, &options), "a cache entry tagged PTX");
    }
}

/// LTO-IR and fat-binary wrappers (a host pointer inside) do not load, however
/// declared; real images pass.
#[test]
fn ltoir_and_fatbin_wrappers_do_not_load_and_real_images_pass() {
    let options = Default::default();
    let mut wrapper = 0x4662_43B1u32.to_le_bytes().to_vec();
    wrapper.extend_from_slice(&[0u8; 20]);
    refused_image(
        Library::load(&ObjectCode::from_ptx(wrapper).unwrap(), &options),
        "a fat binary wrapper",
    );
    let mut ltoir = 0x7F4E_43EDu32.to_le_bytes().to_vec();
    ltoir.extend_from_slice(&[0u8; 28]);
    refused_image(
        Library::load(&ObjectCode::from_ptx(ltoir).unwrap(), &options),
        "LTO-IR declared as PTX",
    );
    require_libs!("nvrtc", "nvfatbin");
    let compile = |arch: &str, target| {
        Program::new(
            SourceCode::Cxx(SAXPY),
            ProgramOptions {
                arch: Some(arch.into()),
                link_time_optimization: target == CompileTarget::Ltoir,
                ..Default::default()
            },
        )
        .and_then(|p| p.compile(target, &[]))
        .unwrap()
    };
    let cubin = compile("sm_90", CompileTarget::Cubin);
    let ptx = compile("compute_90", CompileTarget::Ptx);
    let lto = compile("sm_90", CompileTarget::Ltoir);
    refused_image(
        Library::load(
            &ObjectCode::from_ptx(lto.code().to_vec()).unwrap(),
            &options,
        ),
        "NVRTC's LTO-IR declared as PTX",
    );
    for compress in [false, true] {
        let fat = cudars_core::FatbinBuilder::new()
            .compress(compress)
            .cubin(&cubin, "sm_90")
            .unwrap()
            .ptx(&ptx, "compute_90", "")
            .unwrap()
            .ltoir(&lto, "sm_90", "")
            .unwrap()
            .build()
            .unwrap();
        fat.check_image().unwrap();
        // Declared as anything, it is checked as the fat binary it is.
        ObjectCode::from_ptx(fat.code().to_vec())
            .unwrap()
            .check_image()
            .unwrap();
        // JIT options asking the driver for a split compile are refused when
        // the entry is added, and when a fat binary carrying them is loaded.
        let r =
            cudars_core::FatbinBuilder::new().ptx(&ptx, "compute_90", "-O3 --split-compile=99999");
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
        let with_options = cudars_core::FatbinBuilder::new()
            .compress(compress)
            .ptx(&ptx, "compute_90", "-O3 --split-compile=1000")
            .unwrap()
            .build()
            .unwrap();
        with_options.check_image().unwrap();
        let mut bad = with_options.code().to_vec();
        let option = b"--split-compile=1000";
        let at = (0..bad.len() - option.len())
            .find(|&i| bad[i..i + option.len()] == *option)
            .unwrap();
        bad[at + option.len() - 4..at + option.len()].copy_from_slice(b"9999");
        let e = ObjectCode::from_fatbin(bad)
            .unwrap()
            .check_image()
            .unwrap_err();
        assert!(e.to_string().contains("split compile"), "{e}");
        // A cubin entry whose ELF lies is refused (compressed ones: see
        // `compressed_entries_are_checked_in_every_mode`).
        if !compress {
            let mut bad = fat.code().to_vec();
            let elf_at = (0..bad.len() - 4)
                .find(|&i| bad[i..i + 4] == *b"\x7fELF")
                .unwrap();
            bad[elf_at + 40..elf_at + 48].copy_from_slice(&(1u64 << 30).to_le_bytes());
            let e = ObjectCode::from_fatbin(bad)
                .unwrap()
                .check_image()
                .unwrap_err();
            assert!(e.to_string().contains("past the end"), "{e}");
        }
    }
    cubin.check_image().unwrap();
    ptx.check_image().unwrap();
    ObjectCode::from_ptx(cubin.code().to_vec())
        .unwrap()
        .check_image()
        .unwrap();
}

/// The entries of a fat binary: (offset of the entry, its header's size, its
/// flags), walked by their sizes.
fn entries(fat: &[u8]) -> Vec<(usize, usize, u64)> {
    let word = |o: usize, n: usize| {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&fat[o..o + n]);
        u64::from_le_bytes(a) as usize
    };
    let (mut at, end) = (word(6, 2), word(6, 2) + word(8, 8));
    let mut v = Vec::new();
    while at < end {
        let (header, payload) = (word(at + 4, 4), word(at + 8, 8));
        v.push((at, header, word(at + 40, 8) as u64));
        at += header + payload;
    }
    v
}

/// A Zstandard frame holding `data` in raw blocks (single segment).
fn zstd_raw(data: &[u8]) -> Vec<u8> {
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0xA0];
    f.extend_from_slice(&(data.len() as u32).to_le_bytes());
    let chunks: Vec<&[u8]> = data.chunks(128 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let last = u32::from(i + 1 == chunks.len());
        f.extend_from_slice(&(last | (chunk.len() as u32) << 3).to_le_bytes()[..3]);
        f.extend_from_slice(chunk);
    }
    f
}

/// An LZ4 block holding `data` as one run of literals.
fn lz4_literals(data: &[u8]) -> Vec<u8> {
    let mut b = vec![0xF0];
    let mut rest = data.len() - 15;
    while rest >= 255 {
        b.push(255);
        rest -= 255;
    }
    b.push(rest as u8);
    b.extend_from_slice(data);
    b
}

/// `fat` with its entry at `at` (header `header` bytes) holding `stream`
/// (compressed, `plain` bytes uncompressed) in place of its payload, every
/// size that covers it set to match.
fn with_payload(fat: &[u8], at: usize, header: usize, stream: &[u8], plain: usize) -> Vec<u8> {
    let mut old = [0u8; 8];
    old.copy_from_slice(&fat[at + 8..at + 16]);
    let old = u64::from_le_bytes(old) as usize;
    let padded = stream.len().div_ceil(8) * 8;
    let mut b = fat[..at + header].to_vec();
    b.extend_from_slice(stream);
    b.resize(at + header + padded, 0);
    b.extend_from_slice(&fat[at + header + old..]);
    b[at + 8..at + 16].copy_from_slice(&(padded as u64).to_le_bytes());
    b[at + 16..at + 20].copy_from_slice(&(stream.len() as u32).to_le_bytes());
    b[at + 56..at + 64].copy_from_slice(&(plain as u64).to_le_bytes());
    let size = (b.len() - 16) as u64;
    b[8..16].copy_from_slice(&size.to_le_bytes());
    b
}

/// A fat binary of one cubin entry holding `elf` compressed with `codec`
/// (0x2000: an LZ4 block; 0x8000: a Zstandard frame), its header as
/// nvFatbin writes one.
fn compressed_fatbin_of(elf: &[u8], codec: u64) -> Vec<u8> {
    let stream = if codec == 0x2000 {
        lz4_literals(elf)
    } else {
        zstd_raw(elf)
    };
    let mut fat = with_payload(&fatbin_of(elf), 16, 64, &stream, elf.len());
    fat[16 + 40..16 + 48].copy_from_slice(&(0x11 | codec).to_le_bytes());
    fat
}

/// On a GPU: fat binaries as nvFatbin compresses them in each of its modes
/// (LZ4, Zstandard; small entries too with `-compress-all`) pass the image
/// check and load, and their kernel runs: the driver reads the layout the
/// check reads (the lying ELF compressed is refused by every loader in
/// `lying_images_are_refused_by_every_loader_on_a_gpu`).
#[test]
fn compressed_fatbins_of_every_mode_load_on_a_gpu() {
    cudars_tests::require_gpu!();
    require_libs!("nvrtc", "nvfatbin");
    let device = cudars_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    let arch = format!("sm_{major}{minor}");
    let cubin = Program::new(
        SourceCode::Cxx(SAXPY),
        ProgramOptions {
            arch: Some(arch.clone()),
            ..Default::default()
        },
    )
    .and_then(|p| p.compile(CompileTarget::Cubin, &[]))
    .unwrap();
    let stream = device
        .create_stream(cudars_core::StreamOptions::default())
        .unwrap();
    for all in [false, true] {
        for mode in ["default", "size", "speed", "balance", "none"] {
            let what = format!("-compress-mode={mode} (all: {all})");
            let mut builder =
                cudars_core::FatbinBuilder::new().option(format!("-compress-mode={mode}"));
            if all {
                builder = builder.compress_all();
            }
            let fat = builder.cubin(&cubin, &arch).unwrap().build().unwrap();
            let kernel = Library::load(&fat, &Default::default())
                .unwrap_or_else(|e| panic!("{what}: {e}"))
                .get_kernel("saxpy")
                .unwrap();
            let x =
                cudars_core::DeviceBuffer::<f32>::from_host(&device, &[1.0, 2.0], &stream).unwrap();
            let y = cudars_core::DeviceBuffer::<f32>::from_host(&device, &[10.0, 20.0], &stream)
                .unwrap();
            let (a, n) = (3.0f32, 2i32);
            // SAFETY: `saxpy(float, const float*, float*, int)`: `x` and `y`
            // hold `n` floats each.
            unsafe {
                cudars_core::launch(
                    &stream,
                    &cudars_core::LaunchConfig::new(1, 32),
                    &kernel,
                    &[&a, &x, &y, &n],
                )
            }
            .unwrap();
            assert_eq!(y.to_vec(&stream).unwrap(), [13.0, 26.0], "{what}");
        }
    }
}

/// Fat binaries as nvFatbin compresses them, in each of its modes (LZ4 blocks
/// for `speed`, Zstandard frames for the others), pass the image check; the
/// same entries holding the lying ELF, compressed the same way, are refused
/// (the check decompresses them: the driver would).
#[test]
fn compressed_entries_are_checked_in_every_mode() {
    require_libs!("nvrtc", "nvfatbin");
    let compile = |arch: &str, target| {
        Program::new(
            SourceCode::Cxx(SAXPY),
            ProgramOptions {
                arch: Some(arch.into()),
                ..Default::default()
            },
        )
        .and_then(|p| p.compile(target, &[]))
        .unwrap()
    };
    let cubin = compile("sm_90", CompileTarget::Cubin);
    let ptx = compile("compute_90", CompileTarget::Ptx);
    let lto = Program::new(
        SourceCode::Cxx(SAXPY),
        ProgramOptions {
            arch: Some("sm_90".into()),
            link_time_optimization: true,
            ..Default::default()
        },
    )
    .and_then(|p| p.compile(CompileTarget::Ltoir, &[]))
    .unwrap();
    let lying = lying_elf();
    let mut codecs = std::collections::BTreeSet::new();
    for all in [false, true] {
        for mode in ["default", "size", "speed", "balance", "none"] {
            let mut builder =
                cudars_core::FatbinBuilder::new().option(format!("-compress-mode={mode}"));
            if all {
                builder = builder.compress_all();
            }
            let fat = builder
                .cubin(&cubin, "sm_90")
                .unwrap()
                .ptx(&ptx, "compute_90", "")
                .unwrap()
                .ltoir(&lto, "sm_90", "")
                .unwrap()
                .build()
                .unwrap();
            let what = format!("-compress-mode={mode} (all: {all})");
            fat.check_image().unwrap_or_else(|e| panic!("{what}: {e}"));
            for (at, header, flags) in entries(fat.code()) {
                let codec = flags & 0xA000;
                if flags & 0x1_0000 != 0 {
                    // LTO-IR, scrambled: unread, and refused on any other entry.
                    assert_eq!(fat.code()[at], 8, "{what}: a scrambled entry not LTO-IR");
                    let mut bad = fat.code().to_vec();
                    bad[at] = 2;
                    let e = ObjectCode::from_fatbin(bad)
                        .unwrap()
                        .check_image()
                        .unwrap_err();
                    assert!(e.to_string().contains("scrambled"), "{what}: {e}");
                    continue;
                }
                if codec == 0 {
                    continue;
                }
                codecs.insert(codec);
                // The entry (cubin or PTX) now holding the lying ELF, compressed
                // as nvFatbin compressed it.
                let stream = if codec == 0x2000 {
                    lz4_literals(&lying)
                } else {
                    zstd_raw(&lying)
                };
                let bad = with_payload(fat.code(), at, header, &stream, lying.len());
                let e = ObjectCode::from_fatbin(bad.clone())
                    .unwrap()
                    .check_image()
                    .unwrap_err();
                assert!(e.to_string().contains("past the end"), "{what}: {e}");
                refused_image(
                    Library::load(&ObjectCode::from_ptx(bad).unwrap(), &Default::default()),
                    &what,
                );
                // The real cubin, recompressed by hand, still passes.
                let stream = if codec == 0x2000 {
                    lz4_literals(cubin.code())
                } else {
                    zstd_raw(cubin.code())
                };
                let good = with_payload(fat.code(), at, header, &stream, cubin.code().len());
                ObjectCode::from_fatbin(good)
                    .unwrap()
                    .check_image()
                    .unwrap();
            }
        }
    }
    // Both codecs were met: `speed` writes LZ4, the others Zstandard.
    assert_eq!(codecs.into_iter().collect::<Vec<_>>(), [0x2000, 0x8000]);
}

/// On a GPU, with a live driver: the lying images are refused by every loader
/// (a library, a module in a context, the code's own kernel lookup, the
/// driver's linker) as typed errors, never read by the driver.
#[test]
fn lying_images_are_refused_by_every_loader_on_a_gpu() {
    cudars_tests::require_gpu!();
    let device = cudars_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let ctx = cudars_core::Context::primary(&device).unwrap();
    let elf = lying_elf();
    let images = [
        ObjectCode::from_ptx(elf.clone()).unwrap(),
        ObjectCode::from_cubin(elf.clone()).unwrap(),
        ObjectCode::from_fatbin(fatbin_of(&elf)).unwrap(),
        ObjectCode::from_ptx(fatbin_of(&elf)).unwrap(),
        ObjectCode::from_fatbin(compressed_fatbin_of(&elf, 0x2000)).unwrap(),
        ObjectCode::from_fatbin(compressed_fatbin_of(&elf, 0x8000)).unwrap(),
    ];
    for code in &images {
        let what = format!("{} ({} bytes)", code.code_type(), code.code().len());
        refused_image(Library::load(code, &Default::default()), &what);
        refused_image(
            cudars_core::Module::load(&ctx, code, &Default::default()),
            &what,
        );
        refused_image(code.get_kernel("k"), &what);
        refused_image(
            Linker::with_backend(&[code], LinkerOptions::new("sm_90"), LinkerBackend::Driver),
            &what,
        );
    }
    // Real PTX still loads.
    let ptx = ObjectCode::from_ptx(PTX).unwrap();
    assert!(Library::load(&ptx, &Default::default()).is_ok());
}
