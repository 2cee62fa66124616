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

/// The root under `$CONDA_PREFIX` that conda's CUDA packages use: the prefix on
/// Linux, `%CONDA_PREFIX%\Library` on Windows (DLLs in `Library\bin`).
pub(crate) fn conda_anchor() -> Option<PathBuf> {
    conda_prefix().map(|p| if cfg!(windows) { p.join("Library") } else { p })
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

/// The `Program Files` directory for 64-bit programs: `%ProgramW6432%`, else
/// `%ProgramFiles%` (Windows).
pub(crate) fn program_files() -> Option<PathBuf> {
    env_dir("ProgramW6432").or_else(|| env_dir("ProgramFiles"))
}

/// The directories under `base` that match any of `globs` (`/`-separated, `*` in a
/// component matches any run of characters, case-insensitively), each glob's
/// matches newest first by a number-aware order (`v9.10` before `v9.9`).
pub(crate) fn expand_globs(base: &Path, globs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for glob in globs {
        let mut level = vec![base.to_path_buf()];
        for part in glob.split('/').filter(|p| !p.is_empty()) {
            let mut next = Vec::new();
            for dir in &level {
                if !part.contains('*') {
                    next.push(dir.join(part));
                    continue;
                }
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                next.extend(
                    entries
                        .filter_map(Result::ok)
                        .filter(|e| {
                            e.file_name()
                                .to_str()
                                .is_some_and(|n| wildcard_match(part, n))
                        })
                        .map(|e| e.path()),
                );
            }
            level = next;
        }
        level.retain(|p| p.is_dir());
        level.sort_by_key(|p| std::cmp::Reverse(numeric_key(p)));
        out.extend(level);
    }
    out
}

/// Whether `name` matches `pattern`, where `*` is any run of characters; ASCII
/// case is ignored (Windows file names).
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.to_ascii_lowercase(), name.to_ascii_lowercase());
    let mut parts = p.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = n.strip_prefix(first) else {
        return false;
    };
    let tail: Vec<&str> = parts.collect();
    let Some((last, middle)) = tail.split_last() else {
        return rest.is_empty();
    };
    for m in middle {
        match rest.find(m) {
            Some(i) => rest = &rest[i + m.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A sort key that orders runs of digits by value: `v9.10` after `v9.9`.
fn numeric_key(p: &Path) -> Vec<(u64, String)> {
    let name = p.to_string_lossy();
    let mut key = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                key.push((
                    digits.parse().unwrap_or(u64::MAX),
                    std::mem::take(&mut text),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    key.push((digits.parse().unwrap_or(0), text));
    key
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
        let file = crate::sys::already_loaded(soname)
            .and_then(crate::sys::path_of)
            .or_else(|| crate::sys::resolve_by_name(soname));
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
            #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(256)))]

            /// A toolkit root worked out of any path is one of its ancestors.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn a_root_is_an_ancestor_of_the_library(lib in path()) {
                if let Some(root) = ctk_root_of(&lib) {
                    prop_assert!(lib.starts_with(&root), "{} from {}", root.display(), lib.display());
                }
            }

            /// Any directories (missing, files, odd names): a file that exists, or
            /// nothing, with one step recorded per directory searched.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
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

    #[test]
    fn wildcards_match_whole_names() {
        assert!(wildcard_match("v9.*", "v9.10"));
        assert!(wildcard_match("V9.*", "v9.1"));
        assert!(wildcard_match("*", "anything"));
        assert!(wildcard_match("a*b*c", "aXXbYYc"));
        assert!(!wildcard_match("v9.*", "v10.0"));
        assert!(!wildcard_match("a*bc", "abcX"));
        assert!(!wildcard_match("v9", "v9.1"));
    }

    #[test]
    fn program_files_globs_expand_newest_first() {
        let t = tempfile::tempdir().unwrap();
        for v in ["v9.9", "v9.10", "v8.0", "v9.2"] {
            std::fs::create_dir_all(t.path().join("NVIDIA/CUDNN").join(v)).unwrap();
        }
        std::fs::write(t.path().join("NVIDIA/CUDNN/v9.99"), b"a file").unwrap();
        let found: Vec<String> = expand_globs(t.path(), &["NVIDIA/CUDNN/v9.*"])
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(found, ["v9.10", "v9.9", "v9.2"]);
        assert!(expand_globs(&t.path().join("missing"), &["NVIDIA/CUDNN/v9.*"]).is_empty());
    }
}
