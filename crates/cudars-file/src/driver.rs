//! cuFile's driver: opened once per process, closed with the last user.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use cudars_bindings::cufile as sys;
use cudars_core::InvalidKind;

use crate::error::{Error, Result, check, check_driver};

/// The driver of this process: the one open while any [`Driver`] (or
/// [`FileHandle`](crate::FileHandle)) holds it, and whether its close is still
/// to come. Opening and closing happen under this lock, one at a time, so a
/// close never follows an open it did not pair with.
struct State {
    open: Weak<Opened>,
    /// The driver is open and its close has not run yet (its last holder may
    /// already be gone).
    closing: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    open: Weak::new(),
    closing: false,
});
/// Signalled when a pending close is done.
static CLOSED: Condvar = Condvar::new();

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Proof that `cuFileDriverOpen` succeeded; closes the driver when dropped.
#[derive(Debug)]
struct Opened;

impl Drop for Opened {
    // On a driver callback thread the close runs later, on an ordinary thread
    // (rule 6 of the soundness contract); an open meanwhile waits for it
    // (`closing` stays set until it has run).
    fn drop(&mut self) {
        let destroy = |()| {
            let mut st = state();
            // SAFETY: the driver was opened by `Driver::open_with`, and this
            // is the last holder: no handle is registered and no I/O is
            // under way (each handle holds a `Driver`, and each pending
            // transfer its handle). The header maps `cuFileDriverClose` to
            // `cuFileDriverClose_v2`; a cuFile without it has only the first.
            let _ = unsafe {
                if sys::is_available("cuFileDriverClose_v2") {
                    sys::cuFileDriverClose_v2()
                } else {
                    sys::cuFileDriverClose()
                }
            };
            st.closing = false;
            CLOSED.notify_all();
            Ok(())
        };
        // SAFETY: `()` stands for the process's one open driver, which this
        // last holder owns and closes only here.
        unsafe { cudars_core::release_or_defer("closing the cuFile driver", (), destroy) };
    }
}

/// What to set before the driver opens (`cuFileSetParameterBool`); `None` keeps
/// cuFile's configuration (its defaults, or the JSON file `CUFILE_ENV_PATH_JSON`
/// names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverOptions {
    /// Whether I/O may fall back to compatibility mode (POSIX I/O through host
    /// memory) where GPUDirect Storage cannot be used
    /// (`properties.allow_compat_mode`; cuFile's default is `true`).
    pub allow_compat_mode: Option<bool>,
    /// Whether every I/O goes through compatibility mode, even where GPUDirect
    /// Storage could be used (`CUFILE_PARAM_FORCE_COMPAT_MODE`).
    pub force_compat_mode: Option<bool>,
}

/// cuFile's driver, open while any `Driver` (or a [`FileHandle`](crate::FileHandle)
/// registered through it) exists: [`open`](Self::open) opens it the first time
/// (`cuFileDriverOpen`) and hands out the same driver after that; the last one
/// dropped closes it (`cuFileDriverClose`). Cloning is cheap.
#[derive(Debug, Clone)]
pub struct Driver {
    _opened: Arc<Opened>,
}

/// The driver's properties (`cuFileDriverGetProperties`) and the compatibility
/// mode settings (`cuFileGetParameterBool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverProperties {
    /// The `nvidia-fs` kernel driver's version, `None` when it is not loaded
    /// (then only compatibility mode can move data).
    pub nvfs_version: Option<(u32, u32)>,
    /// Whether compatibility mode is allowed.
    pub allow_compat_mode: bool,
    /// Whether compatibility mode is forced for every I/O.
    pub force_compat_mode: bool,
    /// The largest direct I/O, in KiB.
    pub max_direct_io_size_kb: usize,
    /// Below this size (KiB), I/O is polled rather than waited for.
    pub poll_threshold_size_kb: usize,
    /// The device memory cuFile may use as bounce buffers, in KiB.
    pub max_device_cache_size_kb: u32,
    /// The device memory cuFile may pin, in KiB.
    pub max_device_pinned_mem_size_kb: u32,
    /// The most entries of one batch I/O.
    pub max_batch_io_size: u32,
}

impl DriverProperties {
    /// Whether I/O goes through compatibility mode (POSIX I/O through host
    /// memory) rather than GPUDirect Storage: forced, or `nvidia-fs` absent.
    pub fn uses_compat_mode(&self) -> bool {
        self.force_compat_mode || self.nvfs_version.is_none()
    }
}

impl Driver {
    /// Opens cuFile's driver with its own configuration, or returns the one
    /// already open.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when cuFile cannot be loaded;
    /// [`Error::DriverTooOld`] when the CUDA driver is older than cuFile's CUDA
    /// major (the crate docs' "Which driver"); cuFile's error when the driver
    /// cannot open (`CU_FILE_DRIVER_NOT_INITIALIZED` where
    /// `nvidia-fs` is absent and compatibility mode is not allowed).
    pub fn open() -> Result<Self> {
        Self::open_with(&DriverOptions::default())
    }

    /// Opens cuFile's driver after setting `options`, or returns the one already
    /// open when `options` sets nothing.
    ///
    /// # Errors
    /// As [`open`](Self::open); [`Error::InvalidArgument`] when `options` sets
    /// something and the driver is already open (cuFile reads its parameters only
    /// when it opens); cuFile's error setting a parameter.
    pub fn open_with(options: &DriverOptions) -> Result<Self> {
        let mut st = state();
        // A driver whose last holder is gone but which is not closed yet: wait
        // for its close, so that it cannot close the driver opened here.
        while st.open.strong_count() == 0 && st.closing {
            st = CLOSED.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(opened) = st.open.upgrade() {
            // Unlocked first: were `opened` the last holder by now, its drop
            // takes the lock.
            drop(st);
            if *options != DriverOptions::default() {
                return Err(Error::invalid(
                    "opening the cuFile driver",
                    InvalidKind::Other,
                    "the driver is already open in this process, and its parameters can only \
                     be set before it opens: drop every Driver and FileHandle first",
                ));
            }
            return Ok(Self { _opened: opened });
        }
        // Before any parameter is set: a driver too old leaves cuFile untouched.
        check_driver(|| "opening the cuFile driver (cuFileDriverOpen)".into())?;
        let params = [
            (
                sys::CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE,
                options.allow_compat_mode,
                "allow_compat_mode",
            ),
            (
                sys::CUFILE_PARAM_FORCE_COMPAT_MODE,
                options.force_compat_mode,
                "force_compat_mode",
            ),
        ];
        for (param, value, name) in params {
            if let Some(v) = value {
                // SAFETY: a parameter of the header's enum and a plain value; the
                // driver is not open, as cuFile requires for setting it.
                let status = unsafe { sys::cuFileSetParameterBool(param, v) };
                check(status, || format!("setting cuFile's {name} to {v}"))?;
            }
        }
        // SAFETY: no arguments; paired with the close in `Opened::drop`.
        let status = unsafe { sys::cuFileDriverOpen() };
        check(status, || {
            "opening the cuFile driver (cuFileDriverOpen)".into()
        })?;
        let opened = Arc::new(Opened);
        st.open = Arc::downgrade(&opened);
        st.closing = true;
        Ok(Self { _opened: opened })
    }

    /// The driver's properties and whether I/O goes through compatibility mode.
    ///
    /// # Errors
    /// cuFile's error.
    pub fn properties(&self) -> Result<DriverProperties> {
        let mut p = sys::CUfileDrvProps::default();
        // SAFETY: `p` is valid for writes; the driver is open.
        let status = unsafe { sys::cuFileDriverGetProperties(&mut p) };
        check(status, || {
            "reading the cuFile driver's properties (cuFileDriverGetProperties)".into()
        })?;
        let flag = |param, name: &str| -> Result<bool> {
            let mut v = false;
            // SAFETY: a parameter of the header's enum; `v` is valid for writes.
            let status = unsafe { sys::cuFileGetParameterBool(param, &mut v) };
            check(status, || format!("reading cuFile's {name}"))?;
            Ok(v)
        };
        Ok(DriverProperties {
            nvfs_version: (p.nvfs.major_version != 0 || p.nvfs.minor_version != 0)
                .then_some((p.nvfs.major_version, p.nvfs.minor_version)),
            allow_compat_mode: flag(
                sys::CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE,
                "allow_compat_mode",
            )?,
            force_compat_mode: flag(sys::CUFILE_PARAM_FORCE_COMPAT_MODE, "force_compat_mode")?,
            max_direct_io_size_kb: p.nvfs.max_direct_io_size,
            poll_threshold_size_kb: p.nvfs.poll_thresh_size,
            max_device_cache_size_kb: p.max_device_cache_size,
            max_device_pinned_mem_size_kb: p.max_device_pinned_mem_size,
            max_batch_io_size: p.max_batch_io_size,
        })
    }
}
