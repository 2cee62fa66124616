//! The launcher path on the GPU: [`World::from_env`], [`World::join`] (NCCL's
//! bootstrap through `NCCL_COMM_ID`, the non-blocking init under a timeout),
//! then the collectives, a send/receive ring and a split, each result checked
//! against what every rank contributed.
//!
//! Under `run.sh` (no launcher variables) the process is a world of one rank.
//! `run-launchers.sh` starts this binary as several processes with each
//! launcher's variables (torchrun, Slurm, Open MPI, MPICH/PMI) and
//! `NCCL_COMM_ID`, over NVLink and over NCCL's socket transport between two
//! network namespaces. Without a GPU the test prints `SKIPPED`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use cudars_core::{DeviceBuffer, StreamOptions};
use cudars_nccl::{CommConfig, Communicator, Group, ReduceOp, UniqueId, World};
use cudars_tests::require_gpu;

const TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn world_runs_the_collectives() {
    require_gpu!();
    let world = World::from_env().unwrap();
    let (r, n) = (world.rank(), world.size());
    // On a driver older than NCCL's CUDA major: the typed error, checked and
    // printed, and the test ends.
    let Some(comm) = cudars_tests::needs_library_driver!(world.join(TIMEOUT)) else {
        return;
    };
    assert_eq!((comm.rank(), comm.size()), (r, n));
    // Joined non-blocking under the timeout, handed back blocking.
    assert_eq!(comm.timeout(), None);
    let dev = *comm.device();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    println!(
        "world: rank {r} of {n} ({}, local rank {}, GPU {}, NCCL_COMM_ID {:?})",
        world.launcher(),
        world.local_rank(),
        dev.ordinal(),
        world.nccl_comm_id()
    );

    // All-reduce: every rank gives r + 1.
    let len = 1 << 20;
    let mut x = DeviceBuffer::from_host(&dev, &vec![(r + 1) as f32; len], &s).unwrap();
    comm.all_reduce_in_place(x.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    let want = (n * (n + 1) / 2) as f32;
    assert!(x.to_vec(&s).unwrap().iter().all(|v| *v == want));
    let ints = DeviceBuffer::from_host(&dev, &[r as i64, 1], &s).unwrap();
    let mut max = DeviceBuffer::<i64>::zeroed(&dev, 2, &s).unwrap();
    comm.all_reduce(ints.view(), max.view_mut(), ReduceOp::Max, &s)
        .unwrap();
    assert_eq!(max.to_vec(&s).unwrap(), [(n - 1) as i64, 1]);

    // Broadcast from the last rank.
    let root = n - 1;
    let mut b = DeviceBuffer::from_host(&dev, &vec![r as f32; 4096], &s).unwrap();
    comm.broadcast_in_place(b.view_mut(), root, &s).unwrap();
    assert!(b.to_vec(&s).unwrap().iter().all(|v| *v == root as f32));

    // All-gather: chunk q holds q.
    let chunk = 1000;
    let mine = DeviceBuffer::from_host(&dev, &vec![r as u32; chunk], &s).unwrap();
    let mut all = DeviceBuffer::<u32>::zeroed(&dev, chunk * n, &s).unwrap();
    comm.all_gather(mine.view(), all.view_mut(), &s).unwrap();
    let all = all.to_vec(&s).unwrap();
    for q in 0..n {
        assert!(
            all[q * chunk..(q + 1) * chunk]
                .iter()
                .all(|v| *v == q as u32)
        );
    }

    // Reduce-scatter: rank r gets the sum over ranks of (rank + 1)·(r + 1).
    let send: Vec<f32> = (0..n * chunk)
        .map(|i| ((r + 1) * (i / chunk + 1)) as f32)
        .collect();
    let send = DeviceBuffer::from_host(&dev, &send, &s).unwrap();
    let mut part = DeviceBuffer::<f32>::zeroed(&dev, chunk, &s).unwrap();
    comm.reduce_scatter(send.view(), part.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    let want = ((r + 1) * n * (n + 1) / 2) as f32;
    assert!(part.to_vec(&s).unwrap().iter().all(|v| *v == want));

    // A ring: send to the next rank, receive from the previous, in one group.
    let out = DeviceBuffer::from_host(&dev, &vec![r as f64; 777], &s).unwrap();
    let mut inbox = DeviceBuffer::<f64>::zeroed(&dev, 777, &s).unwrap();
    let mut g = Group::new();
    g.send(&comm, out.view(), (r + 1) % n, &s).unwrap();
    g.recv(&comm, inbox.view_mut(), (r + n - 1) % n, &s)
        .unwrap();
    g.launch().unwrap();
    let prev = ((r + n - 1) % n) as f64;
    assert!(inbox.to_vec(&s).unwrap().iter().all(|v| *v == prev));

    // A split by parity: each half sums its own ranks.
    let half = comm.split(Some((r % 2) as u32), 0).unwrap().unwrap();
    let members: Vec<usize> = (0..n).filter(|q| q % 2 == r % 2).collect();
    assert_eq!(half.size(), members.len());
    let mut y = DeviceBuffer::from_host(&dev, &[r as f32 + 1.0; 64], &s).unwrap();
    half.all_reduce_in_place(y.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    let want: f32 = members.iter().map(|q| *q as f32 + 1.0).sum();
    assert!(y.to_vec(&s).unwrap().iter().all(|v| *v == want));
    half.destroy().unwrap();

    comm.async_error().unwrap();
    comm.finalize().unwrap();
    comm.destroy().unwrap();

    // A communicator that stays non-blocking, met again through NCCL_COMM_ID
    // (one rank: an id of its own): each call is polled while NCCL reports it
    // in progress, and its split is non-blocking too.
    let nb = Communicator::init_rank_timeout(
        &dev,
        n,
        &UniqueId::new().unwrap(),
        r,
        &CommConfig::default(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(nb.timeout(), Some(TIMEOUT));
    let mut z = DeviceBuffer::from_host(&dev, &vec![(r + 1) as f32; 1 << 16], &s).unwrap();
    for _ in 0..3 {
        nb.all_reduce_in_place(z.view_mut(), ReduceOp::Sum, &s)
            .unwrap();
    }
    // Each all-reduce after the first multiplies the (equal) values by n.
    let want = (n * (n + 1) / 2 * n * n) as f32;
    assert!(
        z.to_vec(&s).unwrap().iter().all(|v| *v == want),
        "want {want}"
    );
    let mut g = Group::new();
    g.send(&nb, out.view(), (r + 1) % n, &s).unwrap();
    g.recv(&nb, inbox.view_mut(), (r + n - 1) % n, &s).unwrap();
    g.launch().unwrap();
    assert!(inbox.to_vec(&s).unwrap().iter().all(|v| *v == prev));
    let nb_half = nb.split(Some((r % 2) as u32), 0).unwrap().unwrap();
    assert_eq!(nb_half.timeout(), Some(TIMEOUT));
    let mut y = DeviceBuffer::from_host(&dev, &[r as f32 + 1.0; 64], &s).unwrap();
    nb_half
        .all_reduce_in_place(y.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    let want: f32 = members.iter().map(|q| *q as f32 + 1.0).sum();
    assert!(y.to_vec(&s).unwrap().iter().all(|v| *v == want));
    nb_half.destroy().unwrap();
    nb.finalize().unwrap();
    nb.destroy().unwrap();
    println!("world: rank {r} of {n}: every collective checked");
}
