//! Typed launch functions generated from the `extern "C" __global__` kernels of
//! a CUDA C++ source file, for [`cudars-core`](https://docs.rs/cudars-core).
//!
//! Use it through `cudars_core::kernels!` (the `macros` feature of `cudars-core`, on
//! by default); the generated code names `::cudars_core`. The documentation, with
//! examples, is on that re-export.
//!
//! The macro reads the source when the calling crate is compiled (no CUDA
//! toolkit is needed then) and embeds it; the generated type compiles it with
//! NVRTC when it is loaded, at run time. A source given as a constant
//! expression (`source KERNELS;`) is embedded as that expression; the
//! signatures then come from `declare "…";`, which the generated code checks
//! against the source's text at compile time.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod cparse;
mod ctypes;
mod expand;

use proc_macro::TokenStream;

/// (The procedural macro is `cudars-core-macros`'s; its generated code names
/// `::cudars_core`.)
#[proc_macro]
pub fn kernels(input: TokenStream) -> TokenStream {
    match syn::parse::<expand::Input>(input) {
        Ok(input) => expand::expand(&input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
    .into()
}
