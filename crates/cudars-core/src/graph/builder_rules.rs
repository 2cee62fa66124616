//! The graph builder's rules as pure functions and plain state: what a builder
//! is (top, split, conditional body), where it is in its life, the family of
//! builders that share a capture, and the checks each method makes before it
//! touches CUDA (testable without a GPU).

use super::define::{ConditionalKind, GraphCondition, Keep};
use crate::error::{Error, Result};
use crate::stream_capture::CaptureStatus;
use crate::{context::Context, device::Device, stream::Stream};
use cudars_bindings::driver as sys;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What a builder is, for the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoleKind {
    /// The builder of the graph: `end_building` returns it.
    Top,
    /// Split off another builder; ended by joining it.
    Split,
    /// Captures into a conditional node's body graph.
    Body,
}

/// Where a builder is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Made, not yet building.
    Idle,
    /// Capturing.
    Building,
    /// Done (ended, joined, or failed while ending).
    Ended,
}

#[derive(Debug)]
pub(crate) enum Role {
    Top,
    /// `origin` is the stream of the builder whose capture it takes part in
    /// (the top builder or a conditional body), which a dropped split is
    /// joined to.
    Split {
        origin: Stream,
    },
    /// The body graph, owned by its conditional node.
    Body {
        graph: sys::CUgraph,
    },
}

impl Role {
    pub(crate) fn kind(&self) -> RoleKind {
        match self {
            Role::Top => RoleKind::Top,
            Role::Split { .. } => RoleKind::Split,
            Role::Body { .. } => RoleKind::Body,
        }
    }
}

/// A builder of the family that is capturing and not yet ended or joined.
pub(crate) struct OpenChild {
    pub(crate) id: u64,
    /// The capture it takes part in (see [`GraphBuilder::capture`]).
    pub(crate) capture: u64,
    pub(crate) stream: Stream,
    pub(crate) kind: RoleKind,
    /// The stream of the builder whose capture it takes part in (splits only).
    pub(crate) origin: Option<Stream>,
}

/// A graph allocation made by [`GraphBuilder::allocate`], freed by a captured
/// free node when the top builder ends.
pub(crate) struct PendingFree {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) size: usize,
}

/// A node added to a capture's graph, named again once the graph is built.
pub(crate) struct CapturedNode(pub(crate) sys::CUgraphNode);

// SAFETY: the handle is only wrapped into a `GraphNode` of the built graph (an
// identifier; `Graph` serialises its use), never used through this type.
// Soundness contract: rule 11.
unsafe impl Send for CapturedNode {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for CapturedNode {}

/// A conditional node added to the top builder's capture: the node, its
/// condition and kind, and the addresses of its body graphs (named again as
/// `CUgraph`s once the graph is built, as the node is).
pub(crate) type CapturedConditional = (CapturedNode, GraphCondition, ConditionalKind, Vec<usize>);

/// What the builders of one graph (the top one, its splits, its bodies) share.
pub(crate) struct Family {
    /// Tells the families apart (graph memory names its family).
    pub(crate) id: u64,
    pub(crate) ctx: Context,
    pub(crate) keep: Keep,
    pub(crate) frees: Mutex<Vec<PendingFree>>,
    /// The conditional nodes added to the top builder's capture, recorded in the
    /// graph when it ends (for [`GraphNode::params`](super::GraphNode::params)).
    pub(crate) conditionals: Mutex<Vec<CapturedConditional>>,
    pub(crate) children: Mutex<Vec<OpenChild>>,
    /// The top builder has ended (or was dropped): no body may begin.
    pub(crate) ended: AtomicBool,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn next_builder_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Checks that a builder may begin building.
pub(crate) fn check_begin(role: RoleKind, phase: Phase, family_ended: bool) -> Result<()> {
    const WHAT: &str = "beginning to build a graph";
    match phase {
        Phase::Building => Err(Error::invalid(WHAT, "the builder is already building")),
        Phase::Ended => Err(Error::invalid(
            WHAT,
            "the builder's building has ended, and cannot resume",
        )),
        Phase::Idle if role == RoleKind::Body && family_ended => Err(Error::invalid(
            WHAT,
            "the graph this conditional body belongs to has been built already, or was dropped",
        )),
        Phase::Idle => Ok(()),
    }
}

/// Checks that a builder may end building, with `open` builders split from it
/// (or, for the top builder, any builder of its graph) still building.
pub(crate) fn check_end(role: RoleKind, phase: Phase, open: usize) -> Result<()> {
    const WHAT: &str = "ending a graph builder";
    if role == RoleKind::Split {
        return Err(Error::invalid(
            WHAT,
            "a builder made by `split` is ended by joining it (`join`)",
        ));
    }
    match phase {
        Phase::Idle => Err(Error::invalid(
            WHAT,
            "the builder is not building (call `begin_building` first)",
        )),
        Phase::Ended => Err(Error::invalid(WHAT, "the builder has already ended")),
        Phase::Building if open > 0 => Err(Error::invalid(
            WHAT,
            format!(
                "{open} builder{} made from it {} still building: join the split builders \
                 and end the conditional bodies first",
                if open == 1 { "" } else { "s" },
                if open == 1 { "is" } else { "are" }
            ),
        )),
        Phase::Building => Ok(()),
    }
}

/// Checks that work may be queued into a builder. A split or body builder of
/// a graph that has ended (or was dropped) is refused too: its stream no longer
/// captures, so the work would run at once instead of joining a graph.
pub(crate) fn check_building(
    role: RoleKind,
    phase: Phase,
    family_ended: bool,
    what: impl Into<Cow<'static, str>>,
) -> Result<()> {
    match phase {
        Phase::Building if role != RoleKind::Top && family_ended => Err(Error::invalid(
            what,
            "the graph this builder adds to has ended or was dropped",
        )),
        Phase::Building => Ok(()),
        Phase::Idle => Err(Error::invalid(
            what,
            "the builder is not building (call `begin_building` first)",
        )),
        Phase::Ended => Err(Error::invalid(what, "the builder's building has ended")),
    }
}

/// Checks `split(count)`'s count (Python's: the builder itself and `count - 1`
/// new ones) and returns how many builders to make.
pub(crate) fn check_split_count(count: usize) -> Result<usize> {
    if count < 2 {
        return Err(Error::invalid(
            "splitting a graph builder",
            format!(
                "a split makes at least 2 builders (the original and a new one), {count} asked"
            ),
        ));
    }
    Ok(count - 1)
}

/// Where a builder captures: its device, its graph (family) and the capture
/// sequence it takes part in (the top builder's, or a conditional body's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) device: Device,
    pub(crate) family: u64,
    pub(crate) capture: u64,
}

/// Checks that a builder (`other`, of `role`) may be joined into one at `into`.
pub(crate) fn check_join(into: Place, other: Place, role: RoleKind) -> Result<()> {
    const WHAT: &str = "joining graph builders";
    if other.device != into.device {
        return Err(Error::other_device(
            WHAT,
            format!(
                "a builder of device {} cannot join one of device {}",
                other.device.ordinal(),
                into.device.ordinal()
            ),
        ));
    }
    if other.family != into.family {
        return Err(Error::invalid(
            WHAT,
            "the builder belongs to another graph's capture",
        ));
    }
    if role != RoleKind::Split {
        return Err(Error::invalid(
            WHAT,
            "only builders made by `split` are joined (end the others with `end_building`)",
        ));
    }
    if other.capture != into.capture {
        return Err(Error::invalid(
            WHAT,
            "the builder was split off another capture of the graph (the top builder's or \
             a conditional body's): join it into a builder of that capture",
        ));
    }
    Ok(())
}

/// Checks that graph memory (`of`: its allocation) named by work queued into a
/// builder is one of the allocations ordered before that work (`visible`).
pub(crate) fn check_graph_memory(
    visible: &[u64],
    of: Option<u64>,
    what: impl Into<Cow<'static, str>>,
) -> Result<()> {
    match of {
        Some(id) if !visible.contains(&id) => Err(Error::invalid(
            what,
            "the graph memory is not allocated before this point of the graph: only the \
             builder that allocated it, builders split off it or bodies added to it \
             afterwards, and builders those were joined into use it",
        )),
        _ => Ok(()),
    }
}

/// The capture status `status` allows work, else why not.
pub(crate) fn active(status: CaptureStatus, what: Cow<'static, str>) -> Result<()> {
    match status {
        CaptureStatus::Active => Ok(()),
        CaptureStatus::Invalidated => Err(Error::invalid(
            what,
            "an error invalidated the capture; end the building to discard it",
        )),
        CaptureStatus::None => Err(Error::invalid(
            what,
            "the builder's stream is no longer capturing",
        )),
    }
}

/// Checks that `thing` (memory, a graph, a pool, an event) of device `other`
/// can be used by work of a builder on `device`.
pub(super) fn check_device(
    device: &Device,
    (thing, other): (&str, &Device),
    what: impl Into<Cow<'static, str>>,
) -> Result<()> {
    if other != device {
        return Err(Error::other_device(
            what,
            format!(
                "the builder is on device {}, the {thing} on device {}",
                device.ordinal(),
                other.ordinal()
            ),
        ));
    }
    Ok(())
}
