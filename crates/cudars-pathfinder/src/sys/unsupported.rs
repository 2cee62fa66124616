//! Platforms without a supported loader yet: every load reports "not available".

use std::ffi::{CStr, OsStr, c_void};
use std::path::PathBuf;
use std::ptr::NonNull;

/// A loader handle (never constructed here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawDl(NonNull<c_void>);

// SAFETY: never constructed on these platforms.
unsafe impl Send for RawDl {}
// SAFETY: never constructed on these platforms.
unsafe impl Sync for RawDl {}

impl RawDl {
    pub(crate) fn as_ptr(self) -> *mut c_void {
        self.0.as_ptr()
    }
}

pub(crate) fn already_loaded(_soname: &str) -> Option<RawDl> {
    None
}

pub(crate) fn open(_name: &OsStr, _deepbind: bool) -> Result<RawDl, String> {
    Err("loading libraries is not supported on this platform yet".into())
}

pub(crate) fn symbol(_h: RawDl, _name: &CStr) -> Option<NonNull<c_void>> {
    None
}

pub(crate) fn path_of(_h: RawDl) -> Option<PathBuf> {
    None
}

pub(crate) fn resolve_by_name(_name: &str) -> Option<PathBuf> {
    None
}

pub(crate) const SYSTEM_SEARCH_PLACES: &str = "no loader on this platform";

pub(crate) const CAN_LOAD: bool = false;
