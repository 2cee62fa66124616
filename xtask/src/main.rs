//! `cargo xtask`: the project's chores, written in Rust so they run wherever cargo does.
//!
//! Run `cargo xtask help` for the list of commands.

mod auto_traits;
mod bindings;
mod catalog;
mod codegen;
mod headers;
mod library_docs;
mod package;
mod packages;
mod parity_index;
mod release;
mod structure;
mod testrun;
mod util;
mod workspace;

use std::process::ExitCode;

const HELP: &str = "\
cargo xtask <command> [options]

commands:
  quickstart         the main job: NVIDIA's wheels into target/cuda-venv, then the
                     cudars-core `quickstart` example (compile SAXPY with NVRTC,
                     launch it, check it; diagnoses what is missing without a GPU)
  test [--cuda 12|13|all] [--no-venv] [-- <cargo test args>]
                     the project's test run: builds the tests once and runs them
                     against NVIDIA's CUDA 13.0 wheels (target/cuda-venv) and
                     again against the CUDA 12.9 wheels (target/cuda12-venv)
  codegen [--check]  regenerate the pathfinder catalogue from its JSON, the API
                     table of docs/adding-a-library.md from the bindings' table,
                     and tests/tests/auto_traits.rs from the Send/Sync table of
                     docs/architecture.md, and the conformance-test column of
                     docs/parity.md from crates/cudars-core/tests/conformance
                     (--check: fail if a committed file is stale)
  package-tests --out DIR [--packages a,b] [--exclude c,d]
                     build every test and bench binary in release mode and
                     copy them, stripped, into DIR with a run.sh runner,
                     and the driver shim with run-shim.sh VERSION
  fetch-headers [--cuda 12|13] [--cuda-home DIR]
                     fetch and verify the pinned CUDA headers into .headers/
  regen-bindings [--check]
                     run bindgen over the pinned headers (--check: fail if stale)
  check-packages     package every publishable crate and check each .crate: under
                     10 MiB, README, licence files, CHANGELOG.md, rust-version, no
                     scratch
  release CRATE VERSION [--no-dry-run]
                     bump CRATE to VERSION (its CHANGELOG.md needs a `## [VERSION]`
                     entry), rewrite every requirement on it, refresh Cargo.lock and
                     run the publishing dry run (docs/releasing.md)
  release-tag [CRATE...]
                     tag HEAD CRATE-vVERSION (every publishable crate when none is
                     named) and record it in release-baselines.toml
  semver-checks [--crates a,b]
                     cargo semver-checks of each publishable crate against its last
                     release (release-baselines.toml)
  structure [--crate NAME]
                     the module graph of a crate's src/ (cudars-core unless named):
                     rooms, arrows, floors, arrows running back up against the
                     declared layers (docs/architecture.md), import loops, files
                     over 800 lines
  help               this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => ("help", &[][..]),
    };
    let result = match cmd {
        "test" => testrun::run(rest),
        "quickstart" => testrun::quickstart(rest),
        "codegen" => catalog::run(rest)
            .and_then(|()| library_docs::run(rest))
            .and_then(|()| auto_traits::run(rest))
            .and_then(|()| parity_index::run(rest)),
        "package-tests" => package::run(rest),
        "fetch-headers" => headers::run(rest),
        "regen-bindings" => bindings::run(rest),
        "check-packages" => packages::run(rest),
        "release" => release::release(rest),
        "release-tag" => release::release_tag(rest),
        "semver-checks" => release::semver_checks(rest),
        "structure" => structure::run(rest),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {cmd}: error: {e}");
            ExitCode::FAILURE
        }
    }
}
