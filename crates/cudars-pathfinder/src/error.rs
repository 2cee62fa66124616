//! The errors of every search, with every place that was looked at.

use std::fmt;
use std::path::PathBuf;

use crate::found_via::FoundVia;

/// What was being looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArtifactKind {
    /// A shared library ([`load_nvidia_dynamic_lib`](crate::load_nvidia_dynamic_lib)).
    DynamicLib,
    /// A header directory ([`find_nvidia_header_directory`](crate::find_nvidia_header_directory)).
    HeaderDir,
    /// A command-line tool ([`find_nvidia_binary_utility`](crate::find_nvidia_binary_utility)).
    BinaryUtility,
    /// An LLVM bitcode library ([`find_bitcode_lib`](crate::find_bitcode_lib)).
    BitcodeLib,
    /// A static library ([`find_static_lib`](crate::find_static_lib)).
    StaticLib,
}

impl fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DynamicLib => "library",
            Self::HeaderDir => "header directory",
            Self::BinaryUtility => "binary utility",
            Self::BitcodeLib => "bitcode library",
            Self::StaticLib => "static library",
        })
    }
}

/// One place a search looked, and what it found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchStep {
    /// The step's label (`site-packages`, `conda`, `system-search`, `CUDA_PATH`, …).
    pub step: &'static str,
    /// Where it looked: a directory, a file, a soname, or an environment variable.
    pub place: String,
    /// Why that place gave nothing (`not set`, `no libnvrtc.so.13`, the loader's message, …).
    pub outcome: String,
}

impl fmt::Display for SearchStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}: {}", self.step, self.place, self.outcome)
    }
}

fn render_steps(steps: &[SearchStep]) -> String {
    if steps.is_empty() {
        return " (no search step applies)".into();
    }
    let mut s = String::new();
    for (i, step) in steps.iter().enumerate() {
        s.push_str(&format!("\n  {:>2}. {step}", i + 1));
    }
    s
}

/// Everything that can go wrong when finding or loading NVIDIA artefacts.
///
/// Unknown names, names the platform lacks, and artefacts that are not installed
/// are distinct variants. [`NotFound`](Self::NotFound) lists every place looked
/// at, in order, so that the message alone says how to fix a set-up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PathfinderError {
    /// The name is not in the catalogue (names are case-sensitive: `nvJitLink`).
    UnknownName {
        /// What was asked for.
        kind: ArtifactKind,
        /// The name given.
        name: String,
        /// Every name that is supported.
        supported: Vec<&'static str>,
    },
    /// The name is known but this platform has no such artefact (`cufile` on Windows).
    NotAvailable {
        /// What was asked for.
        kind: ArtifactKind,
        /// The name given.
        name: String,
        /// The platform (`linux-x86_64`, `windows-x86_64`, …).
        platform: &'static str,
    },
    /// Every search step came up empty.
    NotFound {
        /// What was asked for.
        kind: ArtifactKind,
        /// The name given.
        name: String,
        /// Every place looked at, in order.
        searched: Vec<SearchStep>,
    },
    /// The library was found but the OS loader refused it.
    LoadFailed {
        /// The library.
        name: String,
        /// The file that was found.
        path: PathBuf,
        /// How it was found.
        found_via: FoundVia,
        /// The OS loader's message (`dlerror`).
        message: String,
    },
    /// A library that must be loaded first could not be.
    Dependency {
        /// The library asked for.
        name: String,
        /// The dependency that failed.
        dependency: &'static str,
        /// Why it failed.
        source: Box<PathfinderError>,
    },
}

// Written out rather than derived: the crate has no proc-macro dependency, so that a
// dependent's first build compiles no parser (docs/performance.md, "A dependent's build").
impl fmt::Display for PathfinderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownName {
                kind,
                name,
                supported,
            } => write!(
                f,
                "unknown {kind} name `{name}`; supported names: {}",
                supported.join(", ")
            ),
            Self::NotAvailable {
                kind,
                name,
                platform,
            } => write!(f, "{kind} `{name}` is not available on {platform}"),
            Self::NotFound {
                kind,
                name,
                searched,
            } => write!(
                f,
                "{kind} `{name}` not found; searched, in order:{}",
                render_steps(searched)
            ),
            Self::LoadFailed {
                name,
                path,
                found_via,
                message,
            } => write!(
                f,
                "library `{name}` was found at {} (via {found_via}) but could not be loaded: {message}",
                path.display()
            ),
            Self::Dependency {
                name, dependency, ..
            } => write!(
                f,
                "library `{name}` needs `{dependency}`, which could not be loaded"
            ),
        }
    }
}

impl std::error::Error for PathfinderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Dependency { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

impl PathfinderError {
    /// A short, stable name for the kind of error (`unknown-name`, `not-available`,
    /// `not-found`, `load-failed`, `dependency`), as the CLI prints it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::UnknownName { .. } => "unknown-name",
            Self::NotAvailable { .. } => "not-available",
            Self::NotFound { .. } => "not-found",
            Self::LoadFailed { .. } => "load-failed",
            Self::Dependency { .. } => "dependency",
        }
    }

    /// The places looked at, for a [`NotFound`](Self::NotFound) error (following a
    /// failed dependency to its cause).
    pub fn searched(&self) -> &[SearchStep] {
        match self {
            Self::NotFound { searched, .. } => searched,
            Self::Dependency { source, .. } => source.searched(),
            _ => &[],
        }
    }
}

/// The name of the platform this program was built for, as errors print it.
pub(crate) fn platform_name() -> &'static str {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        "linux-x86_64"
    } else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
        "linux-aarch64"
    } else if cfg!(target_os = "linux") {
        "linux"
    } else if cfg!(all(windows, target_arch = "aarch64")) {
        "windows-arm64"
    } else if cfg!(windows) {
        "windows-x86_64"
    } else {
        "this operating system"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed dependency says which, and leaves why to its source: the
    /// dependency's search list is in the chain once.
    #[test]
    fn a_failed_dependency_does_not_repeat_its_source() {
        let missing = PathfinderError::NotFound {
            kind: ArtifactKind::DynamicLib,
            name: "cublasLt".into(),
            searched: vec![SearchStep {
                step: "system-search",
                place: "libcublasLt.so.13".into(),
                outcome: "cannot open shared object file".into(),
            }],
        };
        let e = PathfinderError::Dependency {
            name: "cublas".into(),
            dependency: "cublasLt",
            source: Box::new(missing.clone()),
        };
        assert_eq!(
            e.to_string(),
            "library `cublas` needs `cublasLt`, which could not be loaded"
        );
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source, Some(missing.to_string()));
        assert_eq!(e.searched(), missing.searched());
    }
}
