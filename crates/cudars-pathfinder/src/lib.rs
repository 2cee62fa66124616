//! Find and load NVIDIA's CUDA libraries, headers and tools: the Rust counterpart of
//! NVIDIA's `cuda.pathfinder`.
//!
//! ```
//! use cudars_pathfinder::{load_nvidia_dynamic_lib, PathfinderError};
//!
//! match load_nvidia_dynamic_lib("nvrtc") {
//!     Ok(lib) => println!("nvrtc: {} (via {})", lib.abs_path().display(), lib.found_via()),
//!     // Not installed: the message lists every place that was searched.
//!     Err(e @ PathfinderError::NotFound { .. }) => println!("{e}"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Libraries are known by their catalogue names (`cudart`, `nvrtc`, `nvJitLink`,
//! `nvvm`, `cublas`, `cufft`, `cudnn`, `nccl`, `cuda` for the driver, `nvml`, … : all 50
//! libraries of `cuda.pathfinder`'s catalogue, see [`catalog::catalog`]). A loaded
//! library is cached per name for the life of the process and never unloaded (see
//! [`LoadedDl`] for why).
//!
//! # Search order
//!
//! For one library, first hit wins:
//!
//! | step | label ([`FoundVia`]) | where |
//! |---|---|---|
//! | 1 | `site-packages` | NVIDIA's Python wheels: each site-packages directory ([`site_packages_dirs`]) joined with the library's wheel sub-directories (`nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib`, …) |
//! | 2 | `conda` | `$CONDA_PREFIX` with the library's anchor directories (`lib`, `nvvm/lib64`, …) |
//! | 3 | `was-already-loaded-from-elsewhere` | the process has already loaded one of its sonames (`dlopen` with `RTLD_NOLOAD`; Windows: `GetModuleHandleExW`) |
//! | 4 | (1 or 2's label) | what step 1 or 2 found is loaded now |
//! | 4 | `system-search` | else the OS loader by soname (`LD_LIBRARY_PATH`, `/etc/ld.so.cache`, …; Windows: the program's directory, the system directories, `PATH`) |
//! | 5 | the variable's name | library-specific roots (`CUDNN_PATH`, `NCCL_HOME`) |
//! | 5 | `CUDA_PATH` | `$CUDA_PATH`, then `$CUDA_HOME` (both labelled `CUDA_PATH`) |
//! | 5 | `ProgramFiles` | Windows only: versioned installs under `%ProgramW6432%` (cuDNN's `NVIDIA\CUDNN\v9.*`), newest first |
//! | 6 | `system-ctk-root` | for libraries outside the linker path (`nvvm`, `cupti`): the toolkit root, from where the OS loader would find a canary library (`cudart`), read from the loader's search path without loading anything |
//!
//! The driver's libraries (`cuda`, `nvml`, `nvcudla`) skip steps 1, 2, 5 and 6.
//! Dependencies the catalogue lists (`cublas` → `cublasLt`) are loaded first. When
//! `nvrtc` comes from a wheel or conda, its `nvrtc-builtins` companion in the same
//! directory is loaded too. Libraries the catalogue marks are loaded with
//! `RTLD_DEEPBIND`; all with `RTLD_NOW | RTLD_GLOBAL`.
//!
//! On Windows the steps and labels are the same, with the catalogue's DLL names and
//! directories (wheels: `nvidia/cu13/bin/x86_64`, …; conda: `%CONDA_PREFIX%\Library\bin`;
//! a toolkit: `bin\x64`, `bin`). A found file is loaded with `LoadLibraryExW` and
//! `LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR`. NVRTC's
//! builtins are preloaded wherever NVRTC was found, and the directory of a library
//! that loads companions by bare name (NVRTC, cuFFT, cuDNN) is added with
//! `AddDllDirectory` and appended to the process's `PATH`, as `cuda.pathfinder` does.
//!
//! Header directories ([`find_nvidia_header_directory`]), binary utilities
//! ([`find_nvidia_binary_utility`]), bitcode ([`find_bitcode_lib`]) and static
//! libraries ([`find_static_lib`]) are searched in site-packages, conda, root
//! variables, `CUDA_PATH`/`CUDA_HOME` and the canary's toolkit root (and tools on
//! `PATH` last).
//!
//! # Errors
//!
//! [`PathfinderError`] keeps an unknown name, a name this platform lacks, and a
//! library that is not installed apart. Not-found lists every place searched, in
//! order, so a user can fix their set-up from the message alone.
//!
//! # Environment
//!
//! | variable | effect |
//! |---|---|
//! | `VIRTUAL_ENV` | its site-packages are searched (step 1) |
//! | `CONDA_PREFIX` | its site-packages (step 1) and its `lib` directories (step 2) are searched |
//! | `PYTHONPATH` | each directory is searched as a site-packages directory (step 1) |
//! | `PATH` | the first `python3` on it names a Python environment to search (step 1); tools are looked for on it last |
//! | `PYTHONUSERBASE`, `HOME`, `PYTHONNOUSERSITE` | the user site-packages of that Python (step 1) |
//! | `PYENV_VERSION` | the version a pyenv shim on `PATH` selects (step 1) |
//! | `LD_LIBRARY_PATH` | read by the OS loader (step 4) and when finding the canary (step 6) |
//! | `PATH` (Windows) | as `LD_LIBRARY_PATH` on Linux; `SystemRoot` names the system directories searched before it |
//! | `APPDATA` (Windows) | the user site `%APPDATA%\Python\Python3XY\site-packages` (step 1) |
//! | `ProgramW6432`, `ProgramFiles` (Windows) | where the `ProgramFiles` step looks |
//! | `CUDNN_PATH`, `NCCL_HOME` | library-specific roots (step 5) |
//! | `CUDA_PATH`, `CUDA_HOME` | toolkit roots (step 5), in that order |
//!
//! Python environments are worked out from the file system once per process,
//! never by starting Python.
//!
//! # Platforms
//!
//! Linux (glibc) and Windows (x86_64, `-msvc` and `-gnu`). The Windows build is tested
//! under Wine with NVIDIA's `win_amd64` wheels; the driver (`nvcuda.dll`) takes the
//! same code path as on Linux but needs Windows and a GPU to test. Elsewhere every
//! load reports [`PathfinderError::NotAvailable`].
//!
//! # Command-line tool
//!
//! With the default `cli` feature the crate builds `cudars-pathfinder`:
//! `cudars-pathfinder load nvrtc nvJitLink --json`, `cudars-pathfinder doctor`, and
//! `cudars-pathfinder find header|binary|bitcode|static <name>`.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod artifacts;
pub mod catalog;
mod dynlib;
mod error;
mod found_via;
#[cfg(unix)]
mod ldcache;
mod python;
mod roots;
mod sys;

pub use artifacts::{
    Located, find_bitcode_lib, find_nvidia_binary_utility, find_nvidia_header_directory,
    find_static_lib, supported_names,
};
pub use dynlib::{
    LoadedDl, LocatedDynamicLib, load_nvidia_dynamic_lib, loaded_libraries,
    locate_nvidia_dynamic_lib,
};
pub use error::{ArtifactKind, PathfinderError, SearchStep};
pub use found_via::FoundVia;
pub use python::site_packages_dirs;
pub use roots::get_cuda_path_or_home;
