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
    /// Heap buffers the driver writes into; `Vec` (not `Box`), so moving the
    /// struct keeps the raw pointers in `values` valid.
    info: Vec<u8>,
    error: Vec<u8>,
}

impl JitOptions {
    pub(crate) fn raw(&self) -> RawJit {
        let mut keys = vec![
            sys::CU_JIT_INFO_LOG_BUFFER,
            sys::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CU_JIT_ERROR_LOG_BUFFER,
            sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // Integer option values travel in the pointer slots, as the driver expects.
        // The buffer slots are filled in once the buffers sit in their final place.
        let mut values: Vec<*mut c_void> = vec![
            std::ptr::null_mut(),
            LOG_BYTES as *mut c_void,
            std::ptr::null_mut(),
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
            push(
                sys::CU_JIT_TARGET,
                major.saturating_mul(10).saturating_add(minor),
            );
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
        let mut raw = RawJit {
            keys,
            values,
            info: vec![0u8; LOG_BYTES],
            error: vec![0u8; LOG_BYTES],
        };
        raw.values[0] = raw.info.as_mut_ptr().cast();
        raw.values[2] = raw.error.as_mut_ptr().cast();
        raw
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

/// Checks that a cubin's or fat binary's own size fields stay inside its bytes:
/// the driver's loaders take no length and trust the image's headers.
pub(crate) fn check_image(code: &crate::ObjectCode) -> crate::Result<()> {
    let b = code.code();
    let what = || format!("loading {} `{}`", code.code_type(), code.name());
    let bad = |why: &str| crate::Error::invalid(what(), format!("not a valid image: {why}"));
    let u16_at = |o: usize| {
        b.get(o..o + 2)
            .map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])))
    };
    let u32_at = |o: usize| {
        b.get(o..o + 4)
            .map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])))
    };
    let u64_at = |o: usize| {
        b.get(o..o + 8).map(|s| {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        })
    };
    let len = b.len() as u64;
    let fits = |off: u64, size: u64| off.checked_add(size).is_some_and(|end| end <= len);
    match code.code_type() {
        crate::CodeType::Cubin => {
            if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
                return Err(bad("a cubin is a 64-bit little-endian ELF file"));
            }
            let field = |v: Option<u64>| v.ok_or_else(|| bad("truncated ELF header"));
            let phoff = field(u64_at(32))?;
            let shoff = field(u64_at(40))?;
            let phentsize = field(u16_at(54))?;
            let phnum = field(u16_at(56))?;
            let shentsize = field(u16_at(58))?;
            let shnum = field(u16_at(60))?;
            if !fits(phoff, phentsize * phnum) || !fits(shoff, shentsize * shnum) {
                return Err(bad("the ELF header tables run past the end"));
            }
            if shnum > 0 && shentsize < 64 {
                return Err(bad("ELF section headers are too small"));
            }
            for i in 0..shnum {
                let h = shoff + i * shentsize;
                let (Some(kind), Some(off), Some(size)) = (
                    u32_at(h as usize + 4),
                    u64_at(h as usize + 24),
                    u64_at(h as usize + 32),
                ) else {
                    return Err(bad("truncated ELF section header"));
                };
                // SHT_NOBITS (8) sections take no space in the file.
                if kind != 8 && !fits(off, size) {
                    return Err(bad("an ELF section runs past the end"));
                }
            }
            Ok(())
        }
        crate::CodeType::Fatbin => {
            if u32_at(0) != Some(0xBA55_ED50) {
                return Err(bad("a fat binary starts with the magic 0xBA55ED50"));
            }
            let (Some(header), Some(size)) = (u16_at(6), u64_at(8)) else {
                return Err(bad("truncated fat binary header"));
            };
            if !fits(header, size) {
                return Err(bad("the fat binary's size runs past the end"));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
