//! cuFile's driver: opened once per process, closed with the last user.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use cuda_bindings::cufile as sys;
use cuda_core::InvalidKind;

use crate::error::{Error, Result, check};

/// The open driver of this process, while any [`Driver`] (or [`FileHandle`](crate::FileHandle)) holds it.
static OPEN: Mutex<Weak<Opened>> = Mutex::new(Weak::new());

/// Proof that `cuFileDriverOpen` succeeded; closes the driver when dropped.
#[derive(Debug)]
struct Opened;

impl Drop for Opened {
    fn drop(&mut self) {
        // SAFETY: the driver was opened by `Driver::open_with`, and this is the
        // last holder: no handle is registered and no I/O is under way (each
        // handle and pending operation holds a `Driver`).
        let _ = unsafe { sys::cuFileDriverClose() };
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
    /// [`Error::Unavailable`] when cuFile cannot be loaded; cuFile's error when
    /// the driver cannot open (`CU_FILE_DRIVER_NOT_INITIALIZED` where
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
        let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(opened) = open.upgrade() {
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
        *open = Arc::downgrade(&opened);
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
