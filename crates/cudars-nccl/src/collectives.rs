//! Collectives and point-to-point transfers: [`Communicator`]'s methods, each
//! one checked [`Op`] issued at once.
//!
//! Every operation is checked before NCCL sees it (lengths against the
//! communicator's size, ranks, devices), then queued on a stream; each buffer's
//! stream-ordered free is then ordered after that stream, so dropping a buffer
//! right after the call cannot free memory NCCL still uses.

use cudars_core::{DeviceView, DeviceViewMut, Stream};

use crate::comm::Communicator;
use crate::error::Result;
use crate::op::{Kind, Op};
use crate::types::{Element, Reduction};

impl Communicator {
    /// Sums (or otherwise reduces, by `op`) every rank's `send` into every rank's
    /// `recv` (`ncclAllReduce`), queued on `stream`. `send` and `recv` hold the
    /// same number of elements.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): lengths that differ
    /// ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)), a view or stream of another device
    /// ([`InvalidKind::OtherDevice`](cudars_core::InvalidKind::OtherDevice)); NCCL's error.
    pub fn all_reduce<'o, T: Element>(
        &self,
        send: DeviceView<'_, T>,
        recv: DeviceViewMut<'_, T>,
        op: impl Into<Reduction<'o>>,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::AllReduce;
        Op::new(self, stream, kind, op.into(), Some(send), Some(recv), None)?.run()
    }

    /// [`all_reduce`](Self::all_reduce) with one buffer as both input and output.
    ///
    /// # Errors
    /// As [`all_reduce`](Self::all_reduce).
    pub fn all_reduce_in_place<'o, T: Element>(
        &self,
        buf: DeviceViewMut<'_, T>,
        op: impl Into<Reduction<'o>>,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::AllReduce;
        Op::new(self, stream, kind, op.into(), None, None, Some(buf))?.run()
    }

    /// Copies rank `root`'s `send` into every rank's `recv` (`ncclBroadcast`).
    /// The root gives `send` (as long as `recv`); the others may give `None`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): a root not below the size or lengths that
    /// differ ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)), no `send` on the root
    /// ([`InvalidKind::Other`](cudars_core::InvalidKind::Other)), a view or stream of another device; NCCL's error.
    pub fn broadcast<T: Element>(
        &self,
        send: Option<DeviceView<'_, T>>,
        recv: DeviceViewMut<'_, T>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Broadcast { root };
        Op::moving(self, stream, kind, send, Some(recv), None)?.run()
    }

    /// [`broadcast`](Self::broadcast) in place: the root's `buf` is sent, every
    /// other rank's `buf` is overwritten.
    ///
    /// # Errors
    /// As [`broadcast`](Self::broadcast).
    pub fn broadcast_in_place<T: Element>(
        &self,
        buf: DeviceViewMut<'_, T>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Broadcast { root };
        Op::moving(self, stream, kind, None, None, Some(buf))?.run()
    }

    /// Reduces every rank's `send` into rank `root`'s `recv` (`ncclReduce`). The
    /// root gives `recv` (as long as `send`); the others may give `None`.
    ///
    /// # Errors
    /// As [`broadcast`](Self::broadcast), with `recv` required on the root.
    pub fn reduce<'o, T: Element>(
        &self,
        send: DeviceView<'_, T>,
        recv: Option<DeviceViewMut<'_, T>>,
        op: impl Into<Reduction<'o>>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Reduce { root };
        Op::new(self, stream, kind, op.into(), Some(send), recv, None)?.run()
    }

    /// [`reduce`](Self::reduce) in place: the root's `buf` receives the result.
    ///
    /// # Errors
    /// As [`reduce`](Self::reduce).
    pub fn reduce_in_place<'o, T: Element>(
        &self,
        buf: DeviceViewMut<'_, T>,
        op: impl Into<Reduction<'o>>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Reduce { root };
        Op::new(self, stream, kind, op.into(), None, None, Some(buf))?.run()
    }

    /// Gathers every rank's `send` into every rank's `recv`, rank `i`'s part at
    /// `i · send.len()` (`ncclAllGather`): `recv` holds `size() · send.len()`
    /// elements.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): `recv`'s length is not `size() · send.len()`
    /// ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)), a view or stream of another device; NCCL's
    /// error.
    pub fn all_gather<T: Element>(
        &self,
        send: DeviceView<'_, T>,
        recv: DeviceViewMut<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::AllGather;
        Op::moving(self, stream, kind, Some(send), Some(recv), None)?.run()
    }

    /// [`all_gather`](Self::all_gather) in place: this rank's part is already at
    /// `rank() · part` in `buf`, whose length is a multiple of `size()`.
    ///
    /// # Errors
    /// As [`all_gather`](Self::all_gather), for a length that is not a multiple
    /// of `size()`.
    pub fn all_gather_in_place<T: Element>(
        &self,
        buf: DeviceViewMut<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::AllGather;
        Op::moving(self, stream, kind, None, None, Some(buf))?.run()
    }

    /// Reduces every rank's `send` and scatters the result: rank `i`'s `recv`
    /// gets part `i` (`ncclReduceScatter`). `send` holds `size() · recv.len()`
    /// elements.
    ///
    /// # Errors
    /// As [`all_gather`](Self::all_gather), with the roles of the lengths swapped.
    pub fn reduce_scatter<'o, T: Element>(
        &self,
        send: DeviceView<'_, T>,
        recv: DeviceViewMut<'_, T>,
        op: impl Into<Reduction<'o>>,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::ReduceScatter;
        Op::new(self, stream, kind, op.into(), Some(send), Some(recv), None)?.run()
    }

    /// [`reduce_scatter`](Self::reduce_scatter) in place: this rank's part of
    /// the result lands at `rank() · part` in `buf`.
    ///
    /// # Errors
    /// As [`all_gather_in_place`](Self::all_gather_in_place).
    pub fn reduce_scatter_in_place<'o, T: Element>(
        &self,
        buf: DeviceViewMut<'_, T>,
        op: impl Into<Reduction<'o>>,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::ReduceScatter;
        Op::new(self, stream, kind, op.into(), None, None, Some(buf))?.run()
    }

    /// Sends part `j` of `send` to rank `j` and receives rank `j`'s part `i`
    /// (this is rank `i`) into part `j` of `recv` (`ncclAlltoAll`, NCCL 2.28 and
    /// later). Each part holds `count_per_peer` elements, so `send` and `recv`
    /// hold `size() · count_per_peer`; it does not run in place.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): a view that does not hold `size() ·
    /// count_per_peer` elements ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)), a view or stream
    /// of another device ([`InvalidKind::OtherDevice`](cudars_core::InvalidKind::OtherDevice)); [`Error::TooOld`](crate::Error::TooOld) for
    /// an NCCL before 2.28; NCCL's error.
    pub fn all_to_all<T: Element>(
        &self,
        send: DeviceView<'_, T>,
        recv: DeviceViewMut<'_, T>,
        count_per_peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::AllToAll {
            count: count_per_peer,
        };
        Op::moving(self, stream, kind, Some(send), Some(recv), None)?.run()
    }

    /// Gathers every rank's `send` into rank `root`'s `recv`, rank `i`'s part at
    /// `i · send.len()` (`ncclGather`, NCCL 2.28 and later). The root gives
    /// `recv`, of `size() · send.len()` elements; every other rank gives `None`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): a root not below the size or a `recv` of
    /// another length ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)), no `recv` on the root or
    /// one on another rank ([`InvalidKind::Other`](cudars_core::InvalidKind::Other)), a view or stream of another
    /// device; [`Error::TooOld`](crate::Error::TooOld) for an NCCL before 2.28; NCCL's error.
    pub fn gather<T: Element>(
        &self,
        send: DeviceView<'_, T>,
        recv: Option<DeviceViewMut<'_, T>>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Gather { root };
        Op::moving(self, stream, kind, Some(send), recv, None)?.run()
    }

    /// Scatters rank `root`'s `send` over the ranks: rank `i`'s `recv` gets the
    /// part at `i · recv.len()` (`ncclScatter`, NCCL 2.28 and later). The root
    /// gives `send`, of `size() · recv.len()` elements; every other rank gives
    /// `None`.
    ///
    /// # Errors
    /// As [`gather`](Self::gather), with the roles of `send` and `recv` swapped.
    pub fn scatter<T: Element>(
        &self,
        send: Option<DeviceView<'_, T>>,
        recv: DeviceViewMut<'_, T>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Scatter { root };
        Op::moving(self, stream, kind, send, Some(recv), None)?.run()
    }

    /// Sends `buf` to rank `peer` (`ncclSend`), which must post a matching
    /// [`recv`](Self::recv). A send and a receive that depend on each other
    /// (an exchange, a send to oneself) go in one [`Group`](crate::Group).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): a peer not below the size
    /// ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)), a view or stream of another device; NCCL's
    /// error.
    pub fn send<T: Element>(
        &self,
        buf: DeviceView<'_, T>,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Send { peer };
        Op::moving(self, stream, kind, Some(buf), None, None)?.run()
    }

    /// Receives into `buf` from rank `peer` (`ncclRecv`); see
    /// [`send`](Self::send).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn recv<T: Element>(
        &self,
        buf: DeviceViewMut<'_, T>,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        let kind = Kind::Recv { peer };
        Op::moving(self, stream, kind, None, Some(buf), None)?.run()
    }
}
