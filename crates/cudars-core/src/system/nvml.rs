//! NVML itself: loading and initialising it once, checking its statuses, and
//! reading its strings.

use std::borrow::Cow;
use std::ffi::{CStr, CString, c_char, c_uint};
use std::sync::OnceLock;

use cudars_bindings::IntoResult as _;
use cudars_bindings::nvml::*;

use crate::error::{Error, Result};
use crate::system::info::PciInfo;

/// Checks an NVML status, attaching what was being done (built only on failure).
pub(crate) trait NvmlCheck {
    fn check<C: Into<Cow<'static, str>>>(self, context: impl FnOnce() -> C) -> Result<()>;
}

impl NvmlCheck for nvmlReturn_t {
    #[inline]
    fn check<C: Into<Cow<'static, str>>>(self, context: impl FnOnce() -> C) -> Result<()> {
        // `result()` builds the error at once, so that it picks up this thread's note
        // of why an entry point was unavailable.
        self.result()
            .map_err(|source| Error::nvml(context(), source))
    }
}

/// The result of `nvmlInit`, once it has been called.
static INIT: OnceLock<Result<(), NvmlError>> = OnceLock::new();

/// Whether NVML has been initialised in this process, successfully
/// (`cuda.core.system`'s `_nvml_context.is_initialized()`). Nothing initialises it
/// before the first call of this module that needs it, or [`initialize`].
pub fn is_initialized() -> bool {
    INIT.get().is_some_and(std::result::Result::is_ok)
}

/// Initialises NVML (`nvmlInit`) if this process has not: what every function of
/// this module does first (`_nvml_context.initialize()`). The result, a failure
/// included, is remembered for the life of the process.
///
/// # Errors
/// NVML's error; [`Error::is_unavailable`] without NVML.
pub fn initialize() -> Result<()> {
    init()
}

/// Checks that NVML is initialised, works, and sees at least one GPU
/// (`_nvml_context.validate()`).
///
/// # Errors
/// `NVML_ERROR_UNINITIALIZED` ([`NvmlErrorKind::Uninitialized`](crate::NvmlErrorKind))
/// before [`initialize`] (or another call of this module); the initialisation's
/// failure ([`Error::is_unavailable`] without NVML); `NVML_ERROR_NOT_FOUND` when
/// there is no GPU.
pub fn validate() -> Result<()> {
    match INIT.get() {
        None => Err(Error::nvml(
            "validating NVML: it was not initialised",
            NvmlError::new(NVML_ERROR_UNINITIALIZED),
        )),
        Some(Err(_)) => init(),
        Some(Ok(())) => {
            if device_count()? == 0 {
                return Err(Error::nvml(
                    "validating NVML: it sees no GPU",
                    NvmlError::new(NVML_ERROR_NOT_FOUND),
                ));
            }
            Ok(())
        }
    }
}

/// How many devices NVML sees (`nvmlDeviceGetCount`), NVML initialised first:
/// `system::device_count` and [`validate`] both ask this.
pub(crate) fn device_count() -> Result<u32> {
    init()?;
    let mut n = 0;
    // SAFETY: `n` is valid for writes; NVML is initialised.
    unsafe { nvmlDeviceGetCount(&mut n) }.check(|| "counting NVML devices (nvmlDeviceGetCount)")?;
    Ok(n)
}

/// `nvmlInit`, once per process and never undone (see the module docs); its result
/// is remembered.
pub(crate) fn init() -> Result<()> {
    INIT.get_or_init(|| {
        // SAFETY: `nvmlInit` takes no arguments and may be called from any thread.
        unsafe { nvmlInit() }.result()
    })
    .clone()
    .map_err(|source| Error::nvml("initialising NVML (nvmlInit)", source))
}

/// The version number of a versioned NVML struct (`NVML_STRUCT_VERSION` in
/// `nvml.h`): its size, with the version in the top byte.
pub(crate) const fn struct_version<T>(version: u32) -> c_uint {
    (std::mem::size_of::<T>() as c_uint) | (version << 24)
}

/// The string in a buffer NVML filled, up to its first NUL (or the whole buffer).
pub(crate) fn from_c_buf(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// Calls an NVML function that writes a NUL-terminated string into a buffer of
/// `len` bytes, and reads the string back.
pub(crate) fn read_string<C: Into<Cow<'static, str>>>(
    len: u32,
    context: impl FnOnce() -> C,
    call: impl FnOnce(*mut c_char, c_uint) -> nvmlReturn_t,
) -> Result<String> {
    let mut buf = vec![0 as c_char; len as usize];
    call(buf.as_mut_ptr(), len).check(context)?;
    Ok(from_c_buf(&buf))
}

pub(crate) fn pci_from(p: &nvmlPciInfo_t) -> PciInfo {
    PciInfo {
        bus_id: from_c_buf(&p.busId),
        domain: p.domain,
        bus: p.bus,
        device: p.device,
        pci_device_id: p.pciDeviceId,
        pci_subsystem_id: p.pciSubSystemId,
        base_class: None,
        sub_class: None,
    }
}

/// A UUID without its `GPU-` or `MIG-` prefix (either case).
pub(crate) fn strip_uuid_prefix(uuid: &str) -> &str {
    for prefix in ["GPU-", "MIG-"] {
        // `get`: no panic where a multi-byte character straddles the prefix.
        if let (Some(head), Some(rest)) = (uuid.get(..prefix.len()), uuid.get(prefix.len()..)) {
            if head.eq_ignore_ascii_case(prefix) {
                return rest;
            }
        }
    }
    uuid
}

/// A C string for NVML, or an argument error naming what it was for.
pub(crate) fn c_string(s: &str, what: &'static str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::invalid(
            format!("looking up an NVML device by {what} {s:?}"),
            "the string contains a NUL byte",
        )
    })
}

/// Reads a list NVML fills by the two-call protocol: asked with a count of 0 it
/// says how many there are (with `NVML_ERROR_INSUFFICIENT_SIZE`, or, for some
/// calls, success); asked again with room for them, it fills them in. The list
/// may grow between the calls, so a count larger than the room asks again.
pub(super) fn read_list<T: Copy, C: Into<std::borrow::Cow<'static, str>>>(
    zero: T,
    context: impl Fn() -> C,
    mut call: impl FnMut(*mut c_uint, *mut T) -> nvmlReturn_t,
) -> Result<Vec<T>> {
    let mut count: c_uint = 0;
    let mut out: Vec<T> = Vec::new();
    for _ in 0..4 {
        let rc = call(&mut count, out.as_mut_ptr());
        if rc == NVML_ERROR_INSUFFICIENT_SIZE {
            out = vec![zero; count as usize];
            continue;
        }
        rc.check(&context)?;
        if count as usize > out.len() {
            // Only counted (a call that answers a count of 0 with success).
            out = vec![zero; count as usize];
            continue;
        }
        out.truncate(count as usize);
        return Ok(out);
    }
    Err(Error::unsupported(
        context(),
        "the list kept growing while it was read",
    ))
}
