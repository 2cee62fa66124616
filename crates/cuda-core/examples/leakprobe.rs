#![allow(missing_docs, clippy::unwrap_used)]
use cuda_core::*;
use std::sync::Arc;
fn used(d: &Device) -> i64 {
    d.sync().unwrap();
    let (f, t) = d.memory_info().unwrap();
    (t - f) as i64
}
fn main() {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s0 = dev.create_stream(StreamOptions::default()).unwrap();
    let _warm = DeviceBuffer::<f32>::zeroed(&dev, 16, &s0).unwrap();
    let mut last = used(&dev);
    let mut report = |what: &str| {
        let u = used(&dev);
        println!("{what}: {:+} KiB", (u - last) / 1024);
        last = u;
    };
    report("start");
    for _ in 0..64 {
        let s = dev.create_stream(StreamOptions::default()).unwrap();
        drop(s);
    }
    report("64 streams created and dropped");
    for _ in 0..1000 {
        let e = Event::new(&dev, EventOptions::default()).unwrap();
        drop(e);
    }
    report("1000 events");
    for _ in 0..16 {
        let p = DeviceMemoryResource::new_pool(&dev, DeviceMemoryPoolOptions::default()).unwrap();
        let p: Arc<dyn MemoryResource> = Arc::new(p);
        let b = DeviceBuffer::<f32>::allocate_from(p, 1 << 20, &s0).unwrap();
        drop(b);
        s0.sync().unwrap();
    }
    report("16 pools with one allocation");
    for _ in 0..16 {
        std::thread::spawn(move || {
            dev.set_current().unwrap();
            let s = dev.create_stream(StreamOptions::default()).unwrap();
            s.sync().unwrap();
        })
        .join()
        .unwrap();
    }
    report("16 threads, one stream each");
    for _ in 0..16 {
        std::thread::spawn(move || {
            dev.set_current().unwrap();
        })
        .join()
        .unwrap();
    }
    report("16 threads, set_current only");
    for _ in 0..16 {
        std::thread::spawn(move || {
            dev.set_current().unwrap();
            let s = dev.create_stream(StreamOptions::default()).unwrap();
            let b = DeviceBuffer::<f32>::zeroed(&dev, 1000, &s).unwrap();
            drop(b);
            s.sync().unwrap();
        })
        .join()
        .unwrap();
    }
    report("16 threads, stream + alloc");
    for _ in 0..16 {
        std::thread::spawn(move || {
            dev.set_current().unwrap();
            let s = dev.create_stream(StreamOptions::default()).unwrap();
            unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let g = s.end_capture().unwrap();
            let e = g.instantiate(GraphCompleteOptions::default()).unwrap();
            e.launch(&s).unwrap();
            s.sync().unwrap();
        })
        .join()
        .unwrap();
    }
    report("16 threads, empty capture + graph launch");
    for _ in 0..64 {
        unsafe { s0.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
        let g = s0.end_capture().unwrap();
        let e = g.instantiate(GraphCompleteOptions::default()).unwrap();
        e.launch(&s0).unwrap();
        s0.sync().unwrap();
    }
    report("64 graphs on one thread");
    for _ in 0..16 {
        std::thread::spawn(move || {
            dev.set_current().unwrap();
            let s = dev.create_stream(StreamOptions::default()).unwrap();
            let e = Event::new(&dev, EventOptions::default()).unwrap();
            e.record(&s).unwrap();
            s.sync().unwrap();
        })
        .join()
        .unwrap();
    }
    report("16 threads, stream + event");
}
