//! Crate versions as SemVer orders them, and what counts as a breaking release.

use std::cmp::Ordering;
use std::fmt;

/// One identifier of a pre-release (`alpha`, `1`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Alpha(String),
}

impl Ord for Pre {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Pre::Num(a), Pre::Num(b)) => a.cmp(b),
            (Pre::Alpha(a), Pre::Alpha(b)) => a.cmp(b),
            // Numeric identifiers have lower precedence than alphanumeric ones.
            (Pre::Num(_), Pre::Alpha(_)) => Ordering::Less,
            (Pre::Alpha(_), Pre::Num(_)) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Pre {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A semantic version, `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, ordered by precedence
/// (build metadata is kept for display and ignored in comparisons).
#[derive(Debug, Clone)]
pub(crate) struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
    text: String,
}

impl Version {
    /// Parses a version as semver 2.0.0 writes it.
    pub(crate) fn parse(s: &str) -> Result<Version, String> {
        let bad = |why: &str| format!("`{s}` is not a semantic version (MAJOR.MINOR.PATCH): {why}");
        let (rest, build) = match s.split_once('+') {
            Some((r, b)) => (r, Some(b)),
            None => (s, None),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (rest, None),
        };
        let num = |part: &str| -> Result<u64, String> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(&format!("`{part}` is not a number")));
            }
            if part.len() > 1 && part.starts_with('0') {
                return Err(bad(&format!("`{part}` has a leading zero")));
            }
            part.parse()
                .map_err(|_| bad(&format!("`{part}` is too large")))
        };
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts[..] else {
            return Err(bad("it needs exactly three numbers"));
        };
        let ident_ok =
            |i: &str| !i.is_empty() && i.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        let mut pres = Vec::new();
        if let Some(pre) = pre {
            for ident in pre.split('.') {
                if !ident_ok(ident) {
                    return Err(bad(&format!("bad pre-release identifier `{ident}`")));
                }
                pres.push(if ident.bytes().all(|b| b.is_ascii_digit()) {
                    Pre::Num(num(ident)?)
                } else {
                    Pre::Alpha(ident.to_string())
                });
            }
        }
        if let Some(build) = build
            && !build.split('.').all(ident_ok)
        {
            return Err(bad(&format!("bad build metadata `{build}`")));
        }
        Ok(Version {
            major: num(major)?,
            minor: num(minor)?,
            patch: num(patch)?,
            pre: pres,
            text: s.to_string(),
        })
    }

    /// Whether a release from `self` to `next` may break users: a new major, or a
    /// new minor while the major is 0 (cargo's compatibility rule).
    pub(crate) fn allows_breaking(&self, next: &Version) -> bool {
        next.major != self.major || (self.major == 0 && next.minor != self.minor)
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Version {}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                // A pre-release comes before its release.
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions_parse_and_order_by_semver_precedence() {
        let order = [
            "0.1.0",
            "0.1.1",
            "0.2.0-alpha",
            "0.2.0-alpha.1",
            "0.2.0-alpha.beta",
            "0.2.0-beta.2",
            "0.2.0-beta.11",
            "0.2.0-rc.1",
            "0.2.0",
            "1.0.0",
            "1.10.0",
        ];
        for w in order.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(v("1.0.0+build.5"), v("1.0.0"));
        assert_eq!(v("1.0.0+build.5").to_string(), "1.0.0+build.5");
        for bad in [
            "1.0",
            "1.0.0.0",
            "01.0.0",
            "1.0.x",
            "",
            "1.0.0-",
            "1.0.0-a..b",
            "v1.0.0",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn breaking_releases_follow_cargos_rule() {
        assert!(v("0.1.0").allows_breaking(&v("0.2.0")));
        assert!(!v("0.1.0").allows_breaking(&v("0.1.1")));
        assert!(v("1.2.0").allows_breaking(&v("2.0.0")));
        assert!(!v("1.2.0").allows_breaking(&v("1.3.0")));
    }
}
