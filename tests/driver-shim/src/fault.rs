//! Fault injection: which calls of the wrapped driver functions fail, and with
//! what.
//!
//! A [`Plan`] is rules (`cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY`: the third
//! call fails; `cuStreamCreate:*:CUDA_ERROR_UNKNOWN`: every call) and, optionally,
//! a seeded random schedule (each call of a wrapped function that acquires or
//! uses something fails with a chosen probability, the same calls for the same
//! seed). [`Plan::decide`] is the decision, a pure function of the function's
//! name, what it does and how many times it has been called; [`crate::wrap`]
//! counts the calls and asks.

use std::ffi::c_uint;

use crate::wrap::{ENTRIES, Effect};

/// When a rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The `n`th call (1-based) since the plan was installed.
    Nth(u64),
    /// Every call.
    Every,
}

/// One rule: `function:when:error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The `cuGetProcAddress` base name of a wrapped function (`cuMemAllocAsync`).
    pub function: &'static str,
    /// Which calls fail.
    pub when: When,
    /// The `CUresult` they return instead of calling the driver.
    pub error: c_uint,
}

/// A seeded random schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Random {
    /// The seed: the same seed fails the same calls.
    pub seed: u64,
    /// The probability of failing a call, in parts per billion.
    pub rate_ppb: u32,
    /// The `CUresult` a failed call returns.
    pub error: c_uint,
}

/// The parts of a billion that make a probability of 1.
pub const BILLION: u32 = 1_000_000_000;

/// What fails: the rules and the random schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Rules, checked in order; the first that fires decides.
    pub rules: Vec<Rule>,
    /// The random schedule, when there is one.
    pub random: Option<Random>,
}

impl Plan {
    /// Whether this plan fails anything.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.random.is_none()
    }

    /// The error the `call`th call (1-based) of `function`, which does `effect`,
    /// returns instead of reaching the driver; `None` to call the driver.
    ///
    /// The random schedule never fails a call that releases something (a free, a
    /// destroy, an unload): such a failure leaks by definition; a rule may still
    /// name one, to test that path.
    pub fn decide(&self, function: &str, effect: Effect, call: u64) -> Option<c_uint> {
        for rule in &self.rules {
            if rule.function == function
                && match rule.when {
                    When::Every => true,
                    When::Nth(n) => n == call,
                }
            {
                return Some(rule.error);
            }
        }
        let random = self.random?;
        if matches!(effect, Effect::Release(_)) {
            return None;
        }
        let draw = splitmix64(random.seed ^ fnv1a(function.as_bytes()) ^ call.rotate_left(32));
        (draw % u64::from(BILLION) < u64::from(random.rate_ppb)).then_some(random.error)
    }
}

/// FNV-1a: a stable hash of a function's name (std's hashers may change).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// SplitMix64's output function: a well-mixed 64-bit value from any input.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The wrapped function named `name`, as its `&'static` base name.
fn wrapped(name: &str) -> Option<&'static str> {
    ENTRIES.iter().map(|e| e.base).find(|&b| b == name)
}

/// The base names of the wrapped functions, once each, for messages.
pub fn wrapped_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ENTRIES.iter().map(|e| e.base).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Parses a comma-separated list of `function:N:ERROR` rules (`N` a call number
/// from 1, or `*` for every call; `ERROR` a `CUresult` name such as
/// `CUDA_ERROR_OUT_OF_MEMORY`). Blanks around items and empty items are ignored.
///
/// # Errors
///
/// The first item that is malformed, names a function the shim does not wrap, a
/// call number that is not an integer ≥ 1, or an unknown error, and why.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let parts: Vec<&str> = item.split(':').map(str::trim).collect();
        let [function, when, error] = parts[..] else {
            return Err(format!(
                "`{item}` is not a rule; expected FUNCTION:N:ERROR such as cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY (N from 1, or * for every call)"
            ));
        };
        let Some(function) = wrapped(function) else {
            return Err(format!(
                "`{function}` in `{item}` is not a function the shim can fail; it wraps {}",
                wrapped_names().join(", ")
            ));
        };
        let when = match when {
            "*" => When::Every,
            n => match n.parse::<u64>() {
                Ok(n) if n >= 1 && n.to_string() == when => When::Nth(n),
                _ => {
                    return Err(format!(
                        "`{when}` in `{item}` is not a call number (an integer from 1) or *"
                    ));
                }
            },
        };
        let error = parse_error(error).map_err(|why| format!("in `{item}`: {why}"))?;
        rules.push(Rule {
            function,
            when,
            error,
        });
    }
    Ok(rules)
}

/// Parses a `CUresult` name (`CUDA_ERROR_OUT_OF_MEMORY`) into its code; not
/// `CUDA_SUCCESS`, which would fail nothing.
///
/// # Errors
///
/// Why `name` is not one.
pub fn parse_error(name: &str) -> Result<c_uint, String> {
    match crate::errors::code_of(name) {
        Some(0) => Err("CUDA_SUCCESS is not an error".to_string()),
        Some(code) => Ok(code),
        None => Err(format!(
            "`{name}` is not a CUresult name such as CUDA_ERROR_OUT_OF_MEMORY"
        )),
    }
}

/// Parses a seed: a decimal integer, or hex after `0x`.
///
/// # Errors
///
/// Why `text` is not one.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse::<u64>().ok(),
    };
    // `from_str_radix` and `parse` take a leading `+`; a seed does not.
    parsed
        .filter(|_| !text.contains('+'))
        .ok_or_else(|| format!("`{text}` is not a seed (a decimal integer, or hex after 0x)"))
}

/// Parses a random schedule's rate: `P` or `P:ERROR`, `P` a probability from 0
/// to 1 (`0.05`), `ERROR` a `CUresult` name (default `CUDA_ERROR_UNKNOWN`).
///
/// # Errors
///
/// Why `text` is not one.
pub fn parse_rate(text: &str) -> Result<(u32, c_uint), String> {
    let (p, error) = match text.split_once(':') {
        Some((p, e)) => (p.trim(), parse_error(e.trim())?),
        None => (text.trim(), crate::errors::CUDA_ERROR_UNKNOWN),
    };
    let ppb = p
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=1.0).contains(p))
        .ok_or_else(|| {
            format!("`{p}` is not a probability from 0 to 1 (such as 0.05, or 0.05:CUDA_ERROR_OUT_OF_MEMORY)")
        })?;
    // In range by the filter above: the product is at most a billion.
    Ok(((ppb * f64::from(BILLION)).round() as u32, error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::Kind;

    const OOM: c_uint = 2;
    const UNKNOWN: c_uint = 999;

    #[test]
    fn rules_name_a_function_a_call_and_an_error() {
        let rules = parse_rules(
            "cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY, cuStreamCreate:*:CUDA_ERROR_UNKNOWN,,",
        )
        .unwrap();
        assert_eq!(
            rules,
            [
                Rule {
                    function: "cuMemAllocAsync",
                    when: When::Nth(3),
                    error: OOM
                },
                Rule {
                    function: "cuStreamCreate",
                    when: When::Every,
                    error: UNKNOWN
                },
            ]
        );
        assert!(parse_rules("").unwrap().is_empty());
        assert!(parse_rules(" , ").unwrap().is_empty());
    }

    #[test]
    fn malformed_rules_say_what_is_wrong() {
        for (text, says) in [
            ("cuMemAllocAsync", "not a rule"),
            ("cuMemAllocAsync:3", "not a rule"),
            ("cuMemAllocAsync:3:CUDA_ERROR_OUT_OF_MEMORY:x", "not a rule"),
            (
                "cuMemAlloc_v2:1:CUDA_ERROR_OUT_OF_MEMORY",
                "not a function the shim can fail",
            ),
            ("cuFrobnicate:1:CUDA_ERROR_UNKNOWN", "it wraps"),
            ("cuMemAlloc:0:CUDA_ERROR_OUT_OF_MEMORY", "not a call number"),
            (
                "cuMemAlloc:-1:CUDA_ERROR_OUT_OF_MEMORY",
                "not a call number",
            ),
            (
                "cuMemAlloc:+1:CUDA_ERROR_OUT_OF_MEMORY",
                "not a call number",
            ),
            (
                "cuMemAlloc:01:CUDA_ERROR_OUT_OF_MEMORY",
                "not a call number",
            ),
            (
                "cuMemAlloc:one:CUDA_ERROR_OUT_OF_MEMORY",
                "not a call number",
            ),
            ("cuMemAlloc:1:OUT_OF_MEMORY", "not a CUresult name"),
            ("cuMemAlloc:1:2", "not a CUresult name"),
            ("cuMemAlloc:1:CUDA_SUCCESS", "not an error"),
        ] {
            let err = parse_rules(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        // One bad item spoils the list.
        assert!(parse_rules("cuMemAlloc:1:CUDA_ERROR_OUT_OF_MEMORY,cuMemAlloc:x:y").is_err());
    }

    #[test]
    fn a_rule_fails_exactly_its_call() {
        let plan = Plan {
            rules: parse_rules("cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY").unwrap(),
            random: None,
        };
        let fx = Effect::Acquire(Kind::Memory);
        assert_eq!(plan.decide("cuMemAlloc", fx, 1), None);
        assert_eq!(plan.decide("cuMemAlloc", fx, 2), Some(OOM));
        assert_eq!(plan.decide("cuMemAlloc", fx, 3), None);
        assert_eq!(plan.decide("cuMemFree", Effect::None, 2), None);
        let every = Plan {
            rules: parse_rules("cuMemFree:*:CUDA_ERROR_UNKNOWN").unwrap(),
            random: None,
        };
        let release = Effect::Release(Kind::Memory);
        assert!((1..100).all(|n| every.decide("cuMemFree", release, n) == Some(UNKNOWN)));
        // The first rule that fires decides.
        let both = Plan {
            rules: parse_rules("cuInit:1:CUDA_ERROR_UNKNOWN,cuInit:*:CUDA_ERROR_OUT_OF_MEMORY")
                .unwrap(),
            random: None,
        };
        assert_eq!(both.decide("cuInit", Effect::None, 1), Some(UNKNOWN));
        assert_eq!(both.decide("cuInit", Effect::None, 2), Some(OOM));
    }

    #[test]
    fn a_random_schedule_is_seeded_and_spares_releases() {
        let plan = |seed, rate: &str| Plan {
            rules: Vec::new(),
            random: Some({
                let (rate_ppb, error) = parse_rate(rate).unwrap();
                Random {
                    seed,
                    rate_ppb,
                    error,
                }
            }),
        };
        let fx = Effect::Acquire(Kind::Stream);
        let fails = |p: &Plan| -> Vec<u64> {
            (1..=2000)
                .filter(|&n| p.decide("cuStreamCreate", fx, n).is_some())
                .collect()
        };
        let a = fails(&plan(7, "0.1"));
        // The same seed, the same calls; about a tenth of them.
        assert_eq!(a, fails(&plan(7, "0.1")));
        assert!((120..=280).contains(&a.len()), "{}", a.len());
        assert_ne!(a, fails(&plan(8, "0.1")));
        assert!(fails(&plan(7, "0")).is_empty());
        assert_eq!(fails(&plan(7, "1")).len(), 2000);
        // Releases never fail at random, and the error is the one asked for.
        let all = plan(7, "1:CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(all.decide("cuStreamCreate", fx, 1), Some(OOM));
        assert_eq!(
            all.decide("cuStreamDestroy", Effect::Release(Kind::Stream), 1),
            None
        );
        assert_eq!(
            plan(7, "1").decide("cuInit", Effect::None, 1),
            Some(UNKNOWN)
        );
    }

    #[test]
    fn seeds_and_rates_are_checked() {
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed("0xff"), Ok(255));
        for bad in ["", "-1", "+1", "0x", "x", "1.5", "99999999999999999999"] {
            assert!(parse_seed(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_rate("0.5"), Ok((BILLION / 2, UNKNOWN)));
        assert_eq!(parse_rate("1:CUDA_ERROR_OUT_OF_MEMORY"), Ok((BILLION, OOM)));
        assert_eq!(parse_rate("0"), Ok((0, UNKNOWN)));
        for bad in ["", "1.5", "-0.1", "NaN", "inf", "half", "0.1:NOPE", "0.1:"] {
            assert!(parse_rate(bad).is_err(), "{bad:?}");
        }
    }
}
