//! `release-baselines.toml`: each crate's last release (version and commit),
//! read and written.

use super::BASELINES;
use super::manifest::table_header;
use super::version::Version;

/// A crate's last release, as `release-baselines.toml` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// The crate.
    pub(crate) name: String,
    /// The version released.
    pub(crate) version: String,
    /// The release commit.
    pub(crate) rev: String,
}

impl Baseline {
    /// The release's tag: `CRATE-vVERSION`.
    pub(crate) fn tag(&self) -> String {
        format!("{}-v{}", self.name, self.version)
    }
}

/// Reads `release-baselines.toml`: one `[crate]` table per crate with `version` and
/// `rev` strings (comments and blank lines allowed).
pub(crate) fn parse_baselines(text: &str) -> Result<Vec<Baseline>, String> {
    let mut out: Vec<Baseline> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |why: String| format!("{BASELINES}:{}: {why}", n + 1);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(name) = table_header(t) {
            let name = name.trim_matches('"').to_string();
            if out.iter().any(|b| b.name == name) {
                return Err(at(format!("[{name}] is given twice")));
            }
            out.push(Baseline {
                name,
                version: String::new(),
                rev: String::new(),
            });
            continue;
        }
        let (key, value) = t
            .split_once('=')
            .ok_or_else(|| at(format!("expected `key = \"value\"`, found `{t}`")))?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .ok_or_else(|| at(format!("the value of `{}` is not a string", key.trim())))?;
        let last = out
            .last_mut()
            .ok_or_else(|| at("a key before any [crate] table".to_string()))?;
        match key.trim() {
            "version" => {
                Version::parse(value).map_err(at)?;
                last.version = value.to_string();
            }
            "rev" => {
                if value.len() != 40 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(at(format!("rev `{value}` is not a full commit id")));
                }
                last.rev = value.to_string();
            }
            other => return Err(at(format!("unknown key `{other}`"))),
        }
    }
    if let Some(b) = out
        .iter()
        .find(|b| b.version.is_empty() || b.rev.is_empty())
    {
        return Err(format!(
            "{BASELINES}: [{}] needs both version and rev",
            b.name
        ));
    }
    Ok(out)
}

/// Writes the baselines in the file's format, sorted by crate name.
pub(crate) fn render_baselines(baselines: &[Baseline]) -> String {
    let mut sorted = baselines.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut s = String::from(
        "# The last release of each publishable crate: its version and the commit it was\n\
         # released from (tagged CRATE-vVERSION where tags travel). `cargo xtask semver-checks`\n\
         # compares each crate with this commit; `cargo xtask release-tag` writes this file.\n\
         # See docs/releasing.md.\n",
    );
    for b in &sorted {
        s.push_str(&format!(
            "\n[{}]\nversion = \"{}\"\nrev = \"{}\"\n",
            b.name, b.version, b.rev
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_round_trip_and_bad_files_are_refused() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        let bs = vec![
            Baseline {
                name: "b".into(),
                version: "0.1.0".into(),
                rev: rev.into(),
            },
            Baseline {
                name: "a".into(),
                version: "1.0.0".into(),
                rev: rev.into(),
            },
        ];
        let text = render_baselines(&bs);
        let back = parse_baselines(&text).unwrap();
        assert_eq!(
            back.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(back[1], bs[0]);
        assert_eq!(back[0].tag(), "a-v1.0.0");
        assert!(
            parse_baselines("[a]\nversion = \"1\"\n")
                .unwrap_err()
                .contains("not a semantic")
        );
        assert!(
            parse_baselines("[a]\nrev = \"abc\"\n")
                .unwrap_err()
                .contains("full commit")
        );
        assert!(
            parse_baselines("[a]\nversion = \"1.0.0\"\n")
                .unwrap_err()
                .contains("both")
        );
        assert!(
            parse_baselines("version = \"1.0.0\"\n")
                .unwrap_err()
                .contains("before any")
        );
    }
}
