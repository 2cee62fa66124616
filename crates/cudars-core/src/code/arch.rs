//! GPU architecture names (`sm_90a`, `compute_120f`), as the compilers and the
//! linkers spell them: shared by [`crate::code::compile`] and [`crate::code::linker`].

use crate::error::{Error, Result};

/// A GPU architecture name, as the compilers and the linker spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arch {
    /// `sm_` (a real architecture) rather than `compute_` (a virtual one).
    pub(crate) real: bool,
    /// `90` for `sm_90`.
    pub(crate) number: u32,
    /// `a` or `f`, for architecture- or family-specific features.
    pub(crate) suffix: Option<char>,
}

impl Arch {
    /// Parses `sm_XY`, `compute_XY`, either with an `a`/`f` suffix.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let (real, rest) = if let Some(r) = s.strip_prefix("sm_") {
            (true, r)
        } else {
            (false, s.strip_prefix("compute_")?)
        };
        let (digits, suffix) = match rest.strip_suffix(['a', 'f']) {
            Some(d) => (d, rest.chars().last()),
            None => (rest, None),
        };
        if !(2..=4).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number = digits.parse().ok()?;
        (number >= 10).then_some(Self {
            real,
            number,
            suffix,
        })
    }

    /// Parses `arch` or says what is wrong with it.
    pub(crate) fn parse_or_invalid(arch: &str, context: &'static str) -> Result<Self> {
        Self::parse(arch).ok_or_else(|| {
            Error::invalid(
                context,
                format!(
                    "`arch` {arch:?} is not a GPU architecture: expected sm_XY or \
                     compute_XY, optionally with an `a` or `f` suffix (sm_90, sm_90a, \
                     compute_90)"
                ),
            )
        })
    }

    /// The virtual architecture (`compute_XY…`) of the same number and suffix.
    pub(crate) fn virtual_name(self) -> String {
        let mut s = format!("compute_{}", self.number);
        s.extend(self.suffix);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_parse() {
        let a = Arch::parse("sm_90a").map(|a| (a.real, a.number, a.suffix));
        assert_eq!(a, Some((true, 90, Some('a'))));
        let a = Arch::parse("compute_120f").map(|a| (a.real, a.number, a.suffix));
        assert_eq!(a, Some((false, 120, Some('f'))));
        for bad in [
            "sm90",
            "sm_",
            "sm_9",
            "sm_9x",
            "gfx90",
            "compute_90b",
            "sm_90 ",
        ] {
            assert!(Arch::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(
            Arch::parse("sm_90a").map(Arch::virtual_name).as_deref(),
            Some("compute_90a")
        );
    }
}
