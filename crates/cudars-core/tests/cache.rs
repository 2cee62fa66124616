//! The program cache without a GPU: keys (stability, sensitivity), the in-memory
//! cache, the file cache (round trips, eviction, damaged files, many processes
//! writing at once) and `compile_cached` through NVRTC. Tests that need NVRTC or
//! NVVM skip (saying so) without it, and fail without it when
//! `CUDA_RS_REQUIRE_WHEELS=1`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use cudars_core::cache::{
    FileProgramCache, InMemoryProgramCache, ProgramCache, ProgramCacheKey, compile_cached,
    compile_cached_with_headers, make_program_cache_key,
};
use cudars_core::{CodeType, CompileTarget, ObjectCode, ProgramOptions, SourceCode};
use cudars_tests::require_libs;

const TEMPLATE_SRC: &str = "template<typename T> __global__ void scale(T* x, T a) {\n\
  x[threadIdx.x] *= a;\n}\n";

fn key(n: u8) -> ProgramCacheKey {
    ProgramCacheKey::from_bytes([n; 32])
}

fn object(name: &str, bytes: &[u8]) -> ObjectCode {
    ObjectCode::new(bytes.to_vec(), CodeType::Cubin, name).unwrap()
}

fn sm(arch: &str) -> ProgramOptions {
    ProgramOptions {
        arch: Some(arch.into()),
        ..Default::default()
    }
}

/// An architecture the loaded NVRTC can make a cubin for.
fn some_arch() -> String {
    let archs = cudars_core::nvrtc::supported_archs().unwrap();
    let n = if archs.contains(&90) {
        90
    } else {
        *archs.last().unwrap()
    };
    format!("sm_{n}")
}

fn same(a: &ObjectCode, b: &ObjectCode) {
    assert_eq!(a.code(), b.code());
    assert_eq!(a.code_type(), b.code_type());
    assert_eq!(a.name(), b.name());
    assert_eq!(a.symbol_mapping(), b.symbol_mapping());
}

/// The entry and temporary files in `dir`, by name.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------- keys

#[test]
fn key_is_stable_and_pinned() {
    // PTX to PTX involves no compiler, so the key depends on the encoding alone:
    // the same on every machine and in every run, and pinned here so that a change
    // to the encoding is seen (it must come with a new key version). The value was
    // checked against an independent re-encoding (Python's hashlib) of the
    // documented fields.
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
    let k = make_program_cache_key(
        &SourceCode::Ptx(ptx),
        &ProgramOptions::default(),
        CompileTarget::Ptx,
        &[],
        &[],
    )
    .unwrap();
    let again = make_program_cache_key(
        &SourceCode::Ptx(ptx),
        &ProgramOptions::default(),
        CompileTarget::Ptx,
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(k, again);
    println!("pinned PTX key: {k}");
    assert_eq!(
        k.to_string(),
        "12d6a6c66d6cb4b5ac51625340143eddb0143e63b88f6ed3b466e5aac8476da5",
        "the key encoding changed: bump KEY_VERSION and update this value"
    );
    assert_eq!(k.to_string().parse::<ProgramCacheKey>().unwrap(), k);
}

#[test]
fn key_changes_with_every_input() {
    require_libs!("nvrtc");
    let src = "template<typename T> __global__ void k(T* p) { *p = 1; }";
    let exprs = ["k<float>", "k<int>"];
    let headers: [(&str, &[u8]); 2] = [("a.h", b"#define A 1"), ("b.h", b"#define B 2")];
    let base = ProgramOptions {
        arch: Some("sm_90".into()),
        std: Some("c++17".into()),
        ..Default::default()
    };
    let mk = |code: SourceCode<'_>,
              options: &ProgramOptions,
              target: CompileTarget,
              exprs: &[&str],
              headers: &[(&str, &[u8])]| {
        make_program_cache_key(&code, options, target, exprs, headers).unwrap()
    };
    let k0 = mk(
        SourceCode::Cxx(src),
        &base,
        CompileTarget::Cubin,
        &exprs,
        &headers,
    );

    // Stable, and insensitive to the order (and repetition) of name expressions
    // and headers.
    assert_eq!(
        k0,
        mk(
            SourceCode::Cxx(src),
            &base,
            CompileTarget::Cubin,
            &exprs,
            &headers
        )
    );
    assert_eq!(
        k0,
        mk(
            SourceCode::Cxx(src),
            &base,
            CompileTarget::Cubin,
            &["k<int>", "k<float>", "k<int>"],
            &[headers[1], headers[0]]
        )
    );
    // `name: None` is the default name.
    let named_default = ProgramOptions {
        name: Some("default_program".into()),
        ..base.clone()
    };
    assert_eq!(
        k0,
        mk(
            SourceCode::Cxx(src),
            &named_default,
            CompileTarget::Cubin,
            &exprs,
            &headers
        )
    );

    let with = |f: fn(&mut ProgramOptions)| {
        let mut o = base.clone();
        f(&mut o);
        mk(
            SourceCode::Cxx(src),
            &o,
            CompileTarget::Cubin,
            &exprs,
            &headers,
        )
    };
    let variants = [
        (
            "source",
            mk(
                SourceCode::Cxx("//\n"),
                &base,
                CompileTarget::Cubin,
                &exprs,
                &headers,
            ),
        ),
        ("source, one byte", {
            let other = src.replace("= 1", "= 2");
            mk(
                SourceCode::Cxx(&other),
                &base,
                CompileTarget::Cubin,
                &exprs,
                &headers,
            )
        }),
        (
            "target",
            mk(
                SourceCode::Cxx(src),
                &base,
                CompileTarget::Ptx,
                &exprs,
                &headers,
            ),
        ),
        (
            "backend",
            mk(
                SourceCode::Ptx(src),
                &base,
                CompileTarget::Ptx,
                &exprs,
                &headers,
            ),
        ),
        (
            "fewer name expressions",
            mk(
                SourceCode::Cxx(src),
                &base,
                CompileTarget::Cubin,
                &exprs[..1],
                &headers,
            ),
        ),
        (
            "another name expression",
            mk(
                SourceCode::Cxx(src),
                &base,
                CompileTarget::Cubin,
                &["k<float>", "k<double>"],
                &headers,
            ),
        ),
        (
            "no headers",
            mk(
                SourceCode::Cxx(src),
                &base,
                CompileTarget::Cubin,
                &exprs,
                &[],
            ),
        ),
        (
            "header contents",
            mk(
                SourceCode::Cxx(src),
                &base,
                CompileTarget::Cubin,
                &exprs,
                &[headers[0], ("b.h", b"#define B 3")],
            ),
        ),
        (
            "header name",
            mk(
                SourceCode::Cxx(src),
                &base,
                CompileTarget::Cubin,
                &exprs,
                &[headers[0], ("c.h", headers[1].1)],
            ),
        ),
        ("arch", with(|o| o.arch = Some("sm_80".into()))),
        ("std", with(|o| o.std = Some("c++20".into()))),
        ("a flag", with(|o| o.use_fast_math = true)),
        ("an optional flag", with(|o| o.ftz = Some(false))),
        (
            "a macro",
            with(|o| o.define_macro.push(("N".into(), Some("4".into())))),
        ),
        (
            "a macro's value",
            with(|o| o.define_macro.push(("N".into(), Some("5".into())))),
        ),
        (
            "include path",
            with(|o| o.include_path.push("/opt/inc".into())),
        ),
        (
            "another include path",
            with(|o| o.include_path.push("/opt/inc2".into())),
        ),
        ("pre-include", with(|o| o.pre_include.push("x.h".into()))),
        ("name", with(|o| o.name = Some("other".into()))),
        ("extra option", with(|o| o.extra.push("--dopt=on".into()))),
    ];
    let mut seen = HashSet::from([k0]);
    for (what, k) in variants {
        assert!(seen.insert(k), "changing the {what} did not change the key");
    }
}

#[test]
fn nvvm_keys_cover_the_ir_and_extra_sources() {
    require_libs!("nvvm");
    let ir = b"target triple = \"nvptx64-nvidia-cuda\"\n";
    let base = sm("sm_90");
    let k = |ir: &[u8], o: &ProgramOptions, t| {
        make_program_cache_key(&SourceCode::Nvvm(ir), o, t, &[], &[]).unwrap()
    };
    let k0 = k(ir, &base, CompileTarget::Ptx);
    assert_eq!(k0, k(ir, &base, CompileTarget::Ptx));
    let libdevice = ProgramOptions {
        extra_sources: vec![("libdevice".into(), b"BC...".to_vec())],
        ..base.clone()
    };
    let keys = [
        k0,
        k(b"; other\n", &base, CompileTarget::Ptx),
        k(ir, &libdevice, CompileTarget::Ptx),
        k(ir, &sm("sm_80"), CompileTarget::Ptx),
        k(
            ir,
            &ProgramOptions {
                debug: true,
                ..base.clone()
            },
            CompileTarget::Ptx,
        ),
    ];
    assert_eq!(HashSet::from(keys).len(), keys.len());
}

// ---------------------------------------------------------------- in memory

#[test]
fn in_memory_hits_misses_and_eviction() {
    let cache = InMemoryProgramCache::new();
    assert!(cache.get(&key(1)).unwrap().is_none());
    let a = object("a", b"AAAA");
    cache.put(&key(1), &a).unwrap();
    same(&cache.get(&key(1)).unwrap().unwrap(), &a);
    assert!(cache.contains(&key(1)).unwrap());
    assert!(!cache.contains(&key(2)).unwrap());
    assert_eq!((cache.len(), cache.size_bytes()), (1, 5));
    // Replacing an entry.
    let a2 = object("a2", b"AAAAAAAA");
    cache.put(&key(1), &a2).unwrap();
    same(&cache.get(&key(1)).unwrap().unwrap(), &a2);
    assert_eq!((cache.len(), cache.size_bytes()), (1, 10));
    assert!(cache.remove(&key(1)).unwrap());
    assert!(!cache.remove(&key(1)).unwrap());
    assert!(cache.is_empty());

    // At most two entries: the least recently used goes.
    let lru = InMemoryProgramCache::new().with_max_entries(2);
    lru.put(&key(1), &object("1", b"1")).unwrap();
    lru.put(&key(2), &object("2", b"2")).unwrap();
    assert!(lru.get(&key(1)).unwrap().is_some()); // 2 is now the oldest
    lru.put(&key(3), &object("3", b"3")).unwrap();
    assert_eq!(lru.len(), 2);
    assert!(lru.get(&key(2)).unwrap().is_none());
    assert!(lru.get(&key(1)).unwrap().is_some());
    assert!(lru.get(&key(3)).unwrap().is_some());
    ProgramCache::clear(&lru).unwrap();
    assert!(lru.is_empty());

    // A byte budget; an entry too big for it alone is not kept, and evicts
    // nothing (nor survives under a key that had a smaller entry).
    let sized = InMemoryProgramCache::new().with_max_size_bytes(25);
    for n in 1..=3 {
        sized.put(&key(n), &object("x", &[n; 9])).unwrap();
    }
    assert_eq!((sized.len(), sized.size_bytes()), (2, 20));
    assert!(sized.get(&key(1)).unwrap().is_none());
    sized.put(&key(9), &object("big", &[0; 100])).unwrap();
    assert_eq!((sized.len(), sized.size_bytes()), (2, 20));
    assert!(sized.get(&key(9)).unwrap().is_none());
    sized.put(&key(3), &object("big", &[0; 100])).unwrap();
    assert_eq!((sized.len(), sized.size_bytes()), (1, 10));
    assert!(sized.get(&key(3)).unwrap().is_none());

    let off = InMemoryProgramCache::new().with_max_entries(0);
    off.put(&key(1), &a).unwrap();
    assert!(off.get(&key(1)).unwrap().is_none());
}

// ---------------------------------------------------------------- files

#[test]
fn file_cache_round_trips_between_instances() {
    let dir = tempfile::tempdir().unwrap();
    let writer = FileProgramCache::new(dir.path().join("nested/programs")).unwrap();
    let reader = FileProgramCache::new(writer.dir()).unwrap();
    assert!(reader.get(&key(1)).unwrap().is_none());

    let mut stored = vec![
        (
            key(1),
            ObjectCode::new(b"ptx text".to_vec(), CodeType::Ptx, "p").unwrap(),
        ),
        (key(2), object("c", &(0..=255).collect::<Vec<u8>>())),
        (key(3), ObjectCode::from_fatbin(vec![7u8; 100_000]).unwrap()),
    ];
    if cudars_tests::require_lib(&cudars_tests::current_test_name(), "nvrtc") {
        // A symbol mapping, from a real compilation.
        let options = ProgramOptions {
            name: Some("templated".into()),
            ..sm(&some_arch())
        };
        let compiled = cudars_core::Program::new(SourceCode::Cxx(TEMPLATE_SRC), options)
            .unwrap()
            .compile(CompileTarget::Cubin, &["scale<float>", "scale<int>"])
            .unwrap();
        assert_eq!(compiled.symbol_mapping().len(), 2);
        stored.push((key(4), compiled));
    }
    for (k, code) in &stored {
        writer.put(k, code).unwrap();
        assert!(writer.path_of(k).is_file());
    }
    for (k, code) in &stored {
        same(&reader.get(k).unwrap().expect("a hit"), code);
    }
    assert_eq!(reader.len().unwrap(), stored.len());
    assert!(reader.size_bytes().unwrap() > 100_000);

    // Other files in the directory are not entries and survive `clear`.
    fs::write(writer.dir().join("notes.txt"), "mine").unwrap();
    assert!(reader.remove(&key(1)).unwrap());
    assert!(!reader.remove(&key(1)).unwrap());
    assert!(writer.get(&key(1)).unwrap().is_none());
    ProgramCache::clear(&reader).unwrap();
    assert!(writer.is_empty().unwrap());
    assert_eq!(files_in(writer.dir()), ["notes.txt"]);

    // A removed directory is made again on the next put.
    fs::remove_dir_all(writer.dir()).unwrap();
    assert!(writer.get(&key(2)).unwrap().is_none());
    writer.put(&key(2), &stored[1].1).unwrap();
    same(&reader.get(&key(2)).unwrap().unwrap(), &stored[1].1);
}

#[test]
fn damaged_files_are_misses_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileProgramCache::new(dir.path()).unwrap();
    let code = object("victim", &vec![0x5a; 4096]);
    for n in 1..=6 {
        cache.put(&key(n), &code).unwrap();
    }
    let len = fs::metadata(cache.path_of(&key(1))).unwrap().len();
    // 1: torn mid-payload (as by a crash in a writer without atomic rename).
    fs::File::options()
        .write(true)
        .open(cache.path_of(&key(1)))
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    // 2: one byte flipped in the payload.
    let mut bytes = fs::read(cache.path_of(&key(2))).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x01;
    fs::write(cache.path_of(&key(2)), &bytes).unwrap();
    // 3: shorter than the header; 4: empty; 5: another key's (valid) entry.
    fs::write(cache.path_of(&key(3)), b"CUDARSPC\x01").unwrap();
    fs::write(cache.path_of(&key(4)), b"").unwrap();
    fs::copy(cache.path_of(&key(6)), cache.path_of(&key(5))).unwrap();

    for n in 1..=5 {
        assert!(
            cache.get(&key(n)).unwrap().is_none(),
            "entry {n} should miss"
        );
        assert!(
            !cache.path_of(&key(n)).exists(),
            "entry {n} should be removed"
        );
    }
    same(&cache.get(&key(6)).unwrap().unwrap(), &code);
    // A later put works.
    cache.put(&key(1), &code).unwrap();
    same(&cache.get(&key(1)).unwrap().unwrap(), &code);
    assert_eq!(cache.len().unwrap(), 2);

    // A file of garbage and a directory in an entry's place: a miss, and an
    // I/O error that says which file.
    fs::write(cache.path_of(&key(7)), vec![0xffu8; 10_000]).unwrap();
    assert!(cache.get(&key(7)).unwrap().is_none());
    fs::create_dir(cache.path_of(&key(8))).unwrap();
    let err = cache.get(&key(8)).unwrap_err();
    assert!(matches!(err, cudars_core::Error::Io { .. }), "{err}");
    assert!(err.to_string().contains(&key(8).to_string()), "{err}");
}

#[test]
fn file_cache_evicts_least_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let unbounded = FileProgramCache::new(dir.path()).unwrap();
    let code = object("e", &[1u8; 1000]);
    unbounded.put(&key(1), &code).unwrap();
    let entry = fs::metadata(unbounded.path_of(&key(1))).unwrap().len();
    let cache = unbounded.clone().with_max_size_bytes(entry * 3);
    let set_age = |n: u8, secs: u64| {
        fs::File::options()
            .write(true)
            .open(cache.path_of(&key(n)))
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    };
    for n in 2..=3 {
        cache.put(&key(n), &code).unwrap();
    }
    set_age(1, 300);
    set_age(2, 200);
    set_age(3, 100);
    // A hit makes 1 the most recently used, so 2 goes when 4 comes.
    assert!(cache.get(&key(1)).unwrap().is_some());
    cache.put(&key(4), &code).unwrap();
    assert_eq!(cache.len().unwrap(), 3);
    assert!(!cache.path_of(&key(2)).exists());
    assert!(cache.size_bytes().unwrap() <= entry * 3);

    // An entry larger than the limit is kept (alone).
    let tiny = unbounded.clone().with_max_size_bytes(10);
    tiny.put(&key(5), &code).unwrap();
    assert_eq!(tiny.len().unwrap(), 1);
    assert!(tiny.get(&key(5)).unwrap().is_some());

    // Temporary files: a stale one (a dead writer's) is cleaned up, a fresh one
    // (a writer at work) is left alone.
    let stale = dir.path().join(".tmp-dead.part");
    let fresh = dir.path().join(".tmp-busy.part");
    fs::write(&stale, b"partial").unwrap();
    fs::write(&fresh, b"partial").unwrap();
    fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    unbounded.clear().unwrap();
    assert!(!stale.exists());
    assert!(fresh.exists());
}

const STRESS_DIR: &str = "CUDA_RS_CACHE_STRESS_DIR";
const STRESS_CHILD: &str = "CUDA_RS_CACHE_STRESS_CHILD";
const CHILDREN: u8 = 8;
const WRITES: u8 = 50;
const SHARED_KEYS: u8 = 10;

fn shared_key(n: u8) -> ProgramCacheKey {
    let mut b = [0xAA; 32];
    b[1] = n;
    ProgramCacheKey::from_bytes(b)
}

fn unique_key(child: u8, i: u8) -> ProgramCacheKey {
    let mut b = [0xBB; 32];
    b[1] = child;
    b[2] = i;
    ProgramCacheKey::from_bytes(b)
}

/// The entry a writer stores: its name says who wrote it, and the code (tens of
/// KiB, so that a torn read would show) follows from the name.
fn stress_object(key: &ProgramCacheKey, child: u8, i: u8) -> ObjectCode {
    let name = format!("{key} by {child} at {i}");
    ObjectCode::new(stress_code(&name), CodeType::Cubin, name).unwrap()
}

fn stress_code(name: &str) -> Vec<u8> {
    let seed = name
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    let len = 32 * 1024 + (seed % 8192) as usize;
    let mut code = name.as_bytes().to_vec();
    code.extend((0..len).map(|j| (seed as usize).wrapping_add(j * 13) as u8));
    code
}

/// Checks an entry read back is whole and is the one for `key`.
fn check_stress_entry(key: &ProgramCacheKey, code: &ObjectCode) {
    assert!(code.name().starts_with(&key.to_string()), "{}", code.name());
    assert_eq!(code.code(), stress_code(code.name()), "{}", code.name());
}

fn stress_child(dir: &Path, child: u8) {
    let cache = FileProgramCache::new(dir).unwrap();
    // Start together.
    let start = Instant::now();
    while !dir.join("go").exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "no go signal");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (mut hits, mut misses) = (0, 0);
    for i in 0..WRITES {
        let k = if i % 2 == 0 {
            shared_key((i / 2 + child) % SHARED_KEYS)
        } else {
            unique_key(child, i)
        };
        cache.put(&k, &stress_object(&k, child, i)).unwrap();
        check_stress_entry(&k, &cache.get(&k).unwrap().expect("own entry"));
        let other =
            shared_key(((u32::from(i) * 7 + u32::from(child)) % u32::from(SHARED_KEYS)) as u8);
        match cache.get(&other).unwrap() {
            Some(code) => {
                check_stress_entry(&other, &code);
                hits += 1;
            }
            None => misses += 1,
        }
    }
    println!("stress child {child}: {WRITES} writes; shared reads: {hits} hits, {misses} misses");
}

#[test]
fn file_cache_many_processes() {
    if let Some(dir) = std::env::var_os(STRESS_DIR) {
        let child = std::env::var(STRESS_CHILD).unwrap().parse().unwrap();
        stress_child(Path::new(&dir), child);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let t = Instant::now();
    let children: Vec<_> = (0..CHILDREN)
        .map(|child| {
            Command::new(&exe)
                .args([
                    "file_cache_many_processes",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(STRESS_DIR, dir.path())
                .env(STRESS_CHILD, child.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    fs::write(dir.path().join("go"), b"").unwrap();
    for (n, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child {n} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // libtest prints the test's name and then its output on the same line.
        for line in stdout
            .lines()
            .filter_map(|l| l.find("stress child").map(|at| &l[at..]))
        {
            println!("{line}");
        }
    }
    println!(
        "{CHILDREN} processes x {WRITES} writes in {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );

    // Every entry reads back whole, and nothing else is left behind.
    let cache = FileProgramCache::new(dir.path()).unwrap();
    let mut expected: Vec<PathBuf> = (0..SHARED_KEYS)
        .map(|n| cache.path_of(&shared_key(n)))
        .collect();
    for n in 0..SHARED_KEYS {
        let k = shared_key(n);
        check_stress_entry(&k, &cache.get(&k).unwrap().expect("shared entry"));
    }
    for child in 0..CHILDREN {
        for i in (1..WRITES).step_by(2) {
            let k = unique_key(child, i);
            check_stress_entry(&k, &cache.get(&k).unwrap().expect("unique entry"));
            expected.push(cache.path_of(&k));
        }
    }
    assert_eq!(cache.len().unwrap(), expected.len());
    let mut expected: Vec<String> = expected
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    expected.push("go".into());
    expected.sort();
    assert_eq!(
        files_in(dir.path()),
        expected,
        "no temporary files may remain"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(cudars_tests::proptest_cases(64)))]

    /// Whatever bytes sit in an entry's file (another program's, a crash's), a
    /// read is a miss that removes them, or the entry a `put` wrote.
    #[test]
    fn any_file_in_an_entrys_place_is_a_miss(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        from_a_real_entry in proptest::prelude::any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileProgramCache::new(dir.path()).unwrap();
        let k = key(1);
        let mut file = Vec::new();
        if from_a_real_entry {
            // A real entry's first bytes (magic, version, lengths) before the garbage.
            cache.put(&k, &object("p", b"code")).unwrap();
            file = fs::read(cache.path_of(&k)).unwrap();
            file.truncate(bytes.len() % (file.len() + 1));
        }
        file.extend_from_slice(&bytes);
        fs::write(cache.path_of(&k), &file).unwrap();
        match cache.get(&k).unwrap() {
            None => proptest::prop_assert!(!cache.path_of(&k).exists()),
            Some(hit) => same(&hit, &object("p", b"code")),
        }
    }
}

/// Threads of one process store and read the same keys while another writes
/// damaged files (truncated copies of entries, garbage) straight over the
/// entries, without the cache's atomic rename. Every read is a miss or a whole
/// entry that some writer stored under that key: never torn, never another
/// key's, never an error or a panic.
#[test]
fn file_cache_threads_and_a_vandal() {
    const THREADS: u8 = 6;
    const ROUNDS: u8 = 40;
    const KEYS: u8 = 4;
    let dir = tempfile::tempdir().unwrap();
    let cache = FileProgramCache::new(dir.path()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (hits, misses) = std::thread::scope(|scope| {
        let vandal = scope.spawn(|| {
            let mut n = 0usize;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let k = shared_key((n % usize::from(KEYS)) as u8);
                let path = cache.path_of(&k);
                let damaged = match fs::read(&path) {
                    Ok(whole) if !whole.is_empty() && n % 3 != 0 => {
                        whole[..(n * 7919) % whole.len()].to_vec()
                    }
                    _ => (0..(n % 300)).map(|i| (i * n) as u8).collect(),
                };
                // A plain write: truncate, then fill, visible half-done.
                let _ = fs::write(&path, &damaged);
                n += 1;
                std::thread::yield_now();
            }
            n
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let cache = &cache;
                scope.spawn(move || {
                    let (mut hits, mut misses) = (0u32, 0u32);
                    for i in 0..ROUNDS {
                        let k = shared_key((i + t) % KEYS);
                        cache.put(&k, &stress_object(&k, t, i)).unwrap();
                        for r in 0..KEYS {
                            let k = shared_key(r);
                            match cache.get(&k).unwrap() {
                                Some(code) => {
                                    check_stress_entry(&k, &code);
                                    hits += 1;
                                }
                                None => misses += 1,
                            }
                        }
                    }
                    (hits, misses)
                })
            })
            .collect();
        let counts: Vec<(u32, u32)> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let vandalised = vandal.join().unwrap();
        println!("the vandal wrote {vandalised} damaged files");
        counts.iter().fold((0, 0), |(h, m), (a, b)| (h + a, m + b))
    });
    println!("{THREADS} threads x {ROUNDS} rounds: {hits} whole hits, {misses} misses");
    assert!(hits > 0, "no read ever hit");
    // With the vandal gone, a store reads back whole, and no temporary file is left.
    for r in 0..KEYS {
        let k = shared_key(r);
        cache.put(&k, &stress_object(&k, 99, r)).unwrap();
        check_stress_entry(&k, &cache.get(&k).unwrap().expect("entry after the vandal"));
    }
    assert!(
        files_in(dir.path()).iter().all(|f| f.ends_with(".bin")),
        "{:?}",
        files_in(dir.path())
    );
}

// ---------------------------------------------------------------- compile_cached

#[test]
fn compile_cached_compiles_once() {
    require_libs!("nvrtc");
    let dir = tempfile::tempdir().unwrap();
    let cache = FileProgramCache::new(dir.path()).unwrap();
    let options = ProgramOptions {
        name: Some("cached".into()),
        ..sm(&some_arch())
    };
    let exprs = ["scale<float>", "scale<double>"];
    let run = |cache: &dyn ProgramCache| {
        let t = Instant::now();
        let code = compile_cached(
            cache,
            SourceCode::Cxx(TEMPLATE_SRC),
            options.clone(),
            CompileTarget::Cubin,
            &exprs,
        )
        .unwrap();
        (code, t.elapsed())
    };

    let (first, miss) = run(&cache);
    assert_eq!(cache.len().unwrap(), 1);
    assert!(first.code().starts_with(b"\x7fELF"));
    assert_eq!(first.symbol_mapping().len(), 2);
    let (second, hit) = run(&cache);
    same(&first, &second);
    // Another instance (as another process would open it) hits too.
    let (third, hit_fresh) = run(&FileProgramCache::new(dir.path()).unwrap());
    same(&first, &third);
    assert_eq!(cache.len().unwrap(), 1);
    println!(
        "compile_cached (file cache): miss (NVRTC compile + store) {:.2} ms, hit {:.3} ms, \
         hit from a new instance {:.3} ms",
        miss.as_secs_f64() * 1e3,
        hit.as_secs_f64() * 1e3,
        hit_fresh.as_secs_f64() * 1e3
    );

    // A hit is what the cache holds, not a compilation: plant a stand-in under
    // the key and get it back.
    let memory = InMemoryProgramCache::new();
    let k = make_program_cache_key(
        &SourceCode::Cxx(TEMPLATE_SRC),
        &options,
        CompileTarget::Cubin,
        &exprs,
        &[],
    )
    .unwrap();
    let stand_in = object("stand-in", b"\x7fELF stand-in");
    memory.put(&k, &stand_in).unwrap();
    let (got, mem_hit) = run(&memory);
    same(&got, &stand_in);
    println!(
        "compile_cached (in memory): hit {:.4} ms",
        mem_hit.as_secs_f64() * 1e3
    );

    // Headers take part: other header contents miss, and compile.
    let with_header = |contents: &[u8]| {
        compile_cached_with_headers(
            &memory,
            SourceCode::Cxx(TEMPLATE_SRC),
            options.clone(),
            CompileTarget::Cubin,
            &exprs,
            &[("scale.h", contents)],
        )
        .unwrap()
    };
    let a = with_header(b"v1");
    assert_eq!(a.code(), first.code());
    assert_eq!(memory.len(), 2);
    with_header(b"v2");
    assert_eq!(memory.len(), 3);

    // A failed compilation stores nothing.
    let err = compile_cached(
        &memory,
        SourceCode::Cxx("this is not C++"),
        options.clone(),
        CompileTarget::Cubin,
        &[],
    )
    .unwrap_err();
    assert!(err.log().is_some(), "{err}");
    assert_eq!(memory.len(), 3);
}
