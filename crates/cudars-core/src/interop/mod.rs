//! Memory shared with other libraries and processes: DLPack ([`dlpack`]),
//! strided views and the CUDA Array Interface ([`strided`]), the producers a
//! strided argument comes from, ordered per call ([`dlpack_producer`],
//! [`foreign_array`]), views of host
//! arrays and NumPy's array interface ([`host_strided`]), strided copies and
//! typed views of a strided view ([`strided_copy`]), OpenGL
//! ([`graphics`]) and IPC ([`ipc`], Linux).

pub(crate) mod cai;
pub mod dlpack;
pub(crate) mod dlpack_export;
pub(crate) mod dlpack_producer;
pub(crate) mod foreign_array;
pub(crate) mod graphics;
pub(crate) mod host_strided;
#[cfg(unix)]
pub(crate) mod ipc;
pub(crate) mod layout;
pub(crate) mod strided;
pub(crate) mod strided_copy;
pub(crate) mod strided_dlpack;
