//! Checkpoint and restore of a real CUDA process: a child (this test binary re-run)
//! fills device memory and waits; this process locks, checkpoints (the child's
//! device memory leaves the GPU), restores and unlocks it; the child then finds
//! its data intact. Without a GPU it prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.
#![cfg(target_os = "linux")]
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::Duration;

use cudars_core::checkpoint::{Process, ProcessState};
use cudars_core::{Device, Error, StreamOptions};
use cudars_tests::require_gpu;

const CHILD: &str = "CUDA_RS_CHECKPOINT_CHILD";
const BYTES: usize = 256 << 20;

/// The child: fill 256 MiB, say READY, wait for GO, check the data.
fn child() {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let mut b = d.allocate(BYTES, &s).unwrap();
    b.fill_u32(0xc0ff_ee00, &s).unwrap();
    s.sync().unwrap();
    println!("READY");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "GO");
    let mut back = vec![0u32; BYTES / 4];
    b.copy_to_host(&mut back, &s).unwrap();
    assert!(back.iter().all(|&x| x == 0xc0ff_ee00), "data lost");
    println!("VERIFIED");
}

#[test]
fn a_child_process_is_checkpointed_and_restored_with_its_data() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    require_gpu!();
    let d = Device::new(0).unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_child_process_is_checkpointed_and_restored_with_its_data",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    // However this test ends, the child does not outlive it.
    struct Reap(u32);
    impl Drop for Reap {
        fn drop(&mut self) {
            if let Ok(p) = Process::new(self.0) {
                let _ = p.restore(&[]);
                let _ = p.unlock();
            }
            // SAFETY: signals our own child, still unreaped (its pid is not reused).
            unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
        }
    }
    let reap = Reap(c.id());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended early: {seen}"
        );
        seen.push_str(&line);
        if line.trim_end().ends_with("READY") {
            break;
        }
    }
    let p = Process::new(c.id()).unwrap();
    assert_eq!(p.pid(), c.id());
    let Some(state) = cudars_tests::needs_driver!(12080, p.state()) else {
        let _ = c.kill();
        let _ = c.wait();
        return;
    };
    assert_eq!(state, ProcessState::Running);
    // Moving to other GPUs at restore needs a CUDA 13 driver; here the process is
    // not checkpointed, so a newer driver refuses it too.
    let same = cudars_core::checkpoint::GpuRemap {
        old_uuid: d.uuid().unwrap(),
        new_uuid: d.uuid().unwrap(),
    };
    let e = p.restore(&[same]).unwrap_err();
    if cudars_tests::driver_version() < 13000 {
        assert_eq!(e.required_driver().unwrap().needs.major, 13, "{e}");
    }
    assert!(p.restore_thread_id().unwrap() > 0);
    // Out of order: a running process cannot be checkpointed, restored or unlocked,
    // and stays running.
    assert!(p.checkpoint().is_err());
    assert!(p.restore(&[]).is_err());
    assert!(p.unlock().is_err());
    assert_eq!(p.state().unwrap(), ProcessState::Running);

    let (free_before, _) = d.memory_info().unwrap();
    p.lock(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(p.state().unwrap(), ProcessState::Locked);
    p.checkpoint().unwrap();
    assert_eq!(p.state().unwrap(), ProcessState::Checkpointed);
    let (free_ckpt, _) = d.memory_info().unwrap();
    println!(
        "free memory: {} MiB before, {} MiB checkpointed",
        free_before >> 20,
        free_ckpt >> 20
    );
    assert!(
        free_ckpt >= free_before + BYTES,
        "the child's {} MiB did not leave the GPU",
        BYTES >> 20
    );
    p.restore(&[]).unwrap();
    assert_eq!(p.state().unwrap(), ProcessState::Locked);
    p.unlock().unwrap();
    assert_eq!(p.state().unwrap(), ProcessState::Running);

    let mut stdin = c.stdin.take().unwrap();
    writeln!(stdin, "GO").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = c.wait().unwrap();
    // Reaped: its pid may be reused now, so no signal.
    std::mem::forget(reap);
    assert!(
        status.success() && rest.contains("VERIFIED") && rest.contains("1 passed"),
        "child: {seen}{rest}"
    );
}

#[test]
fn bad_pids_are_refused() {
    assert!(matches!(
        Process::new(0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Process::new(u32::MAX),
        Err(Error::InvalidArgument { .. })
    ));
    require_gpu!();
    // A process that does not use CUDA (a child that only sleeps) has no state.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let c = Killed(Command::new("sleep").arg("30").spawn().unwrap());
    let p = Process::new(c.0.id()).unwrap();
    let e = p.state().unwrap_err();
    if cudars_tests::driver_version() < 12080 {
        assert_eq!(e.required_driver().unwrap().needs.minor, 8, "{e}");
        return;
    }
    assert!(e.driver_code().is_some(), "{e}");
    assert!(p.lock(Some(Duration::from_millis(100))).is_err());
}
