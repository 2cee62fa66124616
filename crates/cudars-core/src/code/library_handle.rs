//! [`Library`], the type: a loaded library's handle, its unload, and what it
//! knows of itself. Below [`ObjectCode`](crate::ObjectCode) (which keeps the
//! library it is loaded as), the modules and the kernels (which keep theirs
//! loaded); loading one and looking things up in it is `library`.

use std::fmt;
use std::sync::Arc;

use cudars_bindings::driver as sys;

/// Loaded device code, usable from every context of the process
/// (`cuLibraryLoadData`): kernels, `__device__` globals, managed variables.
///
/// Unloaded when the last clone goes; kernels taken from it keep it alive.
/// `Send + Sync`: library handles may be used from any thread.
#[derive(Clone)]
pub struct Library {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) handle: sys::CUlibrary,
    /// The bytes, kept while the driver may point at them.
    pub(crate) _code: Option<Vec<u8>>,
    pub(crate) info_log: String,
    pub(crate) symbol_mapping: std::collections::BTreeMap<String, String>,
}

// SAFETY: a CUlibrary is context-independent and may be used from any thread.
// Soundness contract: rule 11.
unsafe impl Send for Inner {}
// SAFETY: as above; the driver serialises.
// Soundness contract: rule 11.
unsafe impl Sync for Inner {}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library")
            .field("handle", &self.inner.handle)
            .finish()
    }
}

impl Library {
    /// The driver's handle.
    pub fn handle(&self) -> sys::CUlibrary {
        self.inner.handle
    }

    /// The JIT's info log from loading (empty for cubin).
    pub fn info_log(&self) -> &str {
        &self.inner.info_log
    }
}

// Deferred-release rule: on a driver callback thread the unload (a CUDA call) is
// handed to the deferred queue instead of made there.
impl Drop for Inner {
    fn drop(&mut self) {
        let unload = |h: sys::CUlibrary| {
            // SAFETY: an owned library, unloaded once, after every kernel and
            // global from it (they hold clones).
            let rc = unsafe { sys::cuLibraryUnload(h) };
            crate::cleanup::driver(rc, "unloading a library (cuLibraryUnload)");
        };
        if crate::deferred::must_defer() {
            // SAFETY: the owned library handle; its one unload moves to the queue.
            unsafe { crate::deferred::defer_handle("unloading a library", self.handle, unload) };
            return;
        }
        unload(self.handle);
    }
}
