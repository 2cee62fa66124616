//! `cargo xtask codegen`: turns the pathfinder's library catalogue (JSON data the
//! crate owns, `crates/cudars-pathfinder/data/pathfinder-catalog.json`) into Rust.
//!
//! The output is built as `quote!` tokens, formatted by `prettyplease` and
//! checked in through `codegen::ensure_file_contents`; `--check` fails when it
//! is stale, and the test below runs that check under `cargo test`.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use serde_json::Value;
use std::path::PathBuf;

use crate::codegen::{Generator, Outcome, ensure_file_contents, reformat};
use crate::util::{no_more, report, take_flag, workspace_root};

const JSON: &str = "crates/cudars-pathfinder/data/pathfinder-catalog.json";
const OUT: &str = "crates/cudars-pathfinder/src/catalog/generated.rs";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let check = take_flag(&mut args, "--check");
    no_more(&args)?;
    let root = workspace_root();
    let fresh = generate(&root.join(JSON))?;
    match ensure_file_contents(Generator::Catalog, &out_path(), &fresh, check) {
        Ok(Outcome::Unchanged) => eprintln!("codegen: {OUT} is up to date"),
        Ok(Outcome::Written) => {}
        Err(e) => return Err(report(&e)),
    }
    Ok(())
}

fn strs(v: &Value, key: &str) -> Result<Vec<String>, String> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("catalogue entry lacks array `{key}`"))?
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{key}` holds a non-string"))
        })
        .collect()
}

fn arch_strs(v: &Value, key: &str, arch: &str) -> Result<Vec<String>, String> {
    let inner = v
        .get(key)
        .ok_or_else(|| format!("catalogue entry lacks `{key}`"))?;
    strs(inner, arch)
}

fn flag(v: &Value, key: &str) -> Result<bool, String> {
    v.get(key)
        .and_then(Value::as_bool)
        .ok_or_else(|| format!("catalogue entry lacks bool `{key}`"))
}

/// `&["a", "b"]`.
fn list(items: &[String]) -> TokenStream {
    quote! { &[#(#items),*] }
}

/// The catalogue as Rust: `LIBRARY_COUNT`, `LIBRARIES` and `index_of`, built as
/// tokens and formatted (see `codegen::reformat`).
pub(crate) fn generate(json_path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(json_path)
        .map_err(|e| format!("reading {}: {e}", json_path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("parsing {JSON}: {e}"))?;
    let source = doc.get("source").and_then(Value::as_str).unwrap_or("");
    let libs = doc
        .get("libraries")
        .and_then(Value::as_array)
        .ok_or("catalogue lacks `libraries`")?;

    let mut names = Vec::new();
    let mut descriptors = Vec::new();
    for lib in libs {
        let name = lib
            .get("name")
            .and_then(Value::as_str)
            .ok_or("catalogue entry lacks `name`")?;
        names.push(name.to_owned());
        let packaged = match lib.get("packaged_with").and_then(Value::as_str) {
            Some("ctk") => quote! { PackagedWith::Ctk },
            Some("other") => quote! { PackagedWith::Other },
            Some("driver") => quote! { PackagedWith::Driver },
            other => return Err(format!("{name}: unknown packaged_with {other:?}")),
        };
        let mut fields = Vec::new();
        for key in [
            "linux_sonames",
            "windows_dlls",
            "supported_windows_arch",
            "site_packages_linux",
            "dependencies",
            "optional_dependencies",
            "anchor_rel_dirs_linux",
            "install_root_env_vars_linux",
            "install_root_env_rel_dirs_linux",
            "install_root_env_vars_windows",
            "ctk_root_canary_anchor_libnames",
        ] {
            let field = format_ident!("{key}");
            let value = list(&strs(lib, key)?);
            fields.push(quote! { #field: #value });
        }
        for key in [
            "site_packages_windows",
            "anchor_rel_dirs_windows",
            "install_root_env_rel_dirs_windows",
            "program_files_root_globs_windows",
        ] {
            for arch in ["x64", "arm64"] {
                let field = format_ident!("{key}_{arch}");
                let value = list(&arch_strs(lib, key, arch)?);
                fields.push(quote! { #field: #value });
            }
        }
        for key in [
            "requires_add_dll_directory",
            "requires_rtld_deepbind",
            "requires_windows_binary_arch_check",
        ] {
            let field = format_ident!("{key}");
            let value = flag(lib, key)?;
            fields.push(quote! { #field: #value });
        }
        descriptors.push(quote! {
            LibDescriptor {
                name: #name,
                packaged_with: #packaged,
                #(#fields),*
            }
        });
    }
    let count = Literal::usize_unsuffixed(libs.len());
    let arms = names.iter().enumerate().map(|(i, n)| {
        let i = Literal::usize_unsuffixed(i);
        quote! { #n => Some(#i), }
    });
    let tokens = quote! {
        use super::{LibDescriptor, PackagedWith};

        /// How many libraries the catalogue holds.
        pub(crate) const LIBRARY_COUNT: usize = #count;

        /// Every library of the catalogue, in catalogue order.
        pub(crate) static LIBRARIES: [LibDescriptor; LIBRARY_COUNT] = [#(#descriptors),*];

        /// The index of `name` in [`LIBRARIES`], by exact (case-sensitive) name.
        #[inline]
        pub(crate) fn index_of(name: &str) -> Option<usize> {
            match name {
                #(#arms)*
                _ => None,
            }
        }
    };
    let banner = format!(
        "// @generated by `cargo xtask codegen` from `data/pathfinder-catalog.json`\n\
         // ({source}). Do not edit by hand: edit the JSON and regenerate.\n\n"
    );
    reformat(OUT, &banner, tokens)
}

fn out_path() -> PathBuf {
    workspace_root().join(OUT)
}

#[cfg(test)]
mod tests {
    use crate::codegen::{Generator, ensure_file_contents};

    #[test]
    fn generated_catalogue_is_fresh() {
        let root = super::workspace_root();
        let fresh = super::generate(&root.join(super::JSON)).unwrap();
        if let Err(e) = ensure_file_contents(Generator::Catalog, &super::out_path(), &fresh, true) {
            panic!("{}", crate::util::report(&e));
        }
    }
}
