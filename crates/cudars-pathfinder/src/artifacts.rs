//! Header directories, binary utilities, bitcode and static libraries: files found
//! by the same roots as the libraries (site-packages, conda, root variables,
//! `CUDA_PATH`/`CUDA_HOME`, the canary's toolkit root, and for tools `PATH`).

use std::path::PathBuf;

use crate::FoundVia;
use crate::dynlib::find_in_dirs;
use crate::error::{ArtifactKind, PathfinderError, SearchStep};

/// A file or directory found by one of the `find_*` functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// What kind of artefact it is.
    pub kind: ArtifactKind,
    /// The name it was asked for by.
    pub name: &'static str,
    /// The header directory, or the file (tool, bitcode, static library).
    pub abs_path: PathBuf,
    /// The step that found it.
    pub found_via: FoundVia,
}

/// Where one artefact lives, relative to each kind of root.
#[derive(Debug)]
pub(crate) struct FileSpec {
    /// The name users ask for.
    pub(crate) name: &'static str,
    /// Other names it answers to (`cuda.pathfinder`'s, where they differ).
    pub(crate) aliases: &'static [&'static str],
    /// The file that must exist (relative to the directory searched).
    pub(crate) file: &'static str,
    /// Sub-directories of site-packages.
    pub(crate) site_packages: &'static [&'static str],
    /// Sub-directories of a toolkit or conda root.
    pub(crate) root_dirs: &'static [&'static str],
    /// Library-specific root variables (searched with `root_dirs`).
    pub(crate) root_vars: &'static [&'static str],
}

const CU13_INC: &str = "nvidia/cu13/include";
const CTK_INC: &[&str] = &[
    "include",
    "targets/x86_64-linux/include",
    "targets/sbsa-linux/include",
];

macro_rules! header {
    ($name:literal, $file:literal, $pkg:literal) => {
        FileSpec {
            name: $name,
            aliases: &[],
            file: $file,
            site_packages: &[CU13_INC, concat!("nvidia/", $pkg, "/include")],
            root_dirs: CTK_INC,
            root_vars: &[],
        }
    };
}

/// The header directories [`find_nvidia_header_directory`] knows.
pub(crate) static HEADERS: &[FileSpec] = &[
    header!("cudart", "cuda_runtime.h", "cuda_runtime"),
    header!("cuda", "cuda.h", "cuda_runtime"),
    header!("nvrtc", "nvrtc.h", "cuda_nvrtc"),
    header!("nvjitlink", "nvJitLink.h", "nvjitlink"),
    FileSpec {
        name: "nvvm",
        aliases: &[],
        file: "nvvm.h",
        site_packages: &[
            CU13_INC,
            "nvidia/cu13/nvvm/include",
            "nvidia/cuda_nvcc/nvvm/include",
        ],
        root_dirs: &["nvvm/include"],
        root_vars: &[],
    },
    FileSpec {
        name: "nvml",
        aliases: &[],
        file: "nvml.h",
        site_packages: &[
            CU13_INC,
            "nvidia/nvml_dev/include",
            "nvidia/cuda_nvml_dev/include",
        ],
        root_dirs: CTK_INC,
        root_vars: &[],
    },
    FileSpec {
        name: "cccl",
        aliases: &[],
        file: "cuda/std/version",
        site_packages: &[
            "cuda/cccl/headers/include",
            "nvidia/cu13/include/cccl",
            "nvidia/cuda_cccl/include",
        ],
        root_dirs: &[
            "include/cccl",
            "targets/x86_64-linux/include/cccl",
            "targets/sbsa-linux/include/cccl",
            "include",
            "targets/x86_64-linux/include",
        ],
        root_vars: &[],
    },
    header!("cublas", "cublas.h", "cublas"),
    header!("cufft", "cufft.h", "cufft"),
    header!("cufile", "cufile.h", "cufile"),
    header!("curand", "curand.h", "curand"),
    header!("cusolver", "cusolver_common.h", "cusolver"),
    header!("cusparse", "cusparse.h", "cusparse"),
    header!("npp", "npp.h", "npp"),
    header!("nvcc", "fatbinary_section.h", "cuda_nvcc"),
    header!("nvfatbin", "nvFatbin.h", "nvfatbin"),
    header!("nvjpeg", "nvjpeg.h", "nvjpeg"),
    header!("cupti", "cupti.h", "cuda_cupti"),
    FileSpec {
        name: "cudnn",
        aliases: &[],
        file: "cudnn.h",
        site_packages: &["nvidia/cudnn/include"],
        root_dirs: &["include"],
        root_vars: &["CUDNN_PATH"],
    },
    FileSpec {
        name: "nccl",
        aliases: &[],
        file: "nccl.h",
        site_packages: &["nvidia/nccl/include"],
        root_dirs: &["include", "build/include"],
        root_vars: &["NCCL_HOME"],
    },
    FileSpec {
        name: "cutensor",
        aliases: &[],
        file: "cutensor.h",
        site_packages: &["cutensor/include"],
        root_dirs: &["include"],
        root_vars: &[],
    },
];

const NSYS_SP: &[&str] = &["nvidia/nsight_systems/bin"];
const NCU_SP: &[&str] = &["nvidia/nsight_compute/bin"];
const TOOL_SP: &[&str] = &[
    "nvidia/cu13/bin",
    "nvidia/cuda_nvcc/bin",
    "nvidia/cuda_cuobjdump/bin",
    "nvidia/cuda_nvdisasm/bin",
    "nvidia/cuda_cuxxfilt/bin",
    "nvidia/cuda_nvprune/bin",
];

macro_rules! tool {
    ($name:literal) => {
        tool!($name, TOOL_SP)
    };
    ($name:literal, $sp:expr) => {
        FileSpec {
            name: $name,
            aliases: &[],
            file: if cfg!(windows) {
                concat!($name, ".exe")
            } else {
                $name
            },
            site_packages: $sp,
            root_dirs: &["bin"],
            root_vars: &[],
        }
    };
}

/// The binary utilities [`find_nvidia_binary_utility`] knows.
pub(crate) static BINARIES: &[FileSpec] = &[
    tool!("nvcc"),
    tool!("ptxas"),
    tool!("nvdisasm"),
    tool!("cuobjdump"),
    tool!("fatbinary"),
    tool!("nvlink"),
    tool!("nvprune"),
    tool!("cu++filt"),
    tool!("bin2c"),
    tool!("cudafe++"),
    FileSpec {
        name: "cicc",
        aliases: &[],
        file: if cfg!(windows) { "cicc.exe" } else { "cicc" },
        site_packages: &["nvidia/cu13/nvvm/bin", "nvidia/cuda_nvcc/nvvm/bin"],
        root_dirs: &["nvvm/bin"],
        root_vars: &[],
    },
    FileSpec {
        name: "compute-sanitizer",
        aliases: &[],
        file: if cfg!(windows) {
            "compute-sanitizer.exe"
        } else {
            "compute-sanitizer"
        },
        site_packages: &[
            "nvidia/cu13/compute-sanitizer",
            "nvidia/cuda_sanitizer_api/compute-sanitizer",
        ],
        root_dirs: &["compute-sanitizer", "bin"],
        root_vars: &[],
    },
    tool!("cuda-gdb"),
    tool!("cuda-gdbserver"),
    tool!("nvprof"),
    tool!("nsys", NSYS_SP),
    tool!("nsight-sys", NSYS_SP),
    tool!("ncu", NCU_SP),
    tool!("nsight-compute", NCU_SP),
];

/// The bitcode libraries [`find_bitcode_lib`] knows.
pub(crate) static BITCODE: &[FileSpec] = &[FileSpec {
    name: "libdevice",
    aliases: &["device"],
    file: "libdevice.10.bc",
    site_packages: &[
        "nvidia/cu13/nvvm/libdevice",
        "nvidia/cuda_nvcc/nvvm/libdevice",
    ],
    root_dirs: &["nvvm/libdevice"],
    root_vars: &[],
}];

const STATIC_SP: &[&str] = if cfg!(windows) {
    &["nvidia/cu13/lib/x64", "nvidia/cuda_runtime/lib/x64"]
} else {
    &["nvidia/cu13/lib", "nvidia/cuda_runtime/lib"]
};
const STATIC_ROOT: &[&str] = &[
    "lib64",
    "lib",
    "targets/x86_64-linux/lib",
    "targets/sbsa-linux/lib",
    "lib/x64",
];

/// The static libraries [`find_static_lib`] knows.
pub(crate) static STATIC_LIBS: &[FileSpec] = &[
    FileSpec {
        name: "cudadevrt",
        aliases: &[],
        file: if cfg!(windows) {
            "cudadevrt.lib"
        } else {
            "libcudadevrt.a"
        },
        site_packages: STATIC_SP,
        root_dirs: STATIC_ROOT,
        root_vars: &[],
    },
    FileSpec {
        name: "cudart_static",
        aliases: &[],
        file: if cfg!(windows) {
            "cudart_static.lib"
        } else {
            "libcudart_static.a"
        },
        site_packages: STATIC_SP,
        root_dirs: STATIC_ROOT,
        root_vars: &[],
    },
    FileSpec {
        name: "culibos",
        aliases: &[],
        file: "libculibos.a",
        site_packages: STATIC_SP,
        root_dirs: STATIC_ROOT,
        root_vars: &[],
    },
];

fn find(
    kind: ArtifactKind,
    table: &'static [FileSpec],
    name: &str,
    on_path: bool,
) -> Result<Located, PathfinderError> {
    let (spec, asked) = table
        .iter()
        .find_map(|s| names_of(s).find(|n| *n == name).map(|n| (s, n)))
        .ok_or_else(|| PathfinderError::UnknownName {
            kind,
            name: name.to_string(),
            supported: table.iter().flat_map(names_of).collect(),
        })?;
    let mut searched: Vec<SearchStep> = Vec::new();
    let want_dir = kind == ArtifactKind::HeaderDir;
    let files = [spec.file];
    let located = |dir: PathBuf, found_via: FoundVia| {
        // `find_in_dirs` returns the file; headers report the directory above it.
        let abs_path = if want_dir {
            let mut d = dir;
            for _ in std::path::Path::new(spec.file).components() {
                d.pop();
            }
            d
        } else {
            dir
        };
        Ok(Located {
            kind,
            name: asked,
            abs_path: std::path::absolute(&abs_path).unwrap_or(abs_path),
            found_via,
        })
    };

    let sp = crate::python::site_packages_dirs();
    let dirs = sp
        .iter()
        .flat_map(|s| spec.site_packages.iter().map(move |r| s.join(r)));
    if let Some(p) = find_in_dirs(dirs, &files, "site-packages", &mut searched) {
        return located(p, FoundVia::SitePackages);
    }
    match crate::roots::conda_anchor() {
        Some(root) => {
            let dirs = spec.root_dirs.iter().map(|r| root.join(r));
            if let Some(p) = find_in_dirs(dirs, &files, "conda", &mut searched) {
                return located(p, FoundVia::Conda);
            }
        }
        None => searched.push(SearchStep {
            step: "conda",
            place: "$CONDA_PREFIX".into(),
            outcome: "not set".into(),
        }),
    }
    for var in spec.root_vars {
        if let Some(root) = std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
        {
            let dirs = spec.root_dirs.iter().map(|r| root.join(r));
            if let Some(p) = find_in_dirs(dirs, &files, var, &mut searched) {
                return located(p, FoundVia::InstallRootEnvVar(var));
            }
        }
    }
    let roots = crate::roots::cuda_roots();
    if roots.is_empty() {
        searched.push(SearchStep {
            step: "CUDA_PATH",
            place: "$CUDA_PATH, $CUDA_HOME".into(),
            outcome: "not set".into(),
        });
    }
    for (_, root) in roots {
        let dirs = spec.root_dirs.iter().map(|r| root.join(r));
        if let Some(p) = find_in_dirs(dirs, &files, "CUDA_PATH", &mut searched) {
            return located(p, FoundVia::CudaPath);
        }
    }
    match crate::roots::ctk_root_from_canary("cudart") {
        Ok(root) => {
            let dirs = spec.root_dirs.iter().map(|r| root.join(r));
            if let Some(p) = find_in_dirs(dirs, &files, "system-ctk-root", &mut searched) {
                return located(p, FoundVia::SystemCtkRoot);
            }
        }
        Err(why) => searched.push(SearchStep {
            step: "system-ctk-root",
            place: "toolkit root from canary `cudart`".into(),
            outcome: why,
        }),
    }
    if on_path {
        match std::env::var_os("PATH") {
            Some(path) => {
                if let Some(p) =
                    find_in_dirs(std::env::split_paths(&path), &files, "PATH", &mut searched)
                {
                    return located(p, FoundVia::Path);
                }
            }
            None => searched.push(SearchStep {
                step: "PATH",
                place: "$PATH".into(),
                outcome: "not set".into(),
            }),
        }
    }
    Err(PathfinderError::NotFound {
        kind,
        name: name.to_string(),
        searched,
    })
}

/// Finds the directory that holds an NVIDIA component's headers: `cudart` (and
/// `cuda`, the driver's `cuda.h`), `nvrtc`, `nvjitlink`, `nvvm`, `nvml`, `cccl`,
/// `cublas`, `cufft`, `curand`, `cusolver`, `cusparse`, `npp`, `nvcc`, `nvfatbin`,
/// `nvjpeg`, `cupti`, `cufile`, `cudnn`, `nccl`, `cutensor`.
///
/// Searched: site-packages, `$CONDA_PREFIX`, library root variables,
/// `CUDA_PATH`/`CUDA_HOME`, the canary's toolkit root. Not cached: a file
/// search is cheap.
///
/// # Errors
/// [`PathfinderError::UnknownName`] or [`PathfinderError::NotFound`].
pub fn find_nvidia_header_directory(name: &str) -> Result<Located, PathfinderError> {
    find(ArtifactKind::HeaderDir, HEADERS, name, false)
}

/// Finds an NVIDIA command-line tool: `nvcc`, `ptxas`, `nvdisasm`, `cuobjdump`,
/// `fatbinary`, `nvlink`, `nvprune`, `cu++filt`, `bin2c`, `cudafe++`, `cicc`,
/// `compute-sanitizer`, `cuda-gdb`, `cuda-gdbserver`, `nvprof`, `nsys`,
/// `nsight-sys`, `ncu`, `nsight-compute` (every name `cuda.pathfinder` knows, and
/// more). On Windows the file is `<name>.exe`.
///
/// Searched as headers are, then `PATH`.
///
/// # Errors
/// [`PathfinderError::UnknownName`] or [`PathfinderError::NotFound`].
pub fn find_nvidia_binary_utility(name: &str) -> Result<Located, PathfinderError> {
    find(ArtifactKind::BinaryUtility, BINARIES, name, true)
}

/// Finds an LLVM bitcode library: `libdevice` (`libdevice.10.bc`, which NVVM links
/// for the maths functions), also known by `cuda.pathfinder`'s name `device`.
///
/// # Errors
/// [`PathfinderError::UnknownName`] or [`PathfinderError::NotFound`].
pub fn find_bitcode_lib(name: &str) -> Result<Located, PathfinderError> {
    find(ArtifactKind::BitcodeLib, BITCODE, name, false)
}

/// Finds a static library: `cudadevrt` (needed to link relocatable device code),
/// `cudart_static`, `culibos`.
///
/// # Errors
/// [`PathfinderError::UnknownName`] or [`PathfinderError::NotFound`].
pub fn find_static_lib(name: &str) -> Result<Located, PathfinderError> {
    find(ArtifactKind::StaticLib, STATIC_LIBS, name, false)
}

/// The names each `find_*` function accepts.
pub fn supported_names(kind: ArtifactKind) -> Vec<&'static str> {
    let table: &[FileSpec] = match kind {
        ArtifactKind::DynamicLib => return crate::catalog::supported_nvidia_libnames().collect(),
        ArtifactKind::HeaderDir => HEADERS,
        ArtifactKind::BinaryUtility => BINARIES,
        ArtifactKind::BitcodeLib => BITCODE,
        ArtifactKind::StaticLib => STATIC_LIBS,
    };
    table.iter().flat_map(names_of).collect()
}

/// A spec's name, then its aliases.
fn names_of(s: &'static FileSpec) -> impl Iterator<Item = &'static str> {
    std::iter::once(s.name).chain(s.aliases.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_cuda_pathfinder_knows_is_accepted() {
        let tools = supported_names(ArtifactKind::BinaryUtility);
        for n in [
            "nvcc",
            "nvdisasm",
            "cuobjdump",
            "nvprune",
            "fatbinary",
            "bin2c",
            "nvlink",
            "cuda-gdb",
            "cuda-gdbserver",
            "compute-sanitizer",
            "nvprof",
            "nsys",
            "nsight-sys",
            "ncu",
            "nsight-compute",
        ] {
            assert!(tools.contains(&n), "{n} missing from {tools:?}");
        }
        assert_eq!(
            supported_names(ArtifactKind::BitcodeLib),
            ["libdevice", "device"]
        );
        // A misspelt name lists both spellings.
        let e = find_bitcode_lib("devic").unwrap_err();
        assert!(matches!(e, PathfinderError::UnknownName { .. }), "{e:?}");
        assert!(
            e.to_string().contains("libdevice") && e.to_string().contains("device"),
            "{e}"
        );
    }
}
