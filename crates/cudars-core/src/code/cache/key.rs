//! Cache keys: [`ProgramCacheKey`], the SHA-256 of everything that decides a
//! compilation's output, made by [`make_program_cache_key`].

use crate::error::{Error, Result};
use crate::{
    code::compile::options::ProgramOptions, code::compile::program::SourceCode,
    code::compile::target::CompileTarget,
};
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::str::FromStr;

/// The first field hashed into every key: names the encoding.
pub(crate) const KEY_FORMAT: &[u8] = b"cuda-rs program cache key";
/// The version of the key encoding; changing the encoding changes it, so old keys
/// never match new entries.
pub(crate) const KEY_VERSION: u32 = 1;
/// The name a program gets when [`ProgramOptions::name`] is `None` (as
/// [`Program`] names it).
pub(crate) const DEFAULT_PROGRAM_NAME: &str = "default_program";

/// The identity of one compilation: a SHA-256 digest made by
/// [`make_program_cache_key`].
///
/// Displays (and [parses](FromStr)) as 64 lowercase hex digits, which
/// [`FileProgramCache`](crate::cache::FileProgramCache) uses as the file name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramCacheKey(pub(crate) [u8; 32]);

impl ProgramCacheKey {
    /// A key from its 32 bytes (for caches keyed by something other than
    /// [`make_program_cache_key`]).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The key's 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ProgramCacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ProgramCacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProgramCacheKey({self})")
    }
}

impl FromStr for ProgramCacheKey {
    type Err = Error;

    /// Parses 64 hex digits (either case).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "parsing a program cache key",
                format!("{s:?} is not 64 hex digits"),
            )
        };
        // `from_str_radix` alone would take a sign (`+f`): only hex digits pass.
        if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        // Every byte is a hex digit now, so decoding cannot fail.
        let nibble = |b: u8| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b - b'A' + 10,
        };
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
            *byte = (nibble(pair[0]) << 4) | nibble(pair[1]);
        }
        Ok(Self(out))
    }
}

/// SHA-256 over length-prefixed fields, so that no two different field
/// sequences hash the same bytes.
pub(crate) struct KeyHasher(Sha256);

impl KeyHasher {
    fn len(&mut self, n: usize) {
        self.0.update((n as u64).to_le_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.update(b);
    }

    /// A labelled field.
    fn field(&mut self, label: &str, value: &[u8]) {
        self.bytes(label.as_bytes());
        self.bytes(value);
    }

    /// A labelled list, its length first.
    fn list<'a>(&mut self, label: &str, items: impl ExactSizeIterator<Item = &'a [u8]>) {
        self.bytes(label.as_bytes());
        self.len(items.len());
        for item in items {
            self.bytes(item);
        }
    }

    /// A labelled list of (name, contents) pairs.
    fn pairs<'a>(
        &mut self,
        label: &str,
        items: impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])>,
    ) {
        self.bytes(label.as_bytes());
        self.len(items.len());
        for (name, contents) in items {
            self.bytes(name);
            self.bytes(contents);
        }
    }
}

/// The linker that [`Program::compile`] uses for a cubin from PTX or NVVM IR
/// (nvJitLink, or the driver's), with its version.
pub(crate) fn linker_identity() -> Result<String> {
    use cudars_bindings::{driver, nvjitlink};
    if nvjitlink::is_available("nvJitLinkCreate") {
        let v = nvjitlink::version()
            .map_err(|e| Error::tool("querying the nvJitLink version for a cache key", e))?;
        Ok(format!("nvJitLink {}.{}", v.major, v.minor))
    } else {
        let v = driver::version()
            .map_err(|e| Error::from_driver("querying the driver version for a cache key", e))?;
        Ok(format!("driver {}.{}", v.major, v.minor))
    }
}

/// The key of compiling `code` with `options` to `target`, looking up
/// `name_expressions`, with `extra_headers` (name, contents) taking part.
///
/// The key is a SHA-256 digest over a versioned, length-prefixed encoding of:
///
/// * the encoding's version;
/// * the backend (`NVRTC` for C++, `NVVM` for NVVM IR, `PTX`) and the version of
///   the loaded compiler (NVRTC's or NVVM's, `major.minor`, with NVVM's IR version),
///   and, for a cubin
///   made from PTX or NVVM IR, the linker that makes it and its version;
/// * the target;
/// * the canonical options: [`ProgramOptions::to_nvrtc_args`] for C++,
///   [`to_nvvm_args`](ProgramOptions::to_nvvm_args) for NVVM IR, the
///   [linker's](ProgramOptions::to_linker_options) options for PTX (when an
///   `arch` is given), and the program's name; for C++ the include paths (in
///   order) and the `pre_include` headers; for NVVM IR its `extra_sources` and,
///   with `use_libdevice`, which libdevice file (path, size, modification time);
///   An unset `arch` counts as the current device's, as
///   [`Program::new`](crate::Program::new) fills it in (where there is a GPU to
///   ask), except for PTX kept as PTX, which uses none;
/// * the source's bytes;
/// * for C++, the name expressions, sorted and without duplicates (their order
///   does not change what is compiled; NVVM and PTX ignore them, so they are
///   left out of those keys);
/// * `extra_headers`, sorted by name.
///
/// The key changes when any of these does and is the same in every run and on
/// every machine with the same compiler version. Files reached through
/// `include_path` are **not** read: a program that includes files must pass
/// their contents in `extra_headers` (any name that identifies them), which is
/// why such options are refused without it.
///
/// # Refused
///
/// As `cuda.core`'s, the keys a hit would make wrong, each an
/// [`Error::InvalidArgument`] saying why: C++ options with compile-time side
/// effects (`create_pch`, `time`, `fdevice_time_trace`: a hit would skip the
/// file they write); C++ options that read files the key does not see
/// (`include_path`, `pre_include`, `pch`, `use_pch`, `pch_dir`, or a `name` with a
/// directory component, relative to which NVRTC resolves quoted includes) unless
/// `extra_headers` is given (`cuda.core`'s `extra_digest`); `extra_sources`
/// outside NVVM; PTX to [`CompileTarget::Ltoir`].
///
/// # Errors
/// [`Error::InvalidArgument`] for options the backend rejects and for the keys
/// refused above;
/// [`Error::Tool`] (or [`Error::Driver`], for the driver's linker) when the
/// compiler's or linker's version cannot be had; [`Error::Unavailable`] when
/// its library cannot be loaded.
pub fn make_program_cache_key(
    code: &SourceCode<'_>,
    options: &ProgramOptions,
    target: CompileTarget,
    name_expressions: &[&str],
    extra_headers: &[(&str, &[u8])],
) -> Result<ProgramCacheKey> {
    // An unset `arch` is the current device's, as `Program::new` makes it,
    // wherever the compile uses one (PTX kept as PTX uses none).
    let resolved;
    let options = if matches!((code, target), (SourceCode::Ptx(_), CompileTarget::Ptx)) {
        options
    } else {
        resolved = options.clone().with_current_device_arch()?;
        &resolved
    };
    check_cacheable(code, options, target, extra_headers)?;
    let mut h = KeyHasher(Sha256::new());
    h.field("format", KEY_FORMAT);
    h.field("format-version", &KEY_VERSION.to_le_bytes());

    let (backend, version, args, source): (&str, String, Vec<String>, &[u8]) = match *code {
        SourceCode::Cxx(src) => {
            let version = crate::code::compile::nvrtc::version()?;
            (
                "NVRTC",
                version.to_string(),
                options.to_nvrtc_args()?,
                src.as_bytes(),
            )
        }
        SourceCode::Nvvm(ir) => {
            let v = cudars_bindings::nvvm::version()
                .map_err(|e| Error::tool("querying the NVVM version for a cache key", e))?;
            let ir_version = nvvm_ir_version()?;
            (
                "NVVM",
                format!("{}.{};ir={ir_version}", v.major, v.minor),
                options.to_nvvm_args()?,
                ir,
            )
        }
        SourceCode::Ptx(src) => {
            let args = if options.arch.is_some() {
                options.to_linker_options()?.to_nvjitlink_args()?
            } else {
                Vec::new()
            };
            ("PTX", String::new(), args, src.as_bytes())
        }
    };
    h.field("backend", backend.as_bytes());
    h.field("backend-version", version.as_bytes());
    h.field(
        "target",
        match target {
            CompileTarget::Ptx => b"ptx",
            CompileTarget::Cubin => b"cubin",
            CompileTarget::Ltoir => b"ltoir",
        },
    );
    let linker = match (code, target) {
        (SourceCode::Ptx(_) | SourceCode::Nvvm(_), CompileTarget::Cubin) => {
            let mut lopts = options.to_linker_options()?;
            if matches!(code, SourceCode::Nvvm(_)) && options.link_time_optimization {
                lopts.link_time_optimization = true;
            }
            let mut id = linker_identity()?;
            for arg in lopts.to_nvjitlink_args()? {
                id.push('\0');
                id.push_str(&arg);
            }
            id
        }
        _ => String::new(),
    };
    h.field("linker", linker.as_bytes());
    h.list("options", args.iter().map(|a| a.as_bytes()));
    h.field(
        "name",
        options
            .name
            .as_deref()
            .unwrap_or(DEFAULT_PROGRAM_NAME)
            .as_bytes(),
    );
    // Only NVRTC reads include paths and pre-included headers, and only NVVM
    // extra sources and libdevice (as `cuda.core` keys them): a field a
    // backend ignores does not split its keys.
    let cxx = matches!(code, SourceCode::Cxx(_));
    let nvvm = matches!(code, SourceCode::Nvvm(_));
    let (include_path, pre_include): (&[std::path::PathBuf], &[String]) = if cxx {
        (&options.include_path, &options.pre_include)
    } else {
        (&[], &[])
    };
    let extra_sources: &[(String, Vec<u8>)] = if nvvm { &options.extra_sources } else { &[] };
    h.list(
        "include-path",
        include_path
            .iter()
            .map(|p| p.as_os_str().as_encoded_bytes()),
    );
    h.list("pre-include", pre_include.iter().map(|p| p.as_bytes()));
    h.pairs(
        "extra-sources",
        extra_sources
            .iter()
            .map(|(n, m)| (n.as_bytes(), m.as_slice())),
    );
    if nvvm && options.use_libdevice {
        // Only when set, so that keys made before the option existed still match.
        // Which libdevice: its path, size and modification time (reading the
        // bitcode for every key would cost more than the lookup it keys).
        let id = cudars_pathfinder::find_bitcode_lib("libdevice")
            .ok()
            .and_then(|l| {
                let m = std::fs::metadata(&l.abs_path).ok()?;
                let modified = m
                    .modified()
                    .ok()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?
                    .as_nanos();
                Some(format!("{}\0{}\0{modified}", l.abs_path.display(), m.len()))
            })
            .unwrap_or_default();
        h.field("libdevice", id.as_bytes());
    }
    h.field("source", source);

    // Only NVRTC looks name expressions up; NVVM and PTX ignore them, so they
    // take no part in those keys (as in `cuda.core`): identical compiles share one.
    let mut exprs: Vec<&str> = match code {
        SourceCode::Cxx(_) => name_expressions.to_vec(),
        SourceCode::Nvvm(_) | SourceCode::Ptx(_) => Vec::new(),
    };
    exprs.sort_unstable();
    exprs.dedup();
    h.list("name-expressions", exprs.iter().map(|e| e.as_bytes()));

    let mut headers: Vec<(&str, &[u8])> = extra_headers.to_vec();
    headers.sort_unstable();
    h.pairs(
        "extra-headers",
        headers.iter().map(|(n, b)| (n.as_bytes(), *b)),
    );
    Ok(ProgramCacheKey(h.0.finalize().into()))
}

/// NVVM's IR version (`nvvmIRVersion`: IR major.minor, debug-metadata
/// major.minor), which the key holds beside the library's version.
fn nvvm_ir_version() -> Result<String> {
    use cudars_bindings::IntoResult as _;
    let (mut major, mut minor, mut dbg_major, mut dbg_minor) = (0, 0, 0, 0);
    // SAFETY: the four pointers are valid for writes.
    unsafe {
        cudars_bindings::nvvm::nvvmIRVersion(&mut major, &mut minor, &mut dbg_major, &mut dbg_minor)
    }
    .result()
    .map_err(|e| Error::tool("querying the NVVM IR version for a cache key", e))?;
    Ok(format!("{major}.{minor}.{dbg_major}.{dbg_minor}"))
}

/// What `cuda.core`'s `make_program_cache_key` refuses, refused here too: a key
/// that a hit would make wrong.
///
/// * C++ with options that write files as the compile's side effect
///   (`create_pch`, `time`, `fdevice_time_trace`): a hit skips the compile, so
///   the file would never be written;
/// * `extra_sources` outside NVVM (the compile refuses them);
/// * C++ whose compile reads files the key cannot see (`include_path`,
///   `pre_include`, `pch`, `use_pch`, `pch_dir`, or a program `name` with a
///   directory component, relative to which NVRTC resolves quoted includes)
///   unless `extra_headers` is given, standing for those files' contents
///   (`cuda.core`'s `extra_digest`);
/// * PTX to LTO-IR (the compile refuses it).
fn check_cacheable(
    code: &SourceCode<'_>,
    options: &ProgramOptions,
    target: CompileTarget,
    extra_headers: &[(&str, &[u8])],
) -> Result<()> {
    const CONTEXT: &str = "making a program cache key";
    if !matches!(code, SourceCode::Nvvm(_)) && !options.extra_sources.is_empty() {
        return Err(Error::invalid(
            CONTEXT,
            "extra_sources is only valid for NVVM IR; Program::new refuses it for C++ and PTX",
        ));
    }
    match code {
        SourceCode::Ptx(_) if target == CompileTarget::Ltoir => Err(Error::invalid(
            CONTEXT,
            "CompileTarget::Ltoir is not valid for PTX (Program::compile refuses it), so \
             a key for it would never be used",
        )),
        SourceCode::Cxx(_) => {
            let side_effects: Vec<&str> = [
                ("create_pch", options.create_pch.is_some()),
                ("time", options.time.is_some()),
                ("fdevice_time_trace", options.fdevice_time_trace.is_some()),
            ]
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect();
            if !side_effects.is_empty() {
                return Err(Error::invalid(
                    CONTEXT,
                    format!(
                        "options that have compile-time side effects ({}): a cache hit \
                         skips compilation, so the side effect would not occur; disable \
                         them, or compile without the cache",
                        side_effects.join(", ")
                    ),
                ));
            }
            if !extra_headers.is_empty() {
                return Ok(());
            }
            let external: Vec<&str> = [
                ("include_path", !options.include_path.is_empty()),
                ("pre_include", !options.pre_include.is_empty()),
                ("pch", options.pch),
                ("use_pch", options.use_pch.is_some()),
                ("pch_dir", options.pch_dir.is_some()),
            ]
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect();
            if !external.is_empty() {
                return Err(Error::invalid(
                    CONTEXT,
                    format!(
                        "options that pull in external file content ({}) without \
                         extra_headers: pass the contents of the headers (or PCH) the \
                         compile reads as extra_headers (cuda.core's extra_digest)",
                        external.join(", ")
                    ),
                ));
            }
            if let Some(name) = options.name.as_deref().filter(|n| n.contains(['/', '\\'])) {
                return Err(Error::invalid(
                    CONTEXT,
                    format!(
                        "options.name={name:?} has a directory component, relative to \
                         which NVRTC resolves quoted #include directives; pass the \
                         headers it may pull in as extra_headers"
                    ),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
