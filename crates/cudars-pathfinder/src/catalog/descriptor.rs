//! One catalogue entry: [`LibDescriptor`] and [`PackagedWith`]. A leaf: the
//! generated table is made of these, and the catalogue serves them.

/// Who ships a library, which decides the search steps that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PackagedWith {
    /// Part of the CUDA Toolkit (wheels, conda, `CUDA_HOME`, …).
    Ctk,
    /// Another NVIDIA product (cuDNN, NCCL, cuTENSOR, …).
    Other,
    /// Installed with the GPU driver (`libcuda`, NVML): only the OS loader finds it.
    Driver,
}

/// One catalogue entry: everything the search needs to know about a library.
///
/// Field names follow `cuda.pathfinder`'s `DescriptorSpec`. Paths are relative:
/// `site_packages_*` to a site-packages directory, `anchor_rel_dirs_*` to a
/// toolkit or conda root.
#[derive(Debug)]
#[non_exhaustive]
pub struct LibDescriptor {
    /// The name used with [`load_nvidia_dynamic_lib`](crate::load_nvidia_dynamic_lib).
    pub name: &'static str,
    /// Who ships the library.
    pub packaged_with: PackagedWith,
    /// Linux sonames, preferred first.
    pub linux_sonames: &'static [&'static str],
    /// Windows DLL names, preferred first.
    pub windows_dlls: &'static [&'static str],
    /// Windows architectures the library exists for (`x64`, `arm64`).
    pub supported_windows_arch: &'static [&'static str],
    /// Sub-directories of site-packages that NVIDIA's wheels use on Linux.
    pub site_packages_linux: &'static [&'static str],
    /// Libraries loaded before this one (by catalogue name).
    pub dependencies: &'static [&'static str],
    /// Libraries loaded before this one when they can be found.
    pub optional_dependencies: &'static [&'static str],
    /// Directories under a toolkit or conda root that hold the library (Linux).
    pub anchor_rel_dirs_linux: &'static [&'static str],
    /// Library-specific root variables (`CUDNN_PATH`, `NCCL_HOME`, …), Linux.
    pub install_root_env_vars_linux: &'static [&'static str],
    /// Directories under those roots to look in, Linux.
    pub install_root_env_rel_dirs_linux: &'static [&'static str],
    /// Library-specific root variables, Windows.
    pub install_root_env_vars_windows: &'static [&'static str],
    /// Libraries whose location through the OS loader reveals the toolkit root.
    pub ctk_root_canary_anchor_libnames: &'static [&'static str],
    /// Site-packages sub-directories on Windows x64.
    pub site_packages_windows_x64: &'static [&'static str],
    /// Site-packages sub-directories on Windows arm64.
    pub site_packages_windows_arm64: &'static [&'static str],
    /// Toolkit-relative directories on Windows x64.
    pub anchor_rel_dirs_windows_x64: &'static [&'static str],
    /// Toolkit-relative directories on Windows arm64.
    pub anchor_rel_dirs_windows_arm64: &'static [&'static str],
    /// Directories under the library-specific roots on Windows x64.
    pub install_root_env_rel_dirs_windows_x64: &'static [&'static str],
    /// Directories under the library-specific roots on Windows arm64.
    pub install_root_env_rel_dirs_windows_arm64: &'static [&'static str],
    /// `Program Files` globs on Windows x64.
    pub program_files_root_globs_windows_x64: &'static [&'static str],
    /// `Program Files` globs on Windows arm64.
    pub program_files_root_globs_windows_arm64: &'static [&'static str],
    /// Whether Windows needs the DLL's directory added to the search path.
    pub requires_add_dll_directory: bool,
    /// Whether Linux must load it with `RTLD_DEEPBIND`.
    pub requires_rtld_deepbind: bool,
    /// Whether Windows checks the DLL's architecture before loading it.
    pub requires_windows_binary_arch_check: bool,
}

/// Libraries NVIDIA ships for Linux on aarch64 only: cuDLA (and the driver's
/// `nvcudla` under it) drives the deep-learning accelerator of Jetson and DRIVE
/// (Tegra) systems. Elsewhere on Linux they are
/// [`PathfinderError::NotAvailable`](crate::PathfinderError::NotAvailable), as on
/// Windows x64; `cuda.pathfinder`'s catalogue lists their sonames for every Linux.
pub(crate) const LINUX_AARCH64_ONLY: &[&str] = &["cudla", "nvcudla"];

impl LibDescriptor {
    /// The platform's file names for this library (sonames or DLL names).
    pub fn platform_names(&self) -> &'static [&'static str] {
        if cfg!(windows) {
            self.windows_dlls
        } else {
            self.linux_sonames
        }
    }

    /// Whether the library exists on the platform this program was built for.
    pub fn is_available_on_this_platform(&self) -> bool {
        if cfg!(windows) {
            let arch = if cfg!(target_arch = "aarch64") {
                "arm64"
            } else {
                "x64"
            };
            !self.windows_dlls.is_empty() && self.supported_windows_arch.contains(&arch)
        } else if cfg!(target_os = "linux") {
            !self.linux_sonames.is_empty()
                && (cfg!(target_arch = "aarch64") || !LINUX_AARCH64_ONLY.contains(&self.name))
        } else {
            false
        }
    }

    /// Site-packages sub-directories for this platform.
    pub fn site_packages_dirs(&self) -> &'static [&'static str] {
        if cfg!(all(windows, target_arch = "aarch64")) {
            self.site_packages_windows_arm64
        } else if cfg!(windows) {
            self.site_packages_windows_x64
        } else {
            self.site_packages_linux
        }
    }

    /// Toolkit-relative directories for this platform.
    pub fn anchor_rel_dirs(&self) -> &'static [&'static str] {
        if cfg!(all(windows, target_arch = "aarch64")) {
            self.anchor_rel_dirs_windows_arm64
        } else if cfg!(windows) {
            self.anchor_rel_dirs_windows_x64
        } else {
            self.anchor_rel_dirs_linux
        }
    }

    /// `Program Files` globs for this platform (relative to `%ProgramW6432%` or
    /// `%ProgramFiles%`; empty off Windows).
    pub fn program_files_root_globs(&self) -> &'static [&'static str] {
        if cfg!(all(windows, target_arch = "aarch64")) {
            self.program_files_root_globs_windows_arm64
        } else if cfg!(windows) {
            self.program_files_root_globs_windows_x64
        } else {
            &[]
        }
    }

    /// Library-specific root variables and the directories under them, for this platform.
    pub fn install_roots(&self) -> (&'static [&'static str], &'static [&'static str]) {
        if cfg!(all(windows, target_arch = "aarch64")) {
            (
                self.install_root_env_vars_windows,
                self.install_root_env_rel_dirs_windows_arm64,
            )
        } else if cfg!(windows) {
            (
                self.install_root_env_vars_windows,
                self.install_root_env_rel_dirs_windows_x64,
            )
        } else {
            (
                self.install_root_env_vars_linux,
                self.install_root_env_rel_dirs_linux,
            )
        }
    }
}
