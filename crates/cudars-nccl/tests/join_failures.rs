//! Bad input to [`World::join`] on the GPU: a rank that never joins, a wrong
//! rendezvous address (`MASTER_ADDR` not this host's, nobody listening) and
//! ranks that disagree on the world size. Each rank runs in a process of its
//! own (this binary started again, running the ignored `rank_process` test
//! with the launcher's variables set), and each must end within the timeout
//! plus a margin with a typed error, never hang. Each rank joins five times:
//! the first pays NCCL's once-per-process set-up; over the other four the
//! GPU's free memory may drop by no more than NCCL itself keeps of an aborted
//! join. That share is measured in C by `c/join_abort.c` (the same calls), which
//! `run-launchers.sh` runs first and passes on as `CUDARS_NCCL_C_ABORT_LEAK`
//! (bytes per timed-out join); without it, the 1 MiB measured with NCCL 2.28.9
//! on an H100 and on four H200s (2 MiB, one driver granule, after every second
//! timed-out join). A join that fails at once must keep nothing, and so must
//! anything of ours: a leak per attempt beyond NCCL's shows over four.
//!
//! With two GPUs the ranks of a two-process case run on different GPUs, so
//! each one's free-memory count is its own. Without a GPU the tests print
//! `SKIPPED`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cudars_core::Device;
use cudars_nccl::{Communicator, Error, World, WorldError};
use cudars_tests::require_gpu;

/// The join timeout the rank processes use.
const TIMEOUT: Duration = Duration::from_secs(3);
/// Time allowed past the timeout: the abort and the process's start and end,
/// and the first (unmeasured) attempt, itself up to a timeout.
const MARGIN: Duration = Duration::from_secs(20);
/// The outcome of every attempt on a driver older than NCCL's CUDA major.
const DRIVER_TOO_OLD: &str = "driver_too_old";
/// The variable that makes `rank_process` run.
const CHILD: &str = "CUDARS_NCCL_JOIN_CHILD";
/// The attempts whose GPU memory is counted, after the first.
const MEASURED: usize = 4;
/// The driver's granule: device memory comes and goes in these.
const GRANULE: i64 = 2 << 20;
/// What NCCL keeps of each timed-out, aborted join when the C reference has
/// not measured it here (see the module docs).
const NCCL_ABORT_LEAK: i64 = 1 << 20;

/// One case at a time: the free-memory counts are per device, not per process.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one rank process reported.
#[derive(Debug)]
struct Outcome {
    kind: String,
    ms: u128,
    timeouts: i64,
    first_kind: String,
    first_ms: u128,
    leaked: i64,
    line: String,
}

/// One rank's process: launcher variables, `NCCL_COMM_ID` as `World` derives it.
fn spawn(vars: &[(&str, String)]) -> std::process::Child {
    let world =
        World::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--ignored", "--exact", "rank_process", "--nocapture"])
        .env(CHILD, "1")
        .env_remove("NCCL_COMM_ID")
        .stdout(Stdio::piped());
    for k in [
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    if let Some(id) = world.nccl_comm_id() {
        cmd.env("NCCL_COMM_ID", id);
    }
    cmd.spawn().unwrap()
}

fn outcome(child: std::process::Child) -> Outcome {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("RANK_OUTCOME"))
        .unwrap_or_else(|| {
            panic!(
                "a rank process printed no outcome ({}):\n{text}",
                out.status
            )
        })
        .to_owned();
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .to_owned()
    };
    Outcome {
        kind: field("kind"),
        ms: field("ms").parse().unwrap(),
        timeouts: field("timeouts").parse().unwrap(),
        first_kind: field("first_kind"),
        first_ms: field("first_ms").parse().unwrap(),
        leaked: field("leaked").parse().unwrap(),
        line,
    }
}

fn torchrun(
    rank: usize,
    size: usize,
    local: usize,
    addr: &str,
    port: u16,
) -> Vec<(&'static str, String)> {
    vec![
        ("RANK", rank.to_string()),
        ("WORLD_SIZE", size.to_string()),
        ("LOCAL_RANK", local.to_string()),
        ("MASTER_ADDR", addr.to_owned()),
        ("MASTER_PORT", port.to_string()),
    ]
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Checks that a rank failed with a typed error in time (the first and the
/// last attempt), and that the measured attempts together kept no more than
/// one driver granule of GPU memory. On a driver older than NCCL's CUDA major
/// every attempt must be NCCL's `DriverTooOld` (checked in the rank process, as
/// `needs_library_driver!` checks it) instead of `kinds`: then it gives
/// `false`, and the case's own checks of how the join failed do not apply.
fn check_failed(o: &Outcome, kinds: &[&str], own_gpu: bool) -> bool {
    println!("{}", o.line);
    let too_old = o.first_kind == DRIVER_TOO_OLD;
    let kinds = if too_old {
        &[DRIVER_TOO_OLD][..]
    } else {
        kinds
    };
    assert!(
        kinds.contains(&o.kind.as_str()),
        "unexpected outcome: {}",
        o.line
    );
    assert!(
        kinds.contains(&o.first_kind.as_str()),
        "unexpected first outcome: {}",
        o.line
    );
    assert!(o.first_ms <= (TIMEOUT + MARGIN).as_millis(), "{}", o.line);
    assert!(
        o.ms <= (TIMEOUT + MARGIN).as_millis(),
        "took {} ms, more than the timeout and margin: {}",
        o.ms,
        o.line
    );
    if own_gpu {
        // Failed joins do not add up beyond what NCCL keeps of its own.
        let per = std::env::var("CUDARS_NCCL_C_ABORT_LEAK")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(NCCL_ABORT_LEAK);
        let allowed = (o.timeouts * per + GRANULE - 1) / GRANULE * GRANULE;
        assert!(
            o.leaked <= allowed,
            "GPU memory not freed: {} bytes over {} timed-out joins, where NCCL's \
             own share allows {allowed}: {}",
            o.leaked,
            o.timeouts,
            o.line
        );
    }
    !too_old
}

fn gpus() -> usize {
    Device::count().unwrap_or(0)
}

#[test]
fn a_rank_that_never_joins_times_out() {
    require_gpu!();
    let _one = serial();
    // Rank 0 alone: its bootstrap root waits for rank 1 until the timeout.
    let o = outcome(spawn(&torchrun(0, 2, 0, "127.0.0.1", free_port())));
    // (A later attempt may find an earlier one's root still bound to the
    // port: NCCL's error then, as typed.)
    if !check_failed(&o, &["timed_out_aborted", "nccl"], true) {
        return;
    }
    assert_eq!(o.first_kind, "timed_out_aborted", "{}", o.line);
    assert!(o.first_ms >= TIMEOUT.as_millis(), "{}", o.line);
    // Rank 1 alone: nobody listens at the root's address.
    let o = outcome(spawn(&torchrun(1, 2, 0, "127.0.0.1", free_port())));
    check_failed(&o, &["timed_out_aborted", "nccl"], true);
}

#[test]
fn a_wrong_master_addr_fails_within_the_timeout() {
    require_gpu!();
    let _one = serial();
    // 192.0.2.1 (TEST-NET-1) is no host's: rank 0 cannot open the root there,
    // rank 1 cannot reach it.
    let two = gpus() >= 2;
    let port = free_port();
    let ranks: Vec<_> = (0..2)
        .map(|r| spawn(&torchrun(r, 2, if two { r } else { 0 }, "192.0.2.1", port)))
        .collect();
    let outcomes: Vec<_> = ranks.into_iter().map(outcome).collect();
    check_failed(&outcomes[0], &["nccl", "timed_out_aborted"], two);
    check_failed(&outcomes[1], &["nccl", "timed_out_aborted"], two);
}

#[test]
fn a_world_size_that_disagrees_fails_within_the_timeout() {
    require_gpu!();
    let _one = serial();
    let two = gpus() >= 2;
    let port = free_port();
    let a = spawn(&torchrun(0, 2, 0, "127.0.0.1", port));
    let b = spawn(&torchrun(1, 3, if two { 1 } else { 0 }, "127.0.0.1", port));
    let (a, b) = (outcome(a), outcome(b));
    check_failed(&a, &["nccl", "timed_out_aborted"], two);
    check_failed(&b, &["nccl", "timed_out_aborted"], two);
}

/// One rank of the cases above (run by them, with `CUDARS_NCCL_JOIN_CHILD=1`).
#[test]
#[ignore = "a rank process the join-failure tests start"]
fn rank_process() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let world = World::from_env().unwrap();
    let dev = world.device().unwrap();
    dev.set_current().unwrap();
    // The first attempt pays NCCL's once-per-process set-up (its kernels
    // loaded, say); then the GPU's free memory is counted before the other
    // attempts and after each. (A one-rank communicator cannot warm NCCL up
    // here: with NCCL_COMM_ID set it would open its root at that address.)
    let first = Instant::now();
    let warm = world.join(TIMEOUT);
    let first_ms = first.elapsed().as_millis();
    let first_kind = kind_of(&warm).0;
    drop(warm);
    let free = || dev.memory_info().unwrap().0;
    // A non-blocking communicator's abort may finish in NCCL's background
    // thread: give the memory 3 s to come back.
    let settled = |before: usize| {
        let t = Instant::now();
        let mut now = free();
        while now < before && t.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            now = free();
        }
        now
    };
    let base = free();
    let mut before = base;
    let mut steps = Vec::new();
    let mut timeouts = 0;
    let mut last = None;
    for _ in 0..MEASURED {
        let t = Instant::now();
        let joined = world.join(TIMEOUT);
        let ms = t.elapsed().as_millis();
        let (kind, report) = kind_of(&joined);
        timeouts += i32::from(kind == "timed_out_aborted");
        drop(joined);
        let after = settled(before);
        steps.push((before as i64 - after as i64).to_string());
        before = after;
        last = Some((kind, ms, report));
    }
    let (kind, ms, report) = last.unwrap();
    println!(
        "RANK_OUTCOME rank={} size={} kind={kind} ms={ms} leaked={} timeouts={timeouts} steps={} \
         first_kind={first_kind} first_ms={first_ms} error: {report}",
        world.rank(),
        world.size(),
        base as i64 - before as i64,
        steps.join(","),
    );
}

/// The outcome's kind, and its report.
fn kind_of(joined: &Result<Communicator, Error>) -> (&'static str, String) {
    match joined {
        Ok(_) => ("ok", String::new()),
        Err(e @ Error::Extra(WorldError::TimedOut(t))) => (
            if t.aborted() {
                "timed_out_aborted"
            } else {
                "timed_out"
            },
            e.report().to_string(),
        ),
        Err(e @ Error::Library { .. }) => ("nccl", e.report().to_string()),
        Err(e @ Error::DriverTooOld { .. }) => {
            // As `needs_library_driver!` checks it: this driver, and an `X.0`
            // driver of a newer major.
            let report = e.report().to_string();
            let req = e.required_driver().unwrap();
            let have = cudars_tests::driver_version();
            assert_eq!(
                req.driver.major * 1000 + req.driver.minor * 10,
                have,
                "{report}"
            );
            assert!(
                req.needs.minor == 0 && req.needs.major > req.driver.major,
                "{report}"
            );
            (DRIVER_TOO_OLD, report)
        }
        Err(e) => ("other", e.report().to_string()),
    }
}
