//! Compiled code: cubin, PTX, fatbin, LTO-IR, relocatable objects and libraries.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};

/// The kind of code an [`ObjectCode`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeType {
    /// A cubin (ELF for one architecture).
    Cubin,
    /// PTX text (NUL-terminated when loaded).
    Ptx,
    /// NVVM LTO-IR, for link-time optimisation.
    Ltoir,
    /// A fat binary (several cubins and/or PTX).
    Fatbin,
    /// A relocatable host object holding device code (`.o`).
    Object,
    /// A static library of objects (`.a`).
    Library,
}

impl CodeType {
    /// The usual file extension (`cubin`, `ptx`, `ltoir`, `fatbin`, `o`, `a`).
    pub fn extension(self) -> &'static str {
        match self {
            Self::Cubin => "cubin",
            Self::Ptx => "ptx",
            Self::Ltoir => "ltoir",
            Self::Fatbin => "fatbin",
            Self::Object => "o",
            Self::Library => "a",
        }
    }
}

impl CodeType {
    /// The name `cuda.core` gives it (`ObjectCode.code_type`): `cubin`, `ptx`,
    /// `ltoir`, `fatbin`, `object`, `library`. [`Display`](fmt::Display) writes
    /// this, as does [`CompileTarget`](crate::CompileTarget)'s for the same kind.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cubin => "cubin",
            Self::Ptx => "ptx",
            Self::Ltoir => "ltoir",
            Self::Fatbin => "fatbin",
            Self::Object => "object",
            Self::Library => "library",
        }
    }
}

/// Writes [`name`](CodeType::name): `cuda.core`'s spelling, the same as the
/// matching [`CompileTarget`](crate::CompileTarget) writes.
impl fmt::Display for CodeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compiled device code, as bytes, with its kind, a name (for logs) and the
/// mapping from source names to mangled names that a compilation with name
/// expressions produced.
///
/// [`get_kernel`](Self::get_kernel) loads it (once, as a context-independent
/// [`Library`](crate::Library)) and looks a kernel up by its source or mangled name.
/// `ObjectCode` is `Send + Sync` and cheap to clone.
#[derive(Clone)]
pub struct ObjectCode {
    pub(crate) inner: Arc<ObjectInner>,
}

pub(crate) struct ObjectInner {
    pub(crate) code: Vec<u8>,
    pub(crate) code_type: CodeType,
    pub(crate) name: String,
    pub(crate) symbol_mapping: BTreeMap<String, String>,
    /// The one library this code is loaded as (by `library`, `get_kernel`,
    /// `to_library`, …) and the options it was loaded with: one module per
    /// `ObjectCode`, so a `__constant__` written through any of them is the one
    /// its kernels read. The options are a `LibraryOptions`, held as `Any` so
    /// that this module, below `code::library`, does not name it (the loading
    /// side, `code::library`, puts and compares them).
    pub(crate) loaded: OnceLock<(
        crate::code::library_handle::Library,
        Box<dyn std::any::Any + Send + Sync>,
    )>,
}

impl fmt::Debug for ObjectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCode")
            .field("code_type", &self.inner.code_type)
            .field("name", &self.inner.name)
            .field("bytes", &self.inner.code.len())
            .field("symbol_mapping", &self.inner.symbol_mapping)
            .finish()
    }
}

impl ObjectCode {
    /// Object code of `code_type` from bytes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for empty code.
    pub fn new(
        code: impl Into<Vec<u8>>,
        code_type: CodeType,
        name: impl Into<String>,
    ) -> Result<Self> {
        let code = code.into();
        if code.is_empty() {
            return Err(Error::invalid(
                format!("making {code_type} object code"),
                "the code is empty",
            ));
        }
        Ok(Self::with_mapping(
            code,
            code_type,
            name.into(),
            BTreeMap::new(),
        ))
    }

    pub(crate) fn with_mapping(
        code: Vec<u8>,
        code_type: CodeType,
        name: String,
        symbol_mapping: BTreeMap<String, String>,
    ) -> Self {
        Self {
            inner: Arc::new(ObjectInner {
                code,
                code_type,
                name,
                symbol_mapping,
                loaded: OnceLock::new(),
            }),
        }
    }

    /// A cubin.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_cubin(code: impl Into<Vec<u8>>) -> Result<Self> {
        Self::new(code, CodeType::Cubin, "cubin")
    }

    /// PTX text.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_ptx(code: impl Into<Vec<u8>>) -> Result<Self> {
        Self::new(code, CodeType::Ptx, "ptx")
    }

    /// LTO-IR.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_ltoir(code: impl Into<Vec<u8>>) -> Result<Self> {
        Self::new(code, CodeType::Ltoir, "ltoir")
    }

    /// A fat binary.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_fatbin(code: impl Into<Vec<u8>>) -> Result<Self> {
        Self::new(code, CodeType::Fatbin, "fatbin")
    }

    /// A relocatable object.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_object(code: impl Into<Vec<u8>>) -> Result<Self> {
        Self::new(code, CodeType::Object, "object")
    }

    /// A static library.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_library(code: impl Into<Vec<u8>>) -> Result<Self> {
        Self::new(code, CodeType::Library, "library")
    }

    /// Reads object code of `code_type` from a file; the file name becomes its name.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; as [`new`](Self::new).
    pub fn from_file(path: impl AsRef<Path>, code_type: CodeType) -> Result<Self> {
        let path = path.as_ref();
        let code = std::fs::read(path).map_err(|source| Error::Io {
            context: format!("reading {code_type} object code from {}", path.display()).into(),
            source,
        })?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Self::new(code, code_type, name)
    }

    /// This code under another name (the name used in logs; `cuda.core`'s
    /// `name=` argument of the `ObjectCode.from_*` constructors).
    #[must_use]
    pub fn with_name(self, name: impl Into<String>) -> Self {
        let (code, code_type, _, mapping) = self.into_parts();
        Self::with_mapping(code, code_type, name.into(), mapping)
    }

    /// This code with `mapping` (source names, such as the name expression
    /// `add<float>`, to the mangled names they compiled to) as its
    /// [`symbol_mapping`](Self::symbol_mapping), replacing any it had:
    /// `cuda.core`'s `symbol_mapping=` argument of the `ObjectCode.from_*`
    /// constructors. [`get_kernel`](Self::get_kernel) then finds a kernel of
    /// prebuilt code (a cubin saved from an earlier compile, for instance) by
    /// the name expression, as it does for the code the compile returned.
    #[must_use]
    pub fn with_symbol_mapping<K, V>(self, mapping: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        let (code, code_type, name, _) = self.into_parts();
        let mapping = mapping
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        Self::with_mapping(code, code_type, name, mapping)
    }

    /// The parts, without copying the bytes when this is the only handle.
    fn into_parts(self) -> (Vec<u8>, CodeType, String, BTreeMap<String, String>) {
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => (
                inner.code,
                inner.code_type,
                inner.name,
                inner.symbol_mapping,
            ),
            Err(shared) => (
                shared.code.clone(),
                shared.code_type,
                shared.name.clone(),
                shared.symbol_mapping.clone(),
            ),
        }
    }

    /// The bytes.
    pub fn code(&self) -> &[u8] {
        &self.inner.code
    }

    /// The kind of code.
    pub fn code_type(&self) -> CodeType {
        self.inner.code_type
    }

    /// The name used in logs.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Source names (name expressions given to the compiler, such as
    /// `add<float>`) to their mangled names.
    pub fn symbol_mapping(&self) -> &BTreeMap<String, String> {
        &self.inner.symbol_mapping
    }

    /// The name to look a symbol up by: its mangled name if `name` is a name
    /// expression the compiler mapped, else `name` itself.
    pub fn lowered_name<'a>(&'a self, name: &'a str) -> &'a str {
        lower(&self.inner.symbol_mapping, name)
    }
}

/// `name`'s mangled name in `mapping` (source names to mangled names), or `name`.
pub(crate) fn lower<'a>(mapping: &'a BTreeMap<String, String>, name: &'a str) -> &'a str {
    mapping.get(name).map_or(name, String::as_str)
}
