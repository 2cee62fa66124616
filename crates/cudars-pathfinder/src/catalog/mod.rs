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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::descriptor::LINUX_AARCH64_ONLY;

    #[test]
    fn cudla_is_offered_only_where_nvidia_ships_it() {
        let on_arm = cfg!(target_arch = "aarch64") && (cfg!(target_os = "linux") || cfg!(windows));
        for name in LINUX_AARCH64_ONLY {
            let d = descriptor(name).unwrap_or_else(|| panic!("{name} is in the catalogue"));
            let here = d.is_available_on_this_platform();
            assert_eq!(
                here,
                on_arm && (cfg!(target_os = "linux") || !d.windows_dlls.is_empty()),
                "{name}"
            );
        }
        // The rest of the catalogue is unchanged by the gate.
        let cudart = descriptor("cudart").unwrap();
        assert_eq!(
            cudart.is_available_on_this_platform(),
            cfg!(any(target_os = "linux", windows))
        );
    }

    #[cfg(all(target_os = "linux", not(target_arch = "aarch64")))]
    #[test]
    fn loading_cudla_off_aarch64_is_not_available_rather_than_not_found() {
        match crate::load_nvidia_dynamic_lib("cudla") {
            Err(crate::PathfinderError::NotAvailable { name, .. }) => assert_eq!(name, "cudla"),
            other => panic!("expected NotAvailable, got {other:?}"),
        }
    }
}
