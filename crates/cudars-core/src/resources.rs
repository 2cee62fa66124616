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
//! at once and shows that their blocks never share an SM. Workqueue resources
//! (`cuda.core`'s `WorkqueueResource`) and the finer `cuDevSmResourceSplit` came with
//! CUDA 13.1; the bindings are generated from the CUDA 13.0 headers, so they are not
//! offered yet.

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
        let remaining = Self::from_raw(remaining, self.device);
        Ok(SmSplit {
            groups: groups
                .into_iter()
                .map(|g| Self::from_raw(g, self.device))
                .collect(),
            remaining: (remaining.raw.type_ == sys::CU_DEV_RESOURCE_TYPE_SM
                && remaining.sm_count() > 0)
                .then_some(remaining),
        })
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
            let _ = unsafe { sys::cuGreenCtxDestroy(green) };
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

impl Stream {
    /// The resources the stream's work may use: its context's
    /// ([`Context::resources`]).
    ///
    /// # Errors
    /// The driver's error.
    pub fn resources(&self) -> Result<DeviceResources> {
        self.context().resources()
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

    /// A green context on this device (see [`Context::create_green`]).
    ///
    /// # Errors
    /// As [`Context::create_green`].
    pub fn create_green_context(&self, resources: &[SmResource]) -> Result<Context> {
        Context::create_green(self, resources)
    }
}
