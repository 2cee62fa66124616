//! `cuda_core/tests/graph/test_graph_builder_conditional.py` of `cuda.core` (the
//! pinned commit of `docs/reference/cuda-core-tests.txt`): conditional nodes
//! (`if`, `if`/`else`, `switch`, `while`) built by capture. Names map as in
//! `graph_graph_builder.rs` (`if_then` is `if_cond`, `create_condition(v)` is
//! `create_conditional_handle(v)`), and so do the counters (device buffers read
//! back after the launch, where Python uses pinned host memory).
//!
//! Python's condition values `True`, `ctypes.c_bool(True)` and `np.bool_(True)`
//! are one Rust value, a `bool` argument of the kernel compiled for `bool`
//! (passed as a `u8`, `bool` being no `Pod` here); `1` and `0` are `u32`s of the
//! kernel compiled for `unsigned int`. The `[*]` ids run every value in one test.

use cudars_core::{CaptureMode, GraphBuilder, GraphCompleteOptions};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_graph_builder::{conditional_kernels, launch1, setup, zeros};

/// A condition value: whether the kernels take `bool` (else `unsigned int`), and
/// the value.
#[derive(Clone, Copy, Debug)]
struct Cond {
    is_bool: bool,
    value: u32,
}

/// `True, False, c_bool(True), c_bool(False), np.bool_(True), np.bool_(False), 1, 0`.
const IF_VALUES: [Cond; 8] = [
    Cond {
        is_bool: true,
        value: 1,
    },
    Cond {
        is_bool: true,
        value: 0,
    },
    Cond {
        is_bool: true,
        value: 1,
    },
    Cond {
        is_bool: true,
        value: 0,
    },
    Cond {
        is_bool: true,
        value: 1,
    },
    Cond {
        is_bool: true,
        value: 0,
    },
    Cond {
        is_bool: false,
        value: 1,
    },
    Cond {
        is_bool: false,
        value: 0,
    },
];

impl Cond {
    fn cond_type(self) -> &'static str {
        if self.is_bool { "bool" } else { "unsigned int" }
    }

    /// `launch(gb, config, set_handle, condition, value)`.
    fn set(
        self,
        gb: &GraphBuilder,
        set_handle: &cudars_core::Kernel,
        c: &cudars_core::GraphCondition,
    ) {
        if self.is_bool {
            let v = u8::from(self.value != 0);
            launch1(gb, set_handle, &[c, &v]);
        } else {
            launch1(gb, set_handle, &[c, &self.value]);
        }
    }
}

fn conditional_if(cv: Cond) {
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, cv.cond_type());
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 2);
    let (a0, a1) = (arr.shared_view(), arr.shared_slice(1..).unwrap());
    // Begin capture
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    // Add Node A (sets condition)
    let condition = gb.create_conditional_handle(None).unwrap();
    cv.set(&gb, &set_handle, &condition);
    // Add Node B (if condition)
    let mut gb_if = gb.if_cond(condition).unwrap();
    gb_if.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_if, &add_one, &[&a0]);
    let gb_if_1 = gb_if.split(2).unwrap().pop().unwrap();
    launch1(&gb_if, &add_one, &[&a0]);
    launch1(&gb_if_1, &add_one, &[&a1]);
    gb_if.join([gb_if_1]).unwrap();
    launch1(&gb_if, &add_one, &[&a0]);
    gb_if.end_building().unwrap();
    // Add Node C: the original builder continues past the conditional node.
    launch1(&gb, &add_one, &[&a0]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Left path increments first value, right path increments second value
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [0, 0]);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    let want = if cv.value != 0 { [4, 1] } else { [1, 0] };
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), want, "{cv:?}");
}

#[test]
fn test_graph_conditional_if___() {
    require_gpu!();
    require_libs!("nvrtc");
    for cv in IF_VALUES {
        conditional_if(cv);
    }
}

fn conditional_if_else(cv: Cond) {
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, cv.cond_type());
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 2);
    let (a0, a1) = (arr.shared_view(), arr.shared_slice(1..).unwrap());
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    let condition = gb.create_conditional_handle(None).unwrap();
    cv.set(&gb, &set_handle, &condition);
    let (mut gb_if, mut gb_else) = gb.if_else(condition).unwrap();
    // IF nodes
    gb_if.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_if, &add_one, &[&a0]);
    let gb_if_1 = gb_if.split(2).unwrap().pop().unwrap();
    launch1(&gb_if, &add_one, &[&a0]);
    launch1(&gb_if_1, &add_one, &[&a1]);
    gb_if.join([gb_if_1]).unwrap();
    launch1(&gb_if, &add_one, &[&a0]);
    gb_if.end_building().unwrap();
    // ELSE nodes
    gb_else.begin_building(CaptureMode::default()).unwrap();
    for _ in 0..3 {
        launch1(&gb_else, &add_one, &[&a1]);
    }
    gb_else.end_building().unwrap();
    // Add Node C
    launch1(&gb, &add_one, &[&a0]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // True condition increments both values, while False increments only second value
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [0, 0]);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    let want = if cv.value != 0 { [4, 1] } else { [1, 3] };
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), want, "{cv:?}");
}

#[test]
fn test_graph_conditional_if_else___() {
    require_gpu!();
    require_libs!("nvrtc");
    for cv in IF_VALUES {
        conditional_if_else(cv);
    }
}

fn conditional_switch(condition_value: u32) {
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, "unsigned int");
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 3);
    let a = [
        arr.shared_view(),
        arr.shared_slice(1..).unwrap(),
        arr.shared_slice(2..).unwrap(),
    ];
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    let condition = gb.create_conditional_handle(None).unwrap();
    launch1(&gb, &set_handle, &[&condition, &condition_value]);
    let mut gb_case = gb.switch(condition, 3).unwrap();
    assert_eq!(gb_case.len(), 3);
    // Case 0
    gb_case[0].begin_building(CaptureMode::default()).unwrap();
    for _ in 0..3 {
        launch1(&gb_case[0], &add_one, &[&a[0]]);
    }
    gb_case[0].end_building().unwrap();
    // Case 1
    gb_case[1].begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_case[1], &add_one, &[&a[1]]);
    let right = gb_case[1].split(2).unwrap().pop().unwrap();
    launch1(&gb_case[1], &add_one, &[&a[1]]);
    launch1(&right, &add_one, &[&a[2]]);
    gb_case[1].join([right]).unwrap();
    gb_case[1].end_building().unwrap();
    // Case 2
    gb_case[2].begin_building(CaptureMode::default()).unwrap();
    for _ in 0..3 {
        launch1(&gb_case[2], &add_one, &[&a[2]]);
    }
    gb_case[2].end_building().unwrap();
    // Add Node C
    launch1(&gb, &add_one, &[&a[0]]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [0, 0, 0]);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    let want = match condition_value {
        0 => [4, 0, 0],
        1 => [1, 2, 1],
        2 => [1, 0, 3],
        // No branch is taken if case index is out of range
        _ => [1, 0, 0],
    };
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), want);
}

#[test]
fn test_graph_conditional_switch__0() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_switch(0);
}

#[test]
fn test_graph_conditional_switch__1() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_switch(1);
}

#[test]
fn test_graph_conditional_switch__2() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_switch(2);
}

#[test]
fn test_graph_conditional_switch__3() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_switch(3);
}

fn conditional_while(cv: Cond) {
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, cv.cond_type());
    let add_one = code.get_kernel("add_one").unwrap();
    let loop_kernel = code.get_kernel("loop_kernel").unwrap();
    let empty_kernel = code.get_kernel("empty_kernel").unwrap();
    let arr = zeros(&d, &launch_stream, 1);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    // Node A is skipped because we can instead use a non-zero default value
    let condition = gb.create_conditional_handle(Some(cv.value)).unwrap();
    // Add Node B (while condition)
    let mut gb_while = gb.while_loop(condition).unwrap();
    gb_while.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_while, &add_one, &[&arr.shared_view()]);
    launch1(&gb_while, &add_one, &[&arr.shared_view()]);
    launch1(&gb_while, &loop_kernel, &[&condition]);
    gb_while.end_building().unwrap();
    // Add Node C
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Default value is used to start the loop
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [0]);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    let want = if cv.value != 0 { 20 } else { 0 };
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [want], "{cv:?}");
}

#[test]
fn test_graph_conditional_while__0() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_while(Cond {
        is_bool: false,
        value: 0,
    });
}

#[test]
fn test_graph_conditional_while__1() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_while(Cond {
        is_bool: false,
        value: 1,
    });
}

#[test]
fn test_graph_conditional_while__False() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_while(Cond {
        is_bool: true,
        value: 0,
    });
}

#[test]
fn test_graph_conditional_while__True() {
    require_gpu!();
    require_libs!("nvrtc");
    conditional_while(Cond {
        is_bool: true,
        value: 1,
    });
}

#[test]
fn test_graph_conditional_on_forked_builder() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, "unsigned int");
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 1);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &add_one, &[&arr.shared_view()]);
    // Fork, then create the conditional on the forked builder (not the primary).
    let right = gb.split(2).unwrap().pop().unwrap();
    let condition = right.create_conditional_handle(None).unwrap();
    launch1(&right, &set_handle, &[&condition, &1u32]);
    let mut gb_if = right.if_cond(condition).unwrap();
    gb_if.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_if, &add_one, &[&arr.shared_view()]);
    gb_if.end_building().unwrap();
    gb.join([right]).unwrap();
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    // add_one on primary (1) + add_one inside the taken if-branch (1)
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2]);
}

#[test]
fn test_graph_conditional_nested() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, "unsigned int");
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 1);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    let outer_condition = gb.create_conditional_handle(None).unwrap();
    launch1(&gb, &set_handle, &[&outer_condition, &1u32]);
    // Outer if-branch
    let mut gb_outer = gb.if_cond(outer_condition).unwrap();
    gb_outer.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_outer, &add_one, &[&arr.shared_view()]);
    // Inner if-branch, created inside the outer body
    let inner_condition = gb_outer.create_conditional_handle(None).unwrap();
    launch1(&gb_outer, &set_handle, &[&inner_condition, &1u32]);
    let mut gb_inner = gb_outer.if_cond(inner_condition).unwrap();
    gb_inner.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_inner, &add_one, &[&arr.shared_view()]);
    gb_inner.end_building().unwrap();
    gb_outer.end_building().unwrap();
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    // add_one in outer body (1) + add_one in inner body (1)
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2]);
}
