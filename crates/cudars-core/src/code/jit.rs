//! JIT options shared by [`Library`](crate::Library) and [`Module`](crate::Module).

use std::ffi::{c_uint, c_void};

use cudars_bindings::driver as sys;

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
pub(crate) fn loadable(code: &crate::code::object::ObjectCode) -> std::borrow::Cow<'_, [u8]> {
    let bytes = code.code();
    if code.code_type() == crate::code::object::CodeType::Ptx && bytes.last() != Some(&0) {
        let mut v = bytes.to_vec();
        v.push(0);
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(bytes)
    }
}

/// The size of an ELF64 section header (`Elf64_Shdr`).
const ELF64_SHDR_LEN: u64 = 64;
/// The size of an ELF64 program header (`Elf64_Phdr`).
const ELF64_PHDR_LEN: u64 = 56;
/// The size of a fat binary's header: magic (u32), version (u16), header size
/// (u16), size of the entries (u64).
const FATBIN_HEADER_LEN: u64 = 16;
/// The fields of a fat binary entry's header that locate the next one: kind
/// (u16), version (u16), header size (u32), payload size (u64).
const FATBIN_ENTRY_HEADER_MIN: u64 = 16;

/// Checks that a cubin's or fat binary's own size fields stay inside its bytes:
/// the driver's loaders take no length and trust the image's headers.
pub(crate) fn check_image(code: &crate::code::object::ObjectCode) -> crate::error::Result<()> {
    let b = code.code();
    let what = || format!("loading {} `{}`", code.code_type(), code.name());
    let bad = |why: &str| crate::error::Error::invalid(what(), format!("not a valid image: {why}"));
    // Reads that run past the end (or past `usize::MAX`) are `None`.
    let at = |o: usize, n: usize| b.get(o..o.checked_add(n)?);
    let u16_at = |o: usize| at(o, 2).map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])));
    let u32_at =
        |o: usize| at(o, 4).map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])));
    let u64_at = |o: usize| {
        at(o, 8).map(|s| {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        })
    };
    let len = b.len() as u64;
    let fits = |off: u64, size: u64| off.checked_add(size).is_some_and(|end| end <= len);
    match code.code_type() {
        crate::code::object::CodeType::Cubin => {
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
            if shnum > 0 && shentsize < ELF64_SHDR_LEN {
                return Err(bad("ELF section headers are too small"));
            }
            if phnum > 0 && phentsize < ELF64_PHDR_LEN {
                return Err(bad("ELF program headers are too small"));
            }
            for i in 0..phnum {
                let h = phoff + i * phentsize;
                let (Some(off), Some(size)) = (u64_at(h as usize + 8), u64_at(h as usize + 32))
                else {
                    return Err(bad("truncated ELF program header"));
                };
                // A segment with no bytes in the file (memory only) may point anywhere.
                if size > 0 && !fits(off, size) {
                    return Err(bad("an ELF segment runs past the end"));
                }
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
        crate::code::object::CodeType::Fatbin => {
            if u32_at(0) != Some(0xBA55_ED50) {
                return Err(bad("a fat binary starts with the magic 0xBA55ED50"));
            }
            let (Some(header), Some(size)) = (u16_at(6), u64_at(8)) else {
                return Err(bad("truncated fat binary header"));
            };
            if header < FATBIN_HEADER_LEN {
                return Err(bad("the fat binary's header is too small"));
            }
            if !fits(header, size) {
                return Err(bad("the fat binary's size runs past the end"));
            }
            // The entries (one per cubin, PTX or LTO-IR) follow the header back to
            // back, each a header of its own size, then its payload; the driver
            // walks them by these sizes.
            let end = header + size;
            let mut at = header;
            while at < end {
                let (Some(entry_header), Some(payload)) =
                    (u32_at(at as usize + 4), u64_at(at as usize + 8))
                else {
                    return Err(bad("truncated fat binary entry header"));
                };
                if entry_header < FATBIN_ENTRY_HEADER_MIN || end - at < FATBIN_ENTRY_HEADER_MIN {
                    return Err(bad("a fat binary entry header is too small"));
                }
                match at
                    .checked_add(entry_header)
                    .and_then(|a| a.checked_add(payload))
                {
                    Some(next) if next <= end => at = next,
                    _ => return Err(bad("a fat binary entry runs past the end")),
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    //! Hostile images: `check_image` must answer every byte string with `Ok` or a
    //! typed refusal, and refuse every image whose size fields point past its bytes.

    use super::check_image;
    use crate::{code::object::CodeType, code::object::ObjectCode, error::Error};
    use proptest::prelude::*;

    fn check(bytes: &[u8], kind: CodeType) -> crate::error::Result<()> {
        let code = ObjectCode::new(bytes.to_vec(), kind, "hostile")?;
        check_image(&code)
    }

    fn refused(bytes: &[u8], kind: CodeType) -> String {
        match check(bytes, kind) {
            Err(Error::InvalidArgument { message, .. }) => message.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// A minimal valid cubin-shaped ELF: the header, one program header, two
    /// section headers (a null one and one of 16 bytes of data), the data.
    fn elf() -> Vec<u8> {
        let mut b = vec![0u8; 64 + 56 + 2 * 64 + 16];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2; // 64-bit
        b[5] = 1; // little-endian
        b[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        b[40..48].copy_from_slice(&120u64.to_le_bytes()); // e_shoff
        b[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        b[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        b[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        b[60..62].copy_from_slice(&2u16.to_le_bytes()); // e_shnum
        // The segment: the data, at 248, 16 bytes.
        b[64 + 8..64 + 16].copy_from_slice(&248u64.to_le_bytes());
        b[64 + 32..64 + 40].copy_from_slice(&16u64.to_le_bytes());
        // Section 1: PROGBITS at 248, 16 bytes.
        let s1 = 120 + 64;
        b[s1 + 4..s1 + 8].copy_from_slice(&1u32.to_le_bytes());
        b[s1 + 24..s1 + 32].copy_from_slice(&248u64.to_le_bytes());
        b[s1 + 32..s1 + 40].copy_from_slice(&16u64.to_le_bytes());
        b
    }

    /// A fat binary of two entries (headers of 64 bytes, payloads of 32 and 8).
    fn fatbin() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&(64u64 + 32 + 64 + 8).to_le_bytes());
        for payload in [32u64, 8] {
            let mut entry = vec![0u8; 64];
            entry[..2].copy_from_slice(&2u16.to_le_bytes());
            entry[4..8].copy_from_slice(&64u32.to_le_bytes());
            entry[8..16].copy_from_slice(&payload.to_le_bytes());
            b.extend_from_slice(&entry);
            b.extend(std::iter::repeat_n(0xAB, payload as usize));
        }
        b
    }

    #[test]
    fn the_valid_shapes_pass() {
        check(&elf(), CodeType::Cubin).unwrap();
        check(&fatbin(), CodeType::Fatbin).unwrap();
    }

    #[test]
    fn every_truncation_is_refused() {
        for (image, kind) in [(elf(), CodeType::Cubin), (fatbin(), CodeType::Fatbin)] {
            for n in 1..image.len() {
                refused(&image[..n], kind);
            }
        }
    }

    #[test]
    fn lying_fat_binary_entries_are_refused() {
        // An entry whose payload runs past the fat binary's own size.
        let mut b = fatbin();
        b[16 + 8..16 + 16].copy_from_slice(&33u64.to_le_bytes());
        assert!(refused(&b, CodeType::Fatbin).contains("entry runs past the end"));
        // A payload size that overflows when added to the offset.
        b[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(refused(&b, CodeType::Fatbin).contains("entry runs past the end"));
        // A header size of zero would never advance.
        let mut b = fatbin();
        b[16 + 4..16 + 8].copy_from_slice(&0u32.to_le_bytes());
        b[16 + 8..16 + 16].copy_from_slice(&0u64.to_le_bytes());
        assert!(refused(&b, CodeType::Fatbin).contains("too small"));
        // A fat binary header shorter than its own fields.
        let mut b = fatbin();
        b[6..8].copy_from_slice(&4u16.to_le_bytes());
        assert!(refused(&b, CodeType::Fatbin).contains("too small"));
    }

    #[test]
    fn lying_elf_tables_are_refused() {
        let mut b = elf();
        b[54..56].copy_from_slice(&8u16.to_le_bytes());
        assert!(refused(&b, CodeType::Cubin).contains("program headers are too small"));
        let mut b = elf();
        b[64 + 32..64 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(refused(&b, CodeType::Cubin).contains("segment runs past the end"));
        let mut b = elf();
        b[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(refused(&b, CodeType::Cubin).contains("past the end"));
        let mut b = elf();
        b[60..62].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(refused(&b, CodeType::Cubin).contains("past the end"));
    }

    /// Sets a little-endian field of `width` bytes at `offset` (clipped to the image).
    fn poke(image: &mut [u8], offset: usize, width: usize, value: u64) {
        for (i, byte) in value.to_le_bytes().iter().take(width).enumerate() {
            if let Some(slot) = image.get_mut(offset + i) {
                *slot = *byte;
            }
        }
    }

    fn kinds() -> impl Strategy<Value = CodeType> {
        prop_oneof![
            Just(CodeType::Cubin),
            Just(CodeType::Fatbin),
            Just(CodeType::Ptx)
        ]
    }

    /// Values that make size arithmetic overflow or point just past the end.
    fn nasty() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            Just(u64::MAX),
            Just(u64::MAX / 2),
            Just(u64::from(u32::MAX)),
            Just(u64::from(u16::MAX)),
            0u64..512,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(256)))]

        #[test]
        #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 1..512), kind in kinds()) {
            let _ = check(&bytes, kind);
        }

        #[test]
        #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
        fn arbitrary_bytes_behind_a_valid_magic_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..512),
            fat in any::<bool>(),
        ) {
            let (mut bytes, kind) = if fat {
                (0xBA55_ED50u32.to_le_bytes().to_vec(), CodeType::Fatbin)
            } else {
                (b"\x7fELF\x02\x01".to_vec(), CodeType::Cubin)
            };
            bytes.extend(tail);
            let _ = check(&bytes, kind);
        }

        #[test]
        #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
        fn mutated_valid_images_never_panic(
            fat in any::<bool>(),
            flips in proptest::collection::vec((any::<usize>(), 0u8..8), 0..8),
            fields in proptest::collection::vec((any::<usize>(), prop_oneof![Just(2usize), Just(4), Just(8)], nasty()), 0..4),
        ) {
            let (mut image, kind) = if fat { (fatbin(), CodeType::Fatbin) } else { (elf(), CodeType::Cubin) };
            let n = image.len();
            for (at, bit) in flips {
                image[at % n] ^= 1 << bit;
            }
            for (at, width, value) in fields {
                poke(&mut image, at % n, width, value);
            }
            if check(&image, kind).is_ok() {
                // Whatever passed keeps every size it declares inside its bytes.
                if fat {
                    let header = u64::from(u16::from_le_bytes([image[6], image[7]]));
                    let mut size = [0u8; 8];
                    size.copy_from_slice(&image[8..16]);
                    prop_assert!(header + u64::from_le_bytes(size) <= n as u64);
                } else {
                    let mut shoff = [0u8; 8];
                    shoff.copy_from_slice(&image[40..48]);
                    let shnum = u64::from(u16::from_le_bytes([image[60], image[61]]));
                    let shentsize = u64::from(u16::from_le_bytes([image[58], image[59]]));
                    prop_assert!(u64::from_le_bytes(shoff) + shnum * shentsize <= n as u64);
                }
            }
        }
    }
}
