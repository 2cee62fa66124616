//! Caching compiled programs, in memory or on disk (the counterpart of
//! `cuda.core.utils`' `make_program_cache_key`, `ProgramCacheResource`,
//! `InMemoryProgramCache` and `FileStreamProgramCache`).
//!
//! * [`make_program_cache_key`] hashes everything that decides what a compilation
//!   produces (the compiler and its version, the target, the options, the source,
//!   the name expressions, the headers) into a [`ProgramCacheKey`].
//! * [`ProgramCache`] is what a cache does: [`get`](ProgramCache::get) and
//!   [`put`](ProgramCache::put) [`ObjectCode`] by key.
//! * [`InMemoryProgramCache`] keeps entries in this process, optionally bounded,
//!   evicting the least recently used.
//! * [`FileProgramCache`] keeps one file per entry in a directory, shared safely by
//!   any number of processes: writes are atomic, and a damaged file is a miss.
//! * [`compile_cached`] puts it together: a hit, or a compilation that is stored.
//!
//! ```no_run
//! use cudars_core::cache::{FileProgramCache, compile_cached};
//! use cudars_core::{CompileTarget, ProgramOptions, SourceCode};
//!
//! let cache = FileProgramCache::open_default()?;
//! let options = ProgramOptions { arch: Some("sm_90".into()), ..Default::default() };
//! let src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }";
//! // Compiles the first time (in any process using this cache); a file read after.
//! let cubin = compile_cached(&cache, SourceCode::Cxx(src), options, CompileTarget::Cubin, &[])?;
//! # Ok::<(), cudars_core::Error>(())
//! ```

use std::collections::HashMap;
use std::sync::PoisonError;

pub(crate) mod file;
pub(crate) mod key;
pub(crate) mod store;

pub use crate::code::cache::file::FileProgramCache;
pub use crate::code::cache::key::{ProgramCacheKey, make_program_cache_key};
pub use crate::code::cache::store::{ProgramCache, compile_cached, compile_cached_with_headers};
use crate::code::object::ObjectCode;
use crate::error::Result;
use crate::sync::{Mutex, MutexGuard};

/// The bytes an entry accounts for in a size limit: its code, name and mapping.
pub(crate) fn entry_size(code: &ObjectCode) -> u64 {
    let mapping: usize = code
        .symbol_mapping()
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    (code.code().len() + code.name().len() + mapping) as u64
}

/// A [`ProgramCache`] in this process's memory (`cuda.core`'s
/// `InMemoryProgramCache`), optionally bounded by a number of entries and/or a
/// number of bytes, beyond which the least recently used entries are evicted.
///
/// Entries are shared, not copied: a hit is a clone of the stored
/// [`ObjectCode`], which keeps the library it has loaded.
///
/// ```
/// use cudars_core::ObjectCode;
/// use cudars_core::cache::{InMemoryProgramCache, ProgramCache, ProgramCacheKey};
///
/// let cache = InMemoryProgramCache::new().with_max_entries(2);
/// let key = ProgramCacheKey::from_bytes([7; 32]);
/// cache.put(&key, &ObjectCode::from_ptx(".version 8.0")?)?;
/// assert_eq!(cache.get(&key)?.map(|c| c.code().to_vec()), Some(b".version 8.0".to_vec()));
/// assert_eq!(cache.len(), 1);
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct InMemoryProgramCache {
    pub(crate) state: Mutex<MemoryState>,
    pub(crate) max_entries: Option<usize>,
    pub(crate) max_size_bytes: Option<u64>,
}

#[derive(Debug, Default)]
pub(crate) struct MemoryState {
    pub(crate) entries: HashMap<ProgramCacheKey, MemoryEntry>,
    /// Advances on every use; an entry's `last_used` is the clock then.
    pub(crate) clock: u64,
    /// The sum of the entries' [`entry_size`]s.
    pub(crate) bytes: u64,
}

#[derive(Debug)]
pub(crate) struct MemoryEntry {
    pub(crate) code: ObjectCode,
    pub(crate) last_used: u64,
    pub(crate) size: u64,
}

impl InMemoryProgramCache {
    /// An unbounded cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps at most `n` entries (0 stores nothing).
    #[must_use]
    pub fn with_max_entries(mut self, n: usize) -> Self {
        self.max_entries = Some(n);
        self
    }

    /// Keeps at most `bytes` of entries (code, name and symbol mapping), evicting
    /// the least recently used. An entry larger than `bytes` on its own is not
    /// kept (as in `cuda.core`; the entries already stored stay), and 0 keeps
    /// nothing.
    #[must_use]
    pub fn with_max_size_bytes(mut self, bytes: u64) -> Self {
        self.max_size_bytes = Some(bytes);
        self
    }

    fn state(&self) -> MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many entries are stored.
    pub fn len(&self) -> usize {
        self.state().entries.len()
    }

    /// Whether no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the entries account for (code, names and symbol mappings).
    pub fn size_bytes(&self) -> u64 {
        self.state().bytes
    }

    /// Removes every entry.
    pub fn clear(&self) {
        let mut s = self.state();
        s.entries.clear();
        s.bytes = 0;
    }
}

impl ProgramCache for InMemoryProgramCache {
    fn get(&self, key: &ProgramCacheKey) -> Result<Option<ObjectCode>> {
        let mut s = self.state();
        s.clock += 1;
        let now = s.clock;
        Ok(s.entries.get_mut(key).map(|e| {
            e.last_used = now;
            e.code.clone()
        }))
    }

    fn put(&self, key: &ProgramCacheKey, code: &ObjectCode) -> Result<()> {
        if self.max_entries == Some(0) {
            return Ok(());
        }
        let mut s = self.state();
        s.clock += 1;
        let size = entry_size(code);
        if self.max_size_bytes.is_some_and(|m| size > m) {
            // It would not survive its own size-cap pass: it replaces, then
            // leaves, whatever was under its key.
            if let Some(old) = s.entries.remove(key) {
                s.bytes = s.bytes.saturating_sub(old.size);
            }
            return Ok(());
        }
        let entry = MemoryEntry {
            code: code.clone(),
            last_used: s.clock,
            size,
        };
        if let Some(old) = s.entries.insert(*key, entry) {
            s.bytes = s.bytes.saturating_sub(old.size);
        }
        s.bytes += size;
        loop {
            let over_count = self.max_entries.is_some_and(|m| s.entries.len() > m);
            let over_size = self.max_size_bytes.is_some_and(|m| s.bytes > m);
            if !(over_count || over_size) {
                break;
            }
            let oldest = s
                .entries
                .iter()
                .filter(|(k, _)| *k != key)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            let Some(oldest) = oldest else { break };
            if let Some(old) = s.entries.remove(&oldest) {
                s.bytes = s.bytes.saturating_sub(old.size);
            }
        }
        Ok(())
    }

    fn remove(&self, key: &ProgramCacheKey) -> Result<bool> {
        let mut s = self.state();
        Ok(match s.entries.remove(key) {
            Some(old) => {
                s.bytes = s.bytes.saturating_sub(old.size);
                true
            }
            None => false,
        })
    }

    fn clear(&self) -> Result<()> {
        InMemoryProgramCache::clear(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::code::cache::file::*;
    #[allow(unused_imports)]
    use crate::code::cache::key::*;
    #[allow(unused_imports)]
    use crate::code::cache::store::*;
    use crate::code::object::CodeType;
    use crate::error::Error;
    use sha2::{Digest as _, Sha256};
    use std::collections::BTreeMap;

    fn sample() -> ObjectCode {
        let mut mapping = BTreeMap::new();
        mapping.insert("add<float>".to_owned(), "_Z3addIfEvPT_S0_".to_owned());
        ObjectCode::with_mapping(b"\x7fELF...".to_vec(), CodeType::Cubin, "p".into(), mapping)
    }

    #[test]
    fn entries_round_trip() {
        let key = ProgramCacheKey([3; 32]);
        let code = sample();
        let file = encode_entry(&key, &code);
        let back = decode_entry(&file, &key);
        assert!(back.is_some_and(|b| b.code() == code.code()
            && b.code_type() == code.code_type()
            && b.name() == code.name()
            && b.symbol_mapping() == code.symbol_mapping()));
        // Another key's file is not this key's entry.
        assert!(decode_entry(&file, &ProgramCacheKey([4; 32])).is_none());
    }

    /// A file with a valid header around `payload`.
    fn with_header(payload: &[u8]) -> Vec<u8> {
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&FILE_VERSION.to_le_bytes());
        file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        file.extend_from_slice(&Sha256::digest(payload));
        file.extend_from_slice(payload);
        file
    }

    #[test]
    fn bad_encodings_are_rejected() {
        let key = ProgramCacheKey([3; 32]);
        let good = encode_entry(&key, &sample());
        let payload = &good[HEADER_LEN..];
        assert!(decode_entry(&with_header(payload), &key).is_some());
        // Every truncation of the payload, with a checksum that matches it.
        for n in 0..payload.len() {
            assert!(
                decode_entry(&with_header(&payload[..n]), &key).is_none(),
                "{n}"
            );
        }
        // Trailing bytes.
        let mut long = payload.to_vec();
        long.push(0);
        assert!(decode_entry(&with_header(&long), &key).is_none());
        // An unknown code type.
        let mut bad = payload.to_vec();
        bad[32] = 99;
        assert!(decode_entry(&with_header(&bad), &key).is_none());
        // A huge length.
        let mut bad = payload.to_vec();
        bad[33..41].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_entry(&with_header(&bad), &key).is_none());
        // Invalid UTF-8 in the name.
        let mut bad = payload.to_vec();
        bad[41] = 0xff;
        assert!(decode_entry(&with_header(&bad), &key).is_none());
        // Wrong version, wrong magic, garbage, nothing.
        let mut bad = good.clone();
        bad[8] = 2;
        assert!(decode_entry(&bad, &key).is_none());
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(decode_entry(&bad, &key).is_none());
        assert!(decode_entry(&[0xAB; 200], &key).is_none());
        assert!(decode_entry(&[], &key).is_none());
    }

    #[test]
    fn key_hex_round_trips() {
        let key = ProgramCacheKey(core::array::from_fn(|i| i as u8 * 7));
        let hex = key.to_string();
        assert_eq!(hex.len(), 64);
        assert!(is_entry_name(&format!("{hex}.bin")));
        assert_eq!(hex.parse::<ProgramCacheKey>().ok(), Some(key));
        assert_eq!(
            hex.to_uppercase().parse::<ProgramCacheKey>().ok(),
            Some(key)
        );
        assert!("xyz".parse::<ProgramCacheKey>().is_err());
        assert!("g".repeat(64).parse::<ProgramCacheKey>().is_err());
        assert!("é".repeat(32).parse::<ProgramCacheKey>().is_err());
        // A sign is not a hex digit (`u8::from_str_radix` takes `+f`).
        assert!("+f".repeat(32).parse::<ProgramCacheKey>().is_err());
    }

    mod hostile {
        //! Hostile cache files: decoding answers every byte string with an entry
        //! or a miss, and an entry only for the exact bytes that were stored.

        use super::*;
        use proptest::prelude::*;

        fn object() -> impl Strategy<Value = ObjectCode> {
            (
                proptest::collection::vec(any::<u8>(), 1..256),
                1u8..=6,
                ".{0,16}",
                proptest::collection::btree_map(".{0,8}", ".{0,8}", 0..4),
            )
                .prop_map(|(code, tag, name, mapping)| {
                    let kind = code_type_from_tag(tag).unwrap_or(CodeType::Cubin);
                    ObjectCode::with_mapping(code, kind, name, mapping)
                })
        }

        fn same(a: &ObjectCode, b: &ObjectCode) -> bool {
            a.code() == b.code()
                && a.code_type() == b.code_type()
                && a.name() == b.name()
                && a.symbol_mapping() == b.symbol_mapping()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(256)))]

            /// A key parses exactly from 64 hex digits, and writes back the same
            /// digits in lowercase.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn keys_parse_only_from_hex(text in prop_oneof!["[0-9a-fA-F+ -]{64}", ".{0,70}"]) {
                match text.parse::<ProgramCacheKey>() {
                    Ok(k) => prop_assert_eq!(k.to_string(), text.to_lowercase()),
                    Err(Error::InvalidArgument { .. }) => prop_assert!(
                        text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit())
                    ),
                    Err(other) => prop_assert!(false, "{other:?}"),
                }
            }

            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn arbitrary_files_are_misses(file in proptest::collection::vec(any::<u8>(), 0..512)) {
                prop_assert!(decode_entry(&file, &ProgramCacheKey([1; 32])).is_none());
            }

            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn entries_round_trip(code in object(), key in any::<[u8; 32]>()) {
                let key = ProgramCacheKey(key);
                let back = decode_entry(&encode_entry(&key, &code), &key);
                prop_assert!(back.is_some_and(|b| same(&b, &code)));
            }

            /// Damage to the file (bit flips, truncation, a grown tail) is a miss.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn damaged_files_are_misses(
                code in object(),
                flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..4),
                cut in any::<Option<usize>>(),
            ) {
                let key = ProgramCacheKey([9; 32]);
                let mut file = encode_entry(&key, &code);
                let good = file.clone();
                for (at, bit) in flips {
                    let n = file.len();
                    file[at % n] ^= 1 << bit;
                }
                if let Some(cut) = cut {
                    file.truncate(cut % (file.len() + 1));
                }
                let back = decode_entry(&file, &key);
                if file == good {
                    prop_assert!(back.is_some_and(|b| same(&b, &code)));
                } else {
                    prop_assert!(back.is_none());
                }
            }

            /// The payload's parser behind a valid header and checksum: damaged
            /// or forged lengths (up to `u64::MAX`) are misses, never a panic or
            /// a huge allocation.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn forged_payloads_are_misses_or_exact(
                code in object(),
                pokes in proptest::collection::vec((any::<usize>(), prop_oneof![any::<u64>(), Just(u64::MAX), 0u64..64]), 1..3),
                cut in any::<Option<usize>>(),
            ) {
                let key = ProgramCacheKey([5; 32]);
                let good = encode_entry(&key, &code);
                let mut payload = good[HEADER_LEN..].to_vec();
                for (at, value) in pokes {
                    let n = payload.len();
                    let at = at % n;
                    for (i, b) in value.to_le_bytes().iter().enumerate() {
                        if let Some(slot) = payload.get_mut(at + i) {
                            *slot = *b;
                        }
                    }
                }
                if let Some(cut) = cut {
                    payload.truncate(cut % (payload.len() + 1));
                }
                // Whatever decodes must encode back to the same file: one entry,
                // one file (a symbol mapping out of order once decoded too).
                if let Some(back) = decode_entry(&with_header(&payload), &key) {
                    prop_assert_eq!(encode_entry(&key, &back), with_header(&payload));
                }
            }
        }
    }
}

/// loom model checks (`RUSTFLAGS="--cfg loom" cargo test -p cudars-core --lib
/// --release loom`) of the in-memory cache's index as threads share it.
#[cfg(test)]
#[cfg(loom)]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two threads store different entries in a one-entry cache while a third
    /// reads one of them: the bound holds, the byte count is that of the entries
    /// kept, and a hit is the code stored under that key.
    #[test]
    fn loom_in_memory_cache_keeps_its_bound_and_byte_count() {
        loom::model(|| {
            let cache = Arc::new(InMemoryProgramCache::new().with_max_entries(1));
            let keys = [
                ProgramCacheKey::from_bytes([1; 32]),
                ProgramCacheKey::from_bytes([2; 32]),
            ];
            let ts: Vec<_> = keys
                .iter()
                .enumerate()
                .map(|(i, key)| {
                    let (cache, key) = (cache.clone(), *key);
                    loom::thread::spawn(move || {
                        let code = ObjectCode::from_ptx(vec![b'a'; i + 1]).unwrap();
                        cache.put(&key, &code).unwrap();
                    })
                })
                .collect();
            if let Some(hit) = cache.get(&keys[1]).unwrap() {
                assert_eq!(hit.code(), b"aa");
            }
            for t in ts {
                t.join().unwrap();
            }
            assert_eq!(cache.len(), 1);
            let s = cache.state();
            let sum: u64 = s.entries.values().map(|e| e.size).sum();
            assert_eq!(s.bytes, sum);
        });
    }
}
