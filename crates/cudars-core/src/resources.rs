//! Device resources and green contexts: a device's streaming multiprocessors (SMs)
//! as a resource that can be split into groups, and contexts confined to one group.
//!
//! A green context ([`Context::create_green`]) runs its work only on the SMs it was
//! given, so two green contexts on one device share it without competing for SMs.
//!
//! ```no_run
//! use cudars_core::{Context, Device, SmResourceOptions, StreamOptions};
//!
//! let dev = Device::new(0)?;
//! let sms = dev.resources()?.sm;
//! // Groups of at least 16 SMs; the driver rounds to its partition granularity.
//! let split = sms.split(SmResourceOptions { count: 16, groups: Some(2), ..Default::default() })?;
//! let green = Context::create_green(&dev, &split.groups[..1])?;
//! assert_eq!(green.resources()?.sm.sm_count(), split.groups[0].sm_count());
//! // Work on this stream runs only on the first group's SMs.
//! let stream = green.create_stream(StreamOptions::default())?;
//! # Ok::<(), cudars_core::Error>(())
//! ```
//!
//! `crates/cudars-core/examples/green_contexts.rs` runs a kernel in two green contexts
//! at once and shows that their blocks never share an SM.
//!
//! CUDA 13.1 drivers add workqueue resources ([`WorkqueueResource`]: how many
//! stream-ordered workloads a green context expects, and whether it shares the
//! device's work queues), the structured split ([`SmResource::split_groups`]: per
//! group counts, co-scheduling and backfill), [`SmResource::flags`] and the
//! resources of one stream ([`Stream::resources`]); each is
//! [`Error::Unsupported`] naming CUDA 13.1 on an older driver (or, for a stream,
//! its context's, which is what a stream has there).

use std::fmt;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{context::Context, device::Device, stream::Stream};

/// A set of streaming multiprocessors of one device (`CUdevResource` of type
/// `CU_DEV_RESOURCE_TYPE_SM`): all of a device's SMs ([`Device::resources`]), a
/// group split from them ([`SmResource::split`]), or those of a green context
/// ([`Context::resources`]).
#[derive(Clone, Copy)]
pub struct SmResource {
    raw: sys::CUdevResource,
    device: Device,
}

// SAFETY: plain data the driver wrote; its one pointer (`nextResource`, CUDA 13.1's
// chain of resources) is never dereferenced by this crate, and the driver reads the
// structure only during the call it is passed to.
// Soundness contract: rule 11.
unsafe impl Send for SmResource {}
// SAFETY: as for `Send`: nothing here is mutated through `&self`.
// Soundness contract: rule 11.
unsafe impl Sync for SmResource {}

impl fmt::Debug for SmResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SmResource");
        d.field("device", &self.device.ordinal())
            .field("sm_count", &self.sm_count());
        d.field("min_partition_size", &self.min_partition_size())
            .field("coscheduled_alignment", &self.coscheduled_alignment());
        d.finish()
    }
}

/// How to split an [`SmResource`] into groups (`cuDevSmResourceSplitByCount`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmResourceOptions {
    /// The least number of SMs in each group. The driver rounds it up to the
    /// resource's minimum partition size and co-scheduling alignment (unless
    /// `ignore_coscheduling`). Must be at least 1.
    pub count: u32,
    /// How many groups to make at most (capped at the number of SMs); `None` for
    /// as many as fit.
    pub groups: Option<u32>,
    /// `CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING`: groups need not be aligned
    /// for thread-block clusters (finer groups; clusters may not fit).
    pub ignore_coscheduling: bool,
    /// `CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE`: align groups for the
    /// largest cluster the device can run (coarser groups).
    pub max_potential_cluster_size: bool,
}

/// The result of [`SmResource::split`].
#[derive(Debug, Clone)]
pub struct SmSplit {
    /// The groups, each with at least the requested number of SMs.
    pub groups: Vec<SmResource>,
    /// The SMs left over, if any.
    pub remaining: Option<SmResource>,
}

/// The resources of a device, context or stream.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct DeviceResources {
    /// The streaming multiprocessors.
    pub sm: SmResource,
}

impl SmResource {
    /// The split the driver wrote: its groups, and what is left where the
    /// remainder is SMs at all.
    fn split_of(&self, groups: Vec<sys::CUdevResource>, remaining: sys::CUdevResource) -> SmSplit {
        let remaining = Self::from_raw(remaining, self.device);
        SmSplit {
            groups: groups
                .into_iter()
                .map(|g| Self::from_raw(g, self.device))
                .collect(),
            remaining: (remaining.raw.type_ == sys::CU_DEV_RESOURCE_TYPE_SM
                && remaining.sm_count() > 0)
                .then_some(remaining),
        }
    }

    fn from_raw(raw: sys::CUdevResource, device: Device) -> Self {
        Self { raw, device }
    }

    fn sm(&self) -> sys::CUdevSmResource {
        // SAFETY: the union's members are plain integers and byte arrays, so any
        // bytes are a valid `CUdevSmResource`; every `SmResource` comes from the
        // driver as an SM resource (or zeroed), so these are the bytes it wrote.
        unsafe { self.raw.__bindgen_anon_1.sm }
    }

    /// The number of SMs.
    pub fn sm_count(&self) -> u32 {
        self.sm().smCount
    }

    /// The smallest group a split can make; `None` from drivers before CUDA 13.0,
    /// which do not report it.
    pub fn min_partition_size(&self) -> Option<u32> {
        crate::versions::driver_at_least(13000).then(|| self.sm().minSmPartitionSize)
    }

    /// The multiple of SMs a group is rounded to so that thread-block clusters
    /// fit; `None` from drivers before CUDA 13.0, which do not report it.
    pub fn coscheduled_alignment(&self) -> Option<u32> {
        crate::versions::driver_at_least(13000).then(|| self.sm().smCoscheduledAlignment)
    }

    /// The flags the driver set on these SMs (`CUdevSmResource::flags`): whether a
    /// group was filled by backfill. `None` from drivers before CUDA 13.1, which
    /// do not report them.
    pub fn flags(&self) -> Option<SmResourceFlags> {
        crate::versions::driver_at_least(13010).then(|| SmResourceFlags(self.sm().flags))
    }

    /// The device the SMs belong to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The driver's structure.
    pub fn raw(&self) -> &sys::CUdevResource {
        &self.raw
    }

    /// Splits the SMs into groups of at least `options.count` SMs each
    /// (`cuDevSmResourceSplitByCount`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `count` is 0 or more than this resource has,
    /// or `groups` is `Some(0)`; the driver's error.
    pub fn split(&self, options: SmResourceOptions) -> Result<SmSplit> {
        let what = || {
            format!(
                "splitting {} SMs of device {} into groups of {}",
                self.sm_count(),
                self.device.ordinal(),
                options.count
            )
        };
        if options.count == 0 {
            return Err(Error::invalid(what(), "a group needs at least 1 SM"));
        }
        if options.count > self.sm_count() {
            return Err(Error::out_of_range(
                what(),
                format!("the resource has only {} SMs", self.sm_count()),
            ));
        }
        if options.groups == Some(0) {
            return Err(Error::invalid(what(), "0 groups asked for"));
        }
        let mut flags = 0;
        if options.ignore_coscheduling {
            flags |= sys::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING.0;
        }
        if options.max_potential_cluster_size {
            flags |= sys::CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE.0;
        }
        let mut n = match options.groups {
            // No split makes more groups than there are SMs.
            Some(n) => n.min(self.sm_count()),
            None => {
                let mut n = 0;
                // SAFETY: a null result asks only for the number of groups, written to
                // `n`; `self.raw` is a valid SM resource; no remainder is asked for.
                unsafe {
                    sys::cuDevSmResourceSplitByCount(
                        std::ptr::null_mut(),
                        &mut n,
                        &self.raw,
                        std::ptr::null_mut(),
                        flags,
                        options.count,
                    )
                }
                .check(what)?;
                n
            }
        };
        if n == 0 {
            return Err(Error::invalid(
                what(),
                format!("no group of {} SMs fits", options.count),
            ));
        }
        let mut groups = vec![sys::CUdevResource::default(); n as usize];
        let mut remaining = sys::CUdevResource::default();
        // SAFETY: `groups` has room for `n` resources (the driver writes at most `n`
        // and sets `n` to how many it wrote); `remaining` is valid for writes.
        unsafe {
            sys::cuDevSmResourceSplitByCount(
                groups.as_mut_ptr(),
                &mut n,
                &self.raw,
                &mut remaining,
                flags,
                options.count,
            )
        }
        .check(what)?;
        groups.truncate(n as usize);
        Ok(self.split_of(groups, remaining))
    }
}

/// One group of a structured split ([`SmResource::split_groups`],
/// `CU_DEV_SM_RESOURCE_GROUP_PARAMS`): `cuda.core`'s `SMResourceOptions` for one
/// group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmGroup {
    /// The SMs the group gets; `None` for whatever is left (discovery).
    pub count: Option<u32>,
    /// The least number of SMs co-scheduled together (for thread-block clusters);
    /// `None` for the device's default (8 from compute capability 9.0, else 2).
    pub coscheduled_sm_count: Option<u32>,
    /// Co-scheduled groups the driver tries to merge into groups of this size;
    /// `None` for `coscheduled_sm_count`.
    pub preferred_coscheduled_sm_count: Option<u32>,
    /// `CU_DEV_SM_RESOURCE_GROUP_BACKFILL`: co-scheduling is a hint; the driver
    /// fills the group up to `count` with other SMs where the topology would
    /// otherwise refuse it.
    pub backfill: bool,
}

/// The flags of an [`SmResource`] (`CUdevSmResourceGroup_flags`, CUDA 13.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SmResourceFlags(u32);

impl SmResourceFlags {
    /// Whether the group was made with backfill ([`SmGroup::backfill`]).
    pub fn backfill(self) -> bool {
        self.0 & sys::CU_DEV_SM_RESOURCE_GROUP_BACKFILL.0 != 0
    }

    /// The raw bits, for flags this crate does not name.
    pub fn bits(self) -> u32 {
        self.0
    }
}

impl SmResource {
    /// Splits the SMs into one group per entry of `groups`, each as its
    /// [`SmGroup`] says (`cuDevSmResourceSplit`, CUDA 13.1; `cuda.core`'s
    /// `SMResource.split` on such a driver). Unlike [`split`](Self::split), each
    /// group has its own count and co-scheduling, and backfill can relax the
    /// co-scheduling. The SMs no group took are the remainder.
    ///
    /// On a driver older than CUDA 13.1, groups that all have one `count` (or all
    /// `None`: the driver picks the size) and nothing else set are split by
    /// `cuDevSmResourceSplitByCount`, as `cuda.core` does; the driver may then
    /// make fewer groups than asked for.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no groups; [`Error::Unsupported`] naming
    /// CUDA 13.1 on an older driver for anything else; the driver's error
    /// (`CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION` when the groups do not fit).
    pub fn split_groups(&self, groups: &[SmGroup]) -> Result<SmSplit> {
        let what = || {
            format!(
                "splitting {} SMs of device {} into {} groups (cuDevSmResourceSplit)",
                self.sm_count(),
                self.device.ordinal(),
                groups.len()
            )
        };
        if groups.is_empty() {
            return Err(Error::invalid(what(), "no groups asked for"));
        }
        let n =
            u32::try_from(groups.len()).map_err(|_| Error::invalid(what(), "too many groups"))?;
        if !crate::versions::driver_at_least(13010) {
            // As `cuda.core` does before CUDA 13.1: groups of one count (`None`
            // asks the driver for the size, discovery) and nothing else set are
            // `cuDevSmResourceSplitByCount`'s split.
            let first = groups[0];
            let plain = groups.iter().all(|g| {
                g.count == first.count
                    && g.coscheduled_sm_count.is_none()
                    && g.preferred_coscheduled_sm_count.is_none()
                    && !g.backfill
            });
            if plain {
                return self.split_by_count(n, first.count.unwrap_or(0), what);
            }
        }
        crate::versions::require_driver(13010, "`cuDevSmResourceSplit`", what)?;
        let mut params: Vec<sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS> = groups
            .iter()
            .map(|g| sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS {
                smCount: g.count.unwrap_or(0),
                coscheduledSmCount: g.coscheduled_sm_count.unwrap_or(0),
                preferredCoscheduledSmCount: g.preferred_coscheduled_sm_count.unwrap_or(0),
                flags: if g.backfill {
                    sys::CU_DEV_SM_RESOURCE_GROUP_BACKFILL.0
                } else {
                    0
                },
                ..Default::default()
            })
            .collect();
        let mut result = vec![sys::CUdevResource::default(); groups.len()];
        let mut remaining = sys::CUdevResource::default();
        // SAFETY: `result` and `params` hold `n` entries each (the driver writes the
        // results and may fill in the parameters); `self.raw` is a valid SM
        // resource; `remaining` is valid for writes; the flags must be 0.
        unsafe {
            sys::cuDevSmResourceSplit(
                result.as_mut_ptr(),
                n,
                &self.raw,
                &mut remaining,
                0,
                params.as_mut_ptr(),
            )
        }
        .check(what)?;
        Ok(self.split_of(result, remaining))
    }

    /// `cuDevSmResourceSplitByCount` into at most `n` groups of at least
    /// `min_count` SMs (0: the driver's minimum), no flags: [`split_groups`](Self::split_groups)
    /// on a driver older than CUDA 13.1.
    fn split_by_count<C: Into<std::borrow::Cow<'static, str>>>(
        &self,
        n: u32,
        min_count: u32,
        what: impl Fn() -> C,
    ) -> Result<SmSplit> {
        let mut actual = n;
        let mut result = vec![sys::CUdevResource::default(); n as usize];
        let mut remaining = sys::CUdevResource::default();
        // SAFETY: `result` has room for `n` resources (the driver writes at most
        // `actual` = `n` and sets `actual` to how many it wrote); `self.raw` is a
        // valid SM resource; `remaining` is valid for writes.
        unsafe {
            sys::cuDevSmResourceSplitByCount(
                result.as_mut_ptr(),
                &mut actual,
                &self.raw,
                &mut remaining,
                0,
                min_count,
            )
        }
        .check(what)?;
        result.truncate(actual as usize);
        Ok(self.split_of(result, remaining))
    }
}

/// How a [`WorkqueueResource`] shares the device's work queues
/// (`CUdevWorkqueueConfigScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkqueueSharingScope {
    /// Every context's work shares the device's queues (the driver's default;
    /// `cuda.core`'s `"device_ctx"`).
    DeviceContext,
    /// Where it can, the green context uses queues no other balanced green
    /// context uses (`"green_ctx_balanced"`).
    GreenContextBalanced,
    /// A scope this crate does not name, as the driver reported it.
    Other(u32),
}

impl WorkqueueSharingScope {
    fn raw(self) -> sys::CUdevWorkqueueConfigScope {
        match self {
            Self::DeviceContext => sys::CU_WORKQUEUE_SCOPE_DEVICE_CTX,
            Self::GreenContextBalanced => sys::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED,
            Self::Other(v) => sys::CUdevWorkqueueConfigScope(v),
        }
    }

    fn from_raw(raw: sys::CUdevWorkqueueConfigScope) -> Self {
        match raw {
            sys::CU_WORKQUEUE_SCOPE_DEVICE_CTX => Self::DeviceContext,
            sys::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED => Self::GreenContextBalanced,
            other => Self::Other(other.0),
        }
    }
}

/// What [`WorkqueueResource::configure`] changes (`cuda.core`'s
/// `WorkqueueResourceOptions`); `None` keeps the current value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkqueueResourceOptions {
    /// The sharing scope.
    pub sharing_scope: Option<WorkqueueSharingScope>,
    /// The most stream-ordered workloads expected at once; at least 1. The
    /// driver's cap is `CUDA_DEVICE_MAX_CONNECTIONS`; more is accepted, but work
    /// submission may then overlap.
    pub concurrency_limit: Option<u32>,
}

/// The work queues of a device or context (`CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG`
/// and `CU_DEV_RESOURCE_TYPE_WORKQUEUE`, CUDA 13.1): read with
/// [`Device::workqueue_resource`] or [`Context::workqueue_resource`], configured
/// here and given to a green context with [`Context::create_green_with_workqueue`].
#[derive(Clone, Copy)]
pub struct WorkqueueResource {
    config: sys::CUdevResource,
    queue: sys::CUdevResource,
    device: Device,
}

// SAFETY: as for `SmResource`: plain data, its `nextResource` never dereferenced here.
// Soundness contract: rule 11.
unsafe impl Send for WorkqueueResource {}
// SAFETY: as for `Send`: nothing here is mutated through `&self`.
// Soundness contract: rule 11.
unsafe impl Sync for WorkqueueResource {}

impl fmt::Debug for WorkqueueResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueResource")
            .field("device", &self.device.ordinal())
            .field("sharing_scope", &self.sharing_scope())
            .field("concurrency_limit", &self.concurrency_limit())
            .finish()
    }
}

impl WorkqueueResource {
    fn read(
        device: Device,
        what: impl Fn() -> String,
        get: impl Fn(*mut sys::CUdevResource, sys::CUdevResourceType) -> sys::CUresult,
    ) -> Result<Self> {
        crate::versions::require_driver(13010, "workqueue resources", &what)?;
        let mut config = sys::CUdevResource::default();
        get(&mut config, sys::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG).check(&what)?;
        let mut queue = sys::CUdevResource::default();
        get(&mut queue, sys::CU_DEV_RESOURCE_TYPE_WORKQUEUE).check(&what)?;
        if config.type_ != sys::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG {
            return Err(Error::unsupported(
                what(),
                format!("the driver returned resource type {}", config.type_.0),
            ));
        }
        Ok(Self {
            config,
            queue,
            device,
        })
    }

    fn wq_config(&self) -> sys::CUdevWorkqueueConfigResource {
        // SAFETY: plain integers; `config` came from the driver as a workqueue
        // configuration (checked in `read`).
        unsafe { self.config.__bindgen_anon_1.wqConfig }
    }

    /// How the work queues are shared.
    pub fn sharing_scope(&self) -> WorkqueueSharingScope {
        WorkqueueSharingScope::from_raw(self.wq_config().sharingScope)
    }

    /// The most stream-ordered workloads expected at once (read from a device:
    /// the driver's cap, `CUDA_DEVICE_MAX_CONNECTIONS`).
    pub fn concurrency_limit(&self) -> u32 {
        self.wq_config().wqConcurrencyLimit
    }

    /// The device the queues belong to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Changes the configuration this value carries (nothing is asked of the
    /// driver until a green context is made with it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `concurrency_limit` of 0.
    pub fn configure(&mut self, options: WorkqueueResourceOptions) -> Result<()> {
        if options.concurrency_limit == Some(0) {
            return Err(Error::invalid(
                "configuring a workqueue resource",
                "`concurrency_limit` must be at least 1",
            ));
        }
        // SAFETY: writes plain integers into the configuration member, the one
        // `type_` says is in use.
        unsafe {
            let c = &mut self.config.__bindgen_anon_1.wqConfig;
            if let Some(scope) = options.sharing_scope {
                c.sharingScope = scope.raw();
            }
            if let Some(n) = options.concurrency_limit {
                c.wqConcurrencyLimit = n;
            }
        }
        Ok(())
    }

    /// The driver's configuration structure (`CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG`).
    pub fn raw_config(&self) -> &sys::CUdevResource {
        &self.config
    }

    /// The driver's structure of the existing queues (`CU_DEV_RESOURCE_TYPE_WORKQUEUE`).
    pub fn raw_workqueue(&self) -> &sys::CUdevResource {
        &self.queue
    }
}

pub(crate) fn sm_resource_of(
    device: Device,
    what: impl Fn() -> String,
    get: impl FnOnce(*mut sys::CUdevResource) -> sys::CUresult,
) -> Result<SmResource> {
    let mut raw = sys::CUdevResource::default();
    get(&mut raw).check(&what)?;
    if raw.type_ != sys::CU_DEV_RESOURCE_TYPE_SM {
        return Err(Error::unsupported(
            what(),
            format!("the driver returned resource type {}", raw.type_.0),
        ));
    }
    Ok(SmResource::from_raw(raw, device))
}

impl Context {
    /// A green context: a context whose work runs only on the given SMs
    /// (`cuDevResourceGenerateDesc`, `cuGreenCtxCreate` with its own default stream,
    /// and `cuCtxFromGreenCtx`). It is destroyed (`cuGreenCtxDestroy`) when the last
    /// clone, stream and event made in it are gone.
    ///
    /// Streams made in a green context ([`Context::create_stream`]) come from
    /// `cuGreenCtxStreamCreate` and are always non-blocking, as the driver requires.
    ///
    /// The driver lets a green context be current on one thread at a time, so each
    /// operation in it holds it for its thread and then puts the thread's previous
    /// context back; other threads wait their turn ([`Context::set_current`] is
    /// refused for it), waits on its streams included: the driver does not
    /// synchronise calls that touch one green context from several threads. An operation
    /// that involves two green contexts at once (a buffer of one freed on a stream
    /// of the other) holds both, in that order: threads that do this with two
    /// green contexts in opposite orders can deadlock.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no resources or resources of another device;
    /// the driver's error.
    pub fn create_green(device: &Device, resources: &[SmResource]) -> Result<Self> {
        Self::create_green_from(device, resources, None)
    }

    /// [`create_green`](Self::create_green) with a workqueue configuration
    /// ([`WorkqueueResource`], CUDA 13.1): how many stream-ordered workloads the
    /// green context expects and whether it shares the device's queues.
    ///
    /// # Errors
    /// As [`create_green`](Self::create_green); [`Error::InvalidArgument`] for a
    /// workqueue of another device; [`Error::Unsupported`] naming CUDA 13.1 on
    /// an older driver.
    pub fn create_green_with_workqueue(
        device: &Device,
        resources: &[SmResource],
        workqueue: &WorkqueueResource,
    ) -> Result<Self> {
        Self::create_green_from(device, resources, Some(workqueue))
    }

    fn create_green_from(
        device: &Device,
        resources: &[SmResource],
        workqueue: Option<&WorkqueueResource>,
    ) -> Result<Self> {
        crate::device::init()?;
        let what = || format!("creating a green context on device {}", device.ordinal());
        // The driver advises keeping the primary context alive while green contexts
        // come and go (it is retained once for the process).
        device.primary_context()?;
        if resources.is_empty() {
            return Err(Error::invalid(what(), "no resources given"));
        }
        if let Some(r) = resources.iter().find(|r| r.device != *device) {
            return Err(Error::other_device(
                what(),
                format!("a resource belongs to device {}", r.device.ordinal()),
            ));
        }
        let mut raw: Vec<sys::CUdevResource> = resources.iter().map(|r| r.raw).collect();
        if let Some(wq) = workqueue {
            if wq.device != *device {
                return Err(Error::other_device(
                    what(),
                    format!("the workqueue belongs to device {}", wq.device.ordinal()),
                ));
            }
            crate::versions::require_driver(13010, "workqueue resources", what)?;
            raw.push(wq.config);
        }
        let n =
            u32::try_from(raw.len()).map_err(|_| Error::invalid(what(), "too many resources"))?;
        let mut desc: sys::CUdevResourceDesc = std::ptr::null_mut();
        // SAFETY: `raw` holds `n` valid resources (the driver only reads them);
        // `desc` is valid for writes.
        unsafe { sys::cuDevResourceGenerateDesc(&mut desc, raw.as_mut_ptr(), n) }.check(what)?;
        let mut green: sys::CUgreenCtx = std::ptr::null_mut();
        // SAFETY: `desc` was just generated for this device; `green` is valid for
        // writes; CU_GREEN_CTX_DEFAULT_STREAM is the flag the driver requires.
        unsafe {
            sys::cuGreenCtxCreate(
                &mut green,
                desc,
                device.handle(),
                sys::CU_GREEN_CTX_DEFAULT_STREAM.0,
            )
        }
        .check(what)?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `green` is the live green context made above; `ctx` is valid for
        // writes.
        if let Err(e) = unsafe { sys::cuCtxFromGreenCtx(&mut ctx, green) }.check(what) {
            // SAFETY: destroys the green context made above, which nothing else holds.
            let rc = unsafe { sys::cuGreenCtxDestroy(green) };
            crate::cleanup::driver(rc, "destroying a green context (cuGreenCtxDestroy)");
            return Err(e);
        }
        Ok(Self::wrap_green(ctx, green, *device))
    }

    /// The resources this context may use: for a green context the SMs it was
    /// made with, otherwise all of the device's (`cuGreenCtxGetDevResource` or
    /// `cuCtxGetDevResource`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn resources(&self) -> Result<DeviceResources> {
        let dev = *self.device();
        let what = || {
            format!(
                "reading the SM resource of a context on device {}",
                dev.ordinal()
            )
        };
        let sm = match self.green_handle() {
            Some(g) => sm_resource_of(
                dev,
                what,
                // SAFETY: a live green context (this clone keeps it); `r` is valid
                // for writes.
                |r| unsafe { sys::cuGreenCtxGetDevResource(g, r, sys::CU_DEV_RESOURCE_TYPE_SM) },
            )?,
            None => {
                let ctx = self.handle();
                sm_resource_of(
                    dev,
                    what,
                    // SAFETY: a live context (this clone keeps it); `r` is valid for
                    // writes.
                    |r| unsafe { sys::cuCtxGetDevResource(ctx, r, sys::CU_DEV_RESOURCE_TYPE_SM) },
                )?
            }
        };
        Ok(DeviceResources { sm })
    }
}

impl Context {
    /// The id of a green context, unique in the process for its life
    /// (`cuGreenCtxGetId`, CUDA 12.9); `None` for a context that is not green.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming `cuGreenCtxGetId` and CUDA 12.9 on an older
    /// driver; the driver's error.
    pub fn green_id(&self) -> Result<Option<u64>> {
        let Some(g) = self.green_handle() else {
            return Ok(None);
        };
        let mut id = 0;
        // SAFETY: a live green context (this clone keeps it); `id` is valid for
        // writes.
        unsafe { sys::cuGreenCtxGetId(g, &mut id) }.check(|| "reading a green context's id")?;
        Ok(Some(id))
    }

    /// The work queues of this context (`cuGreenCtxGetDevResource` or
    /// `cuCtxGetDevResource` of the workqueue types, CUDA 13.1).
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming CUDA 13.1 on an older driver; the driver's
    /// error.
    pub fn workqueue_resource(&self) -> Result<WorkqueueResource> {
        let dev = *self.device();
        let what = || {
            format!(
                "reading the workqueue resources of a context on device {}",
                dev.ordinal()
            )
        };
        match self.green_handle() {
            // SAFETY: a live green context (this clone keeps it); `r` is valid for
            // writes.
            Some(g) => WorkqueueResource::read(dev, what, |r, t| unsafe {
                sys::cuGreenCtxGetDevResource(g, r, t)
            }),
            None => {
                let ctx = self.handle();
                // SAFETY: a live context (this clone keeps it); `r` is valid for
                // writes.
                WorkqueueResource::read(dev, what, |r, t| unsafe {
                    sys::cuCtxGetDevResource(ctx, r, t)
                })
            }
        }
    }
}

impl Stream {
    /// The resources the stream's work may use: from CUDA 13.1 the stream's own
    /// (`cuStreamGetDevResource`), before it its context's
    /// ([`Context::resources`]), which is what a stream has on such a driver.
    ///
    /// # Errors
    /// The driver's error.
    pub fn resources(&self) -> Result<DeviceResources> {
        if !crate::versions::driver_at_least(13010) {
            return self.context().resources();
        }
        let dev = *self.context().device();
        let stream = self.handle();
        let sm = sm_resource_of(
            dev,
            || {
                format!(
                    "reading the SM resource of a stream on device {} (cuStreamGetDevResource)",
                    dev.ordinal()
                )
            },
            // SAFETY: a live stream (`self` keeps it); `r` is valid for writes.
            |r| unsafe { sys::cuStreamGetDevResource(stream, r, sys::CU_DEV_RESOURCE_TYPE_SM) },
        )?;
        Ok(DeviceResources { sm })
    }
}

// Green contexts: the device's resources and contexts made from them.
impl Device {
    /// All of the device's resources (`cuDeviceGetDevResource`).
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_NOT_SUPPORTED` on drivers without green
    /// contexts).
    pub fn resources(&self) -> Result<DeviceResources> {
        crate::device::init()?;
        let dev = *self;
        let sm = sm_resource_of(
            dev,
            || format!("reading the SM resource of device {}", dev.ordinal()),
            // SAFETY: `r` is valid for writes; a valid device.
            |r| unsafe {
                sys::cuDeviceGetDevResource(dev.handle(), r, sys::CU_DEV_RESOURCE_TYPE_SM)
            },
        )?;
        Ok(DeviceResources { sm })
    }

    /// The device's work queues (`cuDeviceGetDevResource` of the workqueue
    /// types, CUDA 13.1; `cuda.core`'s `DeviceResources.workqueue`): configure
    /// them and make a green context with
    /// [`Context::create_green_with_workqueue`].
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming CUDA 13.1 on an older driver; the driver's
    /// error.
    pub fn workqueue_resource(&self) -> Result<WorkqueueResource> {
        crate::device::init()?;
        let dev = *self;
        WorkqueueResource::read(
            dev,
            || {
                format!(
                    "reading the workqueue resources of device {}",
                    dev.ordinal()
                )
            },
            // SAFETY: `r` is valid for writes; a valid device.
            |r, t| unsafe { sys::cuDeviceGetDevResource(dev.handle(), r, t) },
        )
    }

    /// A green context on this device (see [`Context::create_green`]).
    ///
    /// # Errors
    /// As [`Context::create_green`].
    pub fn create_green_context(&self, resources: &[SmResource]) -> Result<Context> {
        Context::create_green(self, resources)
    }
}
