//! Checkpointing a CUDA process: suspend its GPU work, move its device memory to
//! host memory and release the GPU, then bring it all back (the driver's
//! `cuCheckpointProcess*` API, Linux, driver 555 or later; what the
//! `cuda-checkpoint` tool and CRIU use).
//!
//! A process goes `Running` → [`lock`](Process::lock) → `Locked` →
//! [`checkpoint`](Process::checkpoint) → `Checkpointed` →
//! [`restore`](Process::restore) → `Locked` → [`unlock`](Process::unlock) →
//! `Running`. While locked, the process's CUDA calls block; while checkpointed,
//! it holds no GPU memory. The process being checkpointed is usually another one
//! (a tool acts on it by pid); it need not cooperate.
//!
//! ```no_run
//! use cudars_core::checkpoint::{Process, ProcessState};
//! use std::time::Duration;
//!
//! let p = Process::new(12345)?;
//! p.lock(Some(Duration::from_secs(10)))?;
//! p.checkpoint()?;
//! assert_eq!(p.state()?, ProcessState::Checkpointed);
//! // … the GPU is free of the process's memory here …
//! p.restore(&[])?;
//! p.unlock()?;
//! # Ok::<(), cudars_core::Error>(())
//! ```

use std::time::Duration;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};

/// The checkpoint state of a CUDA process (`CUprocessState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProcessState {
    /// Running normally.
    Running,
    /// Locked: its CUDA calls block, its work has drained.
    Locked,
    /// Checkpointed: its device memory is in host memory, the GPU is released.
    Checkpointed,
    /// A checkpoint operation failed; the process cannot go on using CUDA.
    Failed,
    /// A state this crate does not know (a newer driver's).
    Other(u32),
}

impl ProcessState {
    fn from_raw(s: sys::CUprocessState) -> Self {
        match s {
            sys::CU_PROCESS_STATE_RUNNING => Self::Running,
            sys::CU_PROCESS_STATE_LOCKED => Self::Locked,
            sys::CU_PROCESS_STATE_CHECKPOINTED => Self::Checkpointed,
            sys::CU_PROCESS_STATE_FAILED => Self::Failed,
            other => Self::Other(other.0),
        }
    }
}

/// A GPU to put a checkpointed process's work on at restore: the device it ran
/// on, by UUID ([`Device::uuid`](crate::Device::uuid)), and the one to use
/// instead. Needs CUDA 13 bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GpuRemap {
    /// The UUID of the GPU the process used.
    pub old_uuid: [u8; 16],
    /// The UUID of the GPU to restore onto.
    pub new_uuid: [u8; 16],
}

/// A CUDA process, by pid, to checkpoint and restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Process {
    pid: i32,
}

impl Process {
    /// The process with this pid. Initialises the driver in this process (the
    /// checkpoint API needs it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a pid that is not a valid `pid_t` (0 or
    /// above `i32::MAX`); the driver's error from `cuInit`.
    pub fn new(pid: u32) -> Result<Self> {
        let pid = i32::try_from(pid).ok().filter(|&p| p > 0).ok_or_else(|| {
            Error::invalid(
                "naming a process to checkpoint",
                format!("{pid} is not a process id"),
            )
        })?;
        crate::device::init()?;
        Ok(Self { pid })
    }

    /// The calling process.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn current() -> Result<Self> {
        Self::new(std::process::id())
    }

    /// The pid.
    pub fn pid(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// The process's state (`cuCheckpointProcessGetState`).
    ///
    /// # Errors
    /// The driver's error; a process that does not use CUDA gives one.
    pub fn state(&self) -> Result<ProcessState> {
        let mut s = sys::CU_PROCESS_STATE_RUNNING;
        // SAFETY: `s` is valid for writes.
        unsafe { sys::cuCheckpointProcessGetState(self.pid, &mut s) }
            .check(|| format!("reading the checkpoint state of process {}", self.pid))?;
        Ok(ProcessState::from_raw(s))
    }

    /// The id of the thread the driver uses to restore the process
    /// (`cuCheckpointProcessGetRestoreThreadId`); CRIU needs it.
    ///
    /// # Errors
    /// The driver's error.
    pub fn restore_thread_id(&self) -> Result<i32> {
        let mut tid = 0;
        // SAFETY: `tid` is valid for writes.
        unsafe { sys::cuCheckpointProcessGetRestoreThreadId(self.pid, &mut tid) }
            .check(|| format!("reading the restore thread of process {}", self.pid))?;
        Ok(tid)
    }

    /// Locks a running process (`cuCheckpointProcessLock`): its new CUDA calls
    /// block and its queued work completes. `timeout`: how long to wait for that
    /// (`None` waits as long as it takes; anything below a millisecond counts as
    /// one).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a timeout over `u32::MAX` milliseconds; the
    /// driver's error (`CUDA_ERROR_ILLEGAL_STATE` unless the process is running,
    /// `CUDA_ERROR_TIMEOUT`).
    pub fn lock(&self, timeout: Option<Duration>) -> Result<()> {
        let what = || format!("locking process {} for a checkpoint", self.pid);
        let timeout_ms = match timeout {
            None => 0,
            Some(t) => u32::try_from(t.as_millis().max(1))
                .map_err(|_| Error::invalid(what(), format!("a timeout of {t:?} is too long")))?,
        };
        let mut args = sys::CUcheckpointLockArgs {
            timeoutMs: timeout_ms,
            ..Default::default()
        };
        // SAFETY: `args` is a valid, zeroed-but-for-the-timeout argument block.
        unsafe { sys::cuCheckpointProcessLock(self.pid, &mut args) }.check(what)
    }

    /// Checkpoints a locked process (`cuCheckpointProcessCheckpoint`): its device
    /// memory is copied to host memory and the GPU released.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_ILLEGAL_STATE` unless the process is
    /// locked).
    pub fn checkpoint(&self) -> Result<()> {
        let mut args = sys::CUcheckpointCheckpointArgs::default();
        // SAFETY: `args` is a valid, zeroed argument block.
        unsafe { sys::cuCheckpointProcessCheckpoint(self.pid, &mut args) }
            .check(|| format!("checkpointing process {}", self.pid))
    }

    /// Restores a checkpointed process (`cuCheckpointProcessRestore`): its GPU
    /// memory comes back at the same addresses; it stays locked until
    /// [`unlock`](Self::unlock). `remap` moves its work to other GPUs (empty:
    /// the same GPUs).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a non-empty `remap` on a driver older than CUDA
    /// 13.0,
    /// [`Error::InvalidArgument`] for more pairs than the driver takes; the
    /// driver's error (`CUDA_ERROR_ILLEGAL_STATE` unless checkpointed).
    pub fn restore(&self, remap: &[GpuRemap]) -> Result<()> {
        let what = || format!("restoring process {} from a checkpoint", self.pid);
        if !remap.is_empty() {
            crate::versions::require_driver(
                13000,
                "moving a process to other GPUs at restore",
                what,
            )?;
        }
        let mut pairs: Vec<sys::CUcheckpointGpuPair> = remap
            .iter()
            .map(|p| sys::CUcheckpointGpuPair {
                oldUuid: uuid(p.old_uuid),
                newUuid: uuid(p.new_uuid),
            })
            .collect();
        let count =
            u32::try_from(pairs.len()).map_err(|_| Error::invalid(what(), "too many GPU pairs"))?;
        let mut args = sys::CUcheckpointRestoreArgs {
            gpuPairs: if pairs.is_empty() {
                std::ptr::null_mut()
            } else {
                pairs.as_mut_ptr()
            },
            gpuPairsCount: count,
            // The rest zeroed: no custom storage (CUDA 13.4's
            // `customStorageInfo_out`), reserved bytes as the driver requires.
            ..Default::default()
        };
        // SAFETY: `args` is a valid argument block; `gpuPairs` points to
        // `count` pairs that outlive the call (or is null with a count of 0,
        // which is the all-zero block drivers before CUDA 13.0 take).
        unsafe { sys::cuCheckpointProcessRestore(self.pid, &mut args) }.check(what)
    }

    /// Unlocks a locked process (`cuCheckpointProcessUnlock`): its CUDA calls go
    /// on.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_ILLEGAL_STATE` unless locked).
    pub fn unlock(&self) -> Result<()> {
        let mut args = sys::CUcheckpointUnlockArgs::default();
        // SAFETY: `args` is a valid, zeroed argument block.
        unsafe { sys::cuCheckpointProcessUnlock(self.pid, &mut args) }
            .check(|| format!("unlocking process {} after a checkpoint", self.pid))
    }
}

fn uuid(bytes: [u8; 16]) -> sys::CUuuid {
    sys::CUuuid {
        bytes: bytes.map(|b| b as std::ffi::c_char),
    }
}
