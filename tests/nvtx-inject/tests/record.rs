//! The recording tool (`libcudars_nvtx_inject.so`, built beside this test) attached
//! to cudars-nvtx through `NVTX_INJECTION64_PATH`, as a profiler attaches: ranges,
//! marks, domains, registered strings, names and the `tracing` layer reach the tool
//! in order, on the threads that made them, with their colours, categories and
//! payloads. Each scenario runs in a child process (NVTX reads its environment
//! once per process): the parent re-runs this binary on one test with the tool
//! and a log file named, then reads the log.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use cudars_nvtx::{Attributes, Color, Domain};

/// Set in the child: the scenario to run.
const SCENARIO: &str = "CUDARS_NVTX_TEST_SCENARIO";

/// The recording library: the one built with this test (in `deps/` beside the
/// test's binary), or, in the GPU test package, `lib/nvtx/` beside `bin/`.
fn tool_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let candidates = [
        dir.join("libcudars_nvtx_inject.so"),
        dir.join("../lib/nvtx/libcudars_nvtx_inject.so"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no recording library at {candidates:?}"))
        .clone()
}

/// One recorded call.
#[derive(Debug, Clone)]
struct Call {
    tid: i64,
    call: String,
    details: String,
}

/// Runs `test` in a child with the tool attached (or `tool` as the library path)
/// and returns the child's stdout and the recorded calls.
fn run_child(test: &str, tool: Option<PathBuf>) -> (String, Vec<Call>) {
    let dir = std::env::temp_dir().join(format!("cudars-nvtx-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.log");
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(SCENARIO, test)
        .env(cudars_nvtx_inject::LOG_VAR, &log);
    match tool {
        Some(t) => cmd.env(cudars_nvtx::INJECTION_PATH_VAR, t),
        None => cmd.env_remove(cudars_nvtx::INJECTION_PATH_VAR),
    };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child {test} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut p = l.splitn(3, '\t');
            Call {
                tid: p.next().unwrap().parse().unwrap(),
                call: p.next().unwrap().to_string(),
                details: p.next().unwrap_or("").to_string(),
            }
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    (stdout, calls)
}

/// Whether this process is the child for `test`.
fn is_child(test: &str) -> bool {
    std::env::var(SCENARIO).is_ok_and(|s| s == test)
}

fn gettid() -> i64 {
    // SAFETY: `gettid` has no preconditions.
    i64::from(unsafe { libc::syscall(libc::SYS_gettid) } as i32)
}

/// A value the child printed as `key=value`.
fn printed(stdout: &str, key: &str) -> i64 {
    stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("the child printed no {key}: {stdout}"))
        .parse()
        .unwrap()
}

/// The calls after the tool attached, as `call details`, checking the first.
fn after_attach(calls: &[Call]) -> Vec<Call> {
    assert_eq!(
        calls.first().map(|c| (c.call.as_str(), c.details.as_str())),
        Some(("attach", "ok"))
    );
    calls[1..].to_vec()
}

fn shape(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .map(|c| format!("{} {}", c.call, c.details))
        .collect()
}

#[test]
fn ranges_marks_and_names_reach_the_tool_in_order_on_their_threads() {
    const T: &str = "ranges_marks_and_names_reach_the_tool_in_order_on_their_threads";
    if is_child(T) {
        cudars_nvtx::name_current_thread("main");
        cudars_nvtx::name_category(3, "io");
        cudars_nvtx::mark(
            Attributes::new("hello")
                .color(Color(0xff11_2233))
                .category(3)
                .payload(7u64),
        );
        {
            let _outer = cudars_nvtx::range("outer");
            let _inner = cudars_nvtx::range(Attributes::new("inner").payload(-2.5f64));
        }
        let crossing = cudars_nvtx::start_range(c"crossing");
        let worker = std::thread::spawn(move || {
            cudars_nvtx::name_current_thread("worker");
            crossing.end();
            cudars_nvtx::mark("from-worker");
            gettid()
        })
        .join()
        .unwrap();
        assert_eq!(cudars_nvtx::push("p\0ignored"), Some(0));
        assert_eq!(cudars_nvtx::pop(), Some(0));
        assert_eq!(cudars_nvtx::pop(), None, "an empty stack");
        cudars_nvtx::initialize();
        assert!(cudars_nvtx::tool_attached());
        println!("main={} worker={worker}", gettid());
        return;
    }
    let (out, calls) = run_child(T, Some(tool_library()));
    let (main, worker) = (printed(&out, "main"), printed(&out, "worker"));
    let calls = after_attach(&calls);
    let start_id = calls
        .iter()
        .find(|c| c.call == "start")
        .and_then(|c| {
            c.details
                .split_whitespace()
                .find_map(|w| w.strip_prefix("id="))
        })
        .unwrap()
        .to_string();
    assert_eq!(
        shape(&calls),
        [
            format!("name_os_thread tid={main} name=main"),
            "name_category id=3 name=io".to_string(),
            "mark v=3 size=48 cat=3 color=0xff112233 payload=u64:7 msg=hello".to_string(),
            "push depth=0 v=3 size=48 msg=outer".to_string(),
            "push depth=1 v=3 size=48 payload=f64:-2.5 msg=inner".to_string(),
            "pop depth=1".to_string(),
            "pop depth=0".to_string(),
            format!("start id={start_id} v=3 size=48 msg=crossing"),
            format!("name_os_thread tid={worker} name=worker"),
            format!("end id={start_id}"),
            "mark v=3 size=48 msg=from-worker".to_string(),
            "push depth=0 v=3 size=48 msg=p".to_string(),
            "pop depth=0".to_string(),
            "pop depth=-1".to_string(),
            "initialize ".to_string(),
        ]
    );
    let threads: Vec<i64> = calls.iter().map(|c| c.tid).collect();
    let on_worker = [8, 9, 10];
    for (i, t) in threads.iter().enumerate() {
        let want = if on_worker.contains(&i) { worker } else { main };
        assert_eq!(*t, want, "call {i} ({:?}) on the wrong thread", calls[i]);
    }
}

#[test]
fn domains_registered_strings_and_categories_reach_the_tool() {
    const T: &str = "domains_registered_strings_and_categories_reach_the_tool";
    if is_child(T) {
        let domain = Domain::new("solver");
        assert!(!domain.as_raw().is_null());
        let hot = domain.register_string("hot");
        domain.name_category(1, "phase");
        {
            let _r = domain.range(Attributes::new(&hot).category(1).payload(5u32));
        }
        domain.mark(Attributes::new("m").payload(-1i64));
        let r = domain.start_range("async");
        assert_ne!(r.id(), 0);
        std::thread::scope(|s| {
            s.spawn(move || r.end());
        });
        // A registered string outside its domain: its text.
        drop(cudars_nvtx::range(&hot));
        let other = Domain::new("other");
        other.mark(&hot);
        drop(hot);
        drop(other);
        drop(domain);
        return;
    }
    let (_, calls) = run_child(T, Some(tool_library()));
    let calls = after_attach(&calls);
    let s = shape(&calls);
    // Handles and ids are handed out from one counter, in call order.
    let id = |i: usize, key: &str| -> String {
        calls[i]
            .details
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .unwrap()
            .to_string()
    };
    let d = id(0, "id");
    let sid = id(1, "id");
    let rid = id(6, "id");
    let o = id(10, "id");
    let want = [
        format!("domain_create id={d} name=solver"),
        format!("register domain={d} id={sid} text=hot"),
        format!("dname_category domain={d} id=1 name=phase"),
        format!("dpush domain={d} depth=0 v=3 size=48 cat=1 payload=u32:5 msg=reg:hot"),
        format!("dpop domain={d} depth=0"),
        format!("dmark domain={d} v=3 size=48 payload=i64:-1 msg=m"),
        format!("dstart domain={d} id={rid} v=3 size=48 msg=async"),
        format!("dend domain={d} id={rid}"),
        "push depth=0 v=3 size=48 msg=hot".to_string(),
        "pop depth=0".to_string(),
        format!("domain_create id={o} name=other"),
        format!("dmark domain={o} v=3 size=48 msg=hot"),
        format!("domain_destroy id={o}"),
        format!("domain_destroy id={d}"),
    ];
    assert_eq!(s, want);
    assert_ne!(
        calls[7].tid, calls[6].tid,
        "the range ended on another thread"
    );
}

#[test]
fn cuda_objects_are_named_with_their_handles() {
    const T: &str = "cuda_objects_are_named_with_their_handles";
    if is_child(T) {
        cudars_nvtx::name_cu_device(1, "gpu1");
        // SAFETY: the recording tool only prints the handles (no driver here).
        unsafe {
            cudars_nvtx::name_cu_context(0x1000 as *mut _, "ctx");
            cudars_nvtx::name_cu_stream(0x2000 as *mut _, "copies");
            cudars_nvtx::name_cu_event(0x3000 as *mut _, "done");
        }
        return;
    }
    let (_, calls) = run_child(T, Some(tool_library()));
    assert_eq!(
        shape(&after_attach(&calls)),
        [
            "name_cu_device device=1 name=gpu1",
            "name_cu_context handle=0x1000 name=ctx",
            "name_cu_stream handle=0x2000 name=copies",
            "name_cu_event handle=0x3000 name=done",
        ]
    );
}

#[test]
fn tracing_spans_become_ranges_and_events_marks_in_the_cuda_rs_domain() {
    const T: &str = "tracing_spans_become_ranges_and_events_marks_in_the_cuda_rs_domain";
    if is_child(T) {
        use tracing_subscriber::layer::SubscriberExt as _;
        let subscriber = tracing_subscriber::registry().with(cudars_nvtx::NvtxLayer::new());
        tracing::subscriber::with_default(subscriber, || {
            let request = tracing::info_span!("request", id = 7, path = "/a");
            {
                let _e = request.enter();
                tracing::warn!(bytes = 3, "slow");
                tracing::debug_span!("decode").in_scope(|| {});
            }
            request.record("id", 8);
            let worker = std::thread::spawn({
                let request = request.clone();
                move || {
                    let _e = request.enter();
                    gettid()
                }
            })
            .join()
            .unwrap();
            println!("main={} worker={worker}", gettid());
        });
        return;
    }
    let (out, calls) = run_child(T, Some(tool_library()));
    let (main, worker) = (printed(&out, "main"), printed(&out, "worker"));
    let calls = after_attach(&calls);
    let d = calls[0]
        .details
        .split_whitespace()
        .next()
        .unwrap()
        .strip_prefix("id=")
        .unwrap()
        .to_string();
    let green = Color::GREEN.0;
    let orange = Color::ORANGE.0;
    let blue = Color::BLUE.0;
    assert_eq!(
        shape(&calls),
        [
            format!("domain_create id={d} name=cuda-rs"),
            format!(
                "dpush domain={d} depth=0 v=3 size=48 color={green:#010x} msg=request{{id=7 path=/a}}"
            ),
            format!("dmark domain={d} v=3 size=48 color={orange:#010x} msg=slow {{bytes=3}}"),
            format!("dpush domain={d} depth=1 v=3 size=48 color={blue:#010x} msg=decode"),
            format!("dpop domain={d} depth=1"),
            format!("dpop domain={d} depth=0"),
            format!(
                "dpush domain={d} depth=0 v=3 size=48 color={green:#010x} msg=request{{id=7 path=/a id=8}}"
            ),
            format!("dpop domain={d} depth=0"),
        ]
    );
    let tids: Vec<i64> = calls[1..].iter().map(|c| c.tid).collect();
    assert_eq!(tids, [main, main, main, main, main, worker, worker]);
}

#[test]
fn without_a_usable_tool_nothing_is_recorded_and_nothing_fails() {
    const T: &str = "without_a_usable_tool_nothing_is_recorded_and_nothing_fails";
    if is_child(T) {
        let _r = cudars_nvtx::range("x");
        cudars_nvtx::mark("y");
        let d = Domain::new("z");
        assert!(d.as_raw().is_null());
        assert!(!cudars_nvtx::tool_attached());
        return;
    }
    let (_, calls) = run_child(T, None);
    assert!(calls.is_empty(), "{calls:?}");
    // A path that names no library: no tool, as with NVIDIA's headers.
    let (_, calls) = run_child(T, Some(PathBuf::from("/nonexistent/libnvtx-tool.so")));
    assert!(calls.is_empty(), "{calls:?}");
}

#[test]
fn the_program_cache_puts_its_lookups_and_compiles_on_the_timeline() {
    const T: &str = "the_program_cache_puts_its_lookups_and_compiles_on_the_timeline";
    if is_child(T) {
        use cudars_core::cache::{InMemoryProgramCache, compile_cached};
        use cudars_core::{CompileTarget, ProgramOptions, SourceCode};
        let cache = InMemoryProgramCache::new();
        for _ in 0..2 {
            compile_cached(
                &cache,
                SourceCode::Cxx("extern \"C\" __global__ void k() {}"),
                ProgramOptions::default(),
                CompileTarget::Ptx,
                &[],
            )
            .unwrap();
        }
        return;
    }
    cudars_tests::require_libs!("nvrtc");
    let (_, calls) = run_child(T, Some(tool_library()));
    let calls = after_attach(&calls);
    let d = calls[0]
        .details
        .split_whitespace()
        .next()
        .unwrap()
        .strip_prefix("id=")
        .unwrap()
        .to_string();
    assert_eq!(
        shape(&calls),
        [
            format!("domain_create id={d} name=cuda-rs"),
            format!("dpush domain={d} depth=0 v=3 size=48 msg=program cache: lookup"),
            format!("dpop domain={d} depth=0"),
            format!("dpush domain={d} depth=0 v=3 size=48 msg=program cache: compile (miss)"),
            format!("dpop domain={d} depth=0"),
            format!("dpush domain={d} depth=0 v=3 size=48 msg=program cache: lookup"),
            format!("dpop domain={d} depth=0"),
            format!("dmark domain={d} v=3 size=48 msg=program cache: hit"),
        ]
    );
}
