//! `cuda_core/tests/graph/test_graph_definition_integration.py` of `cuda.core`
//! (the pinned commit of `docs/reference/cuda-core-tests.txt`), ported as
//! `graph_definition.rs` says (its module doc maps the names). Every test needs
//! a GPU (conditional nodes: compute capability 9.0 and a CUDA 12.8 driver for
//! if/else and switch).
//!
//! The kernels and values are Python's. Python's graphs allocate their
//! scalars and arrays as graph memory, set them with memset nodes and copy the
//! result to pinned host memory that a host callback reads; here they are
//! device buffers set by fill nodes (`add_fill`) and read back after the launch,
//! the host callback node kept in the same place to check that it ran.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cudars_core::{
    ConditionalKind, Device, DeviceBuffer, EventOptions, Graph, GraphCompleteOptions, Kernel,
    LaunchConfig,
};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_definition::{compile, gpu, stream};

const COND_PREAMBLE: &str = r#"
extern "C" __device__ __cudart_builtin__ void CUDARTAPI
cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                        unsigned int value);
"#;

const HEAT_KERNELS: &str = r#"
extern "C" __global__
void heat_step(float* u_next, const float* u_curr, int N, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    if (i == 0 || i == N - 1)
        u_next[i] = u_curr[i];
    else
        u_next[i] = u_curr[i]
                   + alpha * (u_curr[i-1] - 2.0f * u_curr[i] + u_curr[i+1]);
}

extern "C" __global__
void countdown(cudaGraphConditionalHandle handle, int* counter) {
    int c = atomicSub(counter, 1);
    cudaGraphSetConditional(handle, (c > 1) ? 1u : 0u);
}
"#;

const BISECT_KERNELS: &str = r#"
extern "C" __global__
void bisect_eval(float* a, float* b,
                 cudaGraphConditionalHandle ie_cond) {
    float mid = (*a + *b) * 0.5f;
    float fm = mid * mid - 2.0f;
    cudaGraphSetConditional(ie_cond, (fm > 0.0f) ? 1u : 0u);
}

extern "C" __global__
void update_hi(float* a, float* b) {
    *b = (*a + *b) * 0.5f;
}

extern "C" __global__
void update_lo(float* a, float* b) {
    *a = (*a + *b) * 0.5f;
}

extern "C" __global__
void countdown(cudaGraphConditionalHandle handle, int* counter) {
    int c = atomicSub(counter, 1);
    cudaGraphSetConditional(handle, (c > 1) ? 1u : 0u);
}

extern "C" __global__
void check_refine(float* a, float* b,
                  cudaGraphConditionalHandle if_cond) {
    float mid = (*a + *b) * 0.5f;
    float fm = mid * mid - 2.0f;
    float abs_fm = fm < 0.0f ? -fm : fm;
    cudaGraphSetConditional(if_cond, (abs_fm > 1e-10f) ? 1u : 0u);
}

extern "C" __global__
void newton_refine(float* a, float* b) {
    float mid = (*a + *b) * 0.5f;
    float refined = mid - (mid * mid - 2.0f) / (2.0f * mid);
    *a = refined;
    *b = refined;
}
"#;

const SWITCH_KERNELS: &str = r#"
extern "C" __global__
void negate_it(int* x) { *x = -(*x); }

extern "C" __global__
void double_it(int* x) { *x = 2 * (*x); }

extern "C" __global__
void square_it(int* x) { *x = (*x) * (*x); }
"#;

fn kernels(d: &Device, src: &str, names: &[&str]) -> Vec<Kernel> {
    let code = compile(d, src, names);
    names.iter().map(|n| code.get_kernel(n).unwrap()).collect()
}

/// `np.testing.assert_allclose(actual, desired, rtol)` (no absolute tolerance).
fn assert_allclose(actual: &[f32], desired: &[f32], rtol: f32) {
    assert_eq!(actual.len(), desired.len());
    for (i, (&a, &d)) in actual.iter().zip(desired).enumerate() {
        assert!(
            (a - d).abs() <= rtol * d.abs(),
            "element {i}: {a} vs {d} (rtol {rtol}); {actual:?} vs {desired:?}"
        );
    }
}

// ===================================================================
// Test 1: heat diffusion (while node, child graph, event nodes, …)
// ===================================================================

const HEAT_N: usize = 32;
const HEAT_T_LEFT: f32 = 100.0;
const HEAT_T_RIGHT: f32 = 0.0;
const HEAT_ALPHA: f32 = 0.4;
const HEAT_ITERS: i32 = 50;

/// `_heat_reference`: the same steps on the host, in `f32`.
fn heat_reference() -> Vec<f32> {
    let mut u = vec![0f32; HEAT_N];
    u[0] = HEAT_T_LEFT;
    u[HEAT_N - 1] = HEAT_T_RIGHT;
    let mut next = vec![0f32; HEAT_N];
    for _ in 0..HEAT_ITERS {
        next[0] = u[0];
        next[HEAT_N - 1] = u[HEAT_N - 1];
        for i in 1..HEAT_N - 1 {
            next[i] = u[i] + HEAT_ALPHA * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut u, &mut next);
    }
    u
}

#[test]
fn test_heat_diffusion() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let src = format!("{COND_PREAMBLE}{HEAT_KERNELS}");
    let k = kernels(&d, &src, &["heat_step", "countdown"]);
    let (k_heat, k_countdown) = (&k[0], &k[1]);
    let s = stream(&d);
    let curr = Arc::new(DeviceBuffer::<f32>::zeroed(&d, HEAT_N, &s).unwrap());
    let next = Arc::new(DeviceBuffer::<f32>::zeroed(&d, HEAT_N, &s).unwrap());
    let ctr = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap());
    s.sync().unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    let condition = g.create_condition(Some(1)).unwrap();
    let timing = EventOptions {
        timing: true,
        ..Default::default()
    };
    let event_start = Arc::new(d.create_event(timing).unwrap());
    let event_end = Arc::new(d.create_event(timing).unwrap());
    let captured = Arc::new(AtomicBool::new(false));
    let block = HEAT_N.min(256) as u32;
    let grid = (HEAT_N as u32).div_ceil(block);
    let heat_cfg = LaunchConfig::new(grid, block);
    let tick_cfg = LaunchConfig::new(1, 1);

    // Phase 2: initialise.
    let m_curr = g.add_fill(&[], curr.shared_view(), 0f32).unwrap();
    let m_next = g.add_fill(&[], next.shared_view(), 0f32).unwrap();
    let m_ctr = g.add_fill(&[], ctr.shared_view(), HEAT_ITERS).unwrap();
    // Phase 3: boundary conditions (a child graph).
    let mut bc = Graph::new(&ctx).unwrap();
    let left = bc
        .add_fill(&[], curr.shared_slice(0..1).unwrap(), HEAT_T_LEFT)
        .unwrap();
    bc.add_fill(
        &[left],
        curr.shared_slice(HEAT_N - 1..).unwrap(),
        HEAT_T_RIGHT,
    )
    .unwrap();
    let join = g.add_empty(&[m_curr, m_next, m_ctr]).unwrap();
    let embed = g.add_child(&[join], &bc).unwrap();
    let p = g.add_event_record(&[embed], &event_start).unwrap();
    // Phase 4: iterate.
    let (loop_node, mut bodies) = g
        .add_conditional(&[p], condition, ConditionalKind::While)
        .unwrap();
    let body = &mut bodies[0];
    // SAFETY: `heat_step` reads and writes the N floats of the two arrays, and
    // `countdown` the one int of the counter: all kept alive by the graph.
    unsafe {
        let step = body
            .add_kernel(
                &[],
                &heat_cfg,
                k_heat,
                &[
                    &next.shared_view(),
                    &curr.shared_view(),
                    &(HEAT_N as i32),
                    &HEAT_ALPHA,
                ],
            )
            .unwrap();
        let copy = body
            .add_copy(&[step], curr.shared_view(), next.shared_view())
            .unwrap();
        body.add_kernel(
            &[copy],
            &tick_cfg,
            k_countdown,
            &[&condition, &ctr.shared_view()],
        )
        .unwrap();
    }
    drop(bodies);
    // Phase 5: after the loop.
    let w = g.add_event_wait(&[loop_node], &event_start).unwrap();
    let rec = g.add_event_record(&[w], &event_end).unwrap();
    let c = captured.clone();
    g.add_host_callback(&[rec], move || c.store(true, Ordering::SeqCst))
        .unwrap();
    // Phase 6: instantiate, launch, verify.
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(
        captured.load(Ordering::SeqCst),
        "Host callback did not execute"
    );
    assert_allclose(&curr.to_vec(&s).unwrap(), &heat_reference(), 1e-5);
}

// ===================================================================
// Test 2: bisection root finder (if/else node, if node)
// ===================================================================

const BISECT_ITERS: i32 = 20;

#[test]
fn test_bisection_root() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let src = format!("{COND_PREAMBLE}{BISECT_KERNELS}");
    let k = kernels(
        &d,
        &src,
        &[
            "bisect_eval",
            "update_hi",
            "update_lo",
            "countdown",
            "check_refine",
            "newton_refine",
        ],
    );
    let (k_eval, k_hi, k_lo, k_cd, k_check, k_newton) = (&k[0], &k[1], &k[2], &k[3], &k[4], &k[5]);
    let s = stream(&d);
    let a = Arc::new(DeviceBuffer::<f32>::zeroed(&d, 1, &s).unwrap());
    let b = Arc::new(DeviceBuffer::<f32>::zeroed(&d, 1, &s).unwrap());
    let ctr = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap());
    s.sync().unwrap();
    let (av, bv, cv) = (a.shared_view(), b.shared_view(), ctr.shared_view());
    let cfg = LaunchConfig::new(1, 1);
    let captured = Arc::new(AtomicBool::new(false));

    let mut g = Graph::new(&ctx).unwrap();
    let ma = g.add_fill(&[], av.clone(), 0.0f32).unwrap();
    let mb = g.add_fill(&[], bv.clone(), 2.0f32).unwrap();
    let mc = g.add_fill(&[], cv.clone(), BISECT_ITERS).unwrap();
    let p = g.add_empty(&[ma, mb, mc]).unwrap();
    let while_cond = g.create_condition(Some(1)).unwrap();
    let ie_cond = g.create_condition(Some(0)).unwrap();
    let (loop_node, mut loop_bodies) = g
        .add_conditional(&[p], while_cond, ConditionalKind::While)
        .unwrap();
    let body = &mut loop_bodies[0];
    // SAFETY: every kernel reads and writes the scalars `a`, `b` and the
    // counter, kept alive by the graph, and sets the conditions passed.
    unsafe {
        let eval = body
            .add_kernel(&[], &cfg, k_eval, &[&av, &bv, &ie_cond])
            .unwrap();
        let (ie, mut ie_bodies) = body
            .add_conditional(&[eval], ie_cond, ConditionalKind::IfElse)
            .unwrap();
        ie_bodies[0]
            .add_kernel(&[], &cfg, k_hi, &[&av, &bv])
            .unwrap();
        ie_bodies[1]
            .add_kernel(&[], &cfg, k_lo, &[&av, &bv])
            .unwrap();
        drop(ie_bodies);
        body.add_kernel(&[ie], &cfg, k_cd, &[&while_cond, &cv])
            .unwrap();
    }
    drop(loop_bodies);
    let if_cond = g.create_condition(Some(0)).unwrap();
    // SAFETY: as above.
    let check =
        unsafe { g.add_kernel(&[loop_node], &cfg, k_check, &[&av, &bv, &if_cond]) }.unwrap();
    let (if_node, mut if_bodies) = g
        .add_conditional(&[check], if_cond, ConditionalKind::If)
        .unwrap();
    // SAFETY: as above.
    unsafe { if_bodies[0].add_kernel(&[], &cfg, k_newton, &[&av, &bv]) }.unwrap();
    drop(if_bodies);
    let c = captured.clone();
    g.add_host_callback(&[if_node], move || c.store(true, Ordering::SeqCst))
        .unwrap();

    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(
        captured.load(Ordering::SeqCst),
        "Host callback did not execute"
    );
    let root = a.to_vec(&s).unwrap()[0];
    assert_allclose(&[root], &[2f32.sqrt()], 1e-6);
}

// ===================================================================
// Test 3: switch dispatch (switch node)
// ===================================================================

const SWITCH_VALUE: i32 = 42;

/// `test_switch_dispatch[*]`: every `(mode, expected)` case.
#[test]
fn test_switch_dispatch() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let k = kernels(&d, SWITCH_KERNELS, &["negate_it", "double_it", "square_it"]);
    let s = stream(&d);
    for (mode, expected) in [
        (0u32, -SWITCH_VALUE),
        (1, 2 * SWITCH_VALUE),
        (2, SWITCH_VALUE * SWITCH_VALUE),
        (3, SWITCH_VALUE),
    ] {
        let x = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap());
        s.sync().unwrap();
        let cfg = LaunchConfig::new(1, 1);
        let mut g = Graph::new(&ctx).unwrap();
        let sw_cond = g.create_condition(Some(mode)).unwrap();
        let ms = g.add_fill(&[], x.shared_view(), SWITCH_VALUE).unwrap();
        let (_sw, mut branches) = g
            .add_conditional(&[ms], sw_cond, ConditionalKind::Switch(4))
            .unwrap();
        for (branch, kernel) in branches.iter_mut().zip(&k) {
            // SAFETY: each kernel updates the one int of `x`, kept alive by the
            // graph. (Branch 3: the identity, no kernel.)
            unsafe { branch.add_kernel(&[], &cfg, kernel, &[&x.shared_view()]) }.unwrap();
        }
        drop(branches);
        let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
        graph.launch(&s).unwrap();
        s.sync().unwrap();
        assert_eq!(x.to_vec(&s).unwrap()[0], expected, "mode {mode}");
    }
}
