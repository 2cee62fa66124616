//! Domains: a library's own namespace of ranges, marks, categories and
//! registered strings, shown as its own row group in Nsight Systems.

use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::LazyLock;

use crate::attributes::{Attributes, RawAttributes, RegisteredString, with_c_str};
use crate::tool::{self, CORE2_SLOTS, core2};

/// An NVTX domain. Events in a domain are grouped under its name on the
/// timeline, and a domain has its own categories and registered strings.
///
/// A domain is created once and kept (usually in a `static`, as
/// [`Domain::cuda_rs`] is); dropping it tells the tool it is gone. With no tool
/// attached, creating one loads nothing and its events cost a load and a branch.
///
/// ```
/// use std::sync::LazyLock;
/// use cudars_nvtx::Domain;
///
/// static DOMAIN: LazyLock<Domain> = LazyLock::new(|| Domain::new("my-solver"));
/// let _r = DOMAIN.range("assemble");
/// ```
#[derive(Debug)]
pub struct Domain {
    /// The tool's `nvtxDomainHandle_t` (null without a tool).
    handle: *mut c_void,
    name: String,
}

// SAFETY: NVTX's API may be called from any thread: a domain handle is an opaque
// token the tool hands out, never dereferenced here, and every call that takes it
// is thread-safe by NVTX's contract (`nvToolsExt.h`, "thread safety"). The
// handle is destroyed once, by the one `Domain` that owns it.
// Soundness contract: rule 11.
unsafe impl Send for Domain {}
// SAFETY: as for `Send`: every `&self` method is a thread-safe NVTX call.
// Soundness contract: rule 11.
unsafe impl Sync for Domain {}

type DomainCreateA = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type DomainDestroy = unsafe extern "C" fn(*mut c_void);
type DomainMarkEx = unsafe extern "C" fn(*mut c_void, *const RawAttributes);
type DomainRangeStartEx = unsafe extern "C" fn(*mut c_void, *const RawAttributes) -> u64;
type DomainRangeEnd = unsafe extern "C" fn(*mut c_void, u64);
type DomainRangePushEx = unsafe extern "C" fn(*mut c_void, *const RawAttributes) -> c_int;
type DomainRangePop = unsafe extern "C" fn(*mut c_void) -> c_int;
type DomainNameCategoryA = unsafe extern "C" fn(*mut c_void, u32, *const c_char);
type DomainRegisterStringA = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The function in a core2 slot, if the tool implements it.
macro_rules! core2_fn {
    ($id:ident as $t:ty) => {{
        let f = tool::load(&CORE2_SLOTS[core2::$id]);
        if f.is_null() {
            None
        } else {
            // SAFETY: a non-null slot holds the tool's function for this callback
            // id, whose C signature `$t` is (NVIDIA's `nvtxTypes.h`).
            Some(unsafe { std::mem::transmute::<*mut c_void, $t>(f) })
        }
    }};
}

static CUDA_RS: LazyLock<Domain> = LazyLock::new(|| Domain::new("cuda-rs"));

impl Domain {
    /// Creates the domain `name` (the tool is loaded first if nothing was yet).
    pub fn new(name: &str) -> Self {
        let handle = match core2_fn!(DOMAIN_CREATE_A as DomainCreateA) {
            // SAFETY: the tool's `nvtxDomainCreateA`, given NUL-terminated text alive
            // for the call.
            Some(f) => with_c_str(name, |p| unsafe { f(p) }),
            None => std::ptr::null_mut(),
        };
        Domain {
            handle,
            name: name.to_owned(),
        }
    }

    /// The `cuda-rs` domain: where the crates of cuda-rs and the
    /// `NvtxLayer` (feature `tracing`) put their events.
    pub fn cuda_rs() -> &'static Domain {
        &CUDA_RS
    }

    /// The domain's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's handle for the domain (`nvtxDomainHandle_t`); null when no tool
    /// is attached or the tool has no domains.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle
    }

    /// A point in time, on the calling thread's row.
    pub fn mark<'a>(&self, attributes: impl Into<Attributes<'a>>) {
        if let Some(f) = core2_fn!(DOMAIN_MARK_EX as DomainMarkEx) {
            let a = attributes.into();
            // SAFETY: the tool's `nvtxDomainMarkEx` with this domain's handle and
            // attributes alive for the call.
            a.with_raw(self.handle, |r| unsafe { f(self.handle, r) });
        }
    }

    /// Pushes a range onto the calling thread's stack of this domain; returns the
    /// depth of the new range, or `None` when no tool keeps a stack.
    pub fn push<'a>(&self, attributes: impl Into<Attributes<'a>>) -> Option<u32> {
        let f = core2_fn!(DOMAIN_RANGE_PUSH_EX as DomainRangePushEx)?;
        let a = attributes.into();
        // SAFETY: the tool's `nvtxDomainRangePushEx`, as for `mark`.
        let depth = a.with_raw(self.handle, |r| unsafe { f(self.handle, r) });
        u32::try_from(depth).ok()
    }

    /// Pops the calling thread's innermost range of this domain; returns the depth
    /// it had, or `None` when no tool keeps a stack (or the stack was empty).
    pub fn pop(&self) -> Option<u32> {
        let f = core2_fn!(DOMAIN_RANGE_POP as DomainRangePop)?;
        // SAFETY: the tool's `nvtxDomainRangePop` with this domain's handle.
        u32::try_from(unsafe { f(self.handle) }).ok()
    }

    /// Starts a range of this domain (`nvtxDomainRangeStartEx`); the tool's id
    /// for it, 0 without a tool.
    pub(crate) fn start_raw<'a>(&self, attributes: impl Into<Attributes<'a>>) -> u64 {
        match core2_fn!(DOMAIN_RANGE_START_EX as DomainRangeStartEx) {
            Some(f) => {
                let a = attributes.into();
                // SAFETY: the tool's `nvtxDomainRangeStartEx`, as for `mark`.
                a.with_raw(self.handle, |r| unsafe { f(self.handle, r) })
            }
            None => 0,
        }
    }

    pub(crate) fn pop_raw(&self) {
        let _ = self.pop();
    }

    pub(crate) fn end_raw(&self, id: u64) {
        if let Some(f) = core2_fn!(DOMAIN_RANGE_END as DomainRangeEnd) {
            // SAFETY: the tool's `nvtxDomainRangeEnd` with an id its start returned.
            unsafe { f(self.handle, id) }
        }
    }

    /// Names category `id` of this domain (0 is "no category").
    pub fn name_category(&self, id: u32, name: &str) {
        if let Some(f) = core2_fn!(DOMAIN_NAME_CATEGORY_A as DomainNameCategoryA) {
            // SAFETY: the tool's `nvtxDomainNameCategoryA` with NUL-terminated text
            // alive for the call.
            with_c_str(name, |p| unsafe { f(self.handle, id, p) });
        }
    }

    /// Registers `text` with the tool once, so that events on hot paths pass a
    /// handle instead of text the tool copies each time.
    pub fn register_string(&self, text: &str) -> RegisteredString<'_> {
        let text = match CString::new(text) {
            Ok(t) => t,
            Err(e) => {
                let n = e.nul_position();
                let mut v = e.into_vec();
                v.truncate(n);
                CString::new(v).unwrap_or_default()
            }
        };
        let handle = match core2_fn!(DOMAIN_REGISTER_STRING_A as DomainRegisterStringA) {
            // SAFETY: the tool's `nvtxDomainRegisterStringA` with NUL-terminated text.
            Some(f) => unsafe { f(self.handle, text.as_ptr()) },
            None => std::ptr::null_mut(),
        };
        RegisteredString::new(handle, self.handle, text)
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        if self.handle.is_null() {
            return;
        }
        if let Some(f) = core2_fn!(DOMAIN_DESTROY as DomainDestroy) {
            // SAFETY: the tool's `nvtxDomainDestroy`, once, for the handle it made;
            // every guard and registered string borrowing the domain is gone.
            unsafe { f(self.handle) }
        }
    }
}
