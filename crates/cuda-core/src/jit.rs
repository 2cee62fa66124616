//! JIT options shared by [`Library`](crate::Library) and [`Module`](crate::Module).

use std::ffi::{c_uint, c_void};

use cuda_bindings::driver as sys;

/// Options for the driver's JIT compilation of PTX when code is loaded
/// (`CUjit_option`). The info and error logs are always captured and returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitOptions {
    /// `CU_JIT_OPTIMIZATION_LEVEL`: 0–4 (default 4).
    pub optimization_level: Option<u32>,
    /// `CU_JIT_MAX_REGISTERS`: registers per thread at most.
    pub max_registers: Option<u32>,
    /// `CU_JIT_THREADS_PER_BLOCK`: the block size to optimise register use for.
    pub threads_per_block: Option<u32>,
    /// `CU_JIT_TARGET`: compile for this compute capability (`(9, 0)`) instead of
    /// the current context's.
    pub target: Option<(u32, u32)>,
    /// `CU_JIT_GENERATE_DEBUG_INFO`.
    pub generate_debug_info: bool,
    /// `CU_JIT_GENERATE_LINE_INFO`.
    pub generate_line_info: bool,
    /// `CU_JIT_LOG_VERBOSE`.
    pub log_verbose: bool,
}

/// Size of each captured log.
const LOG_BYTES: usize = 16 * 1024;

/// The raw option arrays and the log buffers they point into. Keep it alive (and
/// unmoved: the buffers are boxed) for the duration of the driver call.
pub(crate) struct RawJit {
    pub(crate) keys: Vec<sys::CUjit_option>,
    pub(crate) values: Vec<*mut c_void>,
    info: Box<[u8; LOG_BYTES]>,
    error: Box<[u8; LOG_BYTES]>,
}

impl JitOptions {
    pub(crate) fn raw(&self) -> RawJit {
        let mut info = Box::new([0u8; LOG_BYTES]);
        let mut error = Box::new([0u8; LOG_BYTES]);
        let mut keys = vec![
            sys::CU_JIT_INFO_LOG_BUFFER,
            sys::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CU_JIT_ERROR_LOG_BUFFER,
            sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // Integer option values travel in the pointer slots, as the driver expects.
        let mut values: Vec<*mut c_void> = vec![
            info.as_mut_ptr().cast(),
            LOG_BYTES as *mut c_void,
            error.as_mut_ptr().cast(),
            LOG_BYTES as *mut c_void,
        ];
        let mut push = |k: sys::CUjit_option, v: u32| {
            keys.push(k);
            values.push(v as usize as *mut c_void);
        };
        if let Some(v) = self.optimization_level {
            push(sys::CU_JIT_OPTIMIZATION_LEVEL, v);
        }
        if let Some(v) = self.max_registers {
            push(sys::CU_JIT_MAX_REGISTERS, v);
        }
        if let Some(v) = self.threads_per_block {
            push(sys::CU_JIT_THREADS_PER_BLOCK, v);
        }
        if let Some((major, minor)) = self.target {
            push(sys::CU_JIT_TARGET, major * 10 + minor);
        }
        if self.generate_debug_info {
            push(sys::CU_JIT_GENERATE_DEBUG_INFO, 1);
        }
        if self.generate_line_info {
            push(sys::CU_JIT_GENERATE_LINE_INFO, 1);
        }
        if self.log_verbose {
            push(sys::CU_JIT_LOG_VERBOSE, 1);
        }
        RawJit {
            keys,
            values,
            info,
            error,
        }
    }
}

impl RawJit {
    pub(crate) fn count(&self) -> c_uint {
        self.keys.len() as c_uint
    }

    fn text(buf: &[u8]) -> String {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
    }

    /// The driver's info log.
    pub(crate) fn info_log(&self) -> String {
        Self::text(&self.info[..])
    }

    /// The driver's error log.
    pub(crate) fn error_log(&self) -> String {
        Self::text(&self.error[..])
    }
}

/// The code to hand to a loader: PTX must be NUL-terminated.
pub(crate) fn loadable(code: &crate::ObjectCode) -> std::borrow::Cow<'_, [u8]> {
    let bytes = code.code();
    if code.code_type() == crate::CodeType::Ptx && bytes.last() != Some(&0) {
        let mut v = bytes.to_vec();
        v.push(0);
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(bytes)
    }
}
