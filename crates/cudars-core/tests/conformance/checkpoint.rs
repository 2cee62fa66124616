//! `cuda_core/tests/test_checkpoint.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `checkpoint.Process(pid)` is `cudars_core::checkpoint::Process::new(pid)` (a
//! `u32`: Python's `"abc"`, `True` and `-1` do not compile); `proc.state` is
//! `state()` (`ProcessState::Running`, `Locked`, `Checkpointed`);
//! `lock(timeout_ms=t)` is `lock(Some(Duration))` (`lock()` is `lock(None)`);
//! `restore(gpu_mapping={old: new})` is `restore(&[GpuRemap { old_uuid, new_uuid }])`.
//! Python runs each scenario in a child interpreter against a target child that
//! holds a CUDA context and answers `uuid` and `exit` on its stdin; here the target
//! is this test binary re-run for the same test with `CUDA_RS_CONFORMANCE_CKPT_TARGET`
//! set to the device index, and the scenario runs in the test itself. Where Python's
//! scenario skips (checkpointing not supported, migration a no-op or refused with
//! `CUDA_ERROR_INVALID_VALUE`, fewer than two GPUs of one chip), the test prints
//! `SKIPPED` and returns. Linux only; the lifecycle tests need a GPU, the
//! migration tests two of the same chip.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use cudars_core::checkpoint::{GpuRemap, Process, ProcessState};
use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{Device, Error};

const TARGET: &str = "CUDA_RS_CONFORMANCE_CKPT_TARGET";

macro_rules! skip {
    ($($reason:tt)*) => {{
        println!("SKIPPED {}: {}", cudars_tests::current_test_name(), format!($($reason)*));
        return;
    }};
}

fn hex(u: [u8; 16]) -> String {
    u.iter().map(|b| format!("{b:02x}")).collect()
}

/// `_target_main`: when this process is a target, be one and return `true`.
fn be_target() -> bool {
    let Some(index) = std::env::var_os(TARGET) else {
        return false;
    };
    let index: usize = index.to_str().unwrap().parse().unwrap();
    let d = Device::new(index).unwrap();
    d.set_current().unwrap();
    let uuid = || hex(Device::current().unwrap().uuid().unwrap());
    println!("READY:{}", uuid());
    std::io::stdout().flush().unwrap();
    for line in std::io::stdin().lines() {
        match line.unwrap().trim() {
            "uuid" => {
                println!("UUID:{}", uuid());
                std::io::stdout().flush().unwrap();
            }
            "exit" => break,
            _ => {}
        }
    }
    true
}

/// A running target (`_start_target`); stopped on drop (`_stop_target`).
struct Target {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The target's stdout, line by line, read on a thread of its own so that a
    /// target that never answers fails the test (`READ_TIMEOUT`) instead of
    /// hanging it.
    lines: Receiver<String>,
}

/// How long the target may take to print a line the test waits for.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

impl Target {
    fn start(test: &str, device_index: usize) -> (Self, String) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(TARGET, device_index.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut t = Self {
            child,
            stdin,
            lines,
        };
        let uuid = t.read_prefixed("READY:");
        (t, uuid)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `_read_prefixed`: what follows `prefix` on the next line that has it (the
    /// test harness's own output skipped: with `--nocapture` the harness prints
    /// `test <name> ... ` before the test runs, so the first answer shares that
    /// line).
    fn read_prefixed(&mut self, prefix: &str) -> String {
        let mut seen = String::new();
        loop {
            let line = match self.lines.recv_timeout(READ_TIMEOUT) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("checkpoint target: no {prefix:?} in {READ_TIMEOUT:?}: {seen}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("checkpoint target exited before {prefix:?}: {seen}")
                }
            };
            if let Some(i) = line.find(prefix) {
                return line[i + prefix.len()..].trim().to_owned();
            }
            seen.push_str(&line);
            seen.push('\n');
        }
    }

    /// `_target_uuid`.
    fn uuid(&mut self) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "uuid").unwrap();
        stdin.flush().unwrap();
        self.read_prefixed("UUID:")
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // A target left locked or checkpointed would never read its stdin.
        if let Ok(p) = Process::new(self.pid()) {
            if p.state().is_ok_and(|s| s != ProcessState::Running) {
                let _ = p.restore(&[]);
                let _ = p.unlock();
            }
        }
        if let Some(mut stdin) = self.stdin.take() {
            let _ = writeln!(stdin, "exit");
        }
        for _ in 0..50 {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `e` says checkpointing is not supported here (Python's
/// `_run_or_skip_unsupported`).
fn unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported { .. }) || e.driver_code() == Some(sys::CUDA_ERROR_NOT_SUPPORTED)
}

/// `lock`, skipping the test where checkpointing is not supported.
macro_rules! lock_or_skip {
    ($proc:expr, $timeout:expr) => {
        match $proc.lock($timeout) {
            Ok(()) => {}
            Err(e) if unsupported(&e) => skip!("{e}"),
            Err(e) => panic!("{e}"),
        }
    };
}

/// Starts a target on device 0 for the lifecycle tests; `None` in the target
/// itself (or without a GPU), where the test returns.
fn lifecycle_target(test: &str) -> Option<(Target, Process)> {
    if be_target() || !cudars_tests::require_gpu(test) {
        return None;
    }
    let (target, _) = Target::start(test, 0);
    let proc = Process::new(target.pid()).unwrap();
    Some((target, proc))
}

/// `TestInputValidation::test_process_rejects_invalid_pid[(0,)-ValueError-…]`.
#[test]
fn TestInputValidation__test_process_rejects_invalid_pid__args2_ValueError_pid_must_be_a_positive_int()
 {
    let r = Process::new(0);
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

/// `pid` has no setter here; the getter answers what was given. `Process::new`
/// initialises the driver (Python's does not), hence the GPU.
#[test]
fn TestInputValidation__test_pid_is_read_only() {
    cudars_tests::require_gpu!();
    let proc = Process::new(1).unwrap();
    assert_eq!(proc.pid(), 1);
}

#[test]
fn TestCheckpointLifecycle__test_initial_state_is_running() {
    let Some((_target, proc)) =
        lifecycle_target("checkpoint::TestCheckpointLifecycle__test_initial_state_is_running")
    else {
        return;
    };
    match proc.state() {
        Ok(s) => assert_eq!(s, ProcessState::Running),
        Err(e) if unsupported(&e) => skip!("{e}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn TestCheckpointLifecycle__test_restore_thread_id_is_positive() {
    let Some((_target, proc)) =
        lifecycle_target("checkpoint::TestCheckpointLifecycle__test_restore_thread_id_is_positive")
    else {
        return;
    };
    match proc.restore_thread_id() {
        Ok(tid) => assert!(tid > 0),
        Err(e) if unsupported(&e) => skip!("{e}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn TestCheckpointLifecycle__test_lock_unlock() {
    let Some((_target, proc)) =
        lifecycle_target("checkpoint::TestCheckpointLifecycle__test_lock_unlock")
    else {
        return;
    };
    lock_or_skip!(proc, None);
    assert_eq!(proc.state().unwrap(), ProcessState::Locked);
    proc.unlock().unwrap();
    assert_eq!(proc.state().unwrap(), ProcessState::Running);
}

/// `lock()` with the default timeout (none).
#[test]
fn TestCheckpointLifecycle__test_lock_default_timeout() {
    let Some((_target, proc)) =
        lifecycle_target("checkpoint::TestCheckpointLifecycle__test_lock_default_timeout")
    else {
        return;
    };
    lock_or_skip!(proc, None);
    assert_eq!(proc.state().unwrap(), ProcessState::Locked);
    proc.unlock().unwrap();
}

#[test]
fn TestCheckpointLifecycle__test_lock_with_timeout() {
    let Some((_target, proc)) =
        lifecycle_target("checkpoint::TestCheckpointLifecycle__test_lock_with_timeout")
    else {
        return;
    };
    lock_or_skip!(proc, Some(Duration::from_millis(5000)));
    assert_eq!(proc.state().unwrap(), ProcessState::Locked);
    proc.unlock().unwrap();
}

/// lock, checkpoint, restore, unlock, the state checked at each step.
#[test]
fn TestCheckpointLifecycle__test_full_cycle_no_migration() {
    let Some((_target, proc)) =
        lifecycle_target("checkpoint::TestCheckpointLifecycle__test_full_cycle_no_migration")
    else {
        return;
    };
    lock_or_skip!(proc, Some(Duration::from_millis(5000)));
    assert_eq!(proc.state().unwrap(), ProcessState::Locked);
    proc.checkpoint().unwrap();
    assert_eq!(proc.state().unwrap(), ProcessState::Checkpointed);
    proc.restore(&[]).unwrap();
    // Restore leaves the process locked.
    assert_eq!(proc.state().unwrap(), ProcessState::Locked);
    proc.unlock().unwrap();
    assert_eq!(proc.state().unwrap(), ProcessState::Running);
}

/// `_find_same_chip_pair`.
fn same_chip_pair(devices: &[Device]) -> Option<(usize, usize)> {
    let names: Vec<String> = devices.iter().map(|d| d.name().unwrap()).collect();
    (0..names.len()).find_map(|j| (0..j).find(|&i| names[i] == names[j]).map(|i| (i, j)))
}

/// `_checkpoint_restore`: `Err(reason)` where Python's scenario skips.
fn checkpoint_restore(proc: &Process, mapping: &[GpuRemap]) -> Result<(), String> {
    match proc.lock(Some(Duration::from_millis(5000))) {
        Err(e) if unsupported(&e) => return Err(e.to_string()),
        r => r.unwrap(),
    }
    proc.checkpoint().unwrap();
    if let Err(e) = proc.restore(mapping) {
        let _ = proc.restore(&[]);
        let _ = proc.unlock();
        if e.driver_code() == Some(sys::CUDA_ERROR_INVALID_VALUE) {
            return Err("Driver does not support GPU migration on this hardware \
                 (CUDA_ERROR_INVALID_VALUE; see NVBug 5437334)"
                .into());
        }
        if unsupported(&e) {
            return Err(e.to_string());
        }
        panic!("{e}");
    }
    proc.unlock().unwrap();
    Ok(())
}

#[test]
fn TestCheckpointGpuMigration__test_rotation_migrates_context() {
    if be_target() {
        return;
    }
    cudars_tests::require_gpus!(2);
    if std::env::var_os("CUDA_VISIBLE_DEVICES").is_some() {
        skip!("GPU migration tests require an unmasked CUDA device view");
    }
    let devices = Device::all().unwrap();
    if same_chip_pair(&devices).is_none() {
        skip!("GPU migration requires at least 2 GPUs of the same chip type");
    }
    let n = devices.len();
    let uuids: Vec<[u8; 16]> = devices.iter().map(|d| d.uuid().unwrap()).collect();
    let mapping: Vec<GpuRemap> = (0..n)
        .map(|i| GpuRemap {
            old_uuid: uuids[i],
            new_uuid: uuids[(i + 1) % n],
        })
        .collect();
    let (mut target, uuid_origin) = Target::start(
        "checkpoint::TestCheckpointGpuMigration__test_rotation_migrates_context",
        0,
    );
    let proc = Process::new(target.pid()).unwrap();
    let mut current = uuid_origin.clone();
    for step in 0..n {
        let expected = hex(uuids[(step + 1) % n]);
        if let Err(reason) = checkpoint_restore(&proc, &mapping) {
            skip!("{reason}");
        }
        let observed = target.uuid();
        if observed == current {
            skip!(
                "Driver accepted GPU rotation but migration is a no-op on this hardware/driver version"
            );
        }
        assert_eq!(observed, expected, "step {step}");
        current = observed;
    }
    assert_eq!(target.uuid(), uuid_origin);
}

#[test]
fn TestCheckpointGpuMigration__test_swap_identical_gpus() {
    if be_target() {
        return;
    }
    cudars_tests::require_gpus!(2);
    if std::env::var_os("CUDA_VISIBLE_DEVICES").is_some() {
        skip!("GPU migration tests require an unmasked CUDA device view");
    }
    let devices = Device::all().unwrap();
    let Some((i, j)) = same_chip_pair(&devices) else {
        skip!("No two GPUs of the same chip type found")
    };
    let uuids: Vec<[u8; 16]> = devices.iter().map(|d| d.uuid().unwrap()).collect();
    let mapping: Vec<GpuRemap> = (0..uuids.len())
        .map(|k| GpuRemap {
            old_uuid: uuids[k],
            new_uuid: uuids[if k == i {
                j
            } else if k == j {
                i
            } else {
                k
            }],
        })
        .collect();
    let (mut target, uuid_before) = Target::start(
        "checkpoint::TestCheckpointGpuMigration__test_swap_identical_gpus",
        i,
    );
    assert_eq!(uuid_before, hex(uuids[i]));
    let proc = Process::new(target.pid()).unwrap();
    if let Err(reason) = checkpoint_restore(&proc, &mapping) {
        skip!("{reason}");
    }
    let uuid_after = target.uuid();
    if uuid_after == hex(uuids[i]) {
        skip!("Driver accepted GPU swap but migration is a no-op on this hardware/driver version");
    }
    assert_eq!(uuid_after, hex(uuids[j]));
}
