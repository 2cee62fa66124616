//! Working out Python's site-packages directories without running Python.
//!
//! A Rust program has no interpreter to ask, so this reads the file system, once
//! per process, in this order (duplicates dropped):
//!
//! 1. each directory of `PYTHONPATH`;
//! 2. the virtual environment named by `VIRTUAL_ENV`;
//! 3. the conda environment named by `CONDA_PREFIX`;
//! 4. the environment of the first `python3` (or `python`) on `PATH`: a venv if a
//!    `pyvenv.cfg` sits beside its `bin` (plus the base interpreter's directories
//!    when it says `include-system-site-packages = true`), a pyenv shim's selected
//!    version, or else the interpreter's own prefix (`lib/python3.X/site-packages`,
//!    Debian's `dist-packages`), with the user site (`~/.local/lib/python3.X/
//!    site-packages` or `PYTHONUSERBASE`) before it unless `PYTHONNOUSERSITE` is set.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The site-packages directories of this process's Python environment(s), most
/// specific first. Worked out once per process.
pub fn site_packages_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| discover(&Env::from_process()))
}

/// The environment variables discovery reads (a struct so that tests can pass their own).
#[derive(Debug, Default, Clone)]
pub(crate) struct Env {
    pub(crate) pythonpath: Option<OsString>,
    pub(crate) virtual_env: Option<OsString>,
    pub(crate) conda_prefix: Option<OsString>,
    pub(crate) path: Option<OsString>,
    pub(crate) home: Option<OsString>,
    pub(crate) python_user_base: Option<OsString>,
    pub(crate) no_user_site: bool,
    pub(crate) pyenv_version: Option<OsString>,
}

fn non_empty(var: &str) -> Option<OsString> {
    std::env::var_os(var).filter(|v| !v.is_empty())
}

impl Env {
    pub(crate) fn from_process() -> Self {
        Self {
            pythonpath: non_empty("PYTHONPATH"),
            virtual_env: non_empty("VIRTUAL_ENV"),
            conda_prefix: non_empty("CONDA_PREFIX"),
            path: non_empty("PATH"),
            // The user site's base: `~/.local` on Unix, `%APPDATA%\Python` on Windows.
            home: non_empty(if cfg!(windows) { "APPDATA" } else { "HOME" }),
            python_user_base: non_empty("PYTHONUSERBASE"),
            no_user_site: non_empty("PYTHONNOUSERSITE").is_some(),
            pyenv_version: non_empty("PYENV_VERSION"),
        }
    }
}

struct Collector {
    dirs: Vec<PathBuf>,
    seen: Vec<PathBuf>,
}

impl Collector {
    fn push(&mut self, dir: PathBuf) {
        if !dir.is_dir() {
            return;
        }
        let key = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !self.seen.contains(&key) {
            self.seen.push(key);
            self.dirs.push(dir);
        }
    }
}

pub(crate) fn discover(env: &Env) -> Vec<PathBuf> {
    let mut c = Collector {
        dirs: Vec::new(),
        seen: Vec::new(),
    };
    if let Some(pp) = &env.pythonpath {
        for d in std::env::split_paths(pp) {
            if !d.as_os_str().is_empty() {
                c.push(d);
            }
        }
    }
    if let Some(venv) = &env.virtual_env {
        for d in prefix_site_packages(Path::new(venv), None) {
            c.push(d);
        }
    }
    if let Some(conda) = &env.conda_prefix {
        for d in prefix_site_packages(Path::new(conda), None) {
            c.push(d);
        }
    }
    if let Some(python) = env.path.as_ref().and_then(find_python_on_path) {
        for d in interpreter_site_packages(&python, env) {
            c.push(d);
        }
    }
    c.dirs
}

/// The first `python3` (or `python`) on `path`.
fn find_python_on_path(path: &OsString) -> Option<PathBuf> {
    let names: &[&str] = if cfg!(windows) {
        &["python.exe", "python3.exe"]
    } else {
        &["python3", "python"]
    };
    for dir in std::env::split_paths(path) {
        for name in names {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// The Python version a file name like `python3.11` names.
fn version_of(exe: &Path) -> Option<String> {
    let name = exe.file_name()?.to_str()?;
    let v = name.strip_prefix("python")?;
    (v.contains('.') && v.chars().all(|c| c.is_ascii_digit() || c == '.')).then(|| v.to_string())
}

/// Site-packages directories under an installation prefix or venv root.
///
/// With `version` (`3.11`) only that version's directories; otherwise every
/// `lib/python3.*` found, newest first.
fn prefix_site_packages(prefix: &Path, version: Option<&str>) -> Vec<PathBuf> {
    if cfg!(windows) {
        return vec![prefix.join("Lib").join("site-packages")];
    }
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let libdir = prefix.join(lib);
        let mut versions: Vec<String> = match version {
            Some(v) => vec![format!("python{v}")],
            None => names_starting_with(&libdir, "python3"),
        };
        // Newest first: python3.13 before python3.9.
        versions.sort_by_key(|n| {
            std::cmp::Reverse(
                n.trim_start_matches("python")
                    .split('.')
                    .map(|p| p.parse::<u32>().unwrap_or(0))
                    .collect::<Vec<_>>(),
            )
        });
        for v in versions {
            out.push(libdir.join(&v).join("site-packages"));
            out.push(libdir.join(&v).join("dist-packages"));
        }
    }
    out
}

/// The names of the entries of `dir` that start with `prefix` (none if it is unreadable).
fn names_starting_with(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads `key = value` from a `pyvenv.cfg`.
fn pyvenv_value(cfg: &str, key: &str) -> Option<String> {
    cfg.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().to_string())
    })
}

fn user_site(env: &Env, version: Option<&str>) -> Vec<PathBuf> {
    if env.no_user_site {
        return Vec::new();
    }
    if cfg!(windows) {
        // `%PYTHONUSERBASE%` or `%APPDATA%\Python`, then `Python313\site-packages`.
        let base = match (&env.python_user_base, &env.home) {
            (Some(b), _) => PathBuf::from(b),
            (None, Some(appdata)) => Path::new(appdata).join("Python"),
            (None, None) => return Vec::new(),
        };
        let versions: Vec<String> = match version {
            Some(v) => vec![format!("Python{}", v.replace('.', ""))],
            None => names_starting_with(&base, "Python3"),
        };
        return versions
            .into_iter()
            .map(|v| base.join(v).join("site-packages"))
            .collect();
    }
    let base = match (&env.python_user_base, &env.home) {
        (Some(b), _) => PathBuf::from(b),
        (None, Some(h)) => Path::new(h).join(".local"),
        (None, None) => return Vec::new(),
    };
    prefix_site_packages(&base, version)
}

fn interpreter_site_packages(python: &Path, env: &Env) -> Vec<PathBuf> {
    let Some(bin) = python.parent() else {
        return Vec::new();
    };
    let Some(root) = bin.parent() else {
        return Vec::new();
    };
    // A venv: `pyvenv.cfg` beside `bin`. Its python is a symlink, so look before resolving.
    if let Ok(cfg) = std::fs::read_to_string(root.join("pyvenv.cfg")) {
        let version = pyvenv_value(&cfg, "version_info")
            .or_else(|| pyvenv_value(&cfg, "version"))
            .map(|v| v.split('.').take(2).collect::<Vec<_>>().join("."));
        let mut out = prefix_site_packages(root, None);
        let system = pyvenv_value(&cfg, "include-system-site-packages")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if system {
            if let Some(home) = pyvenv_value(&cfg, "home") {
                if let Some(base_prefix) = Path::new(&home).parent() {
                    out.extend(user_site(env, version.as_deref()));
                    out.extend(prefix_site_packages(base_prefix, version.as_deref()));
                }
            }
        }
        return out;
    }
    // A pyenv shim: `$PYENV_ROOT/shims/python3`, the version chosen by
    // `PYENV_VERSION` or `$PYENV_ROOT/version`.
    if bin.file_name().is_some_and(|n| n == "shims") && root.join("versions").is_dir() {
        let chosen = env
            .pyenv_version
            .as_ref()
            .and_then(|v| v.to_str().map(str::to_string))
            .or_else(|| {
                std::fs::read_to_string(root.join("version"))
                    .ok()
                    .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
            });
        if let Some(v) = chosen.filter(|v| !v.is_empty() && v != "system") {
            let prefix = root.join("versions").join(&v);
            let short: String = v.split('.').take(2).collect::<Vec<_>>().join(".");
            let mut out = user_site(env, Some(&short));
            out.extend(prefix_site_packages(&prefix, None));
            return out;
        }
        return Vec::new();
    }
    // A plain interpreter: resolve symlinks (`/usr/bin/python3` → `python3.11`).
    // Not on Windows, where it would give a `\\?\` path and there is nothing to resolve.
    let real = if cfg!(windows) {
        python.to_path_buf()
    } else {
        std::fs::canonicalize(python).unwrap_or_else(|_| python.to_path_buf())
    };
    let version = version_of(&real).or_else(|| version_of(python));
    // Unix: `<prefix>/bin/python3`; Windows: `<prefix>\python.exe`.
    let prefix = if cfg!(windows) {
        real.parent().unwrap_or(bin)
    } else {
        real.parent().and_then(Path::parent).unwrap_or(root)
    }
    .to_path_buf();
    let mut out = user_site(env, version.as_deref());
    out.extend(prefix_site_packages(&prefix, version.as_deref()));
    if !cfg!(windows) {
        // Debian and Ubuntu: pip's `/usr/local/lib/python3.X/dist-packages`, and the
        // distribution's `/usr/lib/python3/dist-packages`.
        if prefix == Path::new("/usr") {
            out.extend(prefix_site_packages(
                Path::new("/usr/local"),
                version.as_deref(),
            ));
            out.push(PathBuf::from("/usr/lib/python3/dist-packages"));
        }
    }
    out
}

// Windows layouts (`Lib\site-packages`, `Scripts\python.exe`): see `windows_tests`.
#[cfg(test)]
#[cfg(windows)]
mod windows_tests {
    use super::*;

    #[test]
    fn venv_plain_interpreter_and_user_site_on_windows() {
        let t = tempfile::tempdir().unwrap();
        for rel in [
            "venv/Scripts",
            "venv/Lib/site-packages",
            "Python313/Lib/site-packages",
            "appdata/Python/Python313/site-packages",
        ] {
            std::fs::create_dir_all(t.path().join(rel)).unwrap();
        }
        std::fs::write(t.path().join("venv/Scripts/python.exe"), b"").unwrap();
        std::fs::write(t.path().join("venv/pyvenv.cfg"), b"version_info = 3.13.1\n").unwrap();
        std::fs::write(t.path().join("Python313/python.exe"), b"").unwrap();
        let env = |path: &str| Env {
            path: Some(t.path().join(path).into_os_string()),
            home: Some(t.path().join("appdata").into_os_string()),
            ..Env::default()
        };
        assert_eq!(
            discover(&env("venv/Scripts")),
            [t.path().join("venv/Lib/site-packages")]
        );
        assert_eq!(
            discover(&env("Python313")),
            [
                t.path().join("appdata/Python/Python313/site-packages"),
                t.path().join("Python313/Lib/site-packages"),
            ]
        );
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn mkdirs(root: &Path, rel: &[&str]) {
        for r in rel {
            std::fs::create_dir_all(root.join(r)).unwrap();
        }
    }

    #[test]
    fn virtual_env_and_pythonpath_come_first_in_order() {
        let t = tempfile::tempdir().unwrap();
        mkdirs(
            t.path(),
            &[
                "venv/lib/python3.12/site-packages",
                "extra",
                "conda/lib/python3.10/site-packages",
            ],
        );
        let env = Env {
            pythonpath: Some(t.path().join("extra").into_os_string()),
            virtual_env: Some(t.path().join("venv").into_os_string()),
            conda_prefix: Some(t.path().join("conda").into_os_string()),
            ..Env::default()
        };
        let got = discover(&env);
        assert_eq!(
            got,
            vec![
                t.path().join("extra"),
                t.path().join("venv/lib/python3.12/site-packages"),
                t.path().join("conda/lib/python3.10/site-packages"),
            ]
        );
    }

    #[test]
    fn venv_python_on_path_is_recognised_by_pyvenv_cfg() {
        let t = tempfile::tempdir().unwrap();
        mkdirs(
            t.path(),
            &[
                "v/bin",
                "v/lib/python3.11/site-packages",
                "base/lib/python3.11/site-packages",
                "base/bin",
            ],
        );
        std::fs::write(t.path().join("v/bin/python3"), "").unwrap();
        std::fs::write(
            t.path().join("v/pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = true\nversion = 3.11.7\n",
                t.path().join("base/bin").display()
            ),
        )
        .unwrap();
        let env = Env {
            path: Some(t.path().join("v/bin").into_os_string()),
            no_user_site: true,
            ..Env::default()
        };
        assert_eq!(
            discover(&env),
            vec![
                t.path().join("v/lib/python3.11/site-packages"),
                t.path().join("base/lib/python3.11/site-packages"),
            ]
        );
    }

    #[test]
    fn plain_interpreter_prefix_and_user_site() {
        let t = tempfile::tempdir().unwrap();
        mkdirs(
            t.path(),
            &[
                "py/bin",
                "py/lib/python3.13/site-packages",
                "home/.local/lib/python3.13/site-packages",
                "home/.local/lib/python3.9/site-packages",
            ],
        );
        std::fs::write(t.path().join("py/bin/python3.13"), "").unwrap();
        std::os::unix::fs::symlink("python3.13", t.path().join("py/bin/python3")).unwrap();
        let env = Env {
            path: Some(t.path().join("py/bin").into_os_string()),
            home: Some(t.path().join("home").into_os_string()),
            ..Env::default()
        };
        let got = discover(&env);
        let canon = |p: &str| std::fs::canonicalize(t.path().join(p)).unwrap();
        let got: Vec<PathBuf> = got
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap())
            .collect();
        // Only the interpreter's own version of the user site, then its prefix.
        assert_eq!(
            got,
            vec![
                canon("home/.local/lib/python3.13/site-packages"),
                canon("py/lib/python3.13/site-packages")
            ]
        );
    }

    #[test]
    fn pyenv_shim_uses_the_selected_version() {
        let t = tempfile::tempdir().unwrap();
        mkdirs(
            t.path(),
            &[
                "pyenv/shims",
                "pyenv/versions/3.11.7/lib/python3.11/site-packages",
            ],
        );
        std::fs::write(t.path().join("pyenv/shims/python3"), "#!/bin/sh\n").unwrap();
        std::fs::write(t.path().join("pyenv/version"), "3.11.7\n").unwrap();
        let env = Env {
            path: Some(t.path().join("pyenv/shims").into_os_string()),
            no_user_site: true,
            ..Env::default()
        };
        assert_eq!(
            discover(&env),
            vec![
                t.path()
                    .join("pyenv/versions/3.11.7/lib/python3.11/site-packages")
            ]
        );
    }

    #[test]
    fn missing_directories_are_left_out_and_duplicates_dropped() {
        let t = tempfile::tempdir().unwrap();
        mkdirs(t.path(), &["venv/lib/python3.12/site-packages"]);
        let sp = t.path().join("venv/lib/python3.12/site-packages");
        let env = Env {
            pythonpath: Some(std::env::join_paths([sp.clone(), t.path().join("nope")]).unwrap()),
            virtual_env: Some(t.path().join("venv").into_os_string()),
            ..Env::default()
        };
        assert_eq!(discover(&env), vec![sp]);
    }

    #[cfg(unix)]
    mod hostile {
        use super::*;
        use proptest::prelude::*;

        /// Bytes that are not always UTF-8, with separators and path pieces in them.
        fn os_string() -> impl Strategy<Value = OsString> {
            use std::os::unix::ffi::OsStringExt as _;
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..40).prop_map(OsString::from_vec),
                "[:/.a-z0-9 \\n=]{0,40}".prop_map(OsString::from),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(64)))]

            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn pyvenv_cfg_of_any_text_never_panics(cfg in "(?s).{0,200}", key in "[a-z_-]{0,12}") {
                if let Some(v) = pyvenv_value(&cfg, &key) {
                    prop_assert!(cfg.contains(v.as_str()));
                }
            }

            /// Any environment and any `pyvenv.cfg`: a list of directories that exist.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn any_environment_gives_existing_directories(
                pythonpath in proptest::option::of(os_string()),
                virtual_env in proptest::option::of(os_string()),
                conda_prefix in proptest::option::of(os_string()),
                home in proptest::option::of(os_string()),
                pyenv_version in proptest::option::of(os_string()),
                cfg in "(?s)[ -~\n]{0,200}",
                version_file in "(?s).{0,40}",
            ) {
                let t = tempfile::tempdir().unwrap();
                mkdirs(t.path(), &["v/bin", "v/lib/python3.11/site-packages", "pyenv/shims", "pyenv/versions"]);
                std::fs::write(t.path().join("v/bin/python3"), "").unwrap();
                std::fs::write(t.path().join("v/pyvenv.cfg"), &cfg).unwrap();
                std::fs::write(t.path().join("pyenv/shims/python3"), "").unwrap();
                std::fs::write(t.path().join("pyenv/version"), &version_file).unwrap();
                for bin in ["v/bin", "pyenv/shims"] {
                    let env = Env {
                        pythonpath: pythonpath.clone(),
                        virtual_env: virtual_env.clone(),
                        conda_prefix: conda_prefix.clone(),
                        path: Some(t.path().join(bin).into_os_string()),
                        home: home.clone(),
                        python_user_base: None,
                        no_user_site: false,
                        pyenv_version: pyenv_version.clone(),
                    };
                    for dir in discover(&env) {
                        prop_assert!(dir.is_dir(), "{}", dir.display());
                    }
                }
            }
        }
    }
}
