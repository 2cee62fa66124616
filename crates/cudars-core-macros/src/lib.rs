//! Typed launch functions generated from the `extern "C" __global__` kernels of
//! a CUDA C++ source file, for [`cudars-core`](https://docs.rs/cudars-core).
//!
//! Use it through `cudars_core::kernels!` (the `macros` feature of `cudars-core`, on
//! by default), which passes this macro its own path (`crate = $crate;`), so the
//! generated code finds cudars-core through the umbrella or a renamed dependency;
//! called directly, the generated code names `::cudars_core` unless the input
//! starts with `crate = path;`. The documentation, with examples, is on that
//! macro.
//!
//! The macro reads the source when the calling crate is compiled (no CUDA
//! toolkit is needed then) and embeds it; the generated type compiles it with
//! NVRTC when it is loaded, at run time. A source given as a constant
//! expression (`source KERNELS;`) is embedded as that expression; the
//! signatures then come from `declare "…";`, which the generated code compares
//! with the source's text at compile time (an early, textual convenience).
//!
//! What the macro reads is not trusted alone: the generated `compile` (which
//! `load`, `load_cached` and `load_with` go through) compiles the source with a
//! check of each kernel's signature after it (`cudars_core::kernel_check`), so
//! NVRTC, with its own preprocessor and the options' defines, proves each
//! launch function's types.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod cparse;
mod ctypes;
mod expand;

use proc_macro::TokenStream;

/// (The procedural macro is `cudars-core-macros`'s; its generated code names
/// `::cudars_core`, or the path `crate = path;` gives first in the input.)
#[proc_macro]
pub fn kernels(input: TokenStream) -> TokenStream {
    match syn::parse::<expand::Input>(input) {
        Ok(input) => expand::expand(&input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
    .into()
}
