//! [`FoundVia`]: the search step that found a library or artefact. A leaf: the
//! loader, the artefact search and their errors all name it.

use std::fmt;

/// How a library (or other artefact) was found: the search step that found it.
///
/// [`label`](Self::label) (and `Display`) give the same strings as
/// `cuda.pathfinder`'s `found_via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FoundVia {
    /// In an NVIDIA wheel under a site-packages directory: `site-packages`.
    SitePackages,
    /// Under `$CONDA_PREFIX`: `conda`.
    Conda,
    /// The process had already loaded it: `was-already-loaded-from-elsewhere`.
    WasAlreadyLoadedFromElsewhere,
    /// The OS loader found it by soname (`LD_LIBRARY_PATH`, `ld.so.cache`): `system-search`.
    SystemSearch,
    /// A library-specific root variable (`CUDNN_PATH`, `NCCL_HOME`); the label is its name.
    InstallRootEnvVar(&'static str),
    /// Under `CUDA_PATH` or `CUDA_HOME`: `CUDA_PATH` for both.
    CudaPath,
    /// Under the toolkit root found from a canary library: `system-ctk-root`.
    SystemCtkRoot,
    /// Under a versioned install root in `Program Files` (Windows; cuDNN's
    /// `NVIDIA\CUDNN\v9.*`): `ProgramFiles`.
    ProgramFiles,
    /// On `PATH` (binary utilities only): `PATH`.
    Path,
}

impl FoundVia {
    /// The step's label: `site-packages`, `conda`, `was-already-loaded-from-elsewhere`,
    /// `system-search`, `CUDA_PATH`, `ProgramFiles`, `system-ctk-root`, `PATH`, or a
    /// root variable's name. The labels are the same on Linux and Windows.
    pub fn label(&self) -> &'static str {
        match self {
            Self::SitePackages => "site-packages",
            Self::Conda => "conda",
            Self::WasAlreadyLoadedFromElsewhere => "was-already-loaded-from-elsewhere",
            Self::SystemSearch => "system-search",
            Self::InstallRootEnvVar(var) => var,
            Self::CudaPath => "CUDA_PATH",
            Self::SystemCtkRoot => "system-ctk-root",
            Self::ProgramFiles => "ProgramFiles",
            Self::Path => "PATH",
        }
    }
}

impl fmt::Display for FoundVia {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}
