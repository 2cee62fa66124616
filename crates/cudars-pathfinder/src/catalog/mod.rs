//! The library catalogue: what each supported NVIDIA library is called on each
//! platform and where NVIDIA's packages put it.
//!
//! The data is owned by this crate as `data/pathfinder-catalog.json` (the catalogue of
//! NVIDIA's `cuda.pathfinder`, read as data) and compiled into `generated.rs` by
//! `cargo xtask codegen`; a test fails when the generated file is stale.

#[rustfmt::skip]
mod generated;

mod descriptor;

pub use descriptor::{LibDescriptor, PackagedWith};

/// Every library of the catalogue, in catalogue order (toolkit libraries first,
/// then other NVIDIA products, then the driver's).
pub fn catalog() -> &'static [LibDescriptor] {
    &generated::LIBRARIES
}

/// The catalogue entry for `name` (exact, case-sensitive: `nvJitLink`, `cublasLt`).
pub fn descriptor(name: &str) -> Option<&'static LibDescriptor> {
    generated::index_of(name).map(|i| &generated::LIBRARIES[i])
}

pub(crate) use generated::{LIBRARIES, LIBRARY_COUNT, index_of};

/// The names [`load_nvidia_dynamic_lib`](crate::load_nvidia_dynamic_lib) accepts on any
/// platform, in catalogue order.
pub fn supported_nvidia_libnames() -> impl Iterator<Item = &'static str> {
    catalog().iter().map(|d| d.name)
}
