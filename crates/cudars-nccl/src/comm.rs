//! [`Communicator`]: one rank of a NCCL communicator, bound to one device.

use std::cell::Cell;
use std::ffi::CString;
use std::marker::PhantomData;
use std::ptr;
use std::time::{Duration, Instant};

use cudars_bindings::nccl as sys;
use cudars_core::{Context, ContextScope, Device, InvalidKind};

use crate::error::{Error, Result, TimedOut, WorldError, check};
use crate::id::UniqueId;

/// Options of a new communicator (`ncclConfig_t`); every field left `None` keeps
/// NCCL's default (or its environment variable's value).
///
/// Communicators made with these options by [`Communicator::init_rank_with`]
/// are blocking: each call returns once NCCL has queued its work.
/// [`Communicator::init_rank_timeout`] and [`World::join`](crate::World::join)
/// make them in NCCL's non-blocking mode, whose calls may answer
/// `ncclInProgress`; this crate then polls until NCCL is done, under a
/// timeout, so each call still returns finished work or an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommConfig {
    /// The thread-block cluster size of NCCL's kernels (`cgaClusterSize`, 0 to 8).
    pub cga_cluster_size: Option<u32>,
    /// The fewest thread blocks (channels) NCCL uses (`minCTAs`).
    pub min_ctas: Option<u32>,
    /// The most thread blocks (channels) NCCL uses (`maxCTAs`).
    pub max_ctas: Option<u32>,
    /// The network plugin or transport to use (`netName`, e.g. `"Socket"`).
    pub net_name: Option<String>,
    /// A name for the communicator in NCCL's logs and profilers (`commName`).
    pub comm_name: Option<String>,
    /// Whether communicators split from this one share its resources
    /// (`splitShare`).
    pub split_share: Option<bool>,
}

impl CommConfig {
    /// The default options: NCCL chooses everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`cga_cluster_size`](Self::cga_cluster_size).
    pub fn with_cga_cluster_size(mut self, size: u32) -> Self {
        self.cga_cluster_size = Some(size);
        self
    }

    /// Sets [`min_ctas`](Self::min_ctas) and [`max_ctas`](Self::max_ctas).
    pub fn with_ctas(mut self, min: u32, max: u32) -> Self {
        self.min_ctas = Some(min);
        self.max_ctas = Some(max);
        self
    }

    /// Sets [`net_name`](Self::net_name).
    pub fn with_net_name(mut self, name: impl Into<String>) -> Self {
        self.net_name = Some(name.into());
        self
    }

    /// Sets [`comm_name`](Self::comm_name).
    pub fn with_comm_name(mut self, name: impl Into<String>) -> Self {
        self.comm_name = Some(name.into());
        self
    }

    /// Sets [`split_share`](Self::split_share).
    pub fn with_split_share(mut self, share: bool) -> Self {
        self.split_share = Some(share);
        self
    }
}

/// `ncclConfig_t` as `NCCL_CONFIG_INITIALIZER` makes it, with `config`'s fields
/// set; the strings it points to live in `strings`.
pub(crate) struct RawConfig {
    pub(crate) raw: sys::ncclConfig_t,
    _strings: Vec<CString>,
}

/// `NCCL_CONFIG_UNDEF_INT`: "not set, use the default".
const UNDEF: i32 = i32::MIN;

impl RawConfig {
    pub(crate) fn new(config: &CommConfig, context: &dyn Fn() -> String) -> Result<Self> {
        let int = |v: Option<u32>, what: &str| -> Result<i32> {
            match v {
                None => Ok(UNDEF),
                Some(v) => i32::try_from(v).map_err(|_| {
                    Error::invalid(
                        context(),
                        InvalidKind::OutOfRange,
                        format!("{what} is {v}, more than NCCL takes"),
                    )
                }),
            }
        };
        let mut strings = Vec::new();
        let mut string = |v: &Option<String>, what: &str| -> Result<*const std::ffi::c_char> {
            match v {
                None => Ok(ptr::null()),
                Some(s) => {
                    let c = CString::new(s.as_str()).map_err(|_| {
                        Error::invalid(
                            context(),
                            InvalidKind::Other,
                            format!("{what} {s:?} holds a NUL byte"),
                        )
                    })?;
                    // The pointer is taken from the string where it stays: moving a
                    // `CString` after taking it would invalidate it (the move
                    // asserts that the box is unique; Miri found this).
                    strings.push(c);
                    Ok(strings.last().map_or(ptr::null(), |c: &CString| c.as_ptr()))
                }
            }
        };
        let raw = sys::ncclConfig_t {
            size: std::mem::size_of::<sys::ncclConfig_t>(),
            magic: 0xcafe_beef,
            version: sys::NCCL_VERSION_CODE,
            blocking: 1,
            cgaClusterSize: int(config.cga_cluster_size, "the cluster size")?,
            minCTAs: int(config.min_ctas, "the fewest CTAs")?,
            maxCTAs: int(config.max_ctas, "the most CTAs")?,
            netName: string(&config.net_name, "the network name")?,
            splitShare: config.split_share.map_or(UNDEF, i32::from),
            trafficClass: UNDEF,
            commName: string(&config.comm_name, "the communicator name")?,
            collnetEnable: UNDEF,
            CTAPolicy: UNDEF,
            shrinkShare: UNDEF,
            nvlsCTAs: UNDEF,
            nChannelsPerNetPeer: UNDEF,
            nvlinkCentricSched: UNDEF,
        };
        Ok(Self {
            raw,
            _strings: strings,
        })
    }
}

/// One rank of a NCCL communicator: a group of ranks, each on one GPU, that run
/// collectives and point-to-point transfers together.
///
/// Made for one process driving several GPUs by [`init_all`](Self::init_all) (one
/// communicator per device, all in this process), or for one GPU per process by
/// [`init_rank`](Self::init_rank) with a [`UniqueId`] shared between the
/// processes. Every rank must issue the same collectives in the same order; in one
/// process, the ranks' calls go together in a [`Group`](crate::Group).
///
/// Dropping it destroys the communicator (`ncclCommDestroy`, which first
/// finishes the work queued on it); [`destroy`](Self::destroy) does the same and
/// reports errors, [`abort`](Self::abort) gives up on work in flight.
///
/// `Send` but not `Sync`: NCCL does not allow two threads to use one
/// communicator at the same time.
#[derive(Debug)]
pub struct Communicator {
    pub(crate) raw: sys::ncclComm_t,
    pub(crate) device: Device,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// `Some` for a non-blocking communicator: how long a call may stay in
    /// progress before it is a [`WorldError::TimedOut`].
    pub(crate) wait: Option<Duration>,
    /// `!Sync` by design, not by the accident of the handle's type: NCCL
    /// allows one thread at a time on a communicator.
    pub(crate) _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a communicator may be used from any thread, one at a time; `!Sync`
// (the `_not_sync` marker) keeps it to one.
// Soundness contract: rule 11.
unsafe impl Send for Communicator {}

impl Communicator {
    /// One communicator of `devices.len()` ranks for all of `devices`, in this
    /// process (`ncclCommInitAll`): rank `i` is on `devices[i]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: no devices ([`InvalidKind::ZeroSize`]), a device
    /// named twice ([`InvalidKind::Other`]); [`Error::Unavailable`] when NCCL
    /// cannot be loaded; NCCL's error.
    pub fn init_all(devices: &[Device]) -> Result<Vec<Self>> {
        let n = devices.len();
        let context = || format!("making a NCCL communicator of {n} ranks in one process");
        check_devices(devices, &context)?;
        let ordinals = devices
            .iter()
            .map(|d| i32::try_from(d.ordinal()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                Error::invalid(
                    context(),
                    InvalidKind::OutOfRange,
                    "a device ordinal overflows",
                )
            })?;
        let count = i32::try_from(n).map_err(|_| {
            Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("{n} ranks are too many"),
            )
        })?;
        // Each device's primary context exists and is the one NCCL uses.
        let primaries = devices
            .iter()
            .map(Context::primary)
            .collect::<cudars_core::Result<Vec<_>>>()?;
        let _scope = ContextScope::enter(&primaries[0])?;
        let mut raw = vec![ptr::null_mut(); n];
        // SAFETY: `raw` holds `n` writable handles and `ordinals` `n` device ordinals.
        let status = unsafe { sys::ncclCommInitAll(raw.as_mut_ptr(), count, ordinals.as_ptr()) };
        check(status, context)?;
        Ok(raw
            .into_iter()
            .zip(devices)
            .enumerate()
            .map(|(rank, (raw, device))| Self {
                raw,
                device: *device,
                rank,
                size: n,
                wait: None,
                _not_sync: PhantomData,
            })
            .collect())
    }

    /// Rank `rank` of a communicator of `nranks` ranks, on `device`
    /// (`ncclCommInitRank`): every rank calls this with the same `id` (made by one
    /// of them with [`UniqueId::new`]), and the call returns once all have joined.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: no ranks ([`InvalidKind::ZeroSize`]), a rank not
    /// below `nranks` ([`InvalidKind::OutOfRange`]); [`Error::Unavailable`] when
    /// NCCL cannot be loaded; NCCL's error.
    pub fn init_rank(device: &Device, nranks: usize, id: &UniqueId, rank: usize) -> Result<Self> {
        Self::init_rank_with(device, nranks, id, rank, &CommConfig::default())
    }

    /// [`init_rank`](Self::init_rank) with options (`ncclCommInitRankConfig`).
    ///
    /// # Errors
    /// As [`init_rank`](Self::init_rank), and [`Error::InvalidArgument`] for an
    /// option NCCL cannot take (a number over `i32::MAX`, a string with a NUL).
    pub fn init_rank_with(
        device: &Device,
        nranks: usize,
        id: &UniqueId,
        rank: usize,
        config: &CommConfig,
    ) -> Result<Self> {
        let context = || {
            format!(
                "joining a NCCL communicator of {nranks} ranks as rank {rank} on device {}",
                device.ordinal()
            )
        };
        let (n, r) = check_rank(nranks, rank, &context)?;
        let mut config = RawConfig::new(config, &context)?;
        let _scope = primary_scope(device)?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is writable; the id is a valid `ncclUniqueId` passed by
        // value; `config.raw` is initialised as NCCL_CONFIG_INITIALIZER does and
        // its strings live in `config` for the call. The device's primary context
        // is current, which is the device NCCL takes.
        let status =
            unsafe { sys::ncclCommInitRankConfig(&mut raw, n, id.raw(), r, &mut config.raw) };
        check(status, context)?;
        Ok(Self {
            raw,
            device: *device,
            rank,
            size: nranks,
            wait: None,
            _not_sync: PhantomData,
        })
    }

    /// [`init_rank_with`](Self::init_rank_with) under a timeout: the init runs in
    /// NCCL's non-blocking mode (`blocking = 0`) and is polled
    /// (`ncclCommGetAsyncError`) until every rank has joined, NCCL reports an
    /// error, or `timeout` passes. On an error or the timeout the half-made
    /// communicator is aborted (`ncclCommAbort`, which frees the GPU memory
    /// NCCL took for it), so the caller never hangs on a rank that does not
    /// come. The communicator stays non-blocking: each later call that NCCL
    /// answers with `ncclInProgress` is polled until done, for at most
    /// `timeout`.
    ///
    /// # Errors
    /// As [`init_rank_with`](Self::init_rank_with);
    /// [`WorldError::TimedOut`] inside [`Error::Extra`](cudars_core::LibraryError::Extra)
    /// when the ranks had not all joined within `timeout`.
    pub fn init_rank_timeout(
        device: &Device,
        nranks: usize,
        id: &UniqueId,
        rank: usize,
        config: &CommConfig,
        timeout: Duration,
    ) -> Result<Self> {
        let context = || {
            format!(
                "joining a NCCL communicator of {nranks} ranks as rank {rank} on device {} \
                 (non-blocking, {:.1} s timeout)",
                device.ordinal(),
                timeout.as_secs_f64()
            )
        };
        let (n, r) = check_rank(nranks, rank, &context)?;
        let mut config = RawConfig::new(config, &context)?;
        config.raw.blocking = 0;
        let scope = primary_scope(device)?;
        let mut raw = ptr::null_mut();
        // SAFETY: as in `init_rank_with`; with `blocking = 0` NCCL may return
        // before the communicator is ready, writing the handle first.
        let status =
            unsafe { sys::ncclCommInitRankConfig(&mut raw, n, id.raw(), r, &mut config.raw) };
        drop(scope);
        if raw.is_null() {
            check(status, context)?;
            return Err(Error::invalid(
                context(),
                InvalidKind::Other,
                "NCCL returned no communicator",
            ));
        }
        let comm = Self {
            raw,
            device: *device,
            rank,
            size: nranks,
            wait: Some(timeout),
            _not_sync: PhantomData,
        };
        let ready = if status == sys::ncclInProgress {
            poll(raw, timeout, &context)
        } else {
            check(status, context)
        };
        match ready {
            Ok(()) => Ok(comm),
            Err(e) => {
                // Abort the half-made communicator: its GPU memory, threads and
                // sockets go; its error is not the one to report.
                let _ = comm.abort();
                Err(match e {
                    Error::Extra(WorldError::TimedOut(mut t)) => {
                        t.aborted = true;
                        Error::Extra(WorldError::TimedOut(t))
                    }
                    e => e,
                })
            }
        }
    }

    /// Whether this communicator is in NCCL's non-blocking mode (made by
    /// [`init_rank_timeout`](Self::init_rank_timeout) or
    /// [`World::join`](crate::World::join), or split from one), and the
    /// longest a call of it is polled.
    pub fn timeout(&self) -> Option<Duration> {
        self.wait
    }

    /// After a call that NCCL answered `status`: polls while it is
    /// `ncclInProgress` on a non-blocking communicator; any other status is
    /// checked.
    pub(crate) fn settle(
        &self,
        status: sys::ncclResult_t,
        context: &dyn Fn() -> String,
    ) -> Result<()> {
        match self.wait {
            Some(after) if status == sys::ncclInProgress => poll(self.raw, after, context),
            _ => check(status, context),
        }
    }

    /// This communicator as a blocking one: a non-blocking communicator (from
    /// [`init_rank_timeout`](Self::init_rank_timeout)) is split into a new one
    /// of the same ranks in the same order with `blocking = 1`
    /// (`ncclCommSplit`, a collective: every rank calls it), polled under the
    /// communicator's timeout, and then destroyed. A blocking one is returned
    /// as it is.
    ///
    /// Why: in NCCL's non-blocking mode every group end (every collective)
    /// runs on a thread of its own and answers `ncclInProgress`, which the
    /// polling turns into about 100 µs a call (measured on two H100s: an
    /// 8 KiB all-reduce 110 µs against 10 µs blocking).
    ///
    /// # Errors
    /// [`WorldError::TimedOut`] (both communicators aborted); NCCL's error.
    pub fn into_blocking(self) -> Result<Self> {
        let Some(after) = self.wait else {
            return Ok(self);
        };
        let rank = self.rank;
        let context = || format!("making rank {rank} of a NCCL communicator blocking (a split)");
        let mut config = RawConfig::new(&CommConfig::default(), &context)?;
        config.raw.blocking = 1;
        // NCCL writes the new handle when the split finishes; on a failure it
        // may still do so later, so the slot is leaked then, not freed.
        let slot = Box::into_raw(Box::new(ptr::null_mut::<sys::ncclComm>()));
        let status = match primary_scope(&self.device) {
            // SAFETY: a live communicator; `slot` is writable and stays
            // allocated until the split has finished or forever; `config` is
            // initialised as NCCL_CONFIG_INITIALIZER does and lives past the
            // split (or is leaked with the slot). The rank fits NCCL's `int`.
            Ok(_scope) => unsafe {
                sys::ncclCommSplit(self.raw, 0, rank as i32, slot, &mut config.raw)
            },
            Err(e) => {
                // SAFETY: nothing was handed to NCCL; the box is ours again.
                drop(unsafe { Box::from_raw(slot) });
                return Err(e.into());
            }
        };
        let ready = if status == sys::ncclInProgress || status == sys::ncclSuccess {
            poll(self.raw, after, &context)
        } else {
            check(status, context)
        };
        if let Err(e) = ready {
            std::mem::forget(config);
            let _ = self.abort();
            return Err(match e {
                Error::Extra(WorldError::TimedOut(mut t)) => {
                    t.aborted = true;
                    Error::Extra(WorldError::TimedOut(t))
                }
                e => e,
            });
        }
        // SAFETY: the split has finished; the slot is ours again.
        let raw = *unsafe { Box::from_raw(slot) };
        if raw.is_null() {
            let _ = self.abort();
            return Err(Error::invalid(
                context(),
                InvalidKind::Other,
                "NCCL's split returned no communicator",
            ));
        }
        let blocking = Self {
            raw,
            device: self.device,
            rank,
            size: self.size,
            wait: None,
            _not_sync: PhantomData,
        };
        // The split keeps every rank in its place (one color, keys = ranks).
        let (r, n) = (
            blocking.query(sys::ncclCommUserRank, "its rank")?,
            blocking.query(sys::ncclCommCount, "its size")?,
        );
        if (r, n) != (self.rank, self.size) {
            return Err(Error::invalid(
                context(),
                InvalidKind::Other,
                format!(
                    "the split made rank {r} of {n}, not {} of {}",
                    self.rank, self.size
                ),
            ));
        }
        self.destroy()?;
        Ok(blocking)
    }

    /// Splits the communicator (`ncclCommSplit`). It is a collective: every rank
    /// calls it, each from its own thread or process (for several ranks driven by
    /// one thread, use [`split_all`](Self::split_all)). Ranks passing the same
    /// `color` form a new communicator, ordered by `key` and then by their rank
    /// here. A rank passing `None` takes part but joins none, and gets `None`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a color over `i32::MAX`; NCCL's error.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Self>> {
        let mut out = Self::split_all(&[self], &[(color, key)])?;
        Ok(out.pop().flatten())
    }

    /// [`split`](Self::split) for several ranks driven by this thread (from
    /// [`init_all`](Self::init_all)), in one NCCL group: `comms[i]` splits with
    /// `colors_keys[i]`. Returns one entry per communicator.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: the slices' lengths differ
    /// ([`InvalidKind::OutOfRange`]), a color over `i32::MAX`; NCCL's error.
    pub fn split_all(
        comms: &[&Communicator],
        colors_keys: &[(Option<u32>, i32)],
    ) -> Result<Vec<Option<Self>>> {
        let context = || format!("splitting {} ranks of a NCCL communicator", comms.len());
        if comms.len() != colors_keys.len() {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "{} communicators but {} colors and keys",
                    comms.len(),
                    colors_keys.len()
                ),
            ));
        }
        let mut colors = Vec::with_capacity(comms.len());
        for &(color, key) in colors_keys {
            let color = match color {
                None => sys::NCCL_SPLIT_NOCOLOR,
                Some(c) => i32::try_from(c).map_err(|_| {
                    Error::invalid(
                        context(),
                        InvalidKind::OutOfRange,
                        format!("the color {c} is over i32::MAX"),
                    )
                })?,
            };
            colors.push((color, key));
        }
        let nonblocking = comms.iter().any(|c| c.wait.is_some());
        // A non-blocking parent's split writes the new handle when it finishes,
        // after `ncclGroupEnd` returned: until then NCCL may write here, so on a
        // failure in that mode the slots are leaked rather than freed.
        let mut raws = std::mem::ManuallyDrop::new(vec![ptr::null_mut(); comms.len()]);
        let made = grouped_status(&context, || {
            for ((comm, &(color, key)), raw) in comms.iter().zip(&colors).zip(raws.iter_mut()) {
                let _scope = primary_scope(&comm.device)?;
                // SAFETY: a live communicator; `raw` is writable and stays
                // allocated until the split has finished (above); a null config
                // inherits this communicator's.
                let status =
                    unsafe { sys::ncclCommSplit(comm.raw, color, key, raw, ptr::null_mut()) };
                if !(comm.wait.is_some() && status == sys::ncclInProgress) {
                    check(status, context)?;
                }
            }
            Ok(())
        })
        .and_then(|((), in_progress)| {
            if in_progress || nonblocking {
                // The parents stay in progress until their splits are done.
                for comm in comms.iter().filter(|c| c.wait.is_some()) {
                    comm.settle(sys::ncclInProgress, &context)?;
                }
            }
            Ok(())
        });
        if let Err(e) = made {
            if !nonblocking {
                drop(std::mem::ManuallyDrop::into_inner(raws));
            }
            return Err(e);
        }
        let raws = std::mem::ManuallyDrop::into_inner(raws);
        // Own every new handle before anything can fail, so none leaks.
        let owned: Vec<Option<Self>> = raws
            .into_iter()
            .zip(comms)
            .map(|(raw, comm)| {
                (!raw.is_null()).then(|| Self {
                    raw,
                    device: comm.device,
                    rank: 0,
                    size: 0,
                    wait: comm.wait,
                    _not_sync: PhantomData,
                })
            })
            .collect();
        // Non-blocking parents give non-blocking children: each is ready now.
        if nonblocking {
            for c in owned.iter().flatten() {
                c.settle(sys::ncclInProgress, &context)?;
            }
        }
        owned
            .into_iter()
            .map(|c| {
                c.map(|mut c| {
                    c.rank = c.query(sys::ncclCommUserRank, "its rank")?;
                    c.size = c.query(sys::ncclCommCount, "its size")?;
                    Ok(c)
                })
                .transpose()
            })
            .collect()
    }

    fn query(
        &self,
        f: unsafe fn(sys::ncclComm_t, *mut i32) -> sys::ncclResult_t,
        what: &str,
    ) -> Result<usize> {
        let mut v = 0;
        // SAFETY: a live communicator; `v` is writable.
        let status = unsafe { f(self.raw, &mut v) };
        check(status, || format!("asking a NCCL communicator for {what}"))?;
        usize::try_from(v).map_err(|_| {
            Error::invalid(
                format!("asking a NCCL communicator for {what}"),
                InvalidKind::OutOfRange,
                format!("NCCL answered {v}"),
            )
        })
    }

    /// This rank's number, from 0.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device this rank runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The raw handle, for calls this crate does not wrap. It stays owned by
    /// `self`.
    pub fn handle(&self) -> sys::ncclComm_t {
        self.raw
    }

    /// Whether the communicator has met an error while its work ran
    /// (`ncclCommGetAsyncError`): a network failure or a remote rank's abort, say.
    ///
    /// # Errors
    /// The asynchronous error as [`Error::Library`](cudars_core::LibraryError::Library); NCCL's error asking for it.
    pub fn async_error(&self) -> Result<()> {
        let mut state = sys::ncclSuccess;
        // SAFETY: a live communicator; `state` is writable.
        let status = unsafe { sys::ncclCommGetAsyncError(self.raw, &mut state) };
        let context = || {
            format!(
                "asking rank {} of a NCCL communicator for errors",
                self.rank
            )
        };
        check(status, context)?;
        check(state, || {
            format!(
                "rank {} of a NCCL communicator met an error in flight",
                self.rank
            )
        })
    }

    /// Finishes the work queued on the communicator (`ncclCommFinalize`); after
    /// it, only [`destroy`](Self::destroy) or dropping is left to do.
    ///
    /// # Errors
    /// NCCL's error.
    pub fn finalize(&self) -> Result<()> {
        let _scope = primary_scope(&self.device)?;
        // SAFETY: a live communicator.
        let status = unsafe { sys::ncclCommFinalize(self.raw) };
        self.settle(status, &|| {
            format!("finalizing rank {} of a NCCL communicator", self.rank)
        })
    }

    /// Destroys the communicator after its queued work (`ncclCommDestroy`),
    /// reporting the error that dropping it would swallow.
    ///
    /// # Errors
    /// NCCL's error; the handle is gone either way.
    pub fn destroy(self) -> Result<()> {
        let rank = self.rank;
        let _scope = primary_scope(&self.device).ok();
        let raw = self.release();
        // SAFETY: a live communicator, not used after this.
        let status = gone(unsafe { sys::ncclCommDestroy(raw) });
        check(status, || {
            format!("destroying rank {rank} of a NCCL communicator")
        })
    }

    /// Aborts the communicator (`ncclCommAbort`): work in flight is abandoned and
    /// the handle freed. For recovery after an error or a hung peer; the other
    /// ranks should abort too.
    ///
    /// # Errors
    /// NCCL's error; the handle is gone either way.
    pub fn abort(self) -> Result<()> {
        let rank = self.rank;
        let _scope = primary_scope(&self.device).ok();
        let raw = self.release();
        // SAFETY: a live communicator, not used after this.
        let status = gone(unsafe { sys::ncclCommAbort(raw) });
        check(status, || {
            format!("aborting rank {rank} of a NCCL communicator")
        })
    }

    /// Gives up ownership of the handle.
    ///
    /// (A non-blocking communicator's destroy or abort may answer
    /// `ncclInProgress`: NCCL finishes the teardown in the background, and the
    /// handle is gone all the same.)
    fn release(self) -> sys::ncclComm_t {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
}

impl Drop for Communicator {
    // On a driver callback thread the destroy runs later, on an ordinary
    // thread (`release_or_defer`, rule 6 of the soundness contract).
    fn drop(&mut self) {
        let device = self.device;
        let destroy = move |raw| {
            let _scope = primary_scope(&device);
            // SAFETY: a live communicator, not used after this.
            let _ = unsafe { sys::ncclCommDestroy(raw) };
            Ok(())
        };
        // SAFETY: the communicator is owned by `self` and destroyed only here
        // (`destroy` and `abort` forget `self`); NCCL lets any thread destroy it.
        unsafe {
            cudars_core::release_or_defer("destroying a NCCL communicator", self.raw, destroy)
        };
    }
}

/// Runs `f` between `ncclGroupStart` and `ncclGroupEnd`; the group is ended
/// even when `f` fails or panics. `f`'s error comes first. Also says whether
/// `ncclGroupEnd` answered
/// `ncclInProgress` (a non-blocking communicator's work still being set up):
/// the caller then polls the communicators ([`Communicator::settle`]).
pub(crate) fn grouped_status<R>(
    context: &dyn Fn() -> String,
    f: impl FnOnce() -> Result<R>,
) -> Result<(R, bool)> {
    struct End(bool);
    impl Drop for End {
        fn drop(&mut self) {
            if self.0 {
                // SAFETY: a group this thread started (only reached on a panic).
                let _ = unsafe { sys::ncclGroupEnd() };
            }
        }
    }
    // The group on the timeline (a profiler attached), in the `cuda-rs` domain.
    let _range = cudars_core::cudars_nvtx::Domain::cuda_rs().range(c"NCCL group");
    // SAFETY: starts a group on this thread; ended below or by `End` on a panic.
    let status = unsafe { sys::ncclGroupStart() };
    check(status, || format!("{}: starting a NCCL group", context()))?;
    let mut end = End(true);
    let r = f();
    end.0 = false;
    // SAFETY: ends the group started above.
    let status = unsafe { sys::ncclGroupEnd() };
    let in_progress = status == sys::ncclInProgress;
    let ended = if in_progress {
        Ok(())
    } else {
        check(status, || format!("{}: ending a NCCL group", context()))
    };
    let r = r?;
    ended?;
    Ok((r, in_progress))
}

/// A destroy's or abort's status: `ncclInProgress` (a non-blocking
/// communicator's teardown, finished by NCCL in the background) is success.
fn gone(status: sys::ncclResult_t) -> sys::ncclResult_t {
    if status == sys::ncclInProgress {
        sys::ncclSuccess
    } else {
        status
    }
}

/// Polls a non-blocking communicator (`ncclCommGetAsyncError`) until NCCL is
/// no longer at work on it: its error, or [`WorldError::TimedOut`] once
/// `after` has passed (nothing is aborted here).
pub(crate) fn poll(
    raw: sys::ncclComm_t,
    after: Duration,
    context: &dyn Fn() -> String,
) -> Result<()> {
    let start = Instant::now();
    let mut nap = Duration::from_micros(20);
    loop {
        let mut state = sys::ncclSuccess;
        // SAFETY: a live communicator; `state` is writable.
        let status = unsafe { sys::ncclCommGetAsyncError(raw, &mut state) };
        check(status, || {
            format!("{}: asking NCCL how far it is", context())
        })?;
        if state != sys::ncclInProgress {
            return check(state, context);
        }
        if start.elapsed() >= after {
            return Err(Error::Extra(WorldError::TimedOut(TimedOut {
                context: context(),
                after,
                aborted: false,
            })));
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(5));
    }
}

/// Checks the devices of [`Communicator::init_all`]: at least one, none twice.
/// The device's primary context (the one NCCL creates its communicators in
/// and makes its own calls in), current for the scope.
pub(crate) fn primary_scope(device: &Device) -> cudars_core::Result<ContextScope> {
    ContextScope::enter(&Context::primary(device)?)
}

fn check_devices(devices: &[Device], context: &dyn Fn() -> String) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::invalid(
            context(),
            InvalidKind::ZeroSize,
            "no devices were given",
        ));
    }
    check_distinct(devices.iter().map(Device::ordinal), context)
}

fn check_distinct(
    ordinals: impl Iterator<Item = usize>,
    context: &dyn Fn() -> String,
) -> Result<()> {
    let mut seen = Vec::new();
    for o in ordinals {
        if seen.contains(&o) {
            return Err(Error::invalid(
                context(),
                InvalidKind::Other,
                format!("device {o} is named twice; each rank needs its own GPU"),
            ));
        }
        seen.push(o);
    }
    Ok(())
}

/// Checks a rank against the communicator's size; both as NCCL's `int`.
pub(crate) fn check_rank(
    nranks: usize,
    rank: usize,
    context: &dyn Fn() -> String,
) -> Result<(i32, i32)> {
    if nranks == 0 {
        return Err(Error::invalid(
            context(),
            InvalidKind::ZeroSize,
            "a communicator needs at least one rank",
        ));
    }
    if rank >= nranks {
        return Err(Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            format!("rank {rank} is not below the {nranks} ranks"),
        ));
    }
    let n = i32::try_from(nranks).map_err(|_| {
        Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            format!("{nranks} ranks are more than NCCL takes"),
        )
    })?;
    Ok((n, rank as i32))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ctx() -> String {
        "testing".into()
    }

    #[test]
    fn ranks_are_checked_against_the_size() {
        assert_eq!(check_rank(4, 3, &ctx).unwrap(), (4, 3));
        let e = check_rank(4, 4, &ctx).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
        assert_eq!(e.to_string(), "testing: rank 4 is not below the 4 ranks");
        let e = check_rank(0, 0, &ctx).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::ZeroSize));
        let e = check_rank(1 << 40, 0, &ctx).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
    }

    #[test]
    fn a_device_named_twice_is_refused() {
        assert!(check_distinct([0, 1, 2].into_iter(), &ctx).is_ok());
        let e = check_distinct([0, 1, 0].into_iter(), &ctx).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
        assert!(e.to_string().contains("device 0 is named twice"), "{e}");
        let e = check_devices(&[], &ctx).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::ZeroSize));
    }

    #[test]
    fn config_is_nccls_initializer_with_the_fields_set() {
        let c = RawConfig::new(&CommConfig::default(), &ctx).unwrap();
        assert_eq!(c.raw.magic, 0xcafe_beef);
        assert_eq!(c.raw.size, std::mem::size_of::<sys::ncclConfig_t>());
        assert_eq!(c.raw.blocking, 1);
        assert_eq!(c.raw.minCTAs, UNDEF);
        assert!(c.raw.netName.is_null() && c.raw.commName.is_null());
        let c = RawConfig::new(
            &CommConfig::new()
                .with_ctas(2, 16)
                .with_comm_name("train")
                .with_split_share(true),
            &ctx,
        )
        .unwrap();
        assert_eq!((c.raw.minCTAs, c.raw.maxCTAs, c.raw.splitShare), (2, 16, 1));
        // SAFETY: the string lives in `c`.
        let name = unsafe { std::ffi::CStr::from_ptr(c.raw.commName) };
        assert_eq!(name.to_str().unwrap(), "train");
        let e = RawConfig::new(&CommConfig::new().with_net_name("a\0b"), &ctx)
            .err()
            .unwrap();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
        let e = RawConfig::new(&CommConfig::new().with_ctas(1, u32::MAX), &ctx)
            .err()
            .unwrap();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
    }
}
