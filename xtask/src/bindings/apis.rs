//! The C APIs the generator binds, how each resolves at run time, and the
//! operating systems it generates for: the table every other part reads.
//!
//! Adding an API starts here (an [`Api`] entry in [`APIS`], and its result enum
//! in [`RESULT_ENUMS`]); `docs/adding-a-library.md` lists the rest.

/// How an API's entry points are resolved at run time.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `cuGetProcAddress` at the ABI version `cudaTypedefs.h` records.
    Driver,
    /// `dlsym` of the exported (possibly versioned) symbol.
    Dlsym,
}

/// One C API.
pub(crate) struct Api {
    /// The Rust module (and cargo feature) name.
    pub(crate) module: &'static str,
    /// The header bindgen reads (and those whose items it keeps).
    pub(crate) headers: &'static [&'static str],
    /// Extra headers whose items are kept (types the API uses).
    pub(super) extra_files: &'static [&'static str],
    /// Extra headers read for `#define` name mappings.
    pub(super) kind: Kind,
    /// The type every call returns (and the fallback is built from).
    pub(crate) result_type: &'static str,
    /// Whether bindgen's layout checks are kept.
    pub(super) layout_tests: bool,
    /// The NVIDIA documentation of the API.
    pub(crate) docs: &'static str,
    /// Whether the library is versioned by CUDA major (`libcudart.so.12` and
    /// `.so.13` are different libraries with different ABIs), so that an entry
    /// resolves only against a library of a major whose headers give its shape.
    pub(crate) by_major: bool,
}

pub(crate) const APIS: [Api; 14] = [
    Api {
        module: "driver",
        // OpenGL interop (`cuGraphicsGLRegisterBuffer`, …) is in the driver
        // and resolved the same way; its header includes <GL/gl.h> for two
        // types, which a stand-in gives (see `stub_include_dir`).
        headers: &["cuda.h", "cudaTypedefs.h", "cudaGL.h", "cudaGLTypedefs.h"],
        extra_files: &[],
        kind: Kind::Driver,
        result_type: "CUresult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cuda-driver-api/",
        by_major: false,
    },
    Api {
        module: "runtime",
        headers: &["cuda_runtime_api.h"],
        extra_files: &[
            "driver_types.h",
            "vector_types.h",
            "surface_types.h",
            "texture_types.h",
            "library_types.h",
            "cuda_device_runtime_api.h",
        ],
        kind: Kind::Dlsym,
        result_type: "cudaError_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cuda-runtime-api/",
        by_major: true,
    },
    Api {
        module: "nvrtc",
        headers: &["nvrtc.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvrtcResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvrtc/",
        by_major: true,
    },
    Api {
        module: "nvjitlink",
        headers: &["nvJitLink.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvJitLinkResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvjitlink/",
        by_major: true,
    },
    Api {
        module: "nvfatbin",
        headers: &["nvFatbin.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvFatbinResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvfatbin/",
        by_major: true,
    },
    Api {
        module: "nvvm",
        headers: &["nvvm.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvvmResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/libnvvm-api/",
        by_major: false,
    },
    Api {
        module: "nvml",
        headers: &["nvml.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvmlReturn_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/deploy/nvml-api/",
        by_major: false,
    },
    Api {
        module: "cublas",
        headers: &["cublas_v2.h"],
        extra_files: &["cublas_api.h"],
        kind: Kind::Dlsym,
        result_type: "cublasStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cublas/",
        by_major: true,
    },
    Api {
        module: "cublaslt",
        headers: &["cublasLt.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "cublasStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cublas/#using-the-cublaslt-api",
        by_major: true,
    },
    Api {
        module: "curand",
        headers: &["curand.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "curandStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/curand/",
        by_major: false,
    },
    Api {
        module: "cufft",
        headers: &["cufft.h", "cufftXt.h"],
        extra_files: &["cudalibxt.h"],
        kind: Kind::Dlsym,
        result_type: "cufftResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cufft/",
        by_major: true,
    },
    Api {
        module: "cusolver",
        // The dense API. `cusolverDn.h` takes cuBLAS's fill, side, operation
        // and diagonal enums from `cublas_api.h`: bindgen keeps those it uses
        // (not cuBLAS's functions), as cuBLASLt keeps cuBLAS's status type.
        headers: &["cusolverDn.h"],
        extra_files: &["cusolver_common.h"],
        kind: Kind::Dlsym,
        result_type: "cusolverStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cusolver/",
        by_major: true,
    },
    Api {
        module: "nccl",
        headers: &["nccl.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "ncclResult_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html",
        by_major: false,
    },
    Api {
        module: "cufile",
        headers: &["cufile.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "CUfileError_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/gpudirect-storage/api-reference-guide/",
        by_major: false,
    },
];

/// The operating systems the bindings are generated for. Their C types differ
/// (C's `long` is 8 bytes on Linux and 4 on Windows, so are the structs that
/// hold one), so bindgen runs once per OS; a file whose text differs between
/// them is written twice (`types.rs` and `types_windows.rs`), and the module's
/// `mod.rs` picks one with `#[cfg_attr(windows, path = ..)]`. Entry points one
/// OS alone declares do not split the other parts: see [`align_entries`](super::merge::align_entries).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Os {
    /// Linux x86_64 (and every other non-Windows target).
    Linux,
    /// Windows x64.
    Windows,
}

impl Os {
    /// The target clang parses the headers for.
    pub(super) fn clang_target(self) -> &'static str {
        match self {
            Os::Linux => "x86_64-unknown-linux-gnu",
            Os::Windows => "x86_64-pc-windows-msvc",
        }
    }

    /// The name used in file names and messages.
    pub(super) fn name(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }
}

/// The result enums whose constant names get a generated `name()` table.
pub(super) const RESULT_ENUMS: [&str; 13] = [
    "cudaError_enum",
    "cudaError",
    "nvrtcResult",
    "nvJitLinkResult",
    "nvFatbinResult",
    "nvvmResult",
    "nvmlReturn_enum",
    "cublasStatus_t",
    "curandStatus",
    "cufftResult_t",
    "cusolverStatus_t",
    "ncclResult_t",
    "CUfileOpError",
];

/// APIs that exist on Linux only (cuFile: GPUDirect Storage has no Windows
/// library, and its header needs a POSIX C library): no Windows pass, and
/// `cudars-bindings` compiles their module on Linux only.
pub(super) const LINUX_ONLY: &[&str] = &["cufile"];
