//! Memory shared with other libraries and processes: DLPack ([`dlpack`]),
//! strided views and the CUDA Array Interface ([`strided`]), the producers a
//! strided argument comes from, ordered per call ([`dlpack_producer`],
//! [`foreign_array`]), views of host
//! arrays and NumPy's array interface ([`host_strided`]), strided copies and
//! typed views of a strided view ([`strided_copy`]), OpenGL
//! ([`graphics`]) and IPC ([`ipc`], Linux).

#[cfg(feature = "dlpack")]
pub(crate) mod cai;
#[cfg(feature = "dlpack")]
pub mod dlpack;
#[cfg(feature = "dlpack")]
pub(crate) mod dlpack_export;
#[cfg(feature = "dlpack")]
pub(crate) mod dlpack_producer;
#[cfg(feature = "dlpack")]
pub(crate) mod foreign_array;
#[cfg(feature = "gl")]
pub(crate) mod graphics;
#[cfg(feature = "dlpack")]
pub(crate) mod host_strided;
#[cfg(feature = "ipc")]
#[cfg(unix)]
pub(crate) mod ipc;
#[cfg(feature = "dlpack")]
pub(crate) mod layout;
#[cfg(feature = "dlpack")]
pub(crate) mod strided;
#[cfg(feature = "dlpack")]
pub(crate) mod strided_copy;
#[cfg(feature = "dlpack")]
pub(crate) mod strided_dlpack;
#[cfg(feature = "dlpack")]
pub(crate) mod strided_layout;
#[cfg(feature = "dlpack")]
pub(crate) mod strided_repack;
#[cfg(feature = "dlpack")]
pub(crate) mod strided_view;
