//! The operating system's dynamic loader, behind one small interface: `RawDl`,
//! `already_loaded`, `open`, `symbol`, `path_of`, `resolve_by_name`,
//! `SYSTEM_SEARCH_PLACES` and `CAN_LOAD` in each platform's module.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;

#[cfg(not(any(unix, windows)))]
mod unsupported;
#[cfg(not(any(unix, windows)))]
pub(crate) use unsupported::*;
