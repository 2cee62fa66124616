//! NCCL on the GPU: every collective and send/receive on a one-rank
//! communicator (made both ways), all-to-all, gather, scatter and
//! pre-multiplied sums, groups, splits, aborts and the typed errors; on a
//! machine with several GPUs, all-reduce, broadcast, all-gather,
//! reduce-scatter, all-to-all, gather, scatter, pre-multiplied sums and a
//! send/receive ring over every GPU, with one thread driving
//! all ranks and with one thread per rank. Without a GPU each test prints
//! `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails (and with
//! `CUDA_TEST_REQUIRE_MULTI_GPU=1` so do the multi-GPU tests on one GPU).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{Device, DeviceBuffer, InvalidKind, Stream, StreamOptions};
use cudars_nccl::{CommConfig, Communicator, Error, Group, ReduceOp, UniqueId};
use cudars_tests::{require_gpu, require_gpus};

fn setup() -> (Device, Stream) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (dev, s)
}

/// A communicator of one rank, on `dev`; `None` on a driver older than NCCL's
/// CUDA major, once the typed error saying so has been checked and printed
/// (the test then ends: nothing after it can run without a communicator).
fn one_rank(dev: &Device) -> Option<Communicator> {
    cudars_tests::needs_library_driver!(Communicator::init_all(std::slice::from_ref(dev)))
        .map(|mut comms| comms.remove(0))
}

fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 31 + seed * 17) % 97) as f32 - 40.0)
        .collect()
}

#[test]
fn one_rank_runs_every_collective() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(comm) = one_rank(&dev) else {
        return;
    };
    assert_eq!((comm.rank(), comm.size(), comm.device()), (0, 1, &dev));
    let n = 1000;
    let x = data(n, 1);
    let a = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&dev, n, &s).unwrap();

    comm.all_reduce(a.view(), b.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.broadcast(Some(a.view()), b.view_mut(), 0, &s).unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.reduce(a.view(), Some(b.view_mut()), ReduceOp::Max, 0, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.all_gather(a.view(), b.view_mut(), &s).unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.reduce_scatter(a.view(), b.view_mut(), ReduceOp::Avg, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);

    // In place, on a sub-range: the rest of the buffer is untouched.
    let mut c = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    comm.all_reduce_in_place(c.slice_mut(100..200).unwrap(), ReduceOp::Prod, &s)
        .unwrap();
    comm.broadcast_in_place(c.slice_mut(..10).unwrap(), 0, &s)
        .unwrap();
    comm.reduce_in_place(c.slice_mut(10..20).unwrap(), ReduceOp::Min, 0, &s)
        .unwrap();
    comm.all_gather_in_place(c.view_mut(), &s).unwrap();
    comm.reduce_scatter_in_place(c.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(c.to_vec(&s).unwrap(), x);

    // Integers and halves go through their own NCCL types.
    let xi: Vec<i64> = (0..n as i64).map(|i| i * 1_000_000_007).collect();
    let mut di = DeviceBuffer::from_host(&dev, &xi, &s).unwrap();
    comm.all_reduce_in_place(di.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(di.to_vec(&s).unwrap(), xi);
    let xh: Vec<cudars_core::half::bf16> = x
        .iter()
        .map(|v| cudars_core::half::bf16::from_f32(*v))
        .collect();
    let mut dh = DeviceBuffer::from_host(&dev, &xh, &s).unwrap();
    comm.all_reduce_in_place(dh.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(dh.to_vec(&s).unwrap(), xh);

    comm.async_error().unwrap();
    comm.destroy().unwrap();
}

#[test]
fn a_rank_joins_by_unique_id_and_sends_to_itself_in_a_group() {
    require_gpu!();
    let (dev, s) = setup();
    let id = UniqueId::new().unwrap();
    // The id travels as text in real programs.
    let id: UniqueId = id.to_string().parse().unwrap();
    let config = CommConfig::new()
        .with_comm_name("cuda-rs test")
        .with_ctas(1, 8);
    let Some(comm) =
        cudars_tests::needs_library_driver!(Communicator::init_rank_with(&dev, 1, &id, 0, &config))
    else {
        return;
    };
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    let x = data(4096, 2);
    let a = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&dev, 4096, &s).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&dev, 4096, &s).unwrap();
    // A send to oneself needs its receive in the same group.
    let mut g = Group::new();
    g.send(&comm, a.slice(..2048).unwrap(), 0, &s).unwrap();
    g.recv(&comm, b.slice_mut(2048..).unwrap(), 0, &s).unwrap();
    g.all_reduce(&comm, a.view(), c.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(g.len(), 3);
    g.launch().unwrap();
    let got = b.to_vec(&s).unwrap();
    assert_eq!(&got[2048..], &x[..2048]);
    assert!(got[..2048].iter().all(|v| *v == 0.0));
    assert_eq!(c.to_vec(&s).unwrap(), x);
    Group::new().launch().unwrap();

    // A split: color 0 gives a new one-rank communicator; no color gives none.
    let sub = comm.split(Some(0), 0).unwrap().unwrap();
    assert_eq!((sub.rank(), sub.size()), (0, 1));
    sub.all_reduce_in_place(c.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(c.to_vec(&s).unwrap(), x);
    assert!(comm.split(None, 0).unwrap().is_none());
    comm.finalize().unwrap();
    comm.abort().unwrap();
}

#[test]
fn bad_arguments_are_typed_errors_before_nccl() {
    require_gpu!();
    let (dev, s) = setup();
    let kind = |e: cudars_nccl::Error| (e.invalid_kind(), e.to_string());
    // Joining (checked before NCCL, so on any driver): a rank not below the
    // size, no ranks, a device named twice.
    let id = UniqueId::new().unwrap();
    let (k, _) = kind(Communicator::init_rank(&dev, 1, &id, 1).unwrap_err());
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    let (k, _) = kind(Communicator::init_rank(&dev, 0, &id, 0).unwrap_err());
    assert_eq!(k, Some(InvalidKind::ZeroSize));
    let (k, m) = kind(Communicator::init_all(&[dev, dev]).unwrap_err());
    assert_eq!(k, Some(InvalidKind::Other));
    assert!(m.contains("device 0 is named twice"), "{m}");
    let (k, _) = kind(Communicator::init_all(&[]).unwrap_err());
    assert_eq!(k, Some(InvalidKind::ZeroSize));
    let Some(comm) = one_rank(&dev) else {
        return;
    };
    let a = DeviceBuffer::<f32>::zeroed(&dev, 8, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&dev, 9, &s).unwrap();
    let (k, m) = kind(
        comm.all_reduce(a.view(), b.view_mut(), ReduceOp::Sum, &s)
            .unwrap_err(),
    );
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    assert!(
        m.starts_with("all-reducing 9 f32 (sum) on rank 0 of 1"),
        "{m}"
    );
    let (k, _) = kind(comm.all_gather(a.view(), b.view_mut(), &s).unwrap_err());
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    let (k, m) = kind(comm.broadcast_in_place(b.view_mut(), 1, &s).unwrap_err());
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    assert!(m.contains("root rank 1 is not below the 1 ranks"), "{m}");
    let (k, _) = kind(comm.broadcast(None, b.view_mut(), 0, &s).unwrap_err());
    assert_eq!(k, Some(InvalidKind::Other));
    let (k, _) = kind(
        comm.reduce(a.view(), None, ReduceOp::Sum, 0, &s)
            .unwrap_err(),
    );
    assert_eq!(k, Some(InvalidKind::Other));
    let (k, _) = kind(comm.send(a.view(), 1, &s).unwrap_err());
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    // A group refuses a bad operation at once and keeps the good ones.
    let mut tiny = DeviceBuffer::<f32>::zeroed(&dev, 1, &s).unwrap();
    let mut g = Group::new();
    g.all_reduce_in_place(&comm, b.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    let e = g.recv(&comm, tiny.view_mut(), 3, &s).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
    assert_eq!(g.len(), 1);
    g.launch().unwrap();
    comm.async_error().unwrap();
}

#[test]
fn one_rank_exchanges_gathers_and_scatters() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(comm) = one_rank(&dev) else {
        return;
    };
    let n = 777;
    let x = data(n, 3);
    let a = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&dev, n, &s).unwrap();
    // One rank: every part is its own.
    comm.all_to_all(a.view(), b.view_mut(), n, &s).unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.gather(a.view(), Some(b.view_mut()), 0, &s).unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.scatter(Some(a.view()), b.view_mut(), 0, &s).unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);

    // The same in one group, on sub-ranges: the rest stays untouched.
    let mut c = DeviceBuffer::<f32>::zeroed(&dev, 3 * n, &s).unwrap();
    let (first, rest) = c.split_at_mut(n).unwrap();
    let (second, third) = rest.into_split_at(n).unwrap();
    let mut g = Group::new();
    g.all_to_all(&comm, a.view(), first, n, &s).unwrap();
    g.gather(&comm, a.view(), Some(second), 0, &s).unwrap();
    g.scatter(
        &comm,
        Some(a.slice(..n - 7).unwrap()),
        third.into_slice(..n - 7).unwrap(),
        0,
        &s,
    )
    .unwrap();
    assert_eq!(g.len(), 3);
    g.launch().unwrap();
    let got = c.to_vec(&s).unwrap();
    assert_eq!(&got[..n], &x[..]);
    assert_eq!(&got[n..2 * n], &x[..]);
    assert_eq!(&got[2 * n..3 * n - 7], &x[..n - 7]);
    assert!(got[3 * n - 7..].iter().all(|v| *v == 0.0));

    // Refusals, before NCCL: wrong lengths, a missing root buffer, a bad root.
    let kind = |e: Error| (e.invalid_kind(), e.to_string());
    let (k, m) = kind(
        comm.all_to_all(a.view(), b.view_mut(), n - 1, &s)
            .unwrap_err(),
    );
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    assert!(
        m.starts_with("exchanging 777 f32 all-to-all on rank 0 of 1"),
        "{m}"
    );
    let (k, m) = kind(comm.gather(a.view(), None, 0, &s).unwrap_err());
    assert_eq!(k, Some(InvalidKind::Other));
    assert!(m.contains("must give a view to receive into"), "{m}");
    let (k, _) = kind(comm.scatter(None, b.view_mut(), 0, &s).unwrap_err());
    assert_eq!(k, Some(InvalidKind::Other));
    let (k, m) = kind(
        comm.scatter(Some(a.view()), b.view_mut(), 1, &s)
            .unwrap_err(),
    );
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    assert!(m.contains("root rank 1 is not below the 1 ranks"), "{m}");
    let mut short = DeviceBuffer::<f32>::zeroed(&dev, n - 1, &s).unwrap();
    let (k, _) = kind(
        comm.gather(a.view(), Some(short.view_mut()), 0, &s)
            .unwrap_err(),
    );
    assert_eq!(k, Some(InvalidKind::OutOfRange));
    comm.async_error().unwrap();
}

#[test]
fn a_pre_multiplied_sum_scales_every_element() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(comm) = one_rank(&dev) else {
        return;
    };
    let n = 1000;
    let x = data(n, 4);
    let half: Vec<f32> = x.iter().map(|v| v * 0.5).collect();
    let a = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&dev, n, &s).unwrap();
    let op = comm.pre_mul_sum(0.5f32).unwrap();
    assert_eq!(op.scalar(), 0.5);
    comm.all_reduce(a.view(), b.view_mut(), &op, &s).unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), half);
    // In place, by reduce and reduce-scatter, and in a group.
    let mut c = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    comm.all_reduce_in_place(c.view_mut(), &op, &s).unwrap();
    assert_eq!(c.to_vec(&s).unwrap(), half);
    comm.reduce(a.view(), Some(b.view_mut()), &op, 0, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), half);
    b.view_mut().fill(0.0, &s).unwrap();
    comm.reduce_scatter(a.view(), b.view_mut(), &op, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), half);
    let mut g = Group::new();
    g.all_reduce_in_place(&comm, c.view_mut(), &op, &s).unwrap();
    g.all_reduce(&comm, a.view(), b.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    g.launch().unwrap();
    let quarter: Vec<f32> = x.iter().map(|v| v * 0.25).collect();
    assert_eq!(c.to_vec(&s).unwrap(), quarter);
    assert_eq!(b.to_vec(&s).unwrap(), x);

    // Integers and doubles have their own operators.
    let xi: Vec<i32> = (0..n as i32).map(|i| i - 500).collect();
    let mut di = DeviceBuffer::from_host(&dev, &xi, &s).unwrap();
    let triple = comm.pre_mul_sum(3i32).unwrap();
    comm.all_reduce_in_place(di.view_mut(), &triple, &s)
        .unwrap();
    let want: Vec<i32> = xi.iter().map(|v| v * 3).collect();
    assert_eq!(di.to_vec(&s).unwrap(), want);
    // An operator used on another element type is refused before NCCL.
    let mut d = DeviceBuffer::<f64>::zeroed(&dev, 4, &s).unwrap();
    let e = comm.all_reduce_in_place(d.view_mut(), &op, &s).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
    assert!(e.to_string().contains("made for f32, not f64"), "{e}");
    // So is one of another communicator.
    let other = one_rank(&dev).unwrap();
    let e = other
        .all_reduce_in_place(c.view_mut(), &op, &s)
        .unwrap_err();
    assert!(
        e.to_string().contains("made by another communicator"),
        "{e}"
    );
    triple.destroy().unwrap();
    drop(op);
    comm.async_error().unwrap();
}

#[test]
fn a_buffer_dropped_right_after_a_collective_on_another_stream_is_freed_after_it() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(comm) = one_rank(&dev) else {
        return;
    };
    let other = dev.create_stream(StreamOptions::default()).unwrap();
    let n = 1 << 24;
    let x = vec![1.5f32; n];
    let mut keep = DeviceBuffer::<f32>::zeroed(&dev, n, &other).unwrap();
    for _ in 0..4 {
        // Allocated and freed on `s`, used on `other`: the free waits for `other`.
        let a = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
        comm.all_reduce(a.view(), keep.view_mut(), ReduceOp::Sum, &other)
            .unwrap();
        drop(a);
        // Reuse of the freed memory by a new allocation must not be seen by the
        // all-reduce above.
        let mut junk = DeviceBuffer::<f32>::allocate(&dev, n, &s).unwrap();
        junk.view_mut().fill(-7.0, &s).unwrap();
    }
    assert!(keep.to_vec(&other).unwrap().iter().all(|v| *v == 1.5));
}

fn streams(devices: &[Device]) -> Vec<Stream> {
    devices
        .iter()
        .map(|d| d.create_stream(StreamOptions::default()).unwrap())
        .collect()
}

#[test]
fn several_gpus_in_one_thread() {
    require_gpus!(2);
    let devices = Device::all().unwrap();
    let n = devices.len();
    let Some(comms) = cudars_tests::needs_library_driver!(Communicator::init_all(&devices)) else {
        return;
    };
    let ss = streams(&devices);
    let len = 1 << 16;
    let host: Vec<Vec<f32>> = (0..n).map(|r| data(len, r)).collect();
    let sum: Vec<f32> = (0..len).map(|i| host.iter().map(|h| h[i]).sum()).collect();
    let mut bufs: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::from_host(&devices[r], &host[r], &ss[r]).unwrap())
        .collect();
    let mut gathered: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<f32>::zeroed(&devices[r], len * n, &ss[r]).unwrap())
        .collect();
    // All-gather, then all-reduce in place, in one group each.
    let mut g = Group::new();
    for (r, out) in gathered.iter_mut().enumerate() {
        g.all_gather(&comms[r], bufs[r].view(), out.view_mut(), &ss[r])
            .unwrap();
    }
    g.launch().unwrap();
    let mut g = Group::new();
    for (r, b) in bufs.iter_mut().enumerate() {
        g.all_reduce_in_place(&comms[r], b.view_mut(), ReduceOp::Sum, &ss[r])
            .unwrap();
    }
    g.launch().unwrap();
    for r in 0..n {
        assert_eq!(
            bufs[r].to_vec(&ss[r]).unwrap(),
            sum,
            "all-reduce on rank {r}"
        );
        let all = gathered[r].to_vec(&ss[r]).unwrap();
        for (q, h) in host.iter().enumerate() {
            assert_eq!(
                &all[q * len..(q + 1) * len],
                &h[..],
                "all-gather part {q} on rank {r}"
            );
        }
    }
    // Broadcast from the last rank; reduce-scatter of the gathered data.
    let mut parts: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<f32>::zeroed(&devices[r], len, &ss[r]).unwrap())
        .collect();
    let mut g = Group::new();
    for (r, (buf, part)) in bufs.iter_mut().zip(&mut parts).enumerate() {
        g.broadcast_in_place(&comms[r], buf.view_mut(), n - 1, &ss[r])
            .unwrap();
        g.reduce_scatter(
            &comms[r],
            gathered[r].view(),
            part.view_mut(),
            ReduceOp::Sum,
            &ss[r],
        )
        .unwrap();
    }
    g.launch().unwrap();
    for r in 0..n {
        assert_eq!(bufs[r].to_vec(&ss[r]).unwrap(), sum);
        // Every rank gathered the same data: part r of the sum is n × host[r].
        let want: Vec<f32> = host[r].iter().map(|v| v * n as f32).collect();
        assert_eq!(
            parts[r].to_vec(&ss[r]).unwrap(),
            want,
            "reduce-scatter on rank {r}"
        );
    }
}

#[test]
fn several_gpus_exchange_gather_scatter_and_pre_multiply() {
    require_gpus!(2);
    let devices = Device::all().unwrap();
    let n = devices.len();
    let Some(comms) = cudars_tests::needs_library_driver!(Communicator::init_all(&devices)) else {
        return;
    };
    let ss = streams(&devices);
    let len = 4096;
    // Rank r's part j holds r · 1000 + j, then an index, so every part differs.
    let part = |r: usize, j: usize| -> Vec<u32> {
        (0..len as u32)
            .map(|i| (r * 1000 + j) as u32 * 100_000 + i)
            .collect()
    };
    let sends: Vec<Vec<u32>> = (0..n)
        .map(|r| (0..n).flat_map(|j| part(r, j)).collect())
        .collect();
    let send_bufs: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::from_host(&devices[r], &sends[r], &ss[r]).unwrap())
        .collect();
    let mut exchanged: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<u32>::zeroed(&devices[r], n * len, &ss[r]).unwrap())
        .collect();
    let mut g = Group::new();
    for (r, out) in exchanged.iter_mut().enumerate() {
        g.all_to_all(&comms[r], send_bufs[r].view(), out.view_mut(), len, &ss[r])
            .unwrap();
    }
    g.launch().unwrap();
    for (r, out) in exchanged.iter().enumerate() {
        let got = out.to_vec(&ss[r]).unwrap();
        for j in 0..n {
            assert_eq!(
                &got[j * len..(j + 1) * len],
                &part(j, r)[..],
                "all-to-all part {j} on rank {r}"
            );
        }
    }

    // Gather every rank's first part at the last rank; scatter rank 0's send.
    let root = n - 1;
    let mut gathered = DeviceBuffer::<u32>::zeroed(&devices[root], n * len, &ss[root]).unwrap();
    let mut scattered: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<u32>::zeroed(&devices[r], len, &ss[r]).unwrap())
        .collect();
    let mut g = Group::new();
    let mut at_root = Some(gathered.view_mut());
    for (r, out) in scattered.iter_mut().enumerate() {
        let recv = if r == root { at_root.take() } else { None };
        let first = send_bufs[r].slice(..len).unwrap();
        g.gather(&comms[r], first, recv, root, &ss[r]).unwrap();
        let send = (r == 0).then(|| send_bufs[0].view());
        g.scatter(&comms[r], send, out.view_mut(), 0, &ss[r])
            .unwrap();
    }
    g.launch().unwrap();
    let got = gathered.to_vec(&ss[root]).unwrap();
    for q in 0..n {
        assert_eq!(
            &got[q * len..(q + 1) * len],
            &part(q, 0)[..],
            "gathered part {q}"
        );
    }
    for (r, out) in scattered.iter().enumerate() {
        assert_eq!(
            out.to_vec(&ss[r]).unwrap(),
            part(0, r),
            "scattered part on rank {r}"
        );
    }

    // A pre-multiplied sum: Σ 2 · x_r, each rank with its own operator.
    let host: Vec<Vec<f32>> = (0..n).map(|r| data(len, r)).collect();
    let want: Vec<f32> = (0..len)
        .map(|i| host.iter().map(|h| 2.0 * h[i]).sum())
        .collect();
    let mut bufs: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::from_host(&devices[r], &host[r], &ss[r]).unwrap())
        .collect();
    let ops: Vec<_> = comms
        .iter()
        .map(|c| c.pre_mul_sum(2.0f32).unwrap())
        .collect();
    let mut g = Group::new();
    for (r, b) in bufs.iter_mut().enumerate() {
        g.all_reduce_in_place(&comms[r], b.view_mut(), &ops[r], &ss[r])
            .unwrap();
    }
    g.launch().unwrap();
    for (r, b) in bufs.iter().enumerate() {
        assert_eq!(
            b.to_vec(&ss[r]).unwrap(),
            want,
            "pre-multiplied sum on rank {r}"
        );
    }
    // Gather and scatter refuse a root buffer on a rank that is not the root.
    let mut extra = DeviceBuffer::<u32>::zeroed(&devices[1], n * len, &ss[1]).unwrap();
    let e = Group::new()
        .gather(
            &comms[1],
            send_bufs[1].slice(..len).unwrap(),
            Some(extra.view_mut()),
            0,
            &ss[1],
        )
        .unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
    assert!(e.to_string().contains("only the root receives"), "{e}");
}

#[test]
fn several_gpus_one_thread_per_rank_by_unique_id() {
    require_gpus!(2);
    let devices = Device::all().unwrap();
    let n = devices.len();
    let id = UniqueId::new().unwrap();
    let len = 1 << 20;
    std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(rank, dev)| {
                scope.spawn(move || {
                    dev.set_current().unwrap();
                    let s = dev.create_stream(StreamOptions::default()).unwrap();
                    let Some(comm) = cudars_tests::needs_library_driver!(Communicator::init_rank(
                        dev, n, &id, rank
                    )) else {
                        return;
                    };
                    let mut x =
                        DeviceBuffer::from_host(dev, &vec![rank as f64 + 1.0; len], &s).unwrap();
                    comm.all_reduce_in_place(x.view_mut(), ReduceOp::Sum, &s)
                        .unwrap();
                    let want = (n * (n + 1) / 2) as f64;
                    assert!(x.to_vec(&s).unwrap().iter().all(|v| *v == want));
                    // A ring: send to the next rank, receive from the previous.
                    let mine = DeviceBuffer::from_host(dev, &vec![rank as u32; 1024], &s).unwrap();
                    let mut got = DeviceBuffer::<u32>::zeroed(dev, 1024, &s).unwrap();
                    let mut g = Group::new();
                    g.send(&comm, mine.view(), (rank + 1) % n, &s).unwrap();
                    g.recv(&comm, got.view_mut(), (rank + n - 1) % n, &s)
                        .unwrap();
                    g.launch().unwrap();
                    let from = ((rank + n - 1) % n) as u32;
                    assert!(got.to_vec(&s).unwrap().iter().all(|v| *v == from));
                    comm.async_error().unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}
