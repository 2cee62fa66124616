//! cuFile (`cufile.h`), GPUDirect Storage: reads and writes between files and
//! device memory, with the driver, handle, buffer, batch, stream and statistics
//! APIs; every type, constant and function, looked up in `libcufile` at run time.
//! Linux only.
//!
//! cuFile keeps one ABI (`libcufile.so.0`) across CUDA 12 and 13. Most calls
//! return a two-part status, [`CUfileError_t`]: a cuFile code and, when that code
//! is `CU_FILE_CUDA_DRIVER_ERROR`, the CUDA driver's. [`IntoResult`](crate::IntoResult)
//! turns it into a [`CufileError`]. The reads and writes return the bytes moved, or
//! -1 (see `errno`) or a negated cuFile code ([`CufileError::from_io_result`]).
//!
//! An entry point that cannot be called returns `CU_FILE_PLATFORM_NOT_SUPPORTED`
//! (library missing) or `CU_FILE_INTERNAL_ERROR` (symbol missing), and
//! [`CufileError::unavailable`] says why; the reads and writes return -1.
//!
//! ```no_run
//! use cudars_bindings::cufile::*;
//! use cudars_bindings::IntoResult as _;
//!
//! println!("cuFile {}", version()?);
//! unsafe { cuFileDriverOpen() }.result()?;
//! unsafe { cuFileDriverClose() }.result()?;
//! # Ok::<(), CufileError>(())
//! ```

#[path = "generated/cufile/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/cufile_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use std::borrow::Cow;

use crate::error::api_dispatch;
use crate::loader::{ApiKind, Resolver};

api_dispatch! {
    kind: ApiKind::Cufile,
    resolver: Resolver::Dlsym,
    module: "cufile",
    code: CUfileError_t,
    unavailable_code: unavailable_status,
}

/// The status an entry point that cannot be called returns.
fn unavailable_status(loaded: bool) -> CUfileError_t {
    CUfileError {
        err: if loaded {
            CU_FILE_INTERNAL_ERROR
        } else {
            CU_FILE_PLATFORM_NOT_SUPPORTED
        },
        cu_err: CUDA_SUCCESS,
    }
}

/// A cuFile error: a [`CUfileError_t`] whose code is not `CU_FILE_SUCCESS`, or a
/// read's or write's negative result.
///
/// Carries the cuFile code, its C name and a description, the CUDA driver's code
/// when cuFile reports a driver error, the OS error of a read or write that
/// returned -1, and, when the status came from an entry point that could not be
/// called, [`unavailable`](Self::unavailable): why (library not found, with
/// every place searched; symbol missing). That reason, or the OS error, is the
/// error's [`source`](std::error::Error::source), not part of its message.
#[derive(Debug)]
pub struct CufileError {
    code: CUfileOpError,
    cuda: Option<CUresult>,
    name: Cow<'static, str>,
    unavailable: Option<Box<crate::Unavailable>>,
    os: Option<std::io::Error>,
}

impl CufileError {
    /// Describes `status` (and picks up why an entry point called on this thread
    /// was unavailable, if that is where the status came from).
    pub fn new(status: CUfileError_t) -> Self {
        let unavailable =
            if status == unavailable_status(true) || status == unavailable_status(false) {
                crate::loader::take_unavailable(ApiKind::Cufile).map(Box::new)
            } else {
                None
            };
        Self {
            code: status.err,
            cuda: (status.err == CU_FILE_CUDA_DRIVER_ERROR).then_some(status.cu_err),
            name: name_of(status.err),
            unavailable,
            os: None,
        }
    }

    /// The error of a read or write (`cuFileRead`, `cuFileWrite`) that returned
    /// `ret`, or `Ok(bytes)` when `ret` is not negative. -1 takes the OS error
    /// (`errno`) as its source; -1 from an entry point that could not be called,
    /// the reason instead; other negative values are negated cuFile codes.
    ///
    /// Call it right after the read or write, on the same thread: it reads
    /// `errno` and the note an unavailable entry point leaves.
    pub fn from_io_result(ret: isize) -> Result<usize, Self> {
        if let Ok(n) = usize::try_from(ret) {
            return Ok(n);
        }
        if ret == -1 {
            let os = std::io::Error::last_os_error();
            // Only an I/O entry point that could not be called returns -1 without
            // calling cuFile: otherwise errno says why, and a note left by another
            // call is not this one's.
            let io_missing = !is_available("cuFileRead") || !is_available("cuFileWrite");
            let unavailable = io_missing
                .then(|| crate::loader::take_unavailable(ApiKind::Cufile).map(Box::new))
                .flatten();
            let code = if unavailable.is_some() {
                CU_FILE_INTERNAL_ERROR
            } else {
                CU_FILE_IO_ERROR
            };
            return Err(Self {
                code,
                cuda: None,
                name: name_of(code),
                os: unavailable.is_none().then_some(os),
                unavailable,
            });
        }
        let code = CUfileOpError(u32::try_from(ret.unsigned_abs()).unwrap_or(u32::MAX));
        Err(Self {
            code,
            cuda: None,
            name: name_of(code),
            unavailable: None,
            os: None,
        })
    }

    /// The cuFile code.
    pub fn code(&self) -> CUfileOpError {
        self.code
    }

    /// The code's C name (`CU_FILE_DRIVER_NOT_INITIALIZED`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CUDA driver's code, when cuFile reports `CU_FILE_CUDA_DRIVER_ERROR`.
    pub fn cuda_code(&self) -> Option<CUresult> {
        self.cuda
    }

    /// A short description of the code, when there is one.
    pub fn description(&self) -> Option<&'static str> {
        describe(self.code)
    }

    /// Why the entry point that returned this status could not be called, when
    /// that is what happened.
    pub fn unavailable(&self) -> Option<&crate::Unavailable> {
        self.unavailable.as_deref()
    }

    /// The OS error of a read or write that returned -1.
    pub fn os_error(&self) -> Option<&std::io::Error> {
        self.os.as_ref()
    }
}

fn name_of(code: CUfileOpError) -> Cow<'static, str> {
    match code.name() {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(format!("unknown cuFile status {}", code.0)),
    }
}

/// Short descriptions of the codes a user meets most, in this crate's words.
fn describe(code: CUfileOpError) -> Option<&'static str> {
    Some(match code {
        CU_FILE_DRIVER_NOT_INITIALIZED => "the cuFile driver is not open",
        CU_FILE_DRIVER_INVALID_PROPS => "invalid driver properties",
        CU_FILE_DRIVER_VERSION_MISMATCH => "the nvidia-fs driver's version does not match",
        CU_FILE_PLATFORM_NOT_SUPPORTED => "the platform is not supported",
        CU_FILE_IO_NOT_SUPPORTED => "the file system does not support this I/O",
        CU_FILE_DEVICE_NOT_SUPPORTED => "the GPU does not support GPUDirect Storage",
        CU_FILE_NVFS_DRIVER_ERROR => "the nvidia-fs driver failed",
        CU_FILE_CUDA_DRIVER_ERROR => "the CUDA driver failed",
        CU_FILE_CUDA_POINTER_INVALID => "the pointer is not device memory cuFile can use",
        CU_FILE_CUDA_MEMORY_TYPE_INVALID => "the memory type is not supported",
        CU_FILE_CUDA_POINTER_RANGE_ERROR => "the range lies outside the allocation",
        CU_FILE_CUDA_CONTEXT_MISMATCH => "the memory belongs to another CUDA context",
        CU_FILE_INVALID_FILE_TYPE => "the file type is not supported",
        CU_FILE_INVALID_FILE_OPEN_FLAG => "the file was opened with unsupported flags",
        CU_FILE_DIO_NOT_SET => "the file was not opened with O_DIRECT",
        CU_FILE_INVALID_VALUE => "an argument is invalid",
        CU_FILE_MEMORY_ALREADY_REGISTERED => "the buffer is already registered",
        CU_FILE_MEMORY_NOT_REGISTERED => "the buffer is not registered",
        CU_FILE_PERMISSION_DENIED => "permission denied",
        CU_FILE_HANDLE_NOT_REGISTERED => "the file handle is not registered",
        CU_FILE_HANDLE_ALREADY_REGISTERED => "the file is already registered",
        CU_FILE_DEVICE_NOT_FOUND => "no GPU was found",
        CU_FILE_INTERNAL_ERROR => "internal cuFile error",
        CU_FILE_IO_DISABLED => "GPUDirect Storage I/O is disabled (and compatibility mode is off)",
        CU_FILE_ASYNC_NOT_SUPPORTED => "stream-ordered I/O is not supported",
        CU_FILE_NOMEM_ERROR => "out of memory",
        CU_FILE_IO_ERROR => "the I/O failed",
        _ => return None,
    })
}

impl std::fmt::Display for CufileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.code.0)?;
        if self.unavailable.is_some() {
            return f.write_str(": the entry point could not be called");
        }
        if let Some(d) = self.description() {
            write!(f, ": {d}")?;
        }
        if let Some(c) = self.cuda {
            match c.name() {
                Some(n) => write!(f, " ({n})")?,
                None => write!(f, " (CUDA driver status {})", c.0)?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for CufileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        if let Some(u) = &self.unavailable {
            return Some(&**u);
        }
        self.os
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl crate::StatusError for CufileError {
    fn unavailable(&self) -> Option<&crate::Unavailable> {
        self.unavailable.as_deref()
    }
}

impl crate::IntoResult for CUfileError_t {
    type Error = CufileError;

    #[inline]
    fn result(self) -> Result<(), CufileError> {
        if self.err == CU_FILE_SUCCESS {
            Ok(())
        } else {
            Err(CufileError::new(self))
        }
    }
}

impl From<CUfileError_t> for CufileError {
    fn from(status: CUfileError_t) -> Self {
        Self::new(status)
    }
}

/// The version of the loaded cuFile (`cuFileGetVersion`), e.g. 1.15 (cuFile's
/// own numbering: `1000 * major + 10 * minor`). It needs neither a GPU nor the
/// driver to be open.
///
/// # Errors
/// cuFile's error, or `CU_FILE_PLATFORM_NOT_SUPPORTED` whose
/// [`unavailable`](CufileError::unavailable) reason (its source) carries the
/// pathfinder's error when `libcufile` cannot be found.
pub fn version() -> Result<crate::Version, CufileError> {
    use crate::IntoResult as _;
    let mut v = 0;
    // SAFETY: `v` is valid for writes.
    unsafe { cuFileGetVersion(&mut v) }.result()?;
    Ok(crate::Version::from_cuda(v))
}
