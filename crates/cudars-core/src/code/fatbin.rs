//! Fat binaries built with nvFatbin: cubins for several architectures, PTX and
//! LTO-IR in one image that [`Library`](crate::Library) and
//! [`Module`](crate::Module) load, the driver picking the entry that fits the
//! device.

use std::ffi::{CString, c_char};

use cudars_bindings::IntoResult as _;
use cudars_bindings::nvfatbin as nf;

use crate::code::object::{CodeType, ObjectCode};
use crate::code::strings::{cstrings, input_bytes, input_name};
use crate::error::{Error, Result};

/// What one entry of a fatbin holds.
#[derive(Debug, Clone)]
enum EntryKind {
    Cubin,
    Ptx { options: String },
    Ltoir { options: String },
    Reloc,
}

#[derive(Debug, Clone)]
struct Entry {
    kind: EntryKind,
    code: ObjectCode,
    /// The architecture's number (`90`, `90a`); empty for relocatable entries.
    arch: String,
}

/// Builds a fatbin from cubins, PTX and LTO-IR for several architectures
/// (`nvFatbinCreate`, `nvFatbinAdd*`, `nvFatbinGet`), the counterpart of
/// `nvcc -fatbin` or of the fatbins NVRTC users assemble by hand.
///
/// Entries are checked and kept as they are added; nvFatbin runs only in
/// [`build`](Self::build), on the CPU.
///
/// ```no_run
/// # fn main() -> cudars_core::Result<()> {
/// use cudars_core::{CompileTarget, FatbinBuilder, Program, ProgramOptions, SourceCode};
///
/// let src = r#"extern "C" __global__ void k(int* p) { *p = 90; }"#;
/// let compile = |arch: &str, target| {
///     let options = ProgramOptions { arch: Some(arch.into()), ..Default::default() };
///     Program::new(SourceCode::Cxx(src), options)?.compile(target, &[])
/// };
/// let fatbin = FatbinBuilder::new()
///     .cubin(&compile("sm_80", CompileTarget::Cubin)?, "sm_80")?
///     .cubin(&compile("sm_90", CompileTarget::Cubin)?, "sm_90")?
///     .ptx(&compile("compute_90", CompileTarget::Ptx)?, "compute_90", "")?
///     .build()?;
/// assert_eq!(fatbin.code_type(), cudars_core::CodeType::Fatbin);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct FatbinBuilder {
    options: Vec<String>,
    entries: Vec<Entry>,
}

impl FatbinBuilder {
    /// An empty builder with nvFatbin's default options (64-bit entries,
    /// compression on, the host OS this was built for).
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns compression on or off (`-compress=true|false`; on by default).
    pub fn compress(mut self, on: bool) -> Self {
        self.options.push(format!("-compress={on}"));
        self
    }

    /// Compresses every entry, even small ones (`-compress-all`).
    pub fn compress_all(mut self) -> Self {
        self.options.push("-compress-all".into());
        self
    }

    /// Marks the entries as carrying debug information (`-g`).
    pub fn debug(mut self) -> Self {
        self.options.push("-g".into());
        self
    }

    /// Any other nvFatbin option, as nvFatbin spells it (`-host=windows`, `-32`);
    /// an option nvFatbin does not know fails [`build`](Self::build).
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// Adds a cubin built for `arch` (`sm_90`, `90`, `sm_90a`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `code` is not a cubin or `arch` is not an
    /// architecture.
    pub fn cubin(self, code: &ObjectCode, arch: &str) -> Result<Self> {
        self.push(EntryKind::Cubin, CodeType::Cubin, code, arch)
    }

    /// Adds PTX for `arch` (`compute_90`, `90`), with the options the driver's
    /// JIT compiler is to use for it (ptxas options, `""` for none).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `code` is not PTX, `arch` is not an
    /// architecture, or `options` holds a NUL byte or asks the driver's JIT for
    /// a split compile of more than 1024 threads (or in a spelling that cannot
    /// be checked: see [`ProgramOptions::extra`](crate::ProgramOptions::extra)).
    pub fn ptx(self, code: &ObjectCode, arch: &str, options: &str) -> Result<Self> {
        let options = options.to_owned();
        self.push(EntryKind::Ptx { options }, CodeType::Ptx, code, arch)
    }

    /// Adds LTO-IR for `arch` (`lto_90`, `90`), with the options used when it is
    /// JIT-linked (`-O3`, `-ftz=1`, …; `""` for none).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `code` is not LTO-IR, `arch` is not an
    /// architecture, or `options` holds a NUL byte or asks the driver's JIT for
    /// a split compile of more than 1024 threads (or in a spelling that cannot
    /// be checked: see [`ProgramOptions::extra`](crate::ProgramOptions::extra)).
    pub fn ltoir(self, code: &ObjectCode, arch: &str, options: &str) -> Result<Self> {
        let options = options.to_owned();
        self.push(EntryKind::Ltoir { options }, CodeType::Ltoir, code, arch)
    }

    /// Adds the relocatable PTX entries of a host object (`nvFatbinAddReloc`):
    /// each keeps its own architecture and identifier, which must not repeat.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `code` is not a host object.
    pub fn relocatable(mut self, code: &ObjectCode) -> Result<Self> {
        expect_type(code, CodeType::Object)?;
        self.entries.push(Entry {
            kind: EntryKind::Reloc,
            code: code.clone(),
            arch: String::new(),
        });
        Ok(self)
    }

    /// Adds `code` by its type: a cubin, PTX (no JIT options), LTO-IR (no JIT
    /// options) or, ignoring `arch`, a host object's relocatable entries.
    ///
    /// # Errors
    /// As the method for the type; [`Error::InvalidArgument`] for a fatbin or a
    /// library.
    pub fn add(self, code: &ObjectCode, arch: &str) -> Result<Self> {
        match code.code_type() {
            CodeType::Cubin => self.cubin(code, arch),
            CodeType::Ptx => self.ptx(code, arch, ""),
            CodeType::Ltoir => self.ltoir(code, arch, ""),
            CodeType::Object => self.relocatable(code),
            other => Err(Error::invalid(
                format!("adding `{}` to a fatbin", code.name()),
                format!(
                    "{other} cannot go into a fatbin (cubin, PTX, LTO-IR or a host object can)"
                ),
            )),
        }
    }

    /// How many entries were added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn push(
        mut self,
        kind: EntryKind,
        want: CodeType,
        code: &ObjectCode,
        arch: &str,
    ) -> Result<Self> {
        expect_type(code, want)?;
        let arch = arch_number(arch)
            .ok_or_else(|| {
                Error::invalid(
                    format!("adding {want} `{}` to a fatbin", code.name()),
                    format!(
                        "`{arch}` is not an architecture (sm_90, compute_90, lto_90, 90, sm_90a)"
                    ),
                )
            })?
            .to_owned();
        if let EntryKind::Ptx { options } | EntryKind::Ltoir { options } = &kind {
            if options.contains('\0') {
                return Err(Error::invalid(
                    format!("adding {want} `{}` to a fatbin", code.name()),
                    "the JIT options hold a NUL byte",
                ));
            }
            // The driver's JIT reads them when the fatbin is loaded: a split
            // compile among them is held to the bound every option is.
            crate::code::tool_args::check_jit_options(
                "options",
                options,
                "adding JIT options to a fatbin entry",
            )?;
        }
        self.entries.push(Entry {
            kind,
            code: code.clone(),
            arch,
        });
        Ok(self)
    }

    /// Runs nvFatbin over the entries and returns the fatbin.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when nothing was added or an option holds a NUL
    /// byte; [`Error::Tool`] (with [`ToolError::NvFatbin`](crate::ToolError::NvFatbin),
    /// nvFatbin's code and description) when nvFatbin rejects an option or an
    /// entry; [`Error::Unavailable`] when `libnvfatbin` cannot be loaded.
    pub fn build(&self) -> Result<ObjectCode> {
        const CONTEXT: &str = "building a fatbin";
        if self.entries.is_empty() {
            return Err(Error::invalid(CONTEXT, "no entries were added"));
        }
        let options = cstrings(self.options.clone(), CONTEXT)?;
        let mut ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let handle = Handle::new(&mut ptrs, &self.options)?;
        for (i, e) in self.entries.iter().enumerate() {
            handle.add(e).map_err(|err| {
                let what = match e.kind {
                    EntryKind::Reloc => {
                        format!("adding the relocatable entries of `{}`", e.code.name())
                    }
                    _ => format!(
                        "adding {} `{}` for architecture {} (entry {i})",
                        e.code.code_type(),
                        e.code.name(),
                        e.arch
                    ),
                };
                Error::tool(format!("{CONTEXT}: {what}"), err)
            })?;
        }
        let bytes = handle
            .bytes()
            .map_err(|e| Error::tool(format!("{CONTEXT}: reading the result (nvFatbinGet)"), e))?;
        ObjectCode::new(bytes, CodeType::Fatbin, "fatbin")
    }
}

fn expect_type(code: &ObjectCode, want: CodeType) -> Result<()> {
    if code.code_type() == want {
        Ok(())
    } else {
        Err(Error::invalid(
            format!("adding `{}` to a fatbin as {want}", code.name()),
            format!("the code is {}, not {want}", code.code_type()),
        ))
    }
}

/// `sm_90`, `compute_90`, `lto_90`, `90`, `sm_90a` → `90`/`90a`: digits, then
/// at most one lowercase letter (`a`, `f`).
fn arch_number(arch: &str) -> Option<&str> {
    let n = ["sm_", "compute_", "lto_"]
        .iter()
        .find_map(|p| arch.strip_prefix(p))
        .unwrap_or(arch);
    let digits = n.trim_end_matches(|c: char| c.is_ascii_lowercase());
    let ok = digits.len() >= 2
        && digits.chars().all(|c| c.is_ascii_digit())
        && n.len() - digits.len() <= 1;
    ok.then_some(n)
}

/// An nvFatbin handle, destroyed on drop.
struct Handle(nf::nvFatbinHandle);

impl Handle {
    fn new(ptrs: &mut [*const c_char], shown: &[String]) -> Result<Self> {
        let mut h: nf::nvFatbinHandle = std::ptr::null_mut();
        // SAFETY: `h` is valid for writes; `ptrs` holds `ptrs.len()` pointers to
        // NUL-terminated strings that outlive the call.
        unsafe { nf::nvFatbinCreate(&mut h, ptrs.as_mut_ptr(), ptrs.len()) }
            .result()
            .map_err(|e| {
                Error::tool(
                    format!(
                        "creating an nvFatbin handle with options [{}]",
                        shown.join(" ")
                    ),
                    e,
                )
            })?;
        Ok(Self(h))
    }

    fn add(&self, e: &Entry) -> Result<(), nf::NvFatbinError> {
        let bytes = input_bytes(&e.code);
        let name = input_name(&e.code);
        // The architecture was checked to be ASCII digits and letters.
        let arch = CString::new(e.arch.as_str()).unwrap_or_default();
        let cstr = |s: &str| CString::new(s).unwrap_or_default();
        // In every arm: the handle is live; `bytes` is `bytes.len()` readable bytes
        // (PTX NUL-terminated, its size counting the NUL, as nvFatbin asks); the
        // strings are NUL-terminated; nvFatbin copies what it keeps.
        match &e.kind {
            // SAFETY: as above.
            EntryKind::Cubin => unsafe {
                nf::nvFatbinAddCubin(
                    self.0,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    arch.as_ptr(),
                    name.as_ptr(),
                )
            },
            EntryKind::Ptx { options } | EntryKind::Ltoir { options } => {
                let options = cstr(options);
                let (code, size) = (bytes.as_ptr().cast(), bytes.len());
                let (arch_p, name_p, opts_p) = (arch.as_ptr(), name.as_ptr(), options.as_ptr());
                // SAFETY: as above.
                unsafe {
                    if matches!(e.kind, EntryKind::Ptx { .. }) {
                        nf::nvFatbinAddPTX(self.0, code, size, arch_p, name_p, opts_p)
                    } else {
                        nf::nvFatbinAddLTOIR(self.0, code.cast(), size, arch_p, name_p, opts_p)
                    }
                }
            }
            // SAFETY: as above.
            EntryKind::Reloc => unsafe {
                nf::nvFatbinAddReloc(self.0, bytes.as_ptr().cast(), bytes.len())
            },
        }
        .result()
    }

    fn bytes(&self) -> Result<Vec<u8>, nf::NvFatbinError> {
        crate::code::strings::sized_output(
            // SAFETY: the handle is live; `n` is valid for writes.
            |n| unsafe { nf::nvFatbinSize(self.0, n) }.result(),
            // SAFETY: `buf` holds the bytes nvFatbin said the fatbin takes.
            |buf| unsafe { nf::nvFatbinGet(self.0, buf.cast()) }.result(),
        )
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: a handle from nvFatbinCreate, destroyed once here.
        let r = unsafe { nf::nvFatbinDestroy(&mut self.0) }.result();
        crate::cleanup::report(r.map_err(|e| {
            crate::error::Error::tool("destroying an nvFatbin handle (nvFatbinDestroy)", e)
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::arch_number;

    #[test]
    fn architectures_are_read_in_every_spelling() {
        assert_eq!(arch_number("sm_90"), Some("90"));
        assert_eq!(arch_number("compute_80"), Some("80"));
        assert_eq!(arch_number("lto_90"), Some("90"));
        assert_eq!(arch_number("90a"), Some("90a"));
        assert_eq!(arch_number("sm_100f"), Some("100f"));
        for bad in ["", "sm_", "9", "sm_9x0", "ninety", "sm_90ab", "90 "] {
            assert_eq!(arch_number(bad), None, "{bad:?}");
        }
    }
}
