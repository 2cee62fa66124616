//! Peer copies between GPU 0 and GPU 1 through the safe API, the workload of
//! `benches/c/peer.c`: 256 MiB each way and 64 KiB from 0 to 1, between buffers of
//! the devices' default pools, each pool accessible to the other device, on a
//! stream of the destination's device, synchronised per copy; medians of 21 copies
//! after 3 warm-up copies. JSON lines (peer `cuda-rs`); nothing to measure with
//! fewer than 2 GPUs.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cudars_core::{Buffer, Device, DeviceMemoryResource, Stream, StreamOptions};

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{value:.4}}}");
}

fn median_copy_us(dst: &mut Buffer, src: &Buffer, s: &Stream) -> f64 {
    for _ in 0..3 {
        dst.copy_from(src, s).unwrap();
        s.sync().unwrap();
    }
    let mut t: Vec<f64> = (0..21)
        .map(|_| {
            let t0 = Instant::now();
            dst.copy_from(src, s).unwrap();
            s.sync().unwrap();
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[10]
}

fn main() {
    let count = cudars_tests::gpu_status().unwrap_or(0);
    if count < 2 {
        eprintln!("peer bench: {count} GPU(s); nothing to measure");
        return;
    }
    const BIG: usize = 256 << 20;
    const SMALL: usize = 64 << 10;
    let d = [Device::new(0).unwrap(), Device::new(1).unwrap()];
    let opts = StreamOptions {
        non_blocking: true,
        priority: None,
    };
    let s = [
        d[0].create_stream(opts).unwrap(),
        d[1].create_stream(opts).unwrap(),
    ];
    for i in 0..2 {
        DeviceMemoryResource::default_pool(&d[i])
            .unwrap()
            .set_peer_accessible_by(&[d[1 - i]])
            .unwrap();
    }
    let mut big = [0, 1].map(|i| d[i].allocate(BIG, &s[i]).unwrap());
    let mut small = [0, 1].map(|i| d[i].allocate(SMALL, &s[i]).unwrap());
    for (i, b) in big.iter_mut().enumerate() {
        b.fill_u8(i as u8 + 1, &s[i]).unwrap();
        s[i].sync().unwrap();
    }
    let [b0, b1] = &mut big;
    let a = median_copy_us(b1, b0, &s[1]);
    let b = median_copy_us(b0, b1, &s[0]);
    let [s0, s1] = &mut small;
    let l = median_copy_us(s1, s0, &s[1]);
    line("peer_copy_0to1_gbps", BIG as f64 / a / 1e3);
    line("peer_copy_1to0_gbps", BIG as f64 / b / 1e3);
    line("peer_copy_64k_us", l);
}
