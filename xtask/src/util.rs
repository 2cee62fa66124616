//! Small helpers shared by the xtask commands.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of the xtask crate).
pub(crate) fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// Runs a command, failing with its rendering when it does not exit 0.
pub(crate) fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

/// The `cargo` that runs this xtask.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Takes `--name VALUE` out of `args`.
pub(crate) fn take_value(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            if i + 1 >= args.len() {
                return Err(format!("{name} needs a value"));
            }
            let v = args.remove(i + 1);
            args.remove(i);
            Ok(Some(v))
        }
    }
}

/// Takes the flag `name` out of `args`, saying whether it was there.
pub(crate) fn take_flag(args: &mut Vec<String>, name: &str) -> bool {
    match args.iter().position(|a| a == name) {
        None => false,
        Some(i) => {
            args.remove(i);
            true
        }
    }
}

/// Fails when arguments are left that no option took.
pub(crate) fn no_more(args: &[String]) -> Result<(), String> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!("unexpected arguments: {}", args.join(" ")))
    }
}

/// An error and each of its sources, joined by `: ` (each level says only its
/// own part, so the chain is the whole story).
pub(crate) fn report(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
