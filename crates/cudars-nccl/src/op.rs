//! One checked collective or point-to-point operation ([`Op`]): the checks
//! every operation passes before NCCL sees it (lengths against the
//! communicator's size, ranks, devices, the reduction), the pointers NCCL is
//! given, and the issue itself. [`Communicator`]'s methods run one at once;
//! a [`Group`](crate::Group) holds several and issues them together.
//!
//! Each buffer's stream-ordered free is ordered after the operation's stream,
//! so dropping a buffer right after the call cannot free memory NCCL still
//! uses (soundness contract, rule 2).

use std::ffi::c_void;

use cudars_bindings::nccl as sys;
use cudars_core::{Buffer, ContextScope, DeviceView, DeviceViewMut, InvalidKind, Stream};

use crate::comm::Communicator;
use crate::error::{Error, Result, check, check_since};
use crate::types::{Element, ReduceOp, Reduction};

/// The NCCL release that added all-to-all, gather and scatter.
const NCCL_2_28: (u32, u32) = (2, 28);

/// Which operation, with its root or peer rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    AllReduce,
    Broadcast { root: usize },
    Reduce { root: usize },
    AllGather,
    ReduceScatter,
    Send { peer: usize },
    Recv { peer: usize },
    AllToAll { count: usize },
    Gather { root: usize },
    Scatter { root: usize },
}

impl Kind {
    fn verb(self) -> &'static str {
        match self {
            Self::AllReduce => "all-reducing",
            Self::Broadcast { .. } => "broadcasting",
            Self::Reduce { .. } => "reducing",
            Self::AllGather => "all-gathering",
            Self::ReduceScatter => "reduce-scattering",
            Self::Send { .. } => "sending",
            Self::Recv { .. } => "receiving",
            Self::AllToAll { .. } => "exchanging",
            Self::Gather { .. } => "gathering",
            Self::Scatter { .. } => "scattering",
        }
    }
}

/// The element count NCCL is given and where the send and receive pointers lie,
/// in elements from the start of their views (of the one view, in place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    count: usize,
    send_offset: usize,
    recv_offset: usize,
}

/// Checks the lengths of an operation's buffers against each other and the
/// communicator (`rank` of `size`) and works out its [`Layout`]. `send` and
/// `recv` are the separate views' lengths (`None` where absent); `in_place` the
/// one view's length when both are one buffer.
fn layout(
    kind: Kind,
    send: Option<usize>,
    recv: Option<usize>,
    in_place: Option<usize>,
    rank: usize,
    size: usize,
) -> Result<Layout, (InvalidKind, String)> {
    let out_of_range = |m: String| Err((InvalidKind::OutOfRange, m));
    let rank_arg = match kind {
        Kind::Broadcast { root }
        | Kind::Reduce { root }
        | Kind::Gather { root }
        | Kind::Scatter { root } => Some(("root", root)),
        Kind::Send { peer } | Kind::Recv { peer } => Some(("peer", peer)),
        _ => None,
    };
    if let Some((what, r)) = rank_arg {
        if r >= size {
            return out_of_range(format!("the {what} rank {r} is not below the {size} ranks"));
        }
    }
    let plain = |count| Layout {
        count,
        send_offset: 0,
        recv_offset: 0,
    };
    if let Some(len) = in_place {
        return match kind {
            Kind::AllGather | Kind::ReduceScatter => {
                if len % size != 0 {
                    return out_of_range(format!(
                        "the buffer's {len} elements do not split evenly into {size} ranks' parts"
                    ));
                }
                let count = len / size;
                let mine = rank * count;
                Ok(if kind == Kind::AllGather {
                    Layout {
                        count,
                        send_offset: mine,
                        recv_offset: 0,
                    }
                } else {
                    Layout {
                        count,
                        send_offset: 0,
                        recv_offset: mine,
                    }
                })
            }
            Kind::AllToAll { .. } | Kind::Gather { .. } | Kind::Scatter { .. } => Err((
                InvalidKind::Other,
                format!("{} cannot run in place", kind.verb()),
            )),
            _ => Ok(plain(len)),
        };
    }
    let same = |a: usize, b: usize, what: &str| {
        if a == b {
            Ok(plain(a))
        } else {
            out_of_range(format!(
                "{what}: the send view holds {a} elements, the receive view {b}"
            ))
        }
    };
    let times = |part: usize, whole: usize, what: &str| match part.checked_mul(size) {
        Some(n) if n == whole => Ok(plain(part)),
        _ => out_of_range(format!(
            "{what} must hold {size} ranks × {part} elements, but holds {whole}"
        )),
    };
    // In the arms below that call these, this rank is (or is not) the root.
    let root_lacks = |what: &str| {
        Err((
            InvalidKind::Other,
            format!("rank {rank} is the root: it must give {what}"),
        ))
    };
    let not_root = |root: usize, verb: &str| {
        Err((
            InvalidKind::Other,
            format!("rank {rank} is not the root (rank {root}): only the root {verb}"),
        ))
    };
    match (kind, send, recv) {
        (Kind::AllReduce, Some(s), Some(r)) => same(s, r, "all-reduce"),
        (Kind::Broadcast { root }, s, Some(r)) => match s {
            Some(s) => same(s, r, "broadcast"),
            None if rank == root => root_lacks("the data to send"),
            None => Ok(plain(r)),
        },
        (Kind::Reduce { root }, Some(s), r) => match r {
            Some(r) => same(s, r, "reduce"),
            None if rank == root => root_lacks("a view to receive into"),
            None => Ok(plain(s)),
        },
        (Kind::AllGather, Some(s), Some(r)) => times(s, r, "the receive view"),
        (Kind::ReduceScatter, Some(s), Some(r)) => times(r, s, "the send view"),
        (Kind::AllToAll { count }, Some(s), Some(r)) => {
            times(count, s, "the send view")?;
            times(count, r, "the receive view")
        }
        // Only the root receives (gather) or sends (scatter) the whole.
        (Kind::Gather { root }, Some(s), r) => match r {
            Some(r) if rank == root => times(s, r, "the receive view"),
            None if rank == root => root_lacks("a view to receive into"),
            Some(_) => not_root(root, "receives"),
            None => Ok(plain(s)),
        },
        (Kind::Scatter { root }, s, Some(r)) => match s {
            Some(s) if rank == root => times(r, s, "the send view"),
            None if rank == root => root_lacks("the data to send"),
            Some(_) => not_root(root, "sends"),
            None => Ok(plain(r)),
        },
        (Kind::Send { .. }, Some(s), None) => Ok(plain(s)),
        (Kind::Recv { .. }, None, Some(r)) => Ok(plain(r)),
        _ => Err((InvalidKind::Other, "the operation lacks a buffer".into())),
    }
}

/// Checks that everything an operation uses (`(what, device ordinal)`) is on
/// the rank's device `own`.
fn same_device(
    own: usize,
    used: impl IntoIterator<Item = (&'static str, usize)>,
) -> Result<(), (InvalidKind, String)> {
    match used.into_iter().find(|(_, d)| *d != own) {
        Some((what, d)) => Err((
            InvalidKind::OtherDevice,
            format!("{what} is on device {d}, the rank on device {own}"),
        )),
        None => Ok(()),
    }
}

/// One checked operation, ready to issue.
pub(crate) struct Op<'a, T> {
    comm: &'a Communicator,
    stream: &'a Stream,
    kind: Kind,
    red: Reduction<'a>,
    send: Option<DeviceView<'a, T>>,
    recv: Option<DeviceViewMut<'a, T>>,
    in_place: Option<DeviceViewMut<'a, T>>,
    layout: Layout,
}

/// An operation in a [`Group`], its element type erased.
pub(crate) trait Pending {
    /// Queues the operation with NCCL; `true` when a non-blocking
    /// communicator answered `ncclInProgress` (the caller polls it).
    fn issue(&self) -> Result<bool>;
    /// The communicator it runs on.
    fn comm(&self) -> &Communicator;
    /// Orders the frees of its buffers after its stream.
    fn order_frees(&self) -> Result<()>;
}

impl<'a, T: Element> Op<'a, T> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        comm: &'a Communicator,
        stream: &'a Stream,
        kind: Kind,
        red: Reduction<'a>,
        send: Option<DeviceView<'a, T>>,
        recv: Option<DeviceViewMut<'a, T>>,
        in_place: Option<DeviceViewMut<'a, T>>,
    ) -> Result<Self> {
        let mut op = Self {
            comm,
            stream,
            kind,
            red,
            send,
            recv,
            in_place,
            layout: Layout {
                count: 0,
                send_offset: 0,
                recv_offset: 0,
            },
        };
        let devices = [
            Some(("the stream", stream.device())),
            op.send.as_ref().map(|v| ("the send view", v.device())),
            op.recv.as_ref().map(|v| ("the receive view", v.device())),
            op.in_place.as_ref().map(|v| ("the buffer", v.device())),
        ];
        let checked = same_device(
            comm.device().ordinal(),
            devices.into_iter().flatten().map(|(w, d)| (w, d.ordinal())),
        )
        .and_then(|()| red.check_use(comm.raw, T::DATA_TYPE, T::NAME))
        .and_then(|()| {
            layout(
                kind,
                op.send.as_ref().map(DeviceView::len),
                op.recv.as_ref().map(DeviceViewMut::len),
                op.in_place.as_ref().map(DeviceViewMut::len),
                comm.rank(),
                comm.size(),
            )
        });
        op.layout = checked.map_err(|(k, m)| Error::invalid(op.context(), k, m))?;
        Ok(op)
    }

    /// [`new`](Self::new) for an operation that reduces nothing.
    pub(crate) fn moving(
        comm: &'a Communicator,
        stream: &'a Stream,
        kind: Kind,
        send: Option<DeviceView<'a, T>>,
        recv: Option<DeviceViewMut<'a, T>>,
        in_place: Option<DeviceViewMut<'a, T>>,
    ) -> Result<Self> {
        Self::new(
            comm,
            stream,
            kind,
            ReduceOp::Sum.into(),
            send,
            recv,
            in_place,
        )
    }

    fn context(&self) -> String {
        let what = match self.kind {
            Kind::AllReduce | Kind::ReduceScatter => format!(" ({})", self.red.name()),
            Kind::Reduce { root } => format!(" ({}) to rank {root}", self.red.name()),
            Kind::Broadcast { root } => format!(" from rank {root}"),
            Kind::Send { peer } => format!(" to rank {peer}"),
            Kind::Recv { peer } | Kind::Scatter { root: peer } => format!(" from rank {peer}"),
            Kind::Gather { root } => format!(" to rank {root}"),
            Kind::AllToAll { .. } => " all-to-all".into(),
            Kind::AllGather => String::new(),
        };
        let len = [
            self.send.as_ref().map(DeviceView::len),
            self.recv.as_ref().map(DeviceViewMut::len),
            self.in_place.as_ref().map(DeviceViewMut::len),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0);
        format!(
            "{} {len} {}{what} on rank {} of {}",
            self.kind.verb(),
            T::NAME,
            self.comm.rank(),
            self.comm.size()
        )
    }

    /// The device pointers NCCL is given (null where a rank gives none).
    fn pointers(&self) -> (*const c_void, *mut c_void) {
        let at = |base: cudars_bindings::driver::CUdeviceptr, offset: usize| {
            (base as usize + offset * std::mem::size_of::<T>()) as *mut c_void
        };
        let Layout {
            send_offset,
            recv_offset,
            ..
        } = self.layout;
        match &self.in_place {
            Some(buf) => (at(buf.ptr(), send_offset), at(buf.ptr(), recv_offset)),
            None => (
                self.send
                    .as_ref()
                    .map_or(std::ptr::null(), |v| at(v.ptr(), send_offset)),
                self.recv
                    .as_ref()
                    .map_or(std::ptr::null_mut(), |v| at(v.ptr(), recv_offset)),
            ),
        }
    }

    /// Issues the operation alone and orders the frees.
    pub(crate) fn run(self) -> Result<()> {
        let issued = self.issue().and_then(|in_progress| {
            if in_progress {
                self.comm.settle(sys::ncclInProgress, &|| self.context())
            } else {
                Ok(())
            }
        });
        // Order the frees whatever happened: NCCL may have queued the work.
        let ordered = self.order_frees();
        issued?;
        ordered
    }
}

impl<T: Element> Pending for Op<'_, T> {
    fn comm(&self) -> &Communicator {
        self.comm
    }

    fn issue(&self) -> Result<bool> {
        // NCCL makes the communicator's device current for its own work and
        // puts the device that was current back: on the device's primary
        // context, with a primary context current, no scope is needed (and
        // none made: no driver call per collective, as in C).
        let _scope = ContextScope::for_device_setting_library(self.stream)?;
        let (send, recv) = self.pointers();
        let (comm, stream) = (self.comm.raw, self.stream.handle().cast());
        let (n, dt, red) = (self.layout.count, T::DATA_TYPE, self.red.raw());
        // Ranks were checked below the communicator's size, which fits an `i32`.
        let rank = |r: usize| r as i32;
        // SAFETY: every view is on the communicator's device and was checked to
        // hold what NCCL reads or writes at these pointers (the layout); the views
        // are borrowed for as long as `self` lives, across the issue (and the
        // group's end); a receive view is exclusively borrowed. The stream is a
        // live stream of that device, its context current.
        let status = unsafe {
            match self.kind {
                Kind::AllReduce => sys::ncclAllReduce(send, recv, n, dt, red, comm, stream),
                Kind::Broadcast { root } => {
                    sys::ncclBroadcast(send, recv, n, dt, rank(root), comm, stream)
                }
                Kind::Reduce { root } => {
                    sys::ncclReduce(send, recv, n, dt, red, rank(root), comm, stream)
                }
                Kind::AllGather => sys::ncclAllGather(send, recv, n, dt, comm, stream),
                Kind::ReduceScatter => sys::ncclReduceScatter(send, recv, n, dt, red, comm, stream),
                Kind::Send { peer } => sys::ncclSend(send, n, dt, rank(peer), comm, stream),
                Kind::Recv { peer } => sys::ncclRecv(recv, n, dt, rank(peer), comm, stream),
                Kind::AllToAll { .. } => sys::ncclAlltoAll(send, recv, n, dt, comm, stream),
                Kind::Gather { root } => {
                    sys::ncclGather(send, recv, n, dt, rank(root), comm, stream)
                }
                Kind::Scatter { root } => {
                    sys::ncclScatter(send, recv, n, dt, rank(root), comm, stream)
                }
            }
        };
        if status == sys::ncclInProgress && self.comm.wait.is_some() {
            return Ok(true);
        }
        match self.kind {
            Kind::AllToAll { .. } | Kind::Gather { .. } | Kind::Scatter { .. } => {
                check_since(status, NCCL_2_28, || self.context())
            }
            _ => check(status, || self.context()),
        }
        .map(|()| false)
    }

    fn order_frees(&self) -> Result<()> {
        let buffers = [
            self.send.as_ref().map(|v| v.buffer()),
            self.recv.as_ref().map(|v| v.buffer()),
            self.in_place.as_ref().map(|v| v.buffer()),
        ];
        Ok(Buffer::order_frees_after(
            buffers.into_iter().flatten(),
            self.stream,
        )?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Asserts that a check failed as `kind`, with a message that holds `needle`.
    #[track_caller]
    fn fails<T: std::fmt::Debug>(
        r: Result<T, (InvalidKind, String)>,
        kind: InvalidKind,
        needle: &str,
    ) {
        let (k, m) = r.unwrap_err();
        assert_eq!(k, kind, "{m}");
        assert!(m.contains(needle), "{m}");
    }

    fn plain(count: usize) -> Layout {
        Layout {
            count,
            send_offset: 0,
            recv_offset: 0,
        }
    }

    #[test]
    fn lengths_are_checked_for_each_kind() {
        let l = |k, s, r, ip, rank, size| layout(k, s, r, ip, rank, size);
        assert_eq!(
            l(Kind::AllReduce, Some(8), Some(8), None, 0, 2).unwrap(),
            plain(8)
        );
        fails(
            l(Kind::AllReduce, Some(8), Some(7), None, 0, 2),
            InvalidKind::OutOfRange,
            "8 elements, the receive view 7",
        );
        // All-gather: recv = size × send; reduce-scatter the other way round.
        assert_eq!(
            l(Kind::AllGather, Some(3), Some(12), None, 1, 4).unwrap(),
            plain(3)
        );
        fails(
            l(Kind::AllGather, Some(3), Some(11), None, 1, 4),
            InvalidKind::OutOfRange,
            "4 ranks × 3 elements, but holds 11",
        );
        assert!(l(Kind::AllGather, Some(usize::MAX), Some(0), None, 0, 2).is_err());
        assert_eq!(
            l(Kind::ReduceScatter, Some(12), Some(3), None, 1, 4).unwrap(),
            plain(3)
        );
        assert!(l(Kind::ReduceScatter, Some(12), Some(4), None, 1, 4).is_err());
        // Roots and peers below the size.
        fails(
            l(Kind::Broadcast { root: 2 }, None, Some(4), None, 0, 2),
            InvalidKind::OutOfRange,
            "root rank 2",
        );
        assert!(l(Kind::Send { peer: 5 }, Some(1), None, None, 0, 5).is_err());
        assert_eq!(
            l(Kind::Recv { peer: 4 }, None, Some(6), None, 0, 5).unwrap(),
            plain(6)
        );
        // The root must give the data (broadcast) or the destination (reduce).
        let (k, _) = l(Kind::Broadcast { root: 1 }, None, Some(4), None, 1, 2).unwrap_err();
        assert_eq!(k, InvalidKind::Other);
        assert_eq!(
            l(Kind::Broadcast { root: 1 }, None, Some(4), None, 0, 2).unwrap(),
            plain(4)
        );
        let (k, _) = l(Kind::Reduce { root: 0 }, Some(4), None, None, 0, 2).unwrap_err();
        assert_eq!(k, InvalidKind::Other);
        assert_eq!(
            l(Kind::Reduce { root: 0 }, Some(4), None, None, 1, 2).unwrap(),
            plain(4)
        );
    }

    #[test]
    fn in_place_parts_sit_at_the_ranks_offset() {
        let l = |k, len, rank, size| layout(k, None, None, Some(len), rank, size);
        assert_eq!(
            l(Kind::AllGather, 12, 2, 4).unwrap(),
            Layout {
                count: 3,
                send_offset: 6,
                recv_offset: 0
            }
        );
        assert_eq!(
            l(Kind::ReduceScatter, 12, 3, 4).unwrap(),
            Layout {
                count: 3,
                send_offset: 0,
                recv_offset: 9
            }
        );
        fails(
            l(Kind::AllGather, 10, 0, 4),
            InvalidKind::OutOfRange,
            "do not split evenly into 4",
        );
        assert_eq!(l(Kind::AllReduce, 10, 0, 4).unwrap(), plain(10));
        assert_eq!(l(Kind::Reduce { root: 3 }, 10, 0, 4).unwrap(), plain(10));
        assert!(l(Kind::Reduce { root: 4 }, 10, 0, 4).is_err());
    }

    #[test]
    fn all_to_all_needs_size_times_count_on_both_sides() {
        let l = |count, s, r| layout(Kind::AllToAll { count }, Some(s), Some(r), None, 1, 4);
        assert_eq!(l(3, 12, 12).unwrap(), plain(3));
        assert_eq!(l(0, 0, 0).unwrap(), plain(0));
        fails(
            l(3, 11, 12),
            InvalidKind::OutOfRange,
            "the send view must hold 4 ranks × 3 elements, but holds 11",
        );
        fails(
            l(3, 12, 13),
            InvalidKind::OutOfRange,
            "the receive view must hold 4 ranks × 3 elements, but holds 13",
        );
        assert!(l(usize::MAX, 0, 0).is_err());
        // Not in place, and both views are needed.
        fails(
            layout(Kind::AllToAll { count: 3 }, None, None, Some(12), 0, 4),
            InvalidKind::Other,
            "cannot run in place",
        );
        assert!(layout(Kind::AllToAll { count: 3 }, Some(12), None, None, 0, 4).is_err());
    }

    #[test]
    fn gather_takes_a_whole_receive_view_at_the_root_alone() {
        let g = |root, s, r, rank| layout(Kind::Gather { root }, Some(s), r, None, rank, 4);
        // The root receives size × count; the others give no view.
        assert_eq!(g(2, 5, Some(20), 2).unwrap(), plain(5));
        assert_eq!(g(2, 5, None, 0).unwrap(), plain(5));
        fails(
            g(2, 5, Some(19), 2),
            InvalidKind::OutOfRange,
            "the receive view must hold 4 ranks × 5 elements, but holds 19",
        );
        fails(
            g(2, 5, None, 2),
            InvalidKind::Other,
            "rank 2 is the root: it must give a view to receive into",
        );
        fails(
            g(2, 5, Some(20), 1),
            InvalidKind::Other,
            "rank 1 is not the root (rank 2): only the root receives",
        );
        fails(
            g(4, 5, None, 0),
            InvalidKind::OutOfRange,
            "the root rank 4 is not below the 4 ranks",
        );
        assert!(layout(Kind::Gather { root: 0 }, None, None, Some(20), 0, 4).is_err());
    }

    #[test]
    fn scatter_takes_a_whole_send_view_at_the_root_alone() {
        let sc = |root, s, r, rank| layout(Kind::Scatter { root }, s, Some(r), None, rank, 4);
        assert_eq!(sc(0, Some(24), 6, 0).unwrap(), plain(6));
        assert_eq!(sc(0, None, 6, 3).unwrap(), plain(6));
        fails(
            sc(0, Some(23), 6, 0),
            InvalidKind::OutOfRange,
            "the send view must hold 4 ranks × 6 elements, but holds 23",
        );
        fails(
            sc(0, None, 6, 0),
            InvalidKind::Other,
            "rank 0 is the root: it must give the data to send",
        );
        fails(
            sc(0, Some(24), 6, 3),
            InvalidKind::Other,
            "rank 3 is not the root (rank 0): only the root sends",
        );
        let (k, _) = sc(7, None, 6, 0).unwrap_err();
        assert_eq!(k, InvalidKind::OutOfRange);
        assert!(layout(Kind::Scatter { root: 0 }, None, None, Some(24), 0, 4).is_err());
    }

    #[test]
    fn everything_must_be_on_the_ranks_device() {
        assert!(same_device(1, [("the stream", 1), ("the send view", 1)]).is_ok());
        assert!(same_device(0, []).is_ok());
        let (k, m) = same_device(1, [("the stream", 1), ("the receive view", 0)]).unwrap_err();
        assert_eq!(k, InvalidKind::OtherDevice);
        assert_eq!(m, "the receive view is on device 0, the rank on device 1");
    }

    #[test]
    fn a_custom_reduction_fits_its_own_communicator_and_type_alone() {
        let mine = 0x10 as sys::ncclComm_t;
        let other = 0x20 as sys::ncclComm_t;
        let custom = crate::types::custom_for_test(mine, sys::ncclFloat32, "f32");
        assert!(custom.check_use(mine, sys::ncclFloat32, "f32").is_ok());
        assert_eq!(custom.name(), "pre-multiplied sum");
        assert_eq!(custom.raw(), sys::ncclRedOp_t(5));
        fails(
            custom.check_use(other, sys::ncclFloat32, "f32"),
            InvalidKind::Other,
            "made by another communicator",
        );
        let (k, m) = custom.check_use(mine, sys::ncclFloat64, "f64").unwrap_err();
        assert_eq!(k, InvalidKind::Other);
        assert_eq!(m, "the reduction operator was made for f32, not f64");
        // A built-in operator fits anything.
        let sum = Reduction::from(ReduceOp::Sum);
        assert!(sum.check_use(other, sys::ncclFloat64, "f64").is_ok());
        assert_eq!(sum.raw(), sys::ncclSum);
    }
}
