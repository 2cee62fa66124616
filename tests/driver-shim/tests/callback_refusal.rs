//! No CUDA call from a driver callback thread: a host function
//! (`Stream::launch_host_func`) that calls operations on a stream, an event, a
//! buffer, a device or a library scope gets each one's typed refusal
//! (`CUDA_ERROR_NOT_PERMITTED`), and the driver is not called. Without a GPU: a
//! child process loads the shim as `libcuda.so.1` in its fake-driver mode,
//! which runs a host function at once on a thread of its own and counts every
//! driver call, so the test sees that nothing but the `cuLaunchHostFunc`
//! itself reached the driver (the fake's `cuStreamSynchronize` would answer
//! success, where a real driver may hang: the host function waits for its own
//! stream).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cudars_bindings::driver as sys;
use cudars_core::{ContextScope, Device, DeviceBuffer, EventOptions, StreamOptions};
use cudars_tests::DriverShim;

/// Set in the child: run the host function and check.
const CHILD: &str = "CUDA_RS_CALLBACK_REFUSAL_CHILD";

/// What each operation tried in the host function returned: its name, and
/// its error's driver code and message (`None`: it succeeded).
type Outcomes = Vec<(&'static str, Option<(Option<sys::CUresult>, String)>)>;

fn outcome<T>(r: cudars_core::Result<T>) -> Option<(Option<sys::CUresult>, String)> {
    r.err().map(|e| (e.driver_code(), e.to_string()))
}

fn child() {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let stream = dev.create_stream(StreamOptions::default()).unwrap();
    // Shared with the host function, and kept alive here, so that nothing is
    // released on the callback thread (releases defer; this test is about
    // operations).
    let event = Arc::new(dev.create_event(EventOptions::default()).unwrap());
    let buffer = Arc::new(Mutex::new(
        DeviceBuffer::<f32>::allocate(&dev, 256, &stream).unwrap(),
    ));
    let (tx, rx) = mpsc::channel::<Outcomes>();
    // What launching a host function that calls nothing costs: the floor.
    shim.set_faults("");
    let (done_tx, done_rx) = mpsc::channel();
    stream
        .launch_host_func(move || {
            let _ = done_tx.send(());
        })
        .unwrap();
    done_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    let floor = shim.counts("driver");
    let (s, e, b) = (stream.clone(), event.clone(), buffer.clone());
    // Restarts the counts: from here on, only the launch and the callback.
    shim.set_faults("");
    stream
        .launch_host_func(move || {
            let mut host = [0f32; 256];
            let mut buf = b.lock().unwrap();
            let out: Outcomes = vec![
                ("Stream::sync (its own stream)", outcome(s.sync())),
                ("Stream::is_done", outcome(s.is_done())),
                ("Stream::priority", outcome(s.priority())),
                ("Stream::record", outcome(s.record(&e))),
                ("Stream::wait_event", outcome(s.wait_event(&e))),
                ("Event::sync", outcome(e.sync())),
                ("Event::is_done", outcome(e.is_done())),
                (
                    "DeviceBuffer::copy_to_host",
                    outcome(buf.copy_to_host(&mut host, &s)),
                ),
                ("DeviceBuffer::fill", outcome(buf.fill(1.0, &s))),
                (
                    "Device::create_stream",
                    outcome(dev.create_stream(StreamOptions::default()).map(drop)),
                ),
                ("Device::sync", outcome(dev.sync())),
                ("Device::set_current", outcome(dev.set_current())),
                (
                    "Device::attribute (no context: the bindings' refusal)",
                    outcome(dev.attribute(sys::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)),
                ),
                (
                    "ContextScope::for_stream (the library crates' funnel)",
                    outcome(ContextScope::for_stream(&s).map(drop)),
                ),
                (
                    "ContextScope::for_device_setting_library",
                    outcome(ContextScope::for_device_setting_library(&s).map(drop)),
                ),
            ];
            drop(buf);
            let _ = tx.send(out);
        })
        .unwrap();
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the host function ran and reported within 30 s");
    let calls = shim.counts("driver");
    let mut failed = Vec::new();
    for (name, got) in &out {
        match got {
            Some((Some(code), message)) if *code == sys::CUDA_ERROR_NOT_PERMITTED => {
                println!("ok   {name}: {message}");
            }
            other => failed.push(format!("{name}: {other:?}")),
        }
    }
    // The operations that go through cudars-core's funnels say why.
    for (name, got) in &out {
        if !name.contains("no context") {
            let message = &got.as_ref().map(|g| g.1.clone()).unwrap_or_default();
            if !message.contains("driver callback thread") {
                failed.push(format!("{name}: the message does not say why: {message}"));
            }
        }
    }
    if calls != floor {
        failed.push(format!(
            "driver calls made from the callback thread: {calls:?}, where a host function \
             that calls nothing makes {floor:?}"
        ));
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    // The stream and everything else still work on an ordinary thread.
    stream.sync().unwrap();
    event.sync().unwrap();
    println!("ok   every operation refused on the callback thread");
}

#[test]
fn operations_on_a_driver_callback_thread_are_refused_without_a_driver_call() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    common::run_fake_driver_child(
        "operations_on_a_driver_callback_thread_are_refused_without_a_driver_call",
        CHILD,
        "ok   every operation refused on the callback thread",
    );
}
