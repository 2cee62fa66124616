//! An all-reduce over every GPU of the machine, run two ways and checked:
//! one process driving all GPUs (`Communicator::init_all` and a `Group`), then
//! one process per GPU (this program started again once per rank, the NCCL
//! unique id handed over in a file). With one GPU each way is a one-rank
//! communicator.
//!
//! ```sh
//! cargo run -p cudars-nccl --example nccl_allreduce
//! ```

use std::error::Error;
use std::process::Command;

use cudars_core::{Device, DeviceBuffer, StreamOptions};
use cudars_nccl::{Communicator, Group, ReduceOp, UniqueId};

const LEN: usize = 1 << 22;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, rank, nranks, id_file] = &args[..] {
        if flag == "--rank" {
            return rank_process(rank.parse()?, nranks.parse()?, id_file);
        }
    }
    let devices = Device::all()?;
    if devices.is_empty() {
        return Err("no CUDA device".into());
    }
    println!(
        "nccl_allreduce: NCCL {:?}, {} GPU(s)",
        cudars_nccl::version()?,
        devices.len()
    );
    let comms = match Communicator::init_all(&devices) {
        Ok(comms) => comms,
        // A driver older than NCCL's CUDA major: say which driver it needs.
        Err(e) if e.required_driver().is_some() => {
            println!("nccl_allreduce: not on this driver: {}", e.report());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    one_process(&devices, comms)?;
    process_per_gpu(devices.len())?;
    println!("nccl_allreduce: correct");
    Ok(())
}

/// The value rank `r` contributes, and the sum every rank must get.
fn contribution(r: usize) -> f32 {
    r as f32 + 1.0
}

fn expected(n: usize) -> f32 {
    (1..=n).map(|r| r as f32).sum()
}

/// The all-reduce over `comms`, made by `Communicator::init_all(devices)`.
fn one_process(devices: &[Device], comms: Vec<Communicator>) -> Result<(), Box<dyn Error>> {
    let n = devices.len();
    let streams = devices
        .iter()
        .map(|d| d.create_stream(StreamOptions::default()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut bufs = devices
        .iter()
        .zip(&streams)
        .enumerate()
        .map(|(r, (d, s))| DeviceBuffer::from_host(d, &vec![contribution(r); LEN], s))
        .collect::<Result<Vec<_>, _>>()?;
    // One thread drives every rank: their calls go in one group.
    let mut group = Group::new();
    for ((comm, s), b) in comms.iter().zip(&streams).zip(&mut bufs) {
        group.all_reduce_in_place(comm, b.view_mut(), ReduceOp::Sum, s)?;
    }
    group.launch()?;
    for (r, (b, s)) in bufs.iter().zip(&streams).enumerate() {
        check(&b.to_vec(s)?, expected(n), r)?;
    }
    println!("one process, {n} rank(s): every rank holds {}", expected(n));
    Ok(())
}

fn process_per_gpu(n: usize) -> Result<(), Box<dyn Error>> {
    // The id's maker runs NCCL's bootstrap root: this process lives until every
    // rank has joined.
    let id = UniqueId::new()?;
    let dir = std::env::temp_dir().join(format!("nccl-allreduce-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let id_file = dir.join("id");
    std::fs::write(&id_file, id.to_string())?;
    let exe = std::env::current_exe()?;
    let children = (0..n)
        .map(|r| {
            Command::new(&exe)
                .args(["--rank", &r.to_string(), &n.to_string()])
                .arg(&id_file)
                .spawn()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut failed = Vec::new();
    for (r, mut c) in children.into_iter().enumerate() {
        if !c.wait()?.success() {
            failed.push(r);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !failed.is_empty() {
        return Err(format!("ranks {failed:?} failed").into());
    }
    println!(
        "one process per GPU, {n} rank(s): every rank holds {}",
        expected(n)
    );
    Ok(())
}

fn rank_process(rank: usize, nranks: usize, id_file: &str) -> Result<(), Box<dyn Error>> {
    let id: UniqueId = std::fs::read_to_string(id_file)?.parse()?;
    let dev = Device::new(rank)?;
    let stream = dev.create_stream(StreamOptions::default())?;
    let comm = Communicator::init_rank(&dev, nranks, &id, rank)?;
    let mut b = DeviceBuffer::from_host(&dev, &vec![contribution(rank); LEN], &stream)?;
    comm.all_reduce_in_place(b.view_mut(), ReduceOp::Sum, &stream)?;
    check(&b.to_vec(&stream)?, expected(nranks), rank)?;
    comm.destroy()?;
    Ok(())
}

fn check(got: &[f32], want: f32, rank: usize) -> Result<(), Box<dyn Error>> {
    match got.iter().position(|v| *v != want) {
        None => Ok(()),
        Some(i) => Err(format!("rank {rank}: element {i} is {}, not {want}", got[i]).into()),
    }
}
