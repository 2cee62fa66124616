//! The shim's configuration: read once from the environment, checked, never
//! changed afterwards (except that the emulated version is clamped to the real
//! driver's once that is known).

use std::ffi::{OsStr, OsString, c_int};
use std::path::PathBuf;

use crate::fault::{Plan, Random, parse_rate, parse_rules, parse_seed};

/// The real driver to forward to: an absolute path to its `libcuda.so.1`.
pub const ENV_REAL_DRIVER: &str = "CUDA_RS_SHIM_REAL_DRIVER";
/// The driver version to emulate, as `cuDriverGetVersion` writes it (`12040` for 12.4).
pub const ENV_DRIVER_VERSION: &str = "CUDA_RS_SHIM_DRIVER_VERSION";
/// Comma-separated `cuGetProcAddress` base names to report as not found.
pub const ENV_HIDE: &str = "CUDA_RS_SHIM_HIDE";

/// Comma-separated fault rules, `function:N:ERROR` (see [`crate::fault::parse_rules`]).
pub const ENV_FAIL: &str = "CUDA_RS_SHIM_FAIL";
/// The seed of a random fault schedule (with [`ENV_FAIL_RATE`]).
pub const ENV_FAIL_SEED: &str = "CUDA_RS_SHIM_FAIL_SEED";
/// The probability of a random fault, `P` or `P:ERROR` (with [`ENV_FAIL_SEED`]).
pub const ENV_FAIL_RATE: &str = "CUDA_RS_SHIM_FAIL_RATE";
/// Where to write the call and handle counts as JSON when the process exits.
pub const ENV_REPORT: &str = "CUDA_RS_SHIM_REPORT";
/// `1`: no real driver; the shim answers with its CPU-only fake
/// ([`crate::fake`]), every call counted.
pub const ENV_FAKE_DRIVER: &str = "CUDA_RS_SHIM_FAKE_DRIVER";

/// The lowest version a driver has ever reported (CUDA 1.0 is `1000`).
pub const MIN_DRIVER_VERSION: c_int = 1000;

/// What the shim does, as the environment says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// [`ENV_REAL_DRIVER`]: where the real driver is; `None` to look in the
    /// well-known places.
    pub real_driver: Option<PathBuf>,
    /// [`ENV_DRIVER_VERSION`]: the version to emulate; `None` for the real
    /// driver's own.
    pub driver_version: Option<c_int>,
    /// [`ENV_HIDE`]: base names that `cuGetProcAddress` reports as not found.
    pub hide: Vec<String>,
    /// [`ENV_FAIL`], [`ENV_FAIL_SEED`] and [`ENV_FAIL_RATE`]: the calls that fail.
    pub faults: Plan,
    /// [`ENV_REPORT`]: where the counts go at exit.
    pub report: Option<PathBuf>,
    /// [`ENV_FAKE_DRIVER`]: answer with the fake driver instead of loading the
    /// real one.
    pub fake: bool,
}

impl Config {
    /// Reads the configuration from the process environment.
    ///
    /// # Errors
    ///
    /// A message naming the variable and what is wrong with its value when one is
    /// set but malformed: the shim then refuses every call rather than guess.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the configuration through `get` (the environment, or a test's table).
    ///
    /// # Errors
    ///
    /// As [`Config::from_env`].
    pub fn from_lookup(get: impl Fn(&str) -> Option<OsString>) -> Result<Self, String> {
        let real_driver = match get(ENV_REAL_DRIVER) {
            None => None,
            Some(v) if v.is_empty() => {
                return Err(format!(
                    "{ENV_REAL_DRIVER} is set but empty; set it to the real libcuda.so.1 or unset it"
                ));
            }
            Some(v) => Some(PathBuf::from(v)),
        };
        let driver_version = match get(ENV_DRIVER_VERSION) {
            None => None,
            Some(v) => Some(
                parse_version(utf8(ENV_DRIVER_VERSION, &v)?)
                    .map_err(|why| format!("{ENV_DRIVER_VERSION}: {why}"))?,
            ),
        };
        let hide = match get(ENV_HIDE) {
            None => Vec::new(),
            Some(v) => {
                parse_hide_list(utf8(ENV_HIDE, &v)?).map_err(|why| format!("{ENV_HIDE}: {why}"))?
            }
        };
        let rules = match get(ENV_FAIL) {
            None => Vec::new(),
            Some(v) if v.is_empty() => {
                return Err(format!(
                    "{ENV_FAIL} is set but empty; set it to rules such as cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY or unset it"
                ));
            }
            Some(v) => {
                parse_rules(utf8(ENV_FAIL, &v)?).map_err(|why| format!("{ENV_FAIL}: {why}"))?
            }
        };
        let random = match (get(ENV_FAIL_SEED), get(ENV_FAIL_RATE)) {
            (None, None) => None,
            (Some(seed), Some(rate)) => {
                let seed = parse_seed(utf8(ENV_FAIL_SEED, &seed)?)
                    .map_err(|why| format!("{ENV_FAIL_SEED}: {why}"))?;
                let (rate_ppb, error) = parse_rate(utf8(ENV_FAIL_RATE, &rate)?)
                    .map_err(|why| format!("{ENV_FAIL_RATE}: {why}"))?;
                Some(Random {
                    seed,
                    rate_ppb,
                    error,
                })
            }
            _ => {
                return Err(format!(
                    "{ENV_FAIL_SEED} and {ENV_FAIL_RATE} go together: set both for a random fault schedule, or neither"
                ));
            }
        };
        let report = match get(ENV_REPORT) {
            None => None,
            Some(v) if v.is_empty() => {
                return Err(format!(
                    "{ENV_REPORT} is set but empty; set it to a file to write the counts to or unset it"
                ));
            }
            Some(v) => Some(PathBuf::from(v)),
        };
        let fake = match get(ENV_FAKE_DRIVER) {
            None => false,
            Some(v) if v == "1" => true,
            Some(v) if v == "0" => false,
            Some(v) => {
                return Err(format!(
                    "{ENV_FAKE_DRIVER}={} is neither 1 nor 0",
                    v.to_string_lossy()
                ));
            }
        };
        Ok(Self {
            real_driver,
            driver_version,
            hide,
            faults: Plan { rules, random },
            report,
            fake,
        })
    }

    /// Whether `symbol` (a `cuGetProcAddress` base name) is hidden.
    pub fn hides(&self, symbol: &[u8]) -> bool {
        self.hide.iter().any(|h| h.as_bytes() == symbol)
    }
}

fn utf8<'a>(name: &str, value: &'a OsStr) -> Result<&'a str, String> {
    value
        .to_str()
        .ok_or_else(|| format!("{name} is not valid UTF-8: {value:?}"))
}

/// Parses a driver version as `cuDriverGetVersion` writes it: a decimal integer
/// of at least [`MIN_DRIVER_VERSION`] (`12040` for CUDA 12.4).
///
/// # Errors
///
/// Why `text` is not one (with the integer meant when it looks like `12.4`).
pub fn parse_version(text: &str) -> Result<c_int, String> {
    let parsed = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<c_int>().ok()
    } else {
        None
    };
    match parsed {
        Some(v) if v >= MIN_DRIVER_VERSION => Ok(v),
        _ => Err(match dotted_hint(text) {
            Some(v) => format!(
                "`{text}` is not an integer ≥ {MIN_DRIVER_VERSION}: CUDA {text} is written {v}"
            ),
            None => format!(
                "`{text}` is not an integer ≥ {MIN_DRIVER_VERSION} such as 12040 for CUDA 12.4"
            ),
        }),
    }
}

/// `12.4` → `12040`, for the error message only.
fn dotted_hint(text: &str) -> Option<c_int> {
    let (major, minor) = text.split_once('.')?;
    let major = major.parse::<c_int>().ok()?;
    let minor = minor.parse::<c_int>().ok()?;
    if !(1..=99).contains(&major) || !(0..=99).contains(&minor) {
        return None;
    }
    Some(major * 1000 + minor * 10)
}

/// Parses a comma-separated list of `cuGetProcAddress` base names; blanks around
/// names and empty items are ignored.
///
/// # Errors
///
/// The first item that is not a C identifier (a typo would otherwise hide nothing
/// without a word).
pub fn parse_hide_list(text: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for item in text.split(',') {
        let name = item.trim();
        if name.is_empty() {
            continue;
        }
        if !is_identifier(name) {
            return Err(format!(
                "`{name}` is not a function name; expected names such as cuMemcpyBatchAsync,cuGreenCtxCreate"
            ));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The version the shim emulates, once the real driver's is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clamped {
    /// The version reported and used to cap `cuGetProcAddress` requests.
    pub version: c_int,
    /// Set when the wanted version was lowered to the real driver's: what to say.
    pub note: Option<String>,
}

/// The version to emulate: `wanted` (or the real driver's when `None`), never
/// above `real`, since a driver cannot be made newer than it is.
pub fn clamp_version(wanted: Option<c_int>, real: c_int) -> Clamped {
    match wanted {
        Some(w) if w > real => Clamped {
            version: real,
            note: Some(format!(
                "{ENV_DRIVER_VERSION}={w} is newer than the real driver ({real}); emulating {real}"
            )),
        },
        Some(w) => Clamped {
            version: w,
            note: None,
        },
        None => Clamped {
            version: real,
            note: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, String> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn versions_are_integers_of_at_least_1000() {
        assert_eq!(parse_version("12040"), Ok(12040));
        assert_eq!(parse_version("13000"), Ok(13000));
        assert_eq!(parse_version("1000"), Ok(1000));
        for bad in [
            "",
            "999",
            "0",
            "-12040",
            "+12040",
            " 12040",
            "12040x",
            "abc",
            "99999999999",
        ] {
            let err = parse_version(bad).unwrap_err();
            assert!(err.contains("not an integer"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_dotted_version_is_refused_with_the_integer_it_means() {
        let err = parse_version("12.4").unwrap_err();
        assert!(err.contains("CUDA 12.4 is written 12040"), "{err}");
        let err = parse_version("11.8").unwrap_err();
        assert!(err.contains("11080"), "{err}");
    }

    #[test]
    fn hide_lists_are_comma_separated_names() {
        assert_eq!(
            parse_hide_list("cuMemcpyBatchAsync,cuGreenCtxCreate").unwrap(),
            ["cuMemcpyBatchAsync", "cuGreenCtxCreate"]
        );
        assert_eq!(parse_hide_list(" cuA , ,cuB,cuA,").unwrap(), ["cuA", "cuB"]);
        assert!(parse_hide_list("").unwrap().is_empty());
        let err = parse_hide_list("cuA;cuB").unwrap_err();
        assert!(err.contains("`cuA;cuB`"), "{err}");
        assert!(parse_hide_list("cuA cuB").is_err());
        assert!(parse_hide_list("1cu").is_err());
    }

    #[test]
    fn the_environment_is_read_into_a_config() {
        assert_eq!(config(&[]).unwrap(), Config::default());
        let c = config(&[
            (ENV_REAL_DRIVER, "/usr/lib64/libcuda.so.1"),
            (ENV_DRIVER_VERSION, "12040"),
            (ENV_HIDE, "cuMemcpyBatchAsync,cuGreenCtxCreate"),
        ])
        .unwrap();
        assert_eq!(
            c.real_driver.as_deref(),
            Some(std::path::Path::new("/usr/lib64/libcuda.so.1"))
        );
        assert_eq!(c.driver_version, Some(12040));
        assert!(c.hides(b"cuGreenCtxCreate"));
        assert!(c.hides(b"cuMemcpyBatchAsync"));
        assert!(!c.hides(b"cuMemcpyBatchAsync_v2"));
        assert!(!c.hides(b"cuGreenCtx"));
        assert!(!c.hides(b""));
    }

    #[test]
    fn a_malformed_variable_fails_the_whole_config() {
        let err = config(&[(ENV_DRIVER_VERSION, "12.4")]).unwrap_err();
        assert!(err.starts_with(ENV_DRIVER_VERSION), "{err}");
        // Set but empty is a mistake (an unset shell variable), not "the real version".
        assert!(config(&[(ENV_DRIVER_VERSION, "")]).is_err());
        assert!(config(&[(ENV_REAL_DRIVER, "")]).is_err());
        let err = config(&[(ENV_HIDE, "cuA cuB")]).unwrap_err();
        assert!(err.starts_with(ENV_HIDE), "{err}");
    }

    #[test]
    fn the_fake_driver_is_asked_for_with_1() {
        assert!(!config(&[]).unwrap().fake);
        assert!(config(&[(ENV_FAKE_DRIVER, "1")]).unwrap().fake);
        assert!(!config(&[(ENV_FAKE_DRIVER, "0")]).unwrap().fake);
        for bad in ["", "yes", "2"] {
            let err = config(&[(ENV_FAKE_DRIVER, bad)]).unwrap_err();
            assert!(err.starts_with(ENV_FAKE_DRIVER), "{bad:?}: {err}");
        }
    }

    #[test]
    fn fault_variables_are_read_into_a_plan() {
        let c = config(&[
            (
                ENV_FAIL,
                "cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY,cuStreamCreate:*:CUDA_ERROR_UNKNOWN",
            ),
            (ENV_FAIL_SEED, "7"),
            (ENV_FAIL_RATE, "0.25:CUDA_ERROR_OUT_OF_MEMORY"),
            (ENV_REPORT, "/tmp/shim.json"),
        ])
        .unwrap();
        assert_eq!(c.faults.rules.len(), 2);
        assert_eq!(
            c.faults.random,
            Some(Random {
                seed: 7,
                rate_ppb: 250_000_000,
                error: 2
            })
        );
        assert_eq!(
            c.report.as_deref(),
            Some(std::path::Path::new("/tmp/shim.json"))
        );
        assert!(config(&[]).unwrap().faults.is_empty());
    }

    #[test]
    fn malformed_fault_variables_fail_the_whole_config() {
        for (vars, says) in [
            (&[(ENV_FAIL, "")][..], "set but empty"),
            (&[(ENV_FAIL, "cuMemAlloc:x:CUDA_ERROR_UNKNOWN")], ENV_FAIL),
            (
                &[(ENV_FAIL, "cuNope:1:CUDA_ERROR_UNKNOWN")],
                "not a function the shim can fail",
            ),
            (&[(ENV_FAIL_SEED, "7")], "go together"),
            (&[(ENV_FAIL_RATE, "0.5")], "go together"),
            (
                &[(ENV_FAIL_SEED, "seven"), (ENV_FAIL_RATE, "0.5")],
                ENV_FAIL_SEED,
            ),
            (&[(ENV_FAIL_SEED, "7"), (ENV_FAIL_RATE, "2")], ENV_FAIL_RATE),
            (&[(ENV_REPORT, "")], "set but empty"),
        ] {
            let err = config(vars).unwrap_err();
            assert!(err.contains(says), "{vars:?}: {err}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_version_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStringExt as _;
        let bad = OsString::from_vec(vec![b'1', 0xff]);
        let err = Config::from_lookup(|name| (name == ENV_DRIVER_VERSION).then(|| bad.clone()))
            .unwrap_err();
        assert!(err.contains("not valid UTF-8"), "{err}");
    }

    #[test]
    fn an_emulated_version_is_never_above_the_real_one() {
        assert_eq!(
            clamp_version(Some(12040), 12080),
            Clamped {
                version: 12040,
                note: None
            }
        );
        assert_eq!(
            clamp_version(Some(12080), 12080),
            Clamped {
                version: 12080,
                note: None
            }
        );
        assert_eq!(
            clamp_version(None, 12080),
            Clamped {
                version: 12080,
                note: None
            }
        );
        let c = clamp_version(Some(13000), 12080);
        assert_eq!(c.version, 12080);
        let note = c.note.unwrap();
        assert!(note.contains("13000") && note.contains("12080"), "{note}");
    }
}
