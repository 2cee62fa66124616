//! Device code: compiling ([`compile`]: NVRTC, NVVM, PTX), linking ([`linker`]),
//! fatbins ([`fatbin`]), object code ([`object`]), loading ([`library`],
//! [`module`]), kernels ([`kernel`]) and the program cache ([`cache`]).

pub(crate) mod arch;
#[cfg(feature = "cache")]
pub mod cache;
pub(crate) mod compile;
pub(crate) mod compressed;
pub(crate) mod fatbin;
pub(crate) mod jit;
pub(crate) mod kernel;
#[cfg(feature = "macros")]
pub mod kernel_check;
pub(crate) mod library;
pub(crate) mod library_handle;
pub(crate) mod linker;
pub(crate) mod linker_backends;
pub(crate) mod linker_options;
pub(crate) mod module;
pub(crate) mod object;
pub(crate) mod strings;
pub(crate) mod tool_args;
