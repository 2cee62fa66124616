//! [`FileProgramCache`]: entries as files in a directory, safe across threads and
//! processes (written to a temporary file and renamed; checked by length and
//! SHA-256 when read; trimmed to a size limit).

use crate::code::cache::key::ProgramCacheKey;
use crate::code::cache::store::ProgramCache;
use crate::code::object::{CodeType, ObjectCode};
use crate::error::{Error, Result};
use crate::sync::Mutex;
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

/// The first bytes of every cache file.
pub(crate) const MAGIC: &[u8; 8] = b"CUDARSPC";
/// The version of the file format.
pub(crate) const FILE_VERSION: u32 = 1;
/// Magic, format version (u32), payload length (u64), SHA-256 of the payload.
pub(crate) const HEADER_LEN: usize = 8 + 4 + 8 + 32;
/// Entries are `<64 hex digits>.bin`.
pub(crate) const ENTRY_SUFFIX: &str = ".bin";
/// Entries being written are `.tmp-<random>.part`, renamed when complete.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";
pub(crate) const TEMP_SUFFIX: &str = ".part";
/// A temporary file this old was left by a writer that died; cleaning up removes it.
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

pub(crate) fn code_type_tag(t: CodeType) -> u8 {
    match t {
        CodeType::Cubin => 1,
        CodeType::Ptx => 2,
        CodeType::Ltoir => 3,
        CodeType::Fatbin => 4,
        CodeType::Object => 5,
        CodeType::Library => 6,
    }
}

pub(crate) fn code_type_from_tag(tag: u8) -> Option<CodeType> {
    Some(match tag {
        1 => CodeType::Cubin,
        2 => CodeType::Ptx,
        3 => CodeType::Ltoir,
        4 => CodeType::Fatbin,
        5 => CodeType::Object,
        6 => CodeType::Library,
        _ => return None,
    })
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    out.extend_from_slice(b);
}

/// The file for `code` under `key`: the header, then the payload: the key (32
/// bytes), the code type (u8), the name, the number of symbol-mapping entries
/// (u64) and each entry's source and mangled names, then the code; each string
/// and the code as a u64 length and bytes; all integers little-endian.
pub(crate) fn encode_entry(key: &ProgramCacheKey, code: &ObjectCode) -> Vec<u8> {
    let mut payload = Vec::with_capacity(128 + code.code().len());
    payload.extend_from_slice(key.as_bytes());
    payload.push(code_type_tag(code.code_type()));
    put_bytes(&mut payload, code.name().as_bytes());
    payload.extend_from_slice(&(code.symbol_mapping().len() as u64).to_le_bytes());
    for (source, mangled) in code.symbol_mapping() {
        put_bytes(&mut payload, source.as_bytes());
        put_bytes(&mut payload, mangled.as_bytes());
    }
    put_bytes(&mut payload, code.code());

    let mut file = Vec::with_capacity(HEADER_LEN + payload.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&FILE_VERSION.to_le_bytes());
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(&Sha256::digest(&payload));
    file.extend_from_slice(&payload);
    file
}

/// Reads a payload front to back; every read checks the bytes are there.
pub(crate) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }

    fn string(&mut self) -> Option<String> {
        std::str::from_utf8(self.bytes()?).ok().map(str::to_owned)
    }
}

/// The entry in `file` if it is whole, undamaged and stored under `key`; `None`
/// for anything else (wrong magic or version, short, checksum mismatch, bad
/// encoding, another key, a file `encode_entry` would not have written).
pub(crate) fn decode_entry(file: &[u8], key: &ProgramCacheKey) -> Option<ObjectCode> {
    let mut r = Reader(file);
    if r.take(MAGIC.len())? != MAGIC || u32::from_le_bytes(r.array()?) != FILE_VERSION {
        return None;
    }
    let len = usize::try_from(r.u64()?).ok()?;
    let digest: [u8; 32] = r.array()?;
    let payload = r.0;
    if payload.len() != len || Sha256::digest(payload).as_slice() != digest {
        return None;
    }

    let mut r = Reader(payload);
    if r.array::<32>()? != *key.as_bytes() {
        return None;
    }
    let code_type = code_type_from_tag(r.array::<1>()?[0])?;
    let name = r.string()?;
    let count = r.u64()?;
    let mut mapping = BTreeMap::new();
    for _ in 0..count {
        let source = r.string()?;
        let mangled = r.string()?;
        // In the order `encode_entry` writes them (a map's: sorted, no two
        // alike), so that one entry has exactly one file.
        if mapping
            .last_key_value()
            .is_some_and(|(last, _): (&String, _)| *last >= source)
        {
            return None;
        }
        mapping.insert(source, mangled);
    }
    let code = r.bytes()?;
    if code.is_empty() || !r.0.is_empty() {
        return None;
    }
    Some(ObjectCode::with_mapping(
        code.to_vec(),
        code_type,
        name,
        mapping,
    ))
}

pub(crate) fn io_error(context: String) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Io {
        context: context.into(),
        source,
    }
}

/// Whether `name` is an entry's file name: 64 lowercase hex digits and `.bin`.
pub(crate) fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(ENTRY_SUFFIX).is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

/// An entry file as listed: path, size and modification time.
pub(crate) type EntryFile = (PathBuf, u64, SystemTime);

/// Removes the entry file `path` if it is still the one listed (same size and
/// modification time): one that another writer replaced since is kept, being
/// new. Whether it was removed.
pub(crate) fn remove_if_unchanged(path: &Path, len: u64, modified: SystemTime) -> io::Result<bool> {
    match fs::metadata(path) {
        Ok(m) if m.len() == len && m.modified().ok() == Some(modified) => remove_if_present(path),
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes a file; one already gone is not an error.
pub(crate) fn remove_if_present(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// A [`ProgramCache`] on disk (`cuda.core`'s `FileStreamProgramCache`): one file
/// per entry, `<key>.bin`, in a directory that any number of threads and
/// processes may use at once.
///
/// * Writes are atomic: an entry is written to a temporary file in the same
///   directory, flushed to disk, then renamed over its final name, so a reader
///   sees the old file, the new one or none, never part of one. When several
///   processes store the same key at once, one of their (equivalent) entries wins.
/// * A damaged file (a torn write from a crash, a flipped byte, a file of another
///   format) is checked by magic, version, length, a SHA-256 of its contents and
///   its key; it reads as a miss and is removed, never an error.
/// * With [`with_max_size_bytes`](Self::with_max_size_bytes), the cache keeps a
///   running total of its files' sizes (entries and temporary files being
///   written), so that a [`put`](ProgramCache::put) under the limit does not
///   list the directory; one that takes the total over it lists the directory
///   (which corrects the total for what other processes did) and removes the
///   least recently used entries (by modification time, which a hit refreshes)
///   until the files fit.
/// * Opening a cache removes temporary files that writers which died left
///   more than an hour ago.
///
/// Only files named like entries (and temporary files a writer left more than an
/// hour ago) are ever removed, so a directory shared with other files is safe.
/// Eviction and [`clear`](Self::clear) remove an entry only if it is still the
/// file they listed (same size and modification time): one that another writer
/// replaced meanwhile is kept.
///
/// # File format
///
/// All integers little-endian: the magic `CUDARSPC`; the format version (u32);
/// the payload's length (u64); the payload's SHA-256 (32 bytes); the payload:
/// the key (32 bytes), the [`CodeType`] (u8), the name, the number of
/// symbol-mapping entries (u64) and each entry's two names (sorted by the first,
/// no two alike), then the code, each string and the code as a length (u64) and
/// bytes.
#[doc(alias = "FileStreamProgramCache")]
#[derive(Debug, Clone)]
pub struct FileProgramCache {
    pub(crate) dir: PathBuf,
    pub(crate) max_size_bytes: Option<u64>,
    /// The running total of the files' sizes (entries and temporary files), as
    /// this cache (and its clones) saw them; `None` until a capped write lists
    /// the directory. Shared by clones.
    pub(crate) tracked: Arc<Mutex<Option<u64>>>,
}

impl FileProgramCache {
    /// A cache in `dir`, which is created if missing.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(io_error(format!(
            "creating the program cache directory {}",
            dir.display()
        )))?;
        let cache = Self {
            dir,
            max_size_bytes: None,
            tracked: Arc::default(),
        };
        // Best effort: listing sweeps temporary files that writers which died
        // left (a directory that cannot be listed is an error at first use).
        let _ = cache.scan();
        Ok(cache)
    }

    /// The default directory: `cuda-rs/programs` in the user's cache directory
    /// (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS,
    /// `%LOCALAPPDATA%` on Windows); `None` where there is none.
    pub fn default_dir() -> Option<PathBuf> {
        dirs::cache_dir().map(|d| d.join("cuda-rs").join("programs"))
    }

    /// A cache in [`default_dir`](Self::default_dir).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the system has no user cache directory;
    /// as [`new`](Self::new).
    pub fn open_default() -> Result<Self> {
        let dir = Self::default_dir().ok_or_else(|| {
            Error::unsupported(
                "opening the default program cache",
                "this system has no user cache directory; name one with FileProgramCache::new",
            )
        })?;
        Self::new(dir)
    }

    /// Keeps the entries to at most `bytes` of files, evicting the least
    /// recently used on each [`put`](ProgramCache::put). The entry just stored is
    /// kept even when it alone is larger.
    #[must_use]
    pub fn with_max_size_bytes(mut self, bytes: u64) -> Self {
        self.max_size_bytes = Some(bytes);
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds (or would hold) the entry under `key`.
    pub fn path_of(&self, key: &ProgramCacheKey) -> PathBuf {
        self.dir.join(format!("{key}{ENTRY_SUFFIX}"))
    }

    /// The entry files: path, size and modification time.
    fn entries(&self) -> Result<Vec<EntryFile>> {
        Ok(self.scan()?.0)
    }

    /// The entry files (path, size and modification time) and the total size of
    /// the temporary files being written; removes those that writers which
    /// died left.
    fn scan(&self) -> Result<(Vec<EntryFile>, u64)> {
        let context = || format!("listing the program cache {}", self.dir.display());
        let mut out = Vec::new();
        let mut temp_bytes = 0;
        let read_dir = match fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((out, 0)),
            Err(e) => return Err(io_error(context())(e)),
        };
        let now = SystemTime::now();
        for entry in read_dir {
            let entry = entry.map_err(io_error(context()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let entry_file = is_entry_name(name);
            if !entry_file && !is_temp_name(name) {
                continue;
            }
            // Another process may remove the file between listing and looking.
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if entry_file {
                out.push((entry.path(), meta.len(), modified));
            } else if now
                .duration_since(modified)
                .is_ok_and(|age| age > STALE_TEMP_AGE)
            {
                // A writer that died left this; nobody will rename it.
                let _ = remove_if_present(&entry.path());
            } else {
                // Being written: it takes room until it is renamed.
                temp_bytes += meta.len();
            }
        }
        Ok((out, temp_bytes))
    }

    fn tracked(&self) -> crate::sync::MutexGuard<'_, Option<u64>> {
        self.tracked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many entries there are.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed.
    pub fn len(&self) -> Result<usize> {
        Ok(self.entries()?.len())
    }

    /// Whether there are no entries.
    ///
    /// # Errors
    /// As [`len`](Self::len).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The total size of the entry files, in bytes.
    ///
    /// # Errors
    /// As [`len`](Self::len).
    pub fn size_bytes(&self) -> Result<u64> {
        Ok(self.entries()?.iter().map(|(_, len, _)| len).sum())
    }

    /// Removes every entry (and temporary files left by writers that died).
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed or a file removed.
    pub fn clear(&self) -> Result<()> {
        // Listed again at the next capped write.
        *self.tracked() = None;
        for (path, len, modified) in self.entries()? {
            remove_if_unchanged(&path, len, modified)
                .map_err(io_error(format!("removing cache entry {}", path.display())))?;
        }
        Ok(())
    }

    /// Removes the least recently used entries, except `keep`, until the
    /// files (entries and temporary files) fit in `max` bytes; the total left.
    fn evict(&self, max: u64, keep: &Path) -> Result<u64> {
        let (mut entries, temp_bytes) = self.scan()?;
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum::<u64>() + temp_bytes;
        if total <= max {
            return Ok(total);
        }
        entries.sort_by_key(|(_, _, modified)| *modified);
        for (path, len, modified) in entries {
            if total <= max {
                break;
            }
            if path == keep {
                continue;
            }
            // A file another writer replaced since the listing is new: kept.
            if remove_if_unchanged(&path, len, modified)
                .map_err(io_error(format!("evicting cache entry {}", path.display())))?
            {
                total = total.saturating_sub(len);
            }
        }
        Ok(total)
    }

    /// A new temporary file in the directory (re-creating the directory if it
    /// was removed).
    fn temp_file(&self) -> Result<tempfile::NamedTempFile> {
        let make = || {
            tempfile::Builder::new()
                .prefix(TEMP_PREFIX)
                .suffix(TEMP_SUFFIX)
                .tempfile_in(&self.dir)
        };
        let context = || {
            format!(
                "creating a temporary file in the program cache {}",
                self.dir.display()
            )
        };
        match make() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&self.dir).map_err(io_error(context()))?;
                make().map_err(io_error(context()))
            }
            r => r.map_err(io_error(context())),
        }
    }
}

impl ProgramCache for FileProgramCache {
    /// Reads `<key>.bin`. A missing file is a miss; a damaged one is a miss and
    /// is removed. A hit refreshes the file's modification time (for
    /// [`with_max_size_bytes`](FileProgramCache::with_max_size_bytes)'s eviction).
    fn get(&self, key: &ProgramCacheKey) -> Result<Option<ObjectCode>> {
        let path = self.path_of(key);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(io_error(format!("reading cache entry {}", path.display()))(
                    e,
                ));
            }
        };
        match decode_entry(&bytes, key) {
            Some(code) => {
                // Best effort: a read-only cache still serves hits.
                if let Ok(f) = fs::File::options().write(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Ok(Some(code))
            }
            None => {
                // Damaged: a miss. If another process has just replaced it with a
                // good entry, that entry is lost and will be stored again.
                let _ = fs::remove_file(&path);
                Ok(None)
            }
        }
    }

    /// Writes `<key>.bin` atomically (temporary file, flush to disk, rename),
    /// then, when the running total is over the size limit, evicts entries
    /// beyond it.
    fn put(&self, key: &ProgramCacheKey, code: &ObjectCode) -> Result<()> {
        let path = self.path_of(key);
        let bytes = encode_entry(key, code);
        // The entry this one replaces leaves the total.
        let replaced = match self.max_size_bytes {
            Some(_) => fs::metadata(&path).map_or(0, |m| m.len()),
            None => 0,
        };
        let mut tmp = self.temp_file()?;
        let context = || format!("writing cache entry {}", path.display());
        tmp.write_all(&bytes).map_err(io_error(context()))?;
        tmp.as_file().sync_all().map_err(io_error(context()))?;
        if let Err(e) = tmp.persist(&path) {
            // On systems that cannot replace a file that is open, another
            // writer's entry for the same key may be in the way: that one will do.
            if !path.is_file() {
                return Err(io_error(context())(e.error));
            }
        }
        #[cfg(unix)]
        if let Ok(dir) = fs::File::open(&self.dir) {
            // Best effort: makes the rename itself durable.
            let _ = dir.sync_all();
        }
        if let Some(max) = self.max_size_bytes {
            let mut tracked = self.tracked();
            let total = match *tracked {
                Some(t) => t.saturating_sub(replaced) + bytes.len() as u64,
                None => {
                    let (entries, temp_bytes) = self.scan()?;
                    entries.iter().map(|(_, len, _)| len).sum::<u64>() + temp_bytes
                }
            };
            *tracked = Some(if total > max {
                self.evict(max, &path)?
            } else {
                total
            });
        }
        Ok(())
    }

    fn remove(&self, key: &ProgramCacheKey) -> Result<bool> {
        let path = self.path_of(key);
        let size = match self.max_size_bytes {
            Some(_) => fs::metadata(&path).map_or(0, |m| m.len()),
            None => 0,
        };
        let removed = remove_if_present(&path)
            .map_err(io_error(format!("removing cache entry {}", path.display())))?;
        if removed {
            // Never below zero, whatever another thread did meanwhile.
            let mut tracked = self.tracked();
            *tracked = tracked.map(|t| t.saturating_sub(size));
        }
        Ok(removed)
    }

    fn clear(&self) -> Result<()> {
        FileProgramCache::clear(self)
    }
}
