//! Where the OS loader would find a soname, worked out without loading it.
//!
//! Used to find the toolkit root from a "canary" library (the `system-ctk-root`
//! step): `cuda.pathfinder` asks a child process to load the canary; reading the
//! loader's own search path (`LD_LIBRARY_PATH`, then `/etc/ld.so.cache`, then the
//! default directories) gives the same answer without a process or a side effect.

use std::path::{Path, PathBuf};

/// Where the loader would find `soname`, or `None`.
pub(crate) fn resolve(soname: &str) -> Option<PathBuf> {
    if let Some(lp) = std::env::var_os("LD_LIBRARY_PATH") {
        for dir in std::env::split_paths(&lp) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            let p = dir.join(soname);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    if let Ok(bytes) = std::fs::read("/etc/ld.so.cache") {
        if let Some(p) = lookup(&bytes, soname) {
            if Path::new(&p).is_file() {
                return Some(PathBuf::from(p));
            }
        }
    }
    let defaults: &[&str] = if cfg!(target_arch = "aarch64") {
        &[
            "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/lib64",
            "/usr/lib64",
            "/lib",
            "/usr/lib",
        ]
    } else {
        &[
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib64",
            "/usr/lib64",
            "/lib",
            "/usr/lib",
        ]
    };
    defaults
        .iter()
        .map(|d| Path::new(d).join(soname))
        .find(|p| p.is_file())
}

const MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const HEADER_LEN: usize = 48;
const ENTRY_LEN: usize = 24;
const FLAG_TYPE_MASK: i32 = 0x00ff;
const FLAG_ELF_LIBC6: i32 = 0x0003;
const FLAG_REQUIRED_MASK: i32 = 0xff00;

/// The architecture bits glibc stores for 64-bit libraries of this target.
fn arch_flag() -> i32 {
    if cfg!(target_arch = "x86_64") {
        0x0300
    } else if cfg!(target_arch = "aarch64") {
        0x0a00
    } else {
        -1
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn cstr_at(b: &[u8], at: usize) -> Option<&str> {
    let tail = b.get(at..)?;
    let end = tail.iter().position(|&c| c == 0)?;
    std::str::from_utf8(&tail[..end]).ok()
}

/// Looks `soname` up in the bytes of an `ld.so.cache` of glibc's current format
/// (`glibc-ld.so.cache1.1`, possibly after the old `ld.so-1.7.0` table).
pub(crate) fn lookup(bytes: &[u8], soname: &str) -> Option<String> {
    let start = bytes.windows(MAGIC.len()).position(|w| w == MAGIC)?;
    let b = &bytes[start..];
    let nlibs = u32_at(b, MAGIC.len())? as usize;
    let want_arch = arch_flag();
    for i in 0..nlibs {
        // A count larger than the file ends the walk at the first missing entry.
        let e = i.checked_mul(ENTRY_LEN)?.checked_add(HEADER_LEN)?;
        let flags = u32_at(b, e)? as i32;
        let key = u32_at(b, e.checked_add(4)?)? as usize;
        let value = u32_at(b, e.checked_add(8)?)? as usize;
        if flags & FLAG_TYPE_MASK != FLAG_ELF_LIBC6 {
            continue;
        }
        if want_arch >= 0 && flags & FLAG_REQUIRED_MASK != want_arch {
            continue;
        }
        // String offsets count from the start of the new-format header (glibc's
        // `cache_data`), whether or not the old table precedes it.
        let (Some(k), Some(v)) = (cstr_at(b, key), cstr_at(b, value)) else {
            continue;
        };
        if k == soname {
            return Some(v.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, &str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let strings_at = HEADER_LEN + entries.len() * ENTRY_LEN;
        let mut table = Vec::new();
        for (flags, k, v) in entries {
            let ko = strings_at + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = strings_at + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            table.extend_from_slice(&flags.to_ne_bytes());
            table.extend_from_slice(&(ko as u32).to_ne_bytes());
            table.extend_from_slice(&(vo as u32).to_ne_bytes());
            table.extend_from_slice(&0u32.to_ne_bytes());
            table.extend_from_slice(&0u64.to_ne_bytes());
        }
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(entries.len() as u32).to_ne_bytes());
        out.extend_from_slice(&(strings.len() as u32).to_ne_bytes());
        out.resize(HEADER_LEN, 0);
        out.extend(table);
        out.extend(strings);
        out
    }

    #[test]
    fn finds_the_entry_of_this_architecture() {
        let arch = arch_flag();
        let b = cache(&[
            (FLAG_ELF_LIBC6, "libcudart.so.13", "/lib32/libcudart.so.13"),
            (
                FLAG_ELF_LIBC6 | arch,
                "libcudart.so.13",
                "/usr/local/cuda/lib64/libcudart.so.13",
            ),
            (FLAG_ELF_LIBC6 | arch, "libz.so.1", "/lib/libz.so.1"),
        ]);
        assert_eq!(
            lookup(&b, "libcudart.so.13").as_deref(),
            Some("/usr/local/cuda/lib64/libcudart.so.13")
        );
        assert_eq!(lookup(&b, "libz.so.1").as_deref(), Some("/lib/libz.so.1"));
        assert_eq!(lookup(&b, "libnvrtc.so.13"), None);
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert_eq!(lookup(b"", "libc.so.6"), None);
        assert_eq!(
            lookup(b"glibc-ld.so.cache1.1\xff\xff\xff\x7f", "libc.so.6"),
            None
        );
        let mut b = cache(&[(FLAG_ELF_LIBC6 | arch_flag(), "libz.so.1", "/lib/libz.so.1")]);
        b.truncate(b.len() - 5);
        let _ = lookup(&b, "libz.so.1");
    }

    mod hostile {
        use super::*;
        use proptest::prelude::*;

        fn real_cache() -> Vec<u8> {
            cache(&[
                (FLAG_ELF_LIBC6 | arch_flag(), "libz.so.1", "/lib/libz.so.1"),
                (
                    FLAG_ELF_LIBC6 | arch_flag(),
                    "libcudart.so.13",
                    "/opt/cuda/lib64/libcudart.so.13",
                ),
            ])
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(256)))]

            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn arbitrary_bytes_find_nothing_or_a_string(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
                let mut b = MAGIC.to_vec();
                b.extend(bytes);
                let _ = lookup(&b, "libz.so.1");
            }

            /// A damaged cache (bit flips, truncation, huge counts and offsets) answers
            /// with nothing or with one of the strings it holds.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn damaged_caches_answer_with_their_own_strings(
                flips in proptest::collection::vec((any::<usize>(), 0u8..8), 0..6),
                count in prop_oneof![Just(None), Just(Some(u32::MAX)), any::<u32>().prop_map(Some)],
                cut in any::<Option<usize>>(),
                prefix in proptest::collection::vec(any::<u8>(), 0..64),
            ) {
                let mut b = real_cache();
                if let Some(c) = count {
                    b[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&c.to_ne_bytes());
                }
                let n = b.len();
                for (at, bit) in flips {
                    b[at % n] ^= 1 << bit;
                }
                if let Some(cut) = cut {
                    b.truncate(cut % (n + 1));
                }
                // The old format's table may come first.
                let mut file = prefix;
                file.extend_from_slice(&b);
                if let Some(found) = lookup(&file, "libcudart.so.13") {
                    let text = String::from_utf8_lossy(&file);
                    prop_assert!(text.contains(found.as_str()), "{found:?}");
                }
            }
        }
    }

    #[test]
    fn reads_this_machines_cache() {
        // Every glibc system has libc.so.6 in its cache; the answer must be a real file.
        let Ok(bytes) = std::fs::read("/etc/ld.so.cache") else {
            return;
        };
        let p = lookup(&bytes, "libc.so.6").expect("libc.so.6 in /etc/ld.so.cache");
        assert!(Path::new(&p).is_file(), "{p}");
    }
}
