//! The roots every search starts from: conda, `CUDA_PATH`/`CUDA_HOME`, and the
//! toolkit root revealed by a canary library.

use std::path::{Path, PathBuf};

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$CONDA_PREFIX`, when set.
pub(crate) fn conda_prefix() -> Option<PathBuf> {
    env_dir("CONDA_PREFIX")
}

/// The toolkit roots named by `CUDA_PATH` then `CUDA_HOME` (a second one only when
/// it differs), each with the variable that named it.
pub(crate) fn cuda_roots() -> Vec<(&'static str, PathBuf)> {
    let mut out: Vec<(&'static str, PathBuf)> = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(p) = env_dir(var) {
            if !out.iter().any(|(_, q)| q == &p) {
                out.push((var, p));
            }
        }
    }
    out
}

/// The toolkit root named by `CUDA_PATH`, else by `CUDA_HOME` (as
/// `cuda.pathfinder.get_cuda_path_or_home` gives it).
pub fn get_cuda_path_or_home() -> Option<PathBuf> {
    cuda_roots().into_iter().next().map(|(_, p)| p)
}

/// The toolkit root that holds `lib_file` (`<root>/lib64/libcudart.so.13`,
/// `<root>/targets/x86_64-linux/lib/libcudart.so.13`, `<root>\bin\cudart64_13.dll`).
pub(crate) fn ctk_root_of(lib_file: &Path) -> Option<PathBuf> {
    let dir = lib_file.parent()?;
    let name = dir.file_name()?.to_str()?;
    let mut root = match name {
        "lib" | "lib64" | "bin" => dir.parent()?,
        // Windows: bin\x64, bin\arm64.
        "x64" | "arm64" if dir.parent()?.file_name()? == "bin" => dir.parent()?.parent()?,
        _ => return None,
    };
    if root
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "targets")
    {
        root = root.parent()?.parent()?;
    }
    Some(root.to_path_buf())
}

/// Finds the toolkit root from where the OS loader finds the canary library `canary`
/// (a catalogue name, e.g. `cudart`), without loading it.
pub(crate) fn ctk_root_from_canary(canary: &str) -> Result<PathBuf, String> {
    let d =
        crate::catalog::descriptor(canary).ok_or_else(|| format!("unknown canary `{canary}`"))?;
    for soname in d.platform_names() {
        let file = match crate::sys::already_loaded(soname).and_then(crate::sys::path_of) {
            Some(p) => Some(p),
            None if cfg!(target_os = "linux") => crate::ldcache::resolve(soname),
            None => None,
        };
        if let Some(file) = file {
            let real = std::fs::canonicalize(&file).unwrap_or(file.clone());
            return ctk_root_of(&file)
                .or_else(|| ctk_root_of(&real))
                .ok_or_else(|| format!("canary {} is not inside a toolkit tree", file.display()));
        }
    }
    Err(format!(
        "the OS loader does not find canary {}",
        d.platform_names().join(" or ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolkit_roots_from_library_paths() {
        let r = |p: &str| ctk_root_of(Path::new(p)).map(|p| p.display().to_string());
        assert_eq!(
            r("/usr/local/cuda-13.0/lib64/libcudart.so.13").as_deref(),
            Some("/usr/local/cuda-13.0")
        );
        assert_eq!(
            r("/opt/cuda/targets/x86_64-linux/lib/libcudart.so.13").as_deref(),
            Some("/opt/cuda")
        );
        assert_eq!(
            r("/opt/cuda/lib/libcudart.so.12").as_deref(),
            Some("/opt/cuda")
        );
        assert_eq!(r("/usr/lib/x86_64-linux-gnu/libcudart.so.12"), None);
    }

    #[cfg(unix)]
    mod hostile {
        use super::*;
        use crate::dynlib::find_in_dirs;
        use proptest::prelude::*;
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt as _;

        /// Odd path pieces: separators, dots, blanks, bytes that are not UTF-8.
        fn piece() -> impl Strategy<Value = OsString> {
            prop_oneof![
                Just(OsString::from("lib")),
                Just(OsString::from("lib64")),
                Just(OsString::from("bin")),
                Just(OsString::from("targets")),
                Just(OsString::from("..")),
                Just(OsString::from(".")),
                Just(OsString::new()),
                "[a-z0-9_. -]{1,8}".prop_map(OsString::from),
                proptest::collection::vec(1u8..=255, 1..8).prop_map(OsString::from_vec),
            ]
        }

        fn path() -> impl Strategy<Value = PathBuf> {
            (any::<bool>(), proptest::collection::vec(piece(), 0..7)).prop_map(
                |(absolute, parts)| {
                    let mut p = PathBuf::from(if absolute { "/" } else { "" });
                    for part in parts {
                        p.push(part);
                    }
                    p
                },
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cuda_rs_tests::proptest_cases(256)))]

            /// A toolkit root worked out of any path is one of its ancestors.
            #[test]
            fn a_root_is_an_ancestor_of_the_library(lib in path()) {
                if let Some(root) = ctk_root_of(&lib) {
                    prop_assert!(lib.starts_with(&root), "{} from {}", root.display(), lib.display());
                }
            }

            /// Any directories (missing, files, odd names): a file that exists, or
            /// nothing, with one step recorded per directory searched.
            #[test]
            fn odd_directories_are_searched_without_panicking(
                dirs in proptest::collection::vec(path(), 0..5),
                names in proptest::collection::vec("[a-z0-9_.]{0,12}", 1..3),
            ) {
                let t = tempfile::tempdir().unwrap();
                std::fs::write(t.path().join("libfoo.so.1"), b"").unwrap();
                let mut dirs: Vec<PathBuf> = dirs.iter().map(|d| t.path().join(d)).collect();
                dirs.push(t.path().to_path_buf());
                let names: Vec<&str> = names.iter().map(String::as_str).chain(["libfoo.so.1"]).collect();
                let mut searched = Vec::new();
                let found = find_in_dirs(dirs.clone(), &names, "test", &mut searched);
                let found = found.expect("the last directory holds libfoo.so.1");
                prop_assert!(found.is_file());
                prop_assert!(searched.len() < dirs.len());
            }
        }
    }
}
