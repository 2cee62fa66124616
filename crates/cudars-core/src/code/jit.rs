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
/// A fat binary's magic (`0xBA55ED50`, little-endian).
const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// The magic of a fat-binary wrapper (`__fatBinC_Wrapper_t`), whose second
/// word is a host pointer to the fat binary.
const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// The size of a fat binary's header: magic (u32), version (u16), header size
/// (u16), size of the entries (u64).
const FATBIN_HEADER_LEN: u64 = 16;
/// The size of a fat binary entry's header, at least: the fields that locate
/// the next entry (kind u16, version u16, header size u32, payload size u64)
/// and those the driver reads past them, up to the uncompressed size at 56
/// (the layout is in [`compressed`](super::compressed)). nvFatbin writes 72
/// and 88 bytes; a shorter header would have the driver read those fields from
/// the payload.
const FATBIN_ENTRY_HEADER_MIN: u64 = 64;
/// LTO-IR's magic (as NVRTC and nvJitLink write it).
const LTOIR_MAGIC: u32 = 0x7F4E_43ED;
/// The kind of a fat binary entry holding LTO-IR.
const FATBIN_KIND_LTOIR: u64 = 8;
/// How deep fat binaries nested in fat binaries' entries are walked.
const FATBIN_MAX_DEPTH: u32 = 4;

/// What an image is, by its first bytes: what the driver's loaders go by,
/// whatever kind the code is declared as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Magic {
    /// `\x7fELF`: a cubin (or any ELF file).
    Elf,
    /// `0xBA55ED50`: a fat binary.
    Fatbin,
    /// `0x466243B1`: a fat-binary wrapper, holding a host pointer.
    FatbinWrapper,
    /// LTO-IR (`0x7F4E43ED`) or LLVM bitcode (`BC\xC0\xDE`, or its wrapper
    /// `0x0B17C0DE`): NVVM IR.
    Bitcode,
    /// Anything else: text, read by the driver as PTX up to its NUL.
    Text,
}

fn magic(b: &[u8]) -> Magic {
    let word = b
        .get(..4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    match word {
        _ if b.starts_with(b"\x7fELF") => Magic::Elf,
        Some(FATBIN_MAGIC) => Magic::Fatbin,
        Some(FATBIN_WRAPPER_MAGIC) => Magic::FatbinWrapper,
        Some(LTOIR_MAGIC | 0x0B17_C0DE) => Magic::Bitcode,
        _ if b.starts_with(b"BC\xC0\xDE") => Magic::Bitcode,
        _ => Magic::Text,
    }
}

/// Checks an image by what it is (its magic bytes, not its declared kind,
/// which the driver's loaders ignore): a cubin's or fat binary's own size
/// fields stay inside its bytes (the loaders take no length and trust the
/// image's headers), down to the ELF images inside a fat binary's entries.
/// Code declared as a cubin or fat binary must be one; LTO-IR, NVVM IR and
/// fat-binary wrappers (which hold a host pointer) are refused; anything else
/// is text, read as PTX.
pub(crate) fn check_image(code: &crate::code::object::ObjectCode) -> crate::error::Result<()> {
    use crate::code::object::CodeType;
    let b = code.code();
    let bad = |why: &str| {
        crate::error::Error::invalid(
            format!("loading {} `{}`", code.code_type(), code.name()),
            format!("not a valid image: {why}"),
        )
    };
    match magic(b) {
        Magic::Text => match code.code_type() {
            CodeType::Cubin => Err(bad("a cubin is a 64-bit little-endian ELF file")),
            CodeType::Fatbin => Err(bad("a fat binary starts with the magic 0xBA55ED50")),
            _ => Ok(()),
        },
        _ => check_binary(b, 0, &mut inflate_budget()).map_err(bad),
    }
}

/// Checks an input of the driver's linker by what its bytes are: ELF images
/// (cubins, host objects) and fat binaries as [`check_image`] checks them, and
/// fat-binary wrappers refused; anything else (PTX, LTO-IR, archives) is read
/// by the driver within the length it is given.
pub(crate) fn check_link_input(code: &crate::code::object::ObjectCode) -> crate::error::Result<()> {
    match magic(code.code()) {
        Magic::Text | Magic::Bitcode => Ok(()),
        _ => check_binary(code.code(), 0, &mut inflate_budget()).map_err(|why| {
            crate::error::Error::invalid(
                format!(
                    "adding {} `{}` to the driver's link",
                    code.code_type(),
                    code.name()
                ),
                format!("not a valid image: {why}"),
            )
        }),
    }
}

impl crate::code::object::ObjectCode {
    /// Checks the image as [`Library::load`](crate::Library::load) and
    /// [`Module::load`](crate::Module::load) do before the driver sees it, by
    /// what the bytes are (their magic), not by [`code_type`](Self::code_type),
    /// which the driver's loaders ignore: an ELF image's (a cubin's) header
    /// tables, segments and sections lie inside its bytes; a fat binary's
    /// entries lie inside it and the ELF images among them pass the same check,
    /// a compressed entry's (LZ4 or Zstandard, as nvFatbin writes them) once
    /// decompressed, at most 1 GiB in all;
    /// code declared as a cubin or fat binary is one; LTO-IR, NVVM IR and
    /// fat-binary wrappers (which hold a host pointer) do not load. Other
    /// bytes are PTX text, which the driver's JIT compiler checks. Needs no
    /// driver.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) saying what is
    /// wrong with the image.
    pub fn check_image(&self) -> crate::error::Result<()> {
        check_image(self)
    }
}

/// How many bytes one check decompresses, all compressed entries (nested ones
/// too) together.
fn inflate_budget() -> u64 {
    crate::code::compressed::MAX_UNCOMPRESSED
}

/// Checks a binary image (ELF or fat binary, by its magic) whose bytes are `b`,
/// decompressing at most `budget` bytes of compressed entries (and taking
/// what it does from it).
fn check_binary(b: &[u8], depth: u32, budget: &mut u64) -> Result<(), &'static str> {
    match magic(b) {
        Magic::Elf => check_elf(b),
        Magic::Fatbin => check_fatbin(b, depth, budget),
        Magic::FatbinWrapper => Err(
            "a fat-binary wrapper (magic 0x466243B1) holds a host pointer, which cannot be \
             checked: load the fat binary itself",
        ),
        Magic::Bitcode => Err("LTO-IR and NVVM IR do not load directly: link them first"),
        Magic::Text => Err("not a binary image"),
    }
}

/// Little-endian reads that are `None` past the end (or past `usize::MAX`).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn at(&self, o: u64, n: usize) -> Option<&[u8]> {
        let o = usize::try_from(o).ok()?;
        self.0.get(o..o.checked_add(n)?)
    }
    fn u16(&self, o: u64) -> Option<u64> {
        self.at(o, 2)
            .map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])))
    }
    fn u32(&self, o: u64) -> Option<u64> {
        self.at(o, 4)
            .map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])))
    }
    fn u64(&self, o: u64) -> Option<u64> {
        self.at(o, 8).map(|s| {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        })
    }
    /// Whether `size` bytes from `off` lie inside.
    fn fits(&self, off: u64, size: u64) -> bool {
        off.checked_add(size)
            .is_some_and(|end| end <= self.0.len() as u64)
    }
}

/// An ELF image: a 64-bit little-endian ELF whose header tables, segments and
/// sections (but those without file bytes) lie inside `b`.
fn check_elf(b: &[u8]) -> Result<(), &'static str> {
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Err("a cubin is a 64-bit little-endian ELF file");
    }
    let b = Bytes(b);
    let field = |v: Option<u64>| v.ok_or("truncated ELF header");
    let phoff = field(b.u64(32))?;
    let shoff = field(b.u64(40))?;
    let phentsize = field(b.u16(54))?;
    let phnum = field(b.u16(56))?;
    let shentsize = field(b.u16(58))?;
    let shnum = field(b.u16(60))?;
    let shstrndx = field(b.u16(62))?;
    if !b.fits(phoff, phentsize * phnum) || !b.fits(shoff, shentsize * shnum) {
        return Err("the ELF header tables run past the end");
    }
    if shnum > 0 && shentsize < ELF64_SHDR_LEN {
        return Err("ELF section headers are too small");
    }
    if phnum > 0 && phentsize < ELF64_PHDR_LEN {
        return Err("ELF program headers are too small");
    }
    // The section names' section is one of the sections (0: none).
    if shstrndx != 0 && shstrndx >= shnum {
        return Err("the ELF section-name table is not one of its sections");
    }
    for i in 0..phnum {
        let h = phoff + i * phentsize;
        let (Some(off), Some(size)) = (b.u64(h + 8), b.u64(h + 32)) else {
            return Err("truncated ELF program header");
        };
        // A segment with no bytes in the file (memory only) may point anywhere.
        if size > 0 && !b.fits(off, size) {
            return Err("an ELF segment runs past the end");
        }
    }
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let (Some(kind), Some(off), Some(size)) = (b.u32(h + 4), b.u64(h + 24), b.u64(h + 32))
        else {
            return Err("truncated ELF section header");
        };
        // SHT_NOBITS (8) sections take no space in the file.
        if kind != 8 && !b.fits(off, size) {
            return Err("an ELF section runs past the end");
        }
    }
    Ok(())
}

/// A fat binary: its entries lie back to back inside its declared size, which
/// lies inside `b`, and each entry's payload that is an ELF image (or a fat
/// binary) passes its own check, a compressed one once decompressed (LZ4 or
/// Zstandard, within its declared size and at most 1 GiB: see
/// [`compressed`](super::compressed)).
fn check_fatbin(image: &[u8], depth: u32, budget: &mut u64) -> Result<(), &'static str> {
    if depth > FATBIN_MAX_DEPTH {
        return Err("fat binaries nest too deeply");
    }
    let b = Bytes(image);
    let (Some(header), Some(size)) = (b.u16(6), b.u64(8)) else {
        return Err("truncated fat binary header");
    };
    if header < FATBIN_HEADER_LEN {
        return Err("the fat binary's header is too small");
    }
    if !b.fits(header, size) {
        return Err("the fat binary's size runs past the end");
    }
    // The entries (one per cubin, PTX or LTO-IR) follow the header back to
    // back, each a header of its own size, then its payload; the driver walks
    // them by these sizes.
    let end = header + size;
    let mut at = header;
    while at < end {
        let (Some(entry_header), Some(payload)) = (b.u32(at + 4), b.u64(at + 8)) else {
            return Err("truncated fat binary entry header");
        };
        if entry_header < FATBIN_ENTRY_HEADER_MIN || end - at < FATBIN_ENTRY_HEADER_MIN {
            return Err("a fat binary entry header is too small");
        }
        let start = at + entry_header;
        let next = match start.checked_add(payload) {
            Some(next) if next <= end => next,
            _ => return Err("a fat binary entry runs past the end"),
        };
        // The fields past the first 16 bytes: its name (offset from the
        // entry, length) lies inside the fat binary, and a compressed
        // payload's size inside the payload.
        let mut compression = None;
        let mut opaque = false;
        {
            let field = |o: u64| b.u32(at + o).ok_or("truncated fat binary entry header");
            let (name_off, name_len) = (field(32)?, field(36)?);
            let name_end = (at + name_off).checked_add(name_len);
            if name_len > 0 && name_end.is_none_or(|e| e > end) {
                return Err("a fat binary entry's name lies past the end");
            }
            // A PTX (1) or LTO-IR (8) entry's options for the driver's JIT
            // compiler or linker: at its options offset, a tag (u32), the
            // length (u32), then the text. They are read as forwarded ptxas
            // options are (a split compile among them is bounded).
            let kind = b.u16(at).ok_or("truncated fat binary entry header")?;
            let options_at = field(20)?;
            if matches!(kind, 1 | 8) && options_at != 0 {
                let start = at + options_at;
                let len = b
                    .u32(start + 4)
                    .ok_or("a fat binary entry's options lie past the end")?;
                let text = (start + 8)
                    .checked_add(len)
                    .filter(|e| *e <= end)
                    .and_then(|e| image.get(start as usize + 8..e as usize))
                    .ok_or("a fat binary entry's options lie past the end")?;
                let text = String::from_utf8_lossy(text);
                let text = text.trim_end_matches('\0');
                crate::code::tool_args::check_jit_options("options", text, "a fat binary entry")
                    .map_err(|_| {
                        "a fat binary entry's JIT options ask for a split compile of more than \
                         1024 threads, or in a spelling that cannot be checked"
                    })?;
            }
            let flags = b.u64(at + 40).ok_or("truncated fat binary entry header")?;
            if let Some(codec) = crate::code::compressed::codec(flags)? {
                let compressed = field(16)?;
                if compressed == 0 || compressed > payload {
                    return Err("a compressed fat binary entry's size lies past its payload");
                }
                let declared = b.u64(at + 56).ok_or("truncated fat binary entry header")?;
                compression = Some((codec, compressed, declared));
            }
            // An LTO-IR entry's payload is scrambled: it cannot be read here,
            // and only the JIT linker reads it, as NVVM IR. Any other entry
            // flagged so would reach a loader unchecked.
            if flags & crate::code::compressed::SCRAMBLED != 0 {
                if kind != FATBIN_KIND_LTOIR {
                    return Err(
                        "a fat binary entry other than LTO-IR is flagged as scrambled (0x10000): \
                         its image cannot be checked",
                    );
                }
                opaque = true;
            }
        }
        if opaque {
            at = next;
            continue;
        }
        // `start..next` lies inside `image` (`end` does).
        let mut bytes = std::borrow::Cow::Borrowed(&image[start as usize..next as usize]);
        if let Some((codec, compressed, declared)) = compression {
            // `compressed <= payload`: inside the entry's bytes.
            let stream = &bytes[..compressed as usize];
            if declared > *budget {
                return Err(
                    "a fat binary's compressed entries declare more than 1 GiB uncompressed",
                );
            }
            *budget -= declared;
            let plain = crate::code::compressed::decompress(codec, stream, declared)?;
            bytes = std::borrow::Cow::Owned(plain);
        }
        match magic(&bytes) {
            Magic::Elf | Magic::Fatbin | Magic::FatbinWrapper => {
                check_binary(&bytes, depth + 1, budget)?;
            }
            // PTX text or LTO-IR: nothing in it the loader reads by offsets.
            Magic::Bitcode | Magic::Text => {}
        }
        at = next;
    }
    Ok(())
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

    /// A Zstandard frame holding `data` in raw blocks (single segment, its
    /// 4-byte content size in the header): what a decoder must accept.
    fn zstd_raw(data: &[u8]) -> Vec<u8> {
        let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0xA0];
        f.extend_from_slice(&(data.len() as u32).to_le_bytes());
        let chunks: Vec<&[u8]> = data.chunks(128 * 1024).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = u32::from(i + 1 == chunks.len());
            // Raw_Block (type 0): last flag, then the size from bit 3.
            f.extend_from_slice(&(last | (chunk.len() as u32) << 3).to_le_bytes()[..3]);
            f.extend_from_slice(chunk);
        }
        f
    }

    /// An LZ4 block holding `data` as one run of literals.
    fn lz4_literals(data: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        if data.len() < 15 {
            b.push((data.len() as u8) << 4);
        } else {
            b.push(0xF0);
            let mut rest = data.len() - 15;
            while rest >= 255 {
                b.push(255);
                rest -= 255;
            }
            b.push(rest as u8);
        }
        b.extend_from_slice(data);
        b
    }

    /// A fat binary of one cubin entry shaped as nvFatbin 13.0 writes a
    /// compressed one: a 72-byte header with the compressed size at 16, the
    /// flags (64-bit, Linux, `codec`) at 40 and the uncompressed size at 56,
    /// the payload padded to 8 bytes.
    fn compressed_fatbin(stream: &[u8], codec: u64, declared: u64) -> Vec<u8> {
        let padded = stream.len().div_ceil(8) * 8;
        let mut entry = vec![0u8; 72];
        entry[..2].copy_from_slice(&2u16.to_le_bytes());
        entry[2..4].copy_from_slice(&0x101u16.to_le_bytes());
        entry[4..8].copy_from_slice(&72u32.to_le_bytes());
        entry[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
        entry[16..20].copy_from_slice(&(stream.len() as u32).to_le_bytes());
        entry[28..32].copy_from_slice(&90u32.to_le_bytes());
        entry[40..48].copy_from_slice(&(0x11 | codec).to_le_bytes());
        entry[56..64].copy_from_slice(&declared.to_le_bytes());
        let mut b = Vec::new();
        b.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&(72 + padded as u64).to_le_bytes());
        b.extend_from_slice(&entry);
        b.extend_from_slice(stream);
        b.resize(16 + 72 + padded, 0);
        b
    }

    /// The ELF of the review: a header whose section table lies 1 GiB past its end.
    fn lying_elf() -> Vec<u8> {
        let mut b = elf();
        b.truncate(64);
        b[32..40].copy_from_slice(&0u64.to_le_bytes());
        b[56..58].copy_from_slice(&0u16.to_le_bytes());
        b[40..48].copy_from_slice(&(1u64 << 30).to_le_bytes());
        b[60..62].copy_from_slice(&4u16.to_le_bytes());
        b
    }

    const LZ4: u64 = 0x2000;
    const ZSTD: u64 = 0x8000;

    /// Both codecs' streams of `data`.
    fn streams(data: &[u8]) -> [(u64, Vec<u8>); 2] {
        [(LZ4, lz4_literals(data)), (ZSTD, zstd_raw(data))]
    }

    #[test]
    fn compressed_elf_images_are_checked_once_decompressed() {
        for (codec, stream) in streams(&elf()) {
            let fat = compressed_fatbin(&stream, codec, elf().len() as u64);
            check(&fat, CodeType::Fatbin).unwrap();
            // A fat binary inside a compressed entry is walked too.
            let nested = compressed_fatbin(&streams(&fat)[0].1, LZ4, fat.len() as u64);
            check(&nested, CodeType::Fatbin).unwrap();
        }
        let lying = lying_elf();
        refused(&lying, CodeType::Cubin);
        for (codec, stream) in streams(&lying) {
            let fat = compressed_fatbin(&stream, codec, lying.len() as u64);
            let why = refused(&fat, CodeType::Fatbin);
            assert!(
                why.contains("ELF header tables run past the end"),
                "{codec:#x}: {why}"
            );
            // Declared as PTX, it is still the fat binary it is.
            refused(&fat, CodeType::Ptx);
            // And nested in an uncompressed entry of another fat binary.
            let mut outer = fatbin();
            let at = 16 + 64;
            outer.splice(at..at + 32, fat.iter().copied());
            let size = (64 + fat.len() + 64 + 8) as u64;
            outer[8..16].copy_from_slice(&size.to_le_bytes());
            outer[16 + 8..16 + 16].copy_from_slice(&(fat.len() as u64).to_le_bytes());
            let why = refused(&outer, CodeType::Fatbin);
            assert!(why.contains("ELF header tables run past the end"), "{why}");
        }
    }

    #[test]
    fn only_ltoir_entries_may_be_scrambled() {
        // nvFatbin's LTO-IR entries: scrambled (0x10000), compressed or not;
        // their payload is not read.
        let garbage: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for codec in [0, LZ4, ZSTD] {
            let mut fat = compressed_fatbin(&garbage, codec | 0x1_0000, 600);
            fat[16..18].copy_from_slice(&8u16.to_le_bytes());
            check(&fat, CodeType::Fatbin).unwrap();
            // A cubin (or PTX) entry flagged so would reach a loader unchecked.
            for kind in [1u16, 2, 16] {
                fat[16..18].copy_from_slice(&kind.to_le_bytes());
                assert!(refused(&fat, CodeType::Fatbin).contains("scrambled"));
            }
        }
    }

    #[test]
    fn bad_compressed_payloads_are_refused_before_they_are_decoded() {
        let image = elf();
        let n = image.len() as u64;
        for (codec, stream) in streams(&image) {
            // Garbage of the same length.
            let garbage: Vec<u8> = (0..stream.len()).map(|i| (i * 131 + 7) as u8).collect();
            let why = refused(&compressed_fatbin(&garbage, codec, n), CodeType::Fatbin);
            assert!(
                why.contains("does not decode") || why.contains("shorter"),
                "{why}"
            );
            // Every truncation of the stream.
            for cut in 1..stream.len() {
                refused(
                    &compressed_fatbin(&stream[..cut], codec, n),
                    CodeType::Fatbin,
                );
            }
            // A size other than the stream's, either way.
            for declared in [n - 1, n + 1] {
                refused(
                    &compressed_fatbin(&stream, codec, declared),
                    CodeType::Fatbin,
                );
            }
            // No size at all.
            let why = refused(&compressed_fatbin(&stream, codec, 0), CodeType::Fatbin);
            assert!(why.contains("no uncompressed size"), "{why}");
            // Huge sizes are refused by arithmetic, before any buffer is made.
            for huge in [u64::MAX, 1 << 40, (1 << 30) + 1] {
                let why = refused(&compressed_fatbin(&stream, codec, huge), CodeType::Fatbin);
                assert!(why.contains("more than 1 GiB"), "{why}");
            }
            let why = refused(
                &compressed_fatbin(&stream, codec, 1 << 30),
                CodeType::Fatbin,
            );
            assert!(why.contains("more than its payload can hold"), "{why}");
            // Both codecs at once.
            let why = refused(&compressed_fatbin(&stream, LZ4 | ZSTD, n), CodeType::Fatbin);
            assert!(why.contains("both"), "{why}");
        }
        // Bytes past the Zstandard frame, inside the compressed size.
        let mut stream = zstd_raw(&image);
        stream.extend_from_slice(&[0; 4]);
        let why = refused(&compressed_fatbin(&stream, ZSTD, n), CodeType::Fatbin);
        assert!(why.contains("past its Zstandard frame"), "{why}");
        // An RLE block of 128 KiB from 4 bytes (the format's widest) is decoded;
        // no ELF, so nothing more is checked in it.
        let mut rle = vec![0x28, 0xB5, 0x2F, 0xFD, 0xA0];
        rle.extend_from_slice(&(128u32 * 1024).to_le_bytes());
        rle.extend_from_slice(&(1 | 1 << 1 | (128u32 * 1024) << 3).to_le_bytes()[..3]);
        rle.push(b'x');
        check(&compressed_fatbin(&rle, ZSTD, 128 * 1024), CodeType::Fatbin).unwrap();
        // Entries together may not declare more than 1 GiB: a compressed fat
        // binary inside a compressed entry, whose own entry declares what is
        // left of the GiB and a byte more, is refused before it is decoded.
        let stream = vec![0u8; 40 * 1024];
        let mut inner = compressed_fatbin(&stream, ZSTD, 1);
        let outer_declared = inner.len() as u64;
        inner[16 + 56..16 + 64].copy_from_slice(&((1u64 << 30) - outer_declared + 1).to_le_bytes());
        let outer = compressed_fatbin(&lz4_literals(&inner), LZ4, outer_declared);
        let why = refused(&outer, CodeType::Fatbin);
        assert!(why.contains("entries declare more than 1 GiB"), "{why}");
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
        fn mutated_compressed_entries_never_panic(
            zstd in any::<bool>(),
            flips in proptest::collection::vec((any::<usize>(), 0u8..8), 0..8),
            fields in proptest::collection::vec((any::<usize>(), prop_oneof![Just(2usize), Just(4), Just(8)], nasty()), 0..3),
        ) {
            let [lz4, zst] = streams(&elf());
            let (codec, stream) = if zstd { zst } else { lz4 };
            let mut image = compressed_fatbin(&stream, codec, elf().len() as u64);
            let n = image.len();
            for (at, bit) in flips {
                image[at % n] ^= 1 << bit;
            }
            for (at, width, value) in fields {
                poke(&mut image, at % n, width, value);
            }
            let _ = check(&image, CodeType::Fatbin);
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
