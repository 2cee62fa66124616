//! Memory shared with other libraries and processes: DLPack ([`dlpack`]),
//! strided views and the CUDA Array Interface ([`strided`]), OpenGL
//! ([`graphics`]) and IPC ([`ipc`], Linux).

pub(crate) mod cai;
pub mod dlpack;
pub(crate) mod dlpack_export;
pub(crate) mod graphics;
#[cfg(unix)]
pub(crate) mod ipc;
pub(crate) mod layout;
pub(crate) mod strided;
