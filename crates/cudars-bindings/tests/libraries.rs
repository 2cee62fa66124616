//! The opt-in libraries' bindings (cuBLAS, cuBLASLt, cuRAND, cuFFT, cuSOLVER, NCCL,
//! nvFatbin, cuFile) without a GPU: each library found reports its version and
//! CUDA major and resolves its entry points; each one missing answers every call
//! with its "not found" code and an error that says why, once per level. The CPU
//! test run installs cuRAND's, nvFatbin's and cuFile's wheels; the GPU machine
//! has all of them.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// SAFETY (for every `unsafe` block below): each calls the C API as its documentation
// asks, with pointers to live locals.
#![allow(clippy::undocumented_unsafe_blocks)]

use cudars_bindings::IntoResult as _;
use cudars_bindings::{
    ApiKind, Unavailable, cublas, cublaslt, cufft, curand, cusolver, nccl, nvfatbin,
};

fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(e), |&e| e.source())
        .map(ToString::to_string)
        .collect()
}

/// Checks the "library missing" path of one API: the error's code, that its reason
/// is the pathfinder's error, and that each level of the chain says its own part.
fn assert_missing<E: std::error::Error + 'static>(
    e: &E,
    unavailable: Option<&Unavailable>,
    api: ApiKind,
    pf: &cudars_pathfinder::PathfinderError,
) {
    match unavailable {
        Some(u @ Unavailable::Library { error, .. }) => {
            assert_eq!(u.api(), api);
            assert_eq!(error.to_string(), pf.to_string());
        }
        other => panic!("{api}: expected a library error, got {other:?}"),
    }
    let chain = chain(e);
    assert!(
        chain[0].ends_with(": the entry point could not be called"),
        "{chain:?}"
    );
    assert_eq!(chain[1], format!("the {api} library could not be loaded"));
    // Then the pathfinder's own chain (a dependency's failure has one more level).
    assert_eq!(chain[2..], self::chain(pf)[..], "{chain:?}");
}

#[test]
fn curand_reports_its_version_or_why_it_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("curand") {
        Ok(lib) => {
            let v = curand::version().unwrap();
            assert_eq!(v.major, 10, "cuRAND {v}");
            let mut n = 0;
            unsafe { curand::curandGetVersion(&mut n) }
                .result()
                .unwrap();
            assert_eq!(n / 1000, 10);
            assert_eq!(curand::library().unwrap().abs_path(), lib.abs_path());
            // One ABI across majors: no major is asked for.
            assert_eq!(curand::cuda_major(), None);
            let (resolved, total) = curand::resolved_count().unwrap();
            assert!(resolved * 10 > total * 9, "{resolved}/{total}");
            // The header declares the binomial generators, which some builds of
            // the library do not export: a missing symbol says so.
            if !curand::is_available("curandGenerateBinomial") {
                match curand::why_unavailable("curandGenerateBinomial") {
                    Some(Unavailable::Symbol { symbol, path, .. }) => {
                        assert_eq!(symbol, "curandGenerateBinomial");
                        assert!(path.contains("libcurand.so"), "{path}");
                    }
                    other => panic!("{other:?}"),
                }
            }
            assert!(curand::is_available("curandGenerateNormal"));
            assert!(curand::why_unavailable("curandGenerateNormal").is_none());
        }
        Err(pf) => {
            let e = curand::version().unwrap_err();
            assert_eq!(e.code(), curand::CURAND_STATUS_INITIALIZATION_FAILED);
            assert_missing(&e, e.unavailable(), ApiKind::Curand, &pf);
        }
    }
}

#[test]
fn cufft_maps_its_own_major_to_cuda_s() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("cufft") {
        Ok(lib) => {
            let v = cufft::version().unwrap();
            // cuFFT 11 is CUDA 12's, cuFFT 12 CUDA 13's.
            assert_eq!(cufft::cuda_major(), Some(v.major as u32 + 1), "cuFFT {v}");
            let name = lib
                .abs_path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            assert!(name.contains(&format!(".so.{}", v.major)), "{name}");
            let (resolved, total) = cufft::resolved_count().unwrap();
            assert!(resolved * 10 > total * 9, "{resolved}/{total}");
        }
        Err(pf) => {
            let mut plan = 0;
            let e = unsafe { cufft::cufftCreate(&mut plan) }
                .result()
                .unwrap_err();
            assert_eq!(e.code(), cufft::CUFFT_SETUP_FAILED);
            assert_missing(&e, e.unavailable(), ApiKind::Cufft, &pf);
            assert_eq!(cufft::cuda_major(), None);
        }
    }
}

#[test]
fn cusolver_maps_its_own_major_to_cuda_s() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("cusolver") {
        Ok(lib) => {
            let v = cusolver::version().unwrap();
            // cuSOLVER 11 is CUDA 12's, cuSOLVER 12 CUDA 13's.
            assert_eq!(
                cusolver::cuda_major(),
                Some(v.major as u32 + 1),
                "cuSOLVER {v}"
            );
            cudars_tests::assert_expected_major("cuSOLVER", v.major + 1);
            let name = lib
                .abs_path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            assert!(name.contains(&format!(".so.{}", v.major)), "{name}");
            let (resolved, total) = cusolver::resolved_count().unwrap();
            assert!(resolved * 10 > total * 9, "{resolved}/{total}");
            assert!(cusolver::is_available("cusolverDnDgetrf"));
        }
        Err(pf) => {
            let mut h = std::ptr::null_mut();
            let e = unsafe { cusolver::cusolverDnCreate(&mut h) }
                .result()
                .unwrap_err();
            assert_eq!(e.code(), cusolver::CUSOLVER_STATUS_NOT_INITIALIZED);
            assert_missing(&e, e.unavailable(), ApiKind::Cusolver, &pf);
            assert_eq!(cusolver::cuda_major(), None);
        }
    }
}

#[test]
fn cublas_and_cublaslt_report_their_major_or_why_they_are_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("cublas") {
        Ok(_) => {
            let v = cublas::version().unwrap();
            assert_eq!(cublas::cuda_major(), Some(v.major as u32));
            cudars_tests::assert_expected_major("cuBLAS", v.major);
            assert_eq!(cublaslt::version().unwrap().major, v.major);
            let (resolved, total) = cublas::resolved_count().unwrap();
            assert!(resolved * 10 > total * 9, "{resolved}/{total}");
        }
        Err(pf) => {
            let mut h = std::ptr::null_mut();
            let e = unsafe { cublas::cublasCreate(&mut h) }
                .result()
                .unwrap_err();
            assert_eq!(e.code(), cublas::CUBLAS_STATUS_NOT_INITIALIZED);
            assert_missing(&e, e.unavailable(), ApiKind::Cublas, &pf);
            assert!(h.is_null(), "nothing was called");
        }
    }
    if let Err(pf) = cudars_pathfinder::load_nvidia_dynamic_lib("cublasLt") {
        let e = cublaslt::version().unwrap_err();
        assert_missing(&e, e.unavailable(), ApiKind::CublasLt, &pf);
    }
}

#[test]
fn nccl_reports_its_version_or_why_it_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("nccl") {
        Ok(_) => {
            let (major, minor, _) = nccl::version().unwrap();
            assert_eq!(major, 2);
            assert!(minor >= 19, "NCCL 2.{minor}");
            // NCCL describes its own codes.
            let e = nccl::ncclInvalidArgument.result().unwrap_err();
            assert!(e.description().is_some(), "{e}");
        }
        Err(pf) => {
            let e = nccl::version().unwrap_err();
            assert_eq!(e.code(), nccl::ncclSystemError);
            assert_missing(&e, e.unavailable(), ApiKind::Nccl, &pf);
        }
    }
}

#[test]
fn nvfatbin_reports_its_version_and_major_or_why_it_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("nvfatbin") {
        Ok(lib) => {
            let v = nvfatbin::version().unwrap();
            // One library per CUDA major, numbered like CUDA.
            assert_eq!(nvfatbin::cuda_major(), Some(v.major as u32), "nvFatbin {v}");
            cudars_tests::assert_expected_major("nvFatbin", v.major);
            let name = lib.abs_path().file_name().unwrap().to_string_lossy();
            assert!(name.contains(&format!(".so.{}", v.major)), "{name}");
            let (resolved, total) = nvfatbin::resolved_count().unwrap();
            // The headers' release (13.5) has them all; an older one lacks what
            // came later (`nvFatbinAddTileIR`, 13.5).
            if (v.major, v.minor) >= (13, 5) {
                assert_eq!(resolved, total, "every nvFatbin entry point resolves");
            } else {
                assert!(
                    resolved + 1 >= total,
                    "{resolved}/{total} nvFatbin entry points"
                );
            }
            // An empty handle builds nothing: nvFatbin describes its own codes.
            let mut h: nvfatbin::nvFatbinHandle = std::ptr::null_mut();
            unsafe { nvfatbin::nvFatbinCreate(&mut h, std::ptr::null_mut(), 0) }
                .result()
                .unwrap();
            let e = unsafe {
                nvfatbin::nvFatbinAddCubin(
                    h,
                    b"not an ELF".as_ptr().cast(),
                    10,
                    c"90".as_ptr(),
                    c"x".as_ptr(),
                )
            }
            .result()
            .unwrap_err();
            assert!(e.name().starts_with("NVFATBIN_ERROR_"), "{e}");
            assert!(e.description().is_some(), "{e}");
            unsafe { nvfatbin::nvFatbinDestroy(&mut h) }
                .result()
                .unwrap();
        }
        Err(pf) => {
            let e = nvfatbin::version().unwrap_err();
            assert_eq!(e.code(), nvfatbin::NVFATBIN_ERROR_INTERNAL);
            assert_missing(&e, e.unavailable(), ApiKind::NvFatbin, &pf);
            assert_eq!(nvfatbin::cuda_major(), None);
        }
    }
}

/// cuFile's library loads and says its version without a GPU or the nvidia-fs
/// driver; its two-part statuses and its reads' negative results become errors.
#[cfg(target_os = "linux")]
#[test]
fn cufile_reports_its_version_or_why_it_is_missing() {
    use cudars_bindings::cufile;
    match cudars_pathfinder::load_nvidia_dynamic_lib("cufile") {
        Ok(lib) => {
            let v = cufile::version().unwrap();
            assert_eq!(v.major, 1, "cuFile {v}");
            assert!(v.minor >= 11, "cuFile {v}");
            assert_eq!(cufile::library().unwrap().abs_path(), lib.abs_path());
            assert_eq!(cufile::cuda_major(), None);
            // cuFile 1.14 (CUDA 12.9) lacks a dozen of 1.15's newer entry points
            // (statistics, parameter arrays); the I/O API is in both.
            let (resolved, total) = cufile::resolved_count().unwrap();
            assert!(resolved * 10 > total * 7, "{resolved}/{total}");
            for name in [
                "cuFileDriverOpen",
                "cuFileDriverGetProperties",
                "cuFileHandleRegister",
                "cuFileRead",
                "cuFileWrite",
                "cuFileReadAsync",
                "cuFileWriteAsync",
                "cuFileBufRegister",
                "cuFileGetParameterBool",
                "cuFileSetParameterBool",
            ] {
                assert!(cufile::is_available(name), "{name}");
            }
            if resolved < total {
                let missing = ["cuFileGetStatsL1", "cuFileSetParameterPosixPoolSlabArray"]
                    .into_iter()
                    .find(|n| !cufile::is_available(n));
                if let Some(name) = missing {
                    assert!(
                        matches!(
                            cufile::why_unavailable(name),
                            Some(Unavailable::Symbol { .. })
                        ),
                        "{name}"
                    );
                }
            }
        }
        Err(pf) => {
            let e = cufile::version().unwrap_err();
            assert_eq!(e.code(), cufile::CU_FILE_PLATFORM_NOT_SUPPORTED);
            assert_missing(&e, e.unavailable(), ApiKind::Cufile, &pf);
            // A read that cannot be called returns -1 and says why, not errno.
            let n =
                unsafe { cufile::cuFileRead(std::ptr::null_mut(), std::ptr::null_mut(), 1, 0, 0) };
            assert_eq!(n, -1);
            let e = cufile::CufileError::from_io_result(n).unwrap_err();
            assert!(
                matches!(e.unavailable(), Some(Unavailable::Library { .. })),
                "{e:?}"
            );
            assert!(e.os_error().is_none());
        }
    }
    // A driver error names both codes.
    let status = cufile::CUfileError {
        err: cufile::CU_FILE_CUDA_DRIVER_ERROR,
        cu_err: cufile::CUDA_ERROR_OUT_OF_MEMORY,
    };
    let e = status.result().unwrap_err();
    assert_eq!(e.name(), "CU_FILE_CUDA_DRIVER_ERROR");
    assert_eq!(e.cuda_code(), Some(cufile::CUDA_ERROR_OUT_OF_MEMORY));
    assert_eq!(
        e.to_string(),
        "CU_FILE_CUDA_DRIVER_ERROR (5011): the CUDA driver failed (CUDA_ERROR_OUT_OF_MEMORY)"
    );
    // Negative results: a negated cuFile code, or -1 with errno.
    assert_eq!(cufile::CufileError::from_io_result(4096).unwrap(), 4096);
    let e = cufile::CufileError::from_io_result(-5024).unwrap_err();
    assert_eq!(e.code(), cufile::CU_FILE_MEMORY_NOT_REGISTERED);
    assert!(cufile::CUfileError::default().result().is_ok());
}

/// Every library's status codes have their C names, and the libraries without an
/// error-string function are described by the bindings.
#[test]
fn status_codes_have_names_and_descriptions() {
    let e = curand::CURAND_STATUS_LENGTH_NOT_MULTIPLE
        .result()
        .unwrap_err();
    assert_eq!(e.name(), "CURAND_STATUS_LENGTH_NOT_MULTIPLE");
    assert!(
        e.to_string()
            .starts_with("CURAND_STATUS_LENGTH_NOT_MULTIPLE (105): "),
        "{e}"
    );
    let e = cufft::CUFFT_INVALID_SIZE.result().unwrap_err();
    assert_eq!(
        e.to_string(),
        "CUFFT_INVALID_SIZE (8): the transform size is invalid"
    );
    let e = cublas::CUBLAS_STATUS_INVALID_VALUE.result().unwrap_err();
    assert_eq!(e.name(), "CUBLAS_STATUS_INVALID_VALUE");
    let e = cublaslt::CUBLAS_STATUS_ARCH_MISMATCH.result().unwrap_err();
    assert_eq!(e.name(), "CUBLAS_STATUS_ARCH_MISMATCH");
    let e = cusolver::CUSOLVER_STATUS_ZERO_PIVOT.result().unwrap_err();
    assert_eq!(
        e.to_string(),
        "CUSOLVER_STATUS_ZERO_PIVOT (10): a zero pivot was met"
    );
    assert!(cusolver::CUSOLVER_STATUS_SUCCESS.result().is_ok());
    let e = nccl::ncclRemoteError.result().unwrap_err();
    assert_eq!(e.name(), "ncclRemoteError");
    assert!(cublas::CUBLAS_STATUS_SUCCESS.result().is_ok());
    assert!(nccl::ncclSuccess.result().is_ok());
}

/// The layouts the safe layers rely on.
#[test]
fn layouts_match_the_headers() {
    assert_eq!(std::mem::size_of::<nccl::ncclUniqueId>(), 128);
    assert_eq!(std::mem::size_of::<cufft::cufftComplex>(), 8);
    assert_eq!(std::mem::size_of::<cufft::cufftDoubleComplex>(), 16);
    assert_eq!(std::mem::size_of::<cublaslt::cublasLtMatmulAlgo_t>(), 64);
    assert_eq!(
        std::mem::size_of::<cublaslt::cublasLtMatmulHeuristicResult_t>(),
        96
    );
}
