//! [`Group`]: several operations issued as one NCCL group.

use cudars_core::{DeviceView, DeviceViewMut, Stream};

use cudars_bindings::nccl as sys;

use crate::comm::{Communicator, grouped_status};
use crate::error::Result;
use crate::op::{Kind, Op, Pending};
use crate::types::{Element, Reduction};

/// Several operations issued as one NCCL group (`ncclGroupStart` …
/// `ncclGroupEnd`): the collectives of several ranks driven by one thread
/// (from [`Communicator::init_all`]), matching sends and receives, or several
/// collectives fused into one launch.
///
/// Each method checks its operation at once (a typed error, nothing queued) and
/// keeps its views borrowed; [`launch`](Self::launch) issues them all.
///
/// ```no_run
/// # fn main() -> Result<(), cudars_nccl::Error> {
/// use cudars_core::{Device, DeviceBuffer, StreamOptions};
/// use cudars_nccl::{Communicator, Group, ReduceOp};
///
/// let devices = Device::all()?;
/// let comms = Communicator::init_all(&devices)?;
/// let streams = devices
///     .iter()
///     .map(|d| d.create_stream(StreamOptions::default()))
///     .collect::<Result<Vec<_>, _>>()?;
/// let mut bufs = devices
///     .iter()
///     .zip(&streams)
///     .map(|(d, s)| DeviceBuffer::from_host(d, &[1.0f32; 1024], s))
///     .collect::<Result<Vec<_>, _>>()?;
/// let mut group = Group::new();
/// for ((comm, s), b) in comms.iter().zip(&streams).zip(&mut bufs) {
///     group.all_reduce_in_place(comm, b.view_mut(), ReduceOp::Sum, s)?;
/// }
/// group.launch()?;
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Group<'a> {
    ops: Vec<Box<dyn Pending + 'a>>,
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("ops", &self.ops.len())
            .finish()
    }
}

impl<'a> Group<'a> {
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of operations in the group.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the group holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn push<T: Element>(&mut self, op: Op<'a, T>) -> &mut Self {
        self.ops.push(Box::new(op));
        self
    }

    /// Adds [`Communicator::all_reduce`].
    ///
    /// # Errors
    /// As [`Communicator::all_reduce`]'s checks.
    pub fn all_reduce<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceView<'a, T>,
        recv: DeviceViewMut<'a, T>,
        op: impl Into<Reduction<'a>>,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let o = Op::new(
            comm,
            stream,
            Kind::AllReduce,
            op.into(),
            Some(send),
            Some(recv),
            None,
        )?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::all_reduce_in_place`].
    ///
    /// # Errors
    /// As [`Communicator::all_reduce_in_place`]'s checks.
    pub fn all_reduce_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        buf: DeviceViewMut<'a, T>,
        op: impl Into<Reduction<'a>>,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let o = Op::new(
            comm,
            stream,
            Kind::AllReduce,
            op.into(),
            None,
            None,
            Some(buf),
        )?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::broadcast`].
    ///
    /// # Errors
    /// As [`Communicator::broadcast`]'s checks.
    pub fn broadcast<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: Option<DeviceView<'a, T>>,
        recv: DeviceViewMut<'a, T>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::Broadcast { root };
        let o = Op::moving(comm, stream, kind, send, Some(recv), None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::broadcast_in_place`].
    ///
    /// # Errors
    /// As [`Communicator::broadcast_in_place`]'s checks.
    pub fn broadcast_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        buf: DeviceViewMut<'a, T>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::Broadcast { root };
        let o = Op::moving(comm, stream, kind, None, None, Some(buf))?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::reduce`].
    ///
    /// # Errors
    /// As [`Communicator::reduce`]'s checks.
    pub fn reduce<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceView<'a, T>,
        recv: Option<DeviceViewMut<'a, T>>,
        op: impl Into<Reduction<'a>>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let o = Op::new(
            comm,
            stream,
            Kind::Reduce { root },
            op.into(),
            Some(send),
            recv,
            None,
        )?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::all_gather`].
    ///
    /// # Errors
    /// As [`Communicator::all_gather`]'s checks.
    pub fn all_gather<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceView<'a, T>,
        recv: DeviceViewMut<'a, T>,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::AllGather;
        let o = Op::moving(comm, stream, kind, Some(send), Some(recv), None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::reduce_scatter`].
    ///
    /// # Errors
    /// As [`Communicator::reduce_scatter`]'s checks.
    pub fn reduce_scatter<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceView<'a, T>,
        recv: DeviceViewMut<'a, T>,
        op: impl Into<Reduction<'a>>,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::ReduceScatter;
        let o = Op::new(comm, stream, kind, op.into(), Some(send), Some(recv), None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::send`].
    ///
    /// # Errors
    /// As [`Communicator::send`]'s checks.
    pub fn send<T: Element>(
        &mut self,
        comm: &'a Communicator,
        buf: DeviceView<'a, T>,
        peer: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::Send { peer };
        let o = Op::moving(comm, stream, kind, Some(buf), None, None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::recv`].
    ///
    /// # Errors
    /// As [`Communicator::recv`]'s checks.
    pub fn recv<T: Element>(
        &mut self,
        comm: &'a Communicator,
        buf: DeviceViewMut<'a, T>,
        peer: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::Recv { peer };
        let o = Op::moving(comm, stream, kind, None, Some(buf), None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::all_to_all`].
    ///
    /// # Errors
    /// As [`Communicator::all_to_all`]'s checks.
    pub fn all_to_all<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceView<'a, T>,
        recv: DeviceViewMut<'a, T>,
        count_per_peer: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::AllToAll {
            count: count_per_peer,
        };
        let o = Op::moving(comm, stream, kind, Some(send), Some(recv), None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::gather`].
    ///
    /// # Errors
    /// As [`Communicator::gather`]'s checks.
    pub fn gather<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceView<'a, T>,
        recv: Option<DeviceViewMut<'a, T>>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::Gather { root };
        let o = Op::moving(comm, stream, kind, Some(send), recv, None)?;
        Ok(self.push(o))
    }

    /// Adds [`Communicator::scatter`].
    ///
    /// # Errors
    /// As [`Communicator::scatter`]'s checks.
    pub fn scatter<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: Option<DeviceView<'a, T>>,
        recv: DeviceViewMut<'a, T>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<&mut Self> {
        let kind = Kind::Scatter { root };
        let o = Op::moving(comm, stream, kind, send, Some(recv), None)?;
        Ok(self.push(o))
    }

    /// Issues every operation in one NCCL group and orders each buffer's free
    /// after its stream. An empty group does nothing.
    ///
    /// # Errors
    /// The first operation's error, or NCCL's error ending the group (the
    /// group is ended either way); cudars-core's error ordering the frees.
    pub fn launch(self) -> Result<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        let n = self.ops.len();
        let context = || format!("issuing a group of {n} NCCL operations");
        let issued = grouped_status(&context, || {
            let mut in_progress = false;
            for op in &self.ops {
                in_progress |= op.issue()?;
            }
            Ok(in_progress)
        })
        .and_then(|(queued, ended)| {
            // Non-blocking communicators still setting up: wait for each once.
            if queued || ended {
                let mut seen: Vec<sys::ncclComm_t> = Vec::new();
                for op in &self.ops {
                    let comm = op.comm();
                    if comm.timeout().is_some() && !seen.contains(&comm.handle()) {
                        seen.push(comm.handle());
                        comm.settle(sys::ncclInProgress, &context)?;
                    }
                }
            }
            Ok(())
        });
        // Order every free, whatever happened: NCCL may have queued some work.
        let mut ordered = Ok(());
        for op in &self.ops {
            let r = op.order_frees();
            if ordered.is_ok() {
                ordered = r;
            }
        }
        issued?;
        ordered
    }
}
