//! Two streams ordered by an event, timed with events, typed arrays from the
//! default pool.
//!
//! `cargo run -p cudars-core --example streams_and_events`

use std::process::ExitCode;

use cudars_core::{Device, DeviceBuffer, EventOptions, Result, StreamOptions};

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let producer = dev.create_stream(StreamOptions {
        non_blocking: true,
        priority: None,
    })?;
    let consumer = dev.create_stream(StreamOptions {
        non_blocking: true,
        priority: None,
    })?;
    let timed = EventOptions {
        timing: true,
        ..Default::default()
    };
    let (start, done) = (dev.create_event(timed)?, dev.create_event(timed)?);

    let bytes = 256 << 20;
    let words = bytes / 4;
    let mut a = DeviceBuffer::<u32>::allocate(&dev, words, &producer)?;
    let mut b = DeviceBuffer::<u32>::allocate(&dev, words, &producer)?;
    producer.record(&start)?;
    a.fill(0x1234_5678, &producer)?;
    producer.record(&done)?;
    // The consumer copies only after the producer's fill.
    consumer.wait_event(&done)?;
    b.copy_from(a.view(), &consumer)?;
    b.set_free_stream(&consumer)?;
    let head = b.slice(..4)?.to_vec(&consumer)?;
    assert!(head.iter().all(|&x| x == 0x1234_5678));
    let t = done.elapsed_since(&start)?;
    println!(
        "filled {} MiB in {:.3} ms ({:.0} GB/s); the other stream saw it: {head:x?}",
        bytes >> 20,
        t.as_secs_f64() * 1e3,
        bytes as f64 / t.as_secs_f64() / 1e9
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("streams_and_events: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
