//! GPU tests of the typed front door: `DeviceBuffer<T>`, views, typed launches,
//! and truly asynchronous pinned copies. Without a GPU each test prints
//! `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, Error, Event, EventOptions, InvalidKind, Kernel,
    LaunchConfig, MutPtr, PinnedBuffer, Program, ProgramOptions, SourceCode, Stream, StreamOptions,
    TypedKernel, Val, launch,
};
use cudars_tests::{require_gpu, require_libs};
use half::f16;

const SRC: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
struct Affine { float scale; float shift; unsigned n; };
extern "C" __global__ void affine(const __grid_constant__ Affine p, float* y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * y[i] + p.shift;
}
extern "C" __global__ void spin(unsigned long long cycles) {
    unsigned long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"#;

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Affine {
    scale: f32,
    shift: f32,
    n: u32,
}

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

fn kernel(d: &Device, name: &str) -> Kernel {
    Program::new(SourceCode::Cxx(SRC), ProgramOptions::for_device(d).unwrap())
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
        .get_kernel(name)
        .unwrap()
}

#[test]
fn views_slice_split_copy_and_fill_sub_ranges() {
    require_gpu!();
    let (d, s) = setup();
    let host: Vec<u32> = (0..1000).collect();
    let mut a = DeviceBuffer::from_host(&d, &host, &s).unwrap();
    assert_eq!((a.len(), a.to_vec(&s).unwrap()), (1000, host.clone()));
    // Offset reads.
    assert_eq!(a.slice(10..13).unwrap().to_vec(&s).unwrap(), [10, 11, 12]);
    assert_eq!(a.slice(997..).unwrap().to_vec(&s).unwrap(), [997, 998, 999]);
    let (head, tail) = a.split_at(400).unwrap();
    assert_eq!((head.len(), tail.len()), (400, 600));
    assert_eq!(tail.slice(..2).unwrap().to_vec(&s).unwrap(), [400, 401]);
    // Offset writes, through disjoint mutable halves.
    {
        let (mut lo, mut hi) = a.split_at_mut(500).unwrap();
        lo.slice_mut(0..3)
            .unwrap()
            .copy_from_host(&[7, 8, 9], &s)
            .unwrap();
        hi.fill(5, &s).unwrap();
        // Device-to-device between views of the same buffer, at an offset.
        let mut dst = lo.slice_mut(100..110).unwrap();
        dst.copy_from(hi.as_view().slice(0..10).unwrap(), &s)
            .unwrap();
    }
    let v = a.to_vec(&s).unwrap();
    assert_eq!(&v[..4], [7, 8, 9, 3]);
    assert!(v[100..110].iter().all(|&x| x == 5) && v[110] == 110);
    assert!(v[500..].iter().all(|&x| x == 5) && v[499] == 499);
    // Bad input: typed errors, nothing changed.
    for r in [a.slice(999..1001).map(|_| ()), a.split_at(1001).map(|_| ())] {
        assert!(
            matches!(
                r,
                Err(Error::InvalidArgument {
                    kind: InvalidKind::OutOfRange,
                    ..
                })
            ),
            "{r:?}"
        );
    }
    let mut small = [0u32; 3];
    assert!(matches!(
        a.slice(0..4).unwrap().copy_to_host(&mut small, &s),
        Err(Error::InvalidArgument { .. })
    ));
    let mut b = DeviceBuffer::<u32>::zeroed(&d, 10, &s).unwrap();
    assert!(matches!(
        b.copy_from(a.slice(0..11).unwrap(), &s),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(b.to_vec(&s).unwrap(), [0; 10]);
    assert!(matches!(
        DeviceBuffer::<u8>::allocate(&d, 0, &s),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        DeviceBuffer::<u64>::allocate(&d, usize::MAX / 4, &s),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn typed_fill_of_every_width() {
    require_gpu!();
    let (d, s) = setup();
    let mut a = DeviceBuffer::<u8>::zeroed(&d, 33, &s).unwrap();
    a.fill(0xab, &s).unwrap();
    assert!(a.to_vec(&s).unwrap().iter().all(|&x| x == 0xab));
    let mut h = DeviceBuffer::<f16>::zeroed(&d, 33, &s).unwrap();
    h.slice_mut(1..)
        .unwrap()
        .fill(f16::from_f32(1.5), &s)
        .unwrap();
    let v = h.to_vec(&s).unwrap();
    assert!(v[0] == f16::ZERO && v[1..].iter().all(|&x| x == f16::from_f32(1.5)));
    let mut f = DeviceBuffer::<f32>::zeroed(&d, 33, &s).unwrap();
    f.fill(-2.25, &s).unwrap();
    assert!(f.to_vec(&s).unwrap().iter().all(|&x| x == -2.25));
    // 8-byte elements: two strided 4-byte memsets.
    let mut g = DeviceBuffer::<f64>::zeroed(&d, 1001, &s).unwrap();
    g.slice_mut(1..1000)
        .unwrap()
        .fill(std::f64::consts::PI, &s)
        .unwrap();
    let v = g.to_vec(&s).unwrap();
    assert_eq!((v[0], v[1000]), (0.0, 0.0));
    assert!(v[1..1000].iter().all(|&x| x == std::f64::consts::PI));
    let mut u = DeviceBuffer::<u64>::zeroed(&d, 7, &s).unwrap();
    u.fill(0x0123_4567_89ab_cdef, &s).unwrap();
    assert!(
        u.to_vec(&s)
            .unwrap()
            .iter()
            .all(|&x| x == 0x0123_4567_89ab_cdef)
    );
    // The byte buffer's fill takes 8-byte values too.
    let mut b = u.into_buffer();
    b.fill_pattern(-1.0f64, &s).unwrap();
    assert!(
        b.view::<f64>()
            .unwrap()
            .to_vec(&s)
            .unwrap()
            .iter()
            .all(|&x| x == -1.0)
    );
}

#[test]
fn buffers_convert_to_and_from_typed_without_copying() {
    require_gpu!();
    let (d, s) = setup();
    let a = DeviceBuffer::from_host(&d, &[1u32, 2, 3, 4], &s).unwrap();
    let ptr = a.as_buffer().ptr();
    let mut buf = a.into_buffer();
    assert_eq!((buf.ptr(), buf.size()), (ptr, 16));
    assert_eq!(buf.view::<u16>().unwrap().len(), 8);
    buf.view_mut::<u32>()
        .unwrap()
        .slice_mut(3..)
        .unwrap()
        .fill(9, &s)
        .unwrap();
    let (e, buf) = DeviceBuffer::<[u8; 3]>::from_buffer(buf).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    let back = DeviceBuffer::<u32>::from_buffer(buf).unwrap();
    assert_eq!(back.as_buffer().ptr(), ptr);
    assert_eq!(back.to_vec(&s).unwrap(), [1, 2, 3, 9]);
}

/// Whether a context is current on this thread.
fn has_current_context() -> bool {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `ctx` is valid for writes.
    let rc = unsafe { sys::cuCtxGetCurrent(&mut ctx) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    !ctx.is_null()
}

/// Compiling, loading and looking up a kernel need no current context, and
/// neither does typing it: `TypedKernel::new` reads the parameters
/// (`cuKernelGetParamInfo`, which fails with `CUDA_ERROR_INVALID_CONTEXT`
/// without one) in a context it makes current itself, on a thread where none
/// is (a new thread, nothing made current on it). The same for a module's
/// function, whose own context is made current.
#[test]
fn a_kernel_is_typed_on_a_thread_with_no_current_context() {
    require_gpu!();
    require_libs!("nvrtc");
    std::thread::spawn(|| {
        assert!(!has_current_context());
        let d = Device::new(0).unwrap();
        let code = Program::new(
            SourceCode::Cxx(SRC),
            ProgramOptions::for_device(&d).unwrap(),
        )
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap();
        let k = code.get_kernel("saxpy").unwrap();
        assert!(
            !has_current_context(),
            "compiling and loading made a context current"
        );
        let saxpy = TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>, u64)>::new(k).unwrap();
        assert!(saxpy.is_checked());
        // The wrong signature is still caught there.
        let e = TypedKernel::<(f32, ConstPtr<f32>)>::new(code.get_kernel("saxpy").unwrap())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        // And the kernel launches.
        let s = d.create_stream(StreamOptions::default()).unwrap();
        let x = DeviceBuffer::from_host(&d, &[1.0f32, 2.0], &s).unwrap();
        let mut y = DeviceBuffer::from_host(&d, &[10.0f32, 20.0], &s).unwrap();
        let cfg = LaunchConfig::for_elements(2, 32);
        // SAFETY: saxpy touches x[0..2] and y[0..2], which both hold.
        unsafe { saxpy.launch(&s, &cfg, (2.0, x.view(), y.view_mut(), 2)) }.unwrap();
        assert_eq!(y.to_vec(&s).unwrap(), [12.0, 24.0]);
    })
    .join()
    .unwrap();
    // A module's function: its module's context is made current.
    std::thread::spawn(|| {
        let d = Device::new(0).unwrap();
        let ctx = d.context().unwrap();
        let code = Program::new(
            SourceCode::Cxx(SRC),
            ProgramOptions::for_device(&d).unwrap(),
        )
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap();
        let f = code
            .get_module(&ctx)
            .unwrap()
            .get_function("affine")
            .unwrap();
        // Nothing of this thread's is current now: another thread's context work
        // is not.
        std::thread::spawn(move || {
            assert!(!has_current_context());
            let affine = TypedKernel::<(Val<Affine>, MutPtr<f32>)>::new(f).unwrap();
            assert!(affine.is_checked());
        })
        .join()
        .unwrap();
    })
    .join()
    .unwrap();
}

#[test]
fn typed_launches_on_sub_ranges_and_by_value_structs() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let saxpy =
        TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>, u64)>::new(kernel(&d, "saxpy")).unwrap();
    assert!(saxpy.is_checked());
    let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let dx = DeviceBuffer::from_host(&d, &x, &s).unwrap();
    let mut dy = DeviceBuffer::<f32>::zeroed(&d, 1024, &s).unwrap();
    dy.fill(1.0, &s).unwrap();
    // y[256..768] = 2 * x[0..512] + y[256..768], on views at offsets.
    let cfg = LaunchConfig::for_elements(512, 128);
    let (xs, ys) = (dx.slice(0..512).unwrap(), dy.slice_mut(256..768).unwrap());
    // SAFETY: saxpy touches x[0..512] and y[0..512] of the views, which hold 512.
    unsafe { saxpy.launch(&s, &cfg, (2.0, xs, ys, 512)) }.unwrap();
    let y = dy.to_vec(&s).unwrap();
    for (i, v) in y.iter().enumerate() {
        let want = if (256..768).contains(&i) {
            2.0 * (i - 256) as f32 + 1.0
        } else {
            1.0
        };
        assert_eq!(*v, want, "y[{i}]");
    }
    // A `__grid_constant__` struct by value.
    let affine = TypedKernel::<(Val<Affine>, MutPtr<f32>)>::new(kernel(&d, "affine")).unwrap();
    let p = Affine {
        scale: 0.5,
        shift: -1.0,
        n: 1024,
    };
    // SAFETY: affine touches y[0..p.n], which dy holds.
    unsafe {
        affine.launch(
            &s,
            &LaunchConfig::for_elements(1024, 256),
            (p, dy.view_mut()),
        )
    }
    .unwrap();
    assert_eq!(dy.to_vec(&s).unwrap()[300], 0.5 * (2.0 * 44.0 + 1.0) - 1.0);
    // Views are kernel arguments of the untyped launch too.
    let n = 1024u64;
    // SAFETY: as for the typed saxpy, on the whole arrays.
    unsafe {
        launch(
            &s,
            &LaunchConfig::for_elements(n, 256),
            &saxpy.kernel().clone(),
            &[&1.0f32, &dx.view(), &dy.view_mut(), &n],
        )
    }
    .unwrap();
    // A signature that does not match the kernel: typed errors naming the spot.
    let e = TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>)>::new(kernel(&d, "saxpy")).unwrap_err();
    assert!(
        e.to_string().contains("4 parameters, the signature has 3"),
        "{e}"
    );
    let e = TypedKernel::<(f64, ConstPtr<f32>, MutPtr<f32>, u64)>::new(kernel(&d, "saxpy"))
        .unwrap_err();
    assert!(e.to_string().contains("parameter 0 is 4 bytes"), "{e}");
}

/// Copies through a `PinnedBuffer` are queued without waiting: a copy on one
/// stream overlaps a kernel on another (total time below the sum of the parts),
/// and the host side waits for them only when it touches the memory.
#[test]
fn pinned_copies_overlap_kernels_and_host_access_waits() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let other = d.create_stream(StreamOptions::default()).unwrap();
    let spin = TypedKernel::<(u64,)>::new(kernel(&d, "spin")).unwrap();
    let clock_khz = u64::from(d.properties().clock_rate().unwrap().max(1));
    let n = 64 << 20; // 256 MiB of u32
    let host: Vec<u32> = (0..n as u32).collect();
    let mut pinned = PinnedBuffer::from_slice(&d, &host).unwrap();
    let mut dev = DeviceBuffer::<u32>::allocate(&d, n, &s).unwrap();
    let one = LaunchConfig::new(1, 1);
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        s.sync().unwrap();
        other.sync().unwrap();
        t.elapsed().as_secs_f64()
    };
    // The copy alone, then a kernel alone made about as long.
    let copy = time(&mut || dev.view_mut().copy_from_pinned(&pinned, &s).unwrap());
    let cycles = (copy * 1e3) as u64 * clock_khz;
    // SAFETY: spin touches no memory.
    let kern = time(&mut || unsafe { spin.launch(&other, &one, (cycles,)) }.unwrap());
    // Whether the copy ran while the kernel did, measured on the device: events
    // around each, on their own streams, timed from one origin both streams
    // follow. The best of five: a pair can be serialised by the machine (another
    // tenant's work, a busy copy engine), not by anything this API did.
    let timed = || {
        d.create_event(EventOptions {
            timing: true,
            ..EventOptions::default()
        })
        .unwrap()
    };
    let overlapped = (0..5).any(|_| {
        let (origin, k0, k1, c0, c1) = (timed(), timed(), timed(), timed(), timed());
        origin.record(&other).unwrap();
        s.wait_event(&origin).unwrap();
        k0.record(&other).unwrap();
        // SAFETY: as above.
        unsafe { spin.launch(&other, &one, (cycles,)) }.unwrap();
        k1.record(&other).unwrap();
        c0.record(&s).unwrap();
        dev.view_mut().copy_from_pinned(&pinned, &s).unwrap();
        c1.record(&s).unwrap();
        s.sync().unwrap();
        other.sync().unwrap();
        let at = |e: &Event| e.elapsed_since(&origin).unwrap().as_secs_f64();
        let (k, c) = ((at(&k0), at(&k1)), (at(&c0), at(&c1)));
        println!(
            "copy {copy:.4} s, kernel {kern:.4} s; on the device: kernel {k:.4?} s, copy {c:.4?} s"
        );
        // Overlapping for at least half of the shorter of the two.
        let shared = k.1.min(c.1) - k.0.max(c.0);
        shared > 0.5 * (k.1 - k.0).min(c.1 - c.0)
    });
    assert!(
        overlapped,
        "the copy never ran alongside the kernel for half its time (5 tries)"
    );
    // The upload queued, the host may still read the pinned memory; writing it
    // waits for the upload first.
    dev.view_mut().copy_from_pinned(&pinned, &s).unwrap();
    assert_eq!(pinned.as_slice().unwrap()[12345], 12345);
    pinned.as_mut_slice().unwrap().fill(7);
    assert_eq!(
        dev.slice(n - 2..).unwrap().to_vec(&s).unwrap(),
        [n as u32 - 2, n as u32 - 1]
    );
    // A download, queued behind a kernel on its stream: reading waits for it.
    // SAFETY: as above.
    unsafe { spin.launch(&s, &one, (cycles / 4,)) }.unwrap();
    dev.view().copy_to_pinned(&mut pinned, &s).unwrap();
    assert!(!s.is_done().unwrap(), "the download should still be queued");
    assert_eq!(pinned.as_slice().unwrap()[n - 1], n as u32 - 1);
    // Length mismatches and capturing streams are refused.
    let mut short = PinnedBuffer::<u32>::zeroed(&d, 3).unwrap();
    assert!(matches!(
        dev.view().copy_to_pinned(&mut short, &s),
        Err(Error::InvalidArgument { .. })
    ));
    // SAFETY: nothing is launched into the capture.
    unsafe { s.begin_capture(cudars_core::CaptureMode::Relaxed) }.unwrap();
    let r = dev.slice(..3).unwrap().copy_to_pinned(&mut short, &s);
    drop(s.end_capture());
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    // Dropping a pinned buffer with a copy in flight waits for it.
    let p2 = PinnedBuffer::from_slice(&d, &host).unwrap();
    dev.view_mut().copy_from_pinned(&p2, &s).unwrap();
    drop(p2);
    s.sync().unwrap();
}
