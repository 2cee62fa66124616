//! `Stream::begin_capture_into` (issue 43 point 6) without a GPU: a child
//! process loads the shim as `libcuda.so.1` in its fake-driver mode. On an
//! emulated CUDA 12.2 driver the capture into an existing graph is the typed
//! `Error::Unsupported` naming 12.3; on 12.4 it begins, and while it runs
//! `Stream::end_capture` (through any handle of the stream) is refused, so the
//! borrowed graph never gets a second owner; after the guard ends the capture
//! the refusal is lifted, as it is when the guard is dropped without `end`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use cudars_core::{CaptureMode, Device, Error, Graph, StreamOptions};

/// Set in the child: the emulated version.
const CHILD: &str = "CUDA_RS_CAPTURE_INTO_CHILD";

fn child(version: i32) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let stream = dev.create_stream(StreamOptions::default()).unwrap();
    let ctx = stream.context().clone();
    let mut graph = Graph::new(&ctx).unwrap();
    if version < 12030 {
        // SAFETY: nothing is captured.
        let e = unsafe { stream.begin_capture_into(&mut graph, &[], CaptureMode::default()) }
            .unwrap_err();
        let r = e
            .required_driver()
            .unwrap_or_else(|| panic!("no driver requirement: {e:?}"));
        assert_eq!((r.needs.major, r.needs.minor), (12, 3), "{e}");
        println!("capture into a graph checked at {version}");
        return;
    }
    let clone = stream.clone();
    {
        // SAFETY: nothing is captured.
        let capture =
            unsafe { stream.begin_capture_into(&mut graph, &[], CaptureMode::default()) }.unwrap();
        for s in [&stream, &clone] {
            let e = s.end_capture().unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
            assert!(e.to_string().contains("begin_capture_into"), "{e}");
        }
        assert!(capture.end().unwrap().is_empty());
    }
    // Ended: the stream's own captures end as before (the fake returns no graph).
    assert!(clone.end_capture().is_ok());
    {
        // A guard dropped without `end` ends the capture too.
        // SAFETY: nothing is captured.
        let capture =
            unsafe { stream.begin_capture_into(&mut graph, &[], CaptureMode::default()) }.unwrap();
        assert!(stream.end_capture().is_err());
        drop(capture);
    }
    assert!(stream.end_capture().is_ok());
    println!("capture into a graph checked at {version}");
}

#[test]
fn capture_into_a_graph_on_the_fake_driver() {
    if let Ok(v) = std::env::var(CHILD) {
        child(v.parse().unwrap());
        return;
    }
    for version in ["12020", "12040"] {
        common::run_fake_driver_child_with(
            "capture_into_a_graph_on_the_fake_driver",
            &[(CHILD, version), ("CUDA_RS_SHIM_DRIVER_VERSION", version)],
            &[],
            &format!("capture into a graph checked at {version}"),
        );
    }
}
