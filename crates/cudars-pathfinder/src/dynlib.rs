//! Finding and loading shared libraries: the search order, the process-wide cache.

use std::ffi::{CStr, OsStr, c_void};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

use crate::catalog::{LIBRARIES, LIBRARY_COUNT, LibDescriptor, PackagedWith, index_of};
use crate::error::{ArtifactKind, PathfinderError, SearchStep, platform_name};
use crate::found_via::FoundVia;
use crate::sys::{self, RawDl};

/// A library loaded by [`load_nvidia_dynamic_lib`]: where it came from, how it was
/// found, and its handle.
///
/// Handles are never closed. NVIDIA's libraries keep state (contexts, modules,
/// compiled kernels) that other code in the process may still use, and unloading
/// them under that code would crash it; so, like `cuda.pathfinder`, this crate
/// keeps every library it loads for the life of the process and hands out
/// `&'static` references. `LoadedDl` is `Send + Sync`: the loader's lookup
/// functions are thread-safe and the handle stays valid on every thread.
#[derive(Debug)]
pub struct LoadedDl {
    libname: &'static str,
    abs_path: PathBuf,
    was_already_loaded_from_elsewhere: bool,
    found_via: FoundVia,
    handle: RawDl,
}

impl LoadedDl {
    /// The catalogue name (`nvrtc`, `cudart`, …).
    pub fn libname(&self) -> &'static str {
        self.libname
    }

    /// The absolute path of the loaded file.
    pub fn abs_path(&self) -> &Path {
        &self.abs_path
    }

    /// Whether another part of the process had loaded it before this crate looked.
    pub fn was_already_loaded_from_elsewhere(&self) -> bool {
        self.was_already_loaded_from_elsewhere
    }

    /// How it was found.
    pub fn found_via(&self) -> FoundVia {
        self.found_via
    }

    /// The loader's handle (`void *` from `dlopen`; on Windows the `HMODULE`). Never
    /// closed: do not pass it to `dlclose` or `FreeLibrary`.
    pub fn raw_handle(&self) -> *mut c_void {
        self.handle.as_ptr()
    }

    /// The address of the exported symbol `name`, or `None` if the library lacks it.
    ///
    /// Turning the address into a function pointer is `unsafe`: the caller must know
    /// the symbol's true signature.
    ///
    /// ```no_run
    /// let rt = cudars_pathfinder::load_nvidia_dynamic_lib("cudart")?;
    /// assert!(rt.symbol(c"cudaRuntimeGetVersion").is_some());
    /// # Ok::<(), cudars_pathfinder::PathfinderError>(())
    /// ```
    pub fn symbol(&self, name: &CStr) -> Option<NonNull<c_void>> {
        sys::symbol(self.handle, name)
    }
}

/// A library found on disk by [`locate_nvidia_dynamic_lib`], not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedDynamicLib {
    /// The catalogue name.
    pub libname: &'static str,
    /// The file that would be loaded.
    pub abs_path: PathBuf,
    /// The step that found it.
    pub found_via: FoundVia,
}

struct Slot {
    loaded: OnceLock<LoadedDl>,
    loading: Mutex<()>,
}

impl Slot {
    const fn new() -> Self {
        Self {
            loaded: OnceLock::new(),
            loading: Mutex::new(()),
        }
    }
}

static SLOTS: [Slot; LIBRARY_COUNT] = [const { Slot::new() }; LIBRARY_COUNT];

fn unknown(name: &str) -> PathfinderError {
    PathfinderError::UnknownName {
        kind: ArtifactKind::DynamicLib,
        name: name.to_string(),
        supported: LIBRARIES.iter().map(|d| d.name).collect(),
    }
}

/// Finds and loads an NVIDIA library by its catalogue name (`cudart`, `nvrtc`,
/// `nvJitLink`, `nvvm`, `cublas`, `cuda` for the driver, `nvml`, … : see
/// [`catalog`](crate::catalog::catalog)).
///
/// The search order is given in the [crate docs](crate#search-order). Libraries the
/// catalogue lists as dependencies are loaded first. The result is cached per name
/// for the life of the process: a second call returns the same `&'static LoadedDl`
/// at the cost of a name lookup and an atomic load. Concurrent first calls load
/// once; every caller sees the same result. Failures are not cached, so a call
/// after the user installs the library can succeed.
///
/// # Errors
/// [`PathfinderError::UnknownName`], [`NotAvailable`](PathfinderError::NotAvailable),
/// [`NotFound`](PathfinderError::NotFound) (listing every place searched),
/// [`LoadFailed`](PathfinderError::LoadFailed) and
/// [`Dependency`](PathfinderError::Dependency).
pub fn load_nvidia_dynamic_lib(name: &str) -> Result<&'static LoadedDl, PathfinderError> {
    let idx = index_of(name).ok_or_else(|| unknown(name))?;
    load_index(idx)
}

fn load_index(idx: usize) -> Result<&'static LoadedDl, PathfinderError> {
    let slot = &SLOTS[idx];
    if let Some(l) = slot.loaded.get() {
        return Ok(l);
    }
    // One loader per library at a time; a panic elsewhere cannot leave it unusable.
    let _guard = slot.loading.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = slot.loaded.get() {
        return Ok(l);
    }
    let loaded = load_uncached(&LIBRARIES[idx])?;
    Ok(slot.loaded.get_or_init(|| loaded))
}

/// The libraries this process has loaded through this crate so far.
pub fn loaded_libraries() -> impl Iterator<Item = &'static LoadedDl> {
    SLOTS.iter().filter_map(|s| s.loaded.get())
}

/// Finds an NVIDIA library on disk without loading it, by the same search order as
/// [`load_nvidia_dynamic_lib`] (the OS loader's step is answered by reading its
/// search path: `LD_LIBRARY_PATH`, `/etc/ld.so.cache`, the default directories).
///
/// # Errors
/// As [`load_nvidia_dynamic_lib`], less the loading errors.
pub fn locate_nvidia_dynamic_lib(name: &str) -> Result<LocatedDynamicLib, PathfinderError> {
    let idx = index_of(name).ok_or_else(|| unknown(name))?;
    let d = &LIBRARIES[idx];
    check_available(d)?;
    let mut searched = Vec::new();
    match search(d, Mode::Locate, &mut searched) {
        Some(Candidate::File(abs_path, found_via)) => Ok(LocatedDynamicLib {
            libname: d.name,
            abs_path,
            found_via,
        }),
        Some(Candidate::Loaded(h, found_via, _)) => Ok(LocatedDynamicLib {
            libname: d.name,
            abs_path: sys::path_of(h).unwrap_or_default(),
            found_via,
        }),
        None => Err(not_found(d, searched)),
    }
}

fn check_available(d: &LibDescriptor) -> Result<(), PathfinderError> {
    if d.is_available_on_this_platform() && sys::CAN_LOAD {
        Ok(())
    } else {
        Err(PathfinderError::NotAvailable {
            kind: ArtifactKind::DynamicLib,
            name: d.name.to_string(),
            platform: platform_name(),
        })
    }
}

fn not_found(d: &LibDescriptor, searched: Vec<SearchStep>) -> PathfinderError {
    PathfinderError::NotFound {
        kind: ArtifactKind::DynamicLib,
        name: d.name.to_string(),
        searched,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Load,
    Locate,
}

enum Candidate {
    File(PathBuf, FoundVia),
    Loaded(RawDl, FoundVia, bool),
}

/// Looks for one of `names` in each of `dirs`, recording each directory searched.
pub(crate) fn find_in_dirs(
    dirs: impl IntoIterator<Item = PathBuf>,
    names: &[&str],
    step: &'static str,
    searched: &mut Vec<SearchStep>,
) -> Option<PathBuf> {
    find_in_dirs_where(dirs, names, step, searched, |_| true)
}

/// As [`find_in_dirs`], taking only files that `accept` passes.
fn find_in_dirs_where(
    dirs: impl IntoIterator<Item = PathBuf>,
    names: &[&str],
    step: &'static str,
    searched: &mut Vec<SearchStep>,
    accept: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    for dir in dirs {
        // Native separators: relative directories are written `a/b` (Windows accepts
        // both, but paths shown to users should read as the platform's).
        let dir: PathBuf = dir.components().collect();
        let mut refused = Vec::new();
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                if accept(&p) {
                    return Some(p);
                }
                refused.push(*n);
            }
        }
        let outcome = if !refused.is_empty() {
            format!(
                "{} not built for this machine ({})",
                refused.join(" and "),
                std::env::consts::ARCH
            )
        } else if dir.is_dir() {
            format!("no {}", names.join(" or "))
        } else {
            "no such directory".to_string()
        };
        searched.push(SearchStep {
            step,
            place: dir.display().to_string(),
            outcome,
        });
    }
    None
}

/// Looks for library `d` in `dirs`. Where the catalogue asks for it
/// (`requires_windows_binary_arch_check`, on Windows) a DLL built for another
/// architecture is passed over.
fn find_lib_in_dirs(
    d: &LibDescriptor,
    dirs: impl IntoIterator<Item = PathBuf>,
    step: &'static str,
    searched: &mut Vec<SearchStep>,
) -> Option<PathBuf> {
    let check = cfg!(windows) && d.requires_windows_binary_arch_check;
    find_in_dirs_where(dirs, d.platform_names(), step, searched, |p| {
        !check || pe_machine(p) == Some(PE_MACHINE)
    })
}

/// The PE machine type of programs built for this architecture.
const PE_MACHINE: u16 = if cfg!(target_arch = "aarch64") {
    0xaa64
} else {
    0x8664
};

/// The machine type in a PE file's COFF header (`0x8664` for x64), or `None` for a
/// file that is not a PE image.
fn pe_machine(path: &Path) -> Option<u16> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut dos = [0u8; 64];
    f.read_exact(&mut dos).ok()?;
    if &dos[..2] != b"MZ" {
        return None;
    }
    let pe_offset = u32::from_le_bytes([dos[60], dos[61], dos[62], dos[63]]);
    f.seek(SeekFrom::Start(u64::from(pe_offset))).ok()?;
    let mut sig = [0u8; 6];
    f.read_exact(&mut sig).ok()?;
    (&sig[..4] == b"PE\0\0").then(|| u16::from_le_bytes([sig[4], sig[5]]))
}

fn site_packages_step(d: &LibDescriptor, searched: &mut Vec<SearchStep>) -> Option<PathBuf> {
    let sp = crate::python::site_packages_dirs();
    if sp.is_empty() {
        searched.push(SearchStep {
            step: "site-packages",
            place: "Python environments".into(),
            outcome: "no site-packages directory found (VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH, python3 on PATH)".into(),
        });
        return None;
    }
    let dirs = sp
        .iter()
        .flat_map(|s| d.site_packages_dirs().iter().map(move |rel| s.join(rel)));
    find_lib_in_dirs(d, dirs, "site-packages", searched)
}

fn rooted_step(
    d: &LibDescriptor,
    root: Option<PathBuf>,
    var: &'static str,
    rels: &[&str],
    step: &'static str,
    searched: &mut Vec<SearchStep>,
) -> Option<PathBuf> {
    match root {
        None => {
            searched.push(SearchStep {
                step,
                place: format!("${var}"),
                outcome: "not set".into(),
            });
            None
        }
        Some(root) => find_lib_in_dirs(d, rels.iter().map(|r| root.join(r)), step, searched),
    }
}

fn search(d: &LibDescriptor, mode: Mode, searched: &mut Vec<SearchStep>) -> Option<Candidate> {
    let names = d.platform_names();
    let driver = d.packaged_with == PackagedWith::Driver;
    let deepbind = d.requires_rtld_deepbind;

    // 1, 2: on disk, in wheels and conda (not for the driver's libraries).
    let on_disk = if driver {
        None
    } else {
        site_packages_step(d, searched)
            .map(|p| (p, FoundVia::SitePackages))
            .or_else(|| {
                rooted_step(
                    d,
                    crate::roots::conda_anchor(),
                    "CONDA_PREFIX",
                    d.anchor_rel_dirs(),
                    "conda",
                    searched,
                )
                .map(|p| (p, FoundVia::Conda))
            })
    };

    // 3: already loaded by someone else.
    for n in names {
        if let Some(h) = sys::already_loaded(n) {
            return Some(Candidate::Loaded(
                h,
                FoundVia::WasAlreadyLoadedFromElsewhere,
                true,
            ));
        }
    }
    searched.push(SearchStep {
        step: "was-already-loaded-from-elsewhere",
        place: names.join(", "),
        outcome: "not loaded in this process".into(),
    });

    // 4: what 1 or 2 found, else the OS loader by soname.
    if let Some((p, via)) = on_disk {
        return Some(Candidate::File(p, via));
    }
    for n in names {
        match mode {
            Mode::Load => match sys::open(OsStr::new(n), deepbind) {
                Ok(h) => return Some(Candidate::Loaded(h, FoundVia::SystemSearch, false)),
                Err(msg) => searched.push(SearchStep {
                    step: "system-search",
                    place: (*n).to_string(),
                    // `dlerror` starts with the name the step already shows.
                    outcome: msg
                        .strip_prefix(*n)
                        .and_then(|m| m.strip_prefix(": "))
                        .map_or_else(|| msg.clone(), str::to_owned),
                }),
            },
            Mode::Locate => match sys::resolve_by_name(n) {
                Some(p) => return Some(Candidate::File(p, FoundVia::SystemSearch)),
                None => searched.push(SearchStep {
                    step: "system-search",
                    place: (*n).to_string(),
                    outcome: sys::SYSTEM_SEARCH_PLACES.into(),
                }),
            },
        }
    }
    if driver {
        return None;
    }

    // 5: the library's own root variables, then CUDA_PATH and CUDA_HOME.
    let (vars, rels) = d.install_roots();
    for var in vars {
        let root = std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if let Some(p) = rooted_step(d, root, var, rels, var, searched) {
            return Some(Candidate::File(p, FoundVia::InstallRootEnvVar(var)));
        }
    }
    let cuda_roots = crate::roots::cuda_roots();
    if cuda_roots.is_empty() {
        searched.push(SearchStep {
            step: "CUDA_PATH",
            place: "$CUDA_PATH, $CUDA_HOME".into(),
            outcome: "not set".into(),
        });
    }
    for (var, root) in cuda_roots {
        if let Some(p) = rooted_step(
            d,
            Some(root),
            var,
            d.anchor_rel_dirs(),
            "CUDA_PATH",
            searched,
        ) {
            return Some(Candidate::File(p, FoundVia::CudaPath));
        }
    }

    // 5 (Windows): versioned install roots under Program Files.
    let globs = d.program_files_root_globs();
    if !globs.is_empty() {
        match crate::roots::program_files() {
            None => searched.push(SearchStep {
                step: "ProgramFiles",
                place: "%ProgramW6432%, %ProgramFiles%".into(),
                outcome: "not set".into(),
            }),
            Some(base) => {
                for root in crate::roots::expand_globs(&base, globs) {
                    let dirs = d.anchor_rel_dirs().iter().map(|r| root.join(r));
                    if let Some(p) = find_lib_in_dirs(d, dirs, "ProgramFiles", searched) {
                        return Some(Candidate::File(p, FoundVia::ProgramFiles));
                    }
                }
            }
        }
    }

    // 6: the toolkit root, from where the OS loader finds a canary library.
    for canary in d.ctk_root_canary_anchor_libnames {
        match crate::roots::ctk_root_from_canary(canary) {
            Ok(root) => {
                let dirs = d.anchor_rel_dirs().iter().map(|r| root.join(r));
                if let Some(p) = find_lib_in_dirs(d, dirs, "system-ctk-root", searched) {
                    return Some(Candidate::File(p, FoundVia::SystemCtkRoot));
                }
            }
            Err(why) => searched.push(SearchStep {
                step: "system-ctk-root",
                place: format!("toolkit root from canary `{canary}`"),
                outcome: why,
            }),
        }
    }
    None
}

fn load_uncached(d: &'static LibDescriptor) -> Result<LoadedDl, PathfinderError> {
    check_available(d)?;
    for dep in d.dependencies {
        load_nvidia_dynamic_lib(dep).map_err(|e| PathfinderError::Dependency {
            name: d.name.to_string(),
            dependency: dep,
            source: Box::new(e),
        })?;
    }
    for dep in d.optional_dependencies {
        // Optional: a library that is absent is simply not preloaded.
        let _ = load_nvidia_dynamic_lib(dep);
    }
    let mut searched = Vec::new();
    match search(d, Mode::Load, &mut searched) {
        None => Err(not_found(d, searched)),
        Some(Candidate::Loaded(handle, found_via, already)) => {
            let abs_path = sys::path_of(handle).unwrap_or_default();
            // Windows: the same companions as for a file we load, so that what NVRTC
            // (or cuFFT, cuDNN) loads by bare name does not depend on who loaded it.
            if cfg!(windows) && abs_path.is_absolute() {
                prepare_companions(d, &abs_path, found_via)?;
            }
            Ok(LoadedDl {
                libname: d.name,
                abs_path,
                was_already_loaded_from_elsewhere: already,
                found_via,
                handle,
            })
        }
        Some(Candidate::File(path, found_via)) => {
            let path = std::path::absolute(&path).unwrap_or(path);
            prepare_companions(d, &path, found_via)?;
            let handle =
                sys::open(path.as_os_str(), d.requires_rtld_deepbind).map_err(|message| {
                    PathfinderError::LoadFailed {
                        name: d.name.to_string(),
                        path: path.clone(),
                        found_via,
                        message,
                    }
                })?;
            Ok(LoadedDl {
                libname: d.name,
                abs_path: path,
                was_already_loaded_from_elsewhere: false,
                found_via,
                handle,
            })
        }
    }
}

/// Makes the DLLs that `d` (at `path`) loads by bare name findable: on Windows the
/// directory of a `requires_add_dll_directory` library is added to the search path;
/// NVRTC's builtins are preloaded (on Linux only for wheels and conda, where no run
/// path leads to them; Windows has no run path at all).
fn prepare_companions(
    d: &LibDescriptor,
    path: &Path,
    found_via: FoundVia,
) -> Result<(), PathfinderError> {
    #[cfg(windows)]
    if d.requires_add_dll_directory {
        if let Some(dir) = path.parent() {
            sys::add_dll_directory(dir);
        }
    }
    if d.name == "nvrtc"
        && (cfg!(windows) || matches!(found_via, FoundVia::SitePackages | FoundVia::Conda))
    {
        load_nvrtc_builtins(d, path, found_via)?;
    }
    Ok(())
}

/// NVRTC from a wheel or conda (on Windows: from any directory): load its
/// `nvrtc-builtins` companion from the same directory first, so that NVRTC's own
/// lookup of it (by bare name on Windows) finds this copy and no other.
fn load_nvrtc_builtins(
    d: &LibDescriptor,
    nvrtc: &Path,
    found_via: FoundVia,
) -> Result<(), PathfinderError> {
    let (Some(dir), Some(file)) = (nvrtc.parent(), nvrtc.file_name().and_then(|f| f.to_str()))
    else {
        return Ok(());
    };
    // libnvrtc.so.13 -> libnvrtc-builtins.so.13.*; nvrtc64_130_0.dll -> nvrtc-builtins64_130.dll
    let prefix = if cfg!(windows) {
        file.replace("nvrtc64_", "nvrtc-builtins64_")
            .rsplit_once('_')
            .map(|(a, _)| a.to_string())
            .unwrap_or_default()
    } else {
        file.replace("libnvrtc.so", "libnvrtc-builtins.so")
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut companions: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && !n.contains(".alt."))
        })
        .collect();
    companions.sort();
    if let Some(builtins) = companions.last() {
        sys::open(builtins.as_os_str(), false).map_err(|message| PathfinderError::LoadFailed {
            name: d.name.to_string(),
            path: builtins.clone(),
            found_via,
            message: format!("its companion nvrtc-builtins failed to load: {message}"),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_cuda_pathfinder() {
        assert_eq!(FoundVia::SitePackages.to_string(), "site-packages");
        assert_eq!(FoundVia::Conda.to_string(), "conda");
        assert_eq!(
            FoundVia::WasAlreadyLoadedFromElsewhere.to_string(),
            "was-already-loaded-from-elsewhere"
        );
        assert_eq!(FoundVia::SystemSearch.to_string(), "system-search");
        assert_eq!(FoundVia::CudaPath.to_string(), "CUDA_PATH");
        assert_eq!(FoundVia::SystemCtkRoot.to_string(), "system-ctk-root");
        assert_eq!(
            FoundVia::InstallRootEnvVar("CUDNN_PATH").to_string(),
            "CUDNN_PATH"
        );
    }

    #[test]
    fn pe_machine_types_are_read_from_the_coff_header() {
        let t = tempfile::tempdir().unwrap();
        let mut image = vec![0u8; 0x90];
        image[..2].copy_from_slice(b"MZ");
        image[60..64].copy_from_slice(&0x80u32.to_le_bytes());
        image[0x80..0x84].copy_from_slice(b"PE\0\0");
        image[0x84..0x86].copy_from_slice(&0xaa64u16.to_le_bytes());
        let arm = t.path().join("arm64.dll");
        std::fs::write(&arm, &image).unwrap();
        assert_eq!(pe_machine(&arm), Some(0xaa64));
        image[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
        let x64 = t.path().join("x64.dll");
        std::fs::write(&x64, &image).unwrap();
        assert_eq!(pe_machine(&x64), Some(0x8664));
        let elf = t.path().join("libx.so");
        std::fs::write(
            &elf,
            b"\x7fELF and more bytes than a DOS header needs, and then some more....",
        )
        .unwrap();
        assert_eq!(pe_machine(&elf), None);
        assert_eq!(pe_machine(&t.path().join("missing.dll")), None);
        // A directory with only another architecture's DLL says so.
        let mut searched = Vec::new();
        let found = find_in_dirs_where(
            [t.path().to_path_buf()],
            &["arm64.dll"],
            "CUDA_PATH",
            &mut searched,
            |p| pe_machine(p) == Some(0x8664),
        );
        assert_eq!(found, None);
        assert!(
            searched[0]
                .outcome
                .contains("arm64.dll not built for this machine"),
            "{searched:?}"
        );
    }

    #[test]
    fn unknown_names_are_their_own_error() {
        let e = load_nvidia_dynamic_lib("nvrtcc").unwrap_err();
        assert!(matches!(e, PathfinderError::UnknownName { .. }), "{e:?}");
        assert_eq!(e.kind_name(), "unknown-name");
        assert!(e.to_string().contains("nvJitLink"), "{e}");
        // Names are case-sensitive, as in cuda.pathfinder.
        assert!(load_nvidia_dynamic_lib("nvjitlink").is_err());
    }

    #[test]
    fn catalogue_dependencies_exist_and_are_acyclic() {
        fn visit(name: &str, stack: &mut Vec<String>) {
            assert!(
                !stack.iter().any(|s| s == name),
                "dependency cycle: {stack:?} -> {name}"
            );
            let d = crate::catalog::descriptor(name)
                .unwrap_or_else(|| panic!("unknown dependency {name}"));
            stack.push(name.to_string());
            for dep in d.dependencies.iter().chain(d.optional_dependencies) {
                visit(dep, stack);
            }
            stack.pop();
        }
        for d in crate::catalog::catalog() {
            visit(d.name, &mut Vec::new());
        }
        assert_eq!(crate::catalog::catalog().len(), 50);
    }
}
