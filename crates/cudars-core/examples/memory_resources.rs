//! A buffer from every memory resource, and one of your own: the device's default
//! pool, a new pool that keeps freed memory up to a release threshold, the
//! stream-ordered pinned host pool, classic pinned memory, managed memory with a
//! preferred location (prefetched to the host and read there), and a user-defined
//! `MemoryResource` that counts the live bytes of the pool it wraps. Each buffer's
//! contents make a round trip and are checked. Needs no compiler.
//!
//! Every resource behind an `Arc` (`Arc<dyn MemoryResource>` from
//! `Device::memory_resource` included) allocates with `allocate(size, &stream)`,
//! which returns a `Buffer` that frees itself; resources that are not
//! stream-ordered (classic pinned, managed) also take `allocate(size, None)`. A
//! resource of your own implements the raw `allocate_raw` and `deallocate`, and
//! gets that `allocate` through `MemoryResourceExt`.
//!
//! Pinned and managed buffers are also read and written in place from the host
//! (zero copy): `Buffer::host_slice_mut` waits for the device work queued on the
//! buffer and lends its memory as a `&mut [T]`.
//!
//! This is the one example on the byte API (`Buffer`: sizes in bytes, fills and
//! copies of whole buffers), since memory resources hand out bytes; the others
//! use typed arrays (`DeviceBuffer<T>` and its views). `DeviceBuffer::from_buffer`
//! takes any of these buffers over as `T`s without copying, and
//! `DeviceBuffer::allocate_from` allocates typed arrays from any resource.
//!
//! `cargo run -p cudars-core --example memory_resources`

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudars_core::cudars_bindings::driver::{CUDA_ERROR_NOT_SUPPORTED, CUdeviceptr};
use cudars_core::{
    Buffer, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, LegacyPinnedMemoryResource,
    Location, ManagedMemoryResource, MemoryKind, MemoryResource, MemoryResourceExt,
    PinnedMemoryResource, PinnedMemoryResourceOptions, Stream, StreamOptions,
};

/// Elements in each test buffer.
const N: usize = 1 << 16;
const BYTES: usize = N * 4;

mod common;
use common::{Result, wrong};

/// A memory resource of our own: forwards to a device pool and counts the bytes
/// it has handed out and not yet had back.
#[derive(Debug)]
struct CountingResource {
    inner: Arc<DeviceMemoryResource>,
    live: AtomicUsize,
    peak: AtomicUsize,
    allocations: AtomicUsize,
}

impl CountingResource {
    fn new(inner: Arc<DeviceMemoryResource>) -> Self {
        Self {
            inner,
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            allocations: AtomicUsize::new(0),
        }
    }

    fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
}

// SAFETY: every allocation and free is the wrapped pool's, unchanged, so the
// pool's guarantees (device memory of at least `size` bytes on its device, freed
// with exactly what was allocated) are this resource's.
unsafe impl MemoryResource for CountingResource {
    unsafe fn allocate_raw(
        &self,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<CUdeviceptr> {
        // SAFETY: our caller takes the memory over on the trait's terms, and hands it
        // back through our `deallocate`, which returns it to `self.inner`.
        let ptr = unsafe { self.inner.allocate_raw(size, stream) }?;
        let live = self.live.fetch_add(size, Ordering::SeqCst) + size;
        self.peak.fetch_max(live, Ordering::SeqCst);
        self.allocations.fetch_add(1, Ordering::SeqCst);
        Ok(ptr)
    }

    unsafe fn deallocate(
        &self,
        ptr: CUdeviceptr,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<()> {
        // SAFETY: our caller keeps the trait's contract, and `ptr`/`size` came from
        // `self.inner.allocate_raw` through our `allocate_raw`.
        unsafe { self.inner.deallocate(ptr, size, stream) }?;
        self.live.fetch_sub(size, Ordering::SeqCst);
        Ok(())
    }

    fn kind(&self) -> MemoryKind {
        self.inner.kind()
    }

    fn device(&self) -> Device {
        self.inner.device()
    }
}

/// Writes `pattern` into `buf` from the host, reads it back and checks it.
fn round_trip(name: &str, buf: &mut Buffer, pattern: &[u32], stream: &Stream) -> Result<()> {
    buf.copy_from_host(pattern, stream)?;
    let mut back = vec![0u32; pattern.len()];
    buf.copy_to_host(&mut back, stream)?;
    if let Some(i) = (0..back.len()).find(|&i| back[i] != pattern[i]) {
        return Err(wrong(
            &format!("checking the {name} buffer"),
            format!("element {i} is {:#x}, not {:#x}", back[i], pattern[i]),
        ));
    }
    println!(
        "{name:<22} {:>8} bytes  {:<7}  host-accessible: {:<5}  round trip ok",
        buf.size(),
        format!("{:?}", buf.kind()),
        buf.is_host_accessible()
    );
    Ok(())
}

/// For host-visible memory, zero copy both ways: a device-side fill read through
/// the host's own view of the buffer, then host writes into that view read back
/// by the device (a copy).
fn check_host_view(name: &str, buf: &mut Buffer, value: u32, stream: &Stream) -> Result<()> {
    buf.fill_pattern(value, stream)?;
    // Waits for the fill (and any other work queued on the buffer), then lends
    // the memory itself; the `&mut` borrow keeps new work off the buffer meanwhile.
    let host: &mut [u32] = buf.host_slice_mut()?;
    if let Some(i) = host.iter().position(|&x| x != value) {
        return Err(wrong(
            &format!("reading the {name} buffer from the host"),
            format!("element {i} is {:#x}, not {value:#x}", host[i]),
        ));
    }
    for (i, x) in host.iter_mut().enumerate() {
        *x = i as u32 ^ value;
    }
    let mut back = vec![0u32; host.len()];
    buf.copy_to_host(&mut back, stream)?;
    if let Some(i) = (0..back.len()).find(|&i| back[i] != i as u32 ^ value) {
        return Err(wrong(
            &format!("reading the host's writes to the {name} buffer"),
            format!("element {i} is {:#x}, not {:#x}", back[i], i as u32 ^ value),
        ));
    }
    println!(
        "{name:<22} the host reads the device's fill of {value:#x} in place, and \
         writes the device reads"
    );
    Ok(())
}

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    println!("device 0: {} ({})\n", dev.name()?, dev.arch()?);
    let stream = dev.create_stream(StreamOptions::default())?;
    let pattern: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();

    // 1. The device's memory resource (an `Arc<dyn MemoryResource>`: the default
    // stream-ordered pool unless another was set; what `Device::allocate` uses).
    // `allocate` returns a `Buffer`, freed when it is dropped or closed.
    let mut buf = dev.memory_resource()?.allocate(BYTES, &stream)?;
    round_trip("device's resource", &mut buf, &pattern, &stream)?;
    buf.close(None)?;
    let default_pool = dev.default_memory_resource()?;
    let mut buf = default_pool.allocate(BYTES, &stream)?;
    round_trip("default pool", &mut buf, &pattern, &stream)?;
    println!(
        "{:<22} pool: {} bytes in use, {} reserved",
        "",
        default_pool.used_bytes()?,
        default_pool.reserved_bytes()?
    );
    buf.close(None)?;

    // 2. A pool of our own that keeps up to 64 MiB at synchronisation points
    // instead of handing it back to the system.
    let threshold: u64 = 64 << 20;
    let own = Arc::new(DeviceMemoryResource::new_pool(
        &dev,
        DeviceMemoryPoolOptions {
            release_threshold: Some(threshold),
            ..Default::default()
        },
    )?);
    let mut buf = own.allocate(BYTES, &stream)?;
    round_trip("own pool", &mut buf, &pattern, &stream)?;
    let used = own.used_bytes()?;
    if used < BYTES as u64 {
        return Err(wrong(
            "checking the pool's accounting",
            format!("{used} bytes in use with a {BYTES}-byte buffer live"),
        ));
    }
    buf.close(None)?;
    stream.sync()?;
    let kept = own.reserved_bytes()?;
    if kept == 0 {
        return Err(wrong(
            "checking the release threshold",
            format!("the pool kept nothing after a free, with a threshold of {threshold} bytes"),
        ));
    }
    own.trim_to(0)?;
    println!(
        "{:<22} after the free it keeps {kept} bytes (threshold {threshold}); \
         trimmed: {} bytes",
        "",
        own.reserved_bytes()?
    );

    // 3. Stream-ordered pinned host memory (a host memory pool); drivers without
    // host pools refuse it, and the classic pinned resource below is the fallback.
    match PinnedMemoryResource::new(&dev, PinnedMemoryResourceOptions::default()) {
        Ok(pinned) => {
            let mut buf = Arc::new(pinned).allocate(BYTES, &stream)?;
            round_trip("pinned pool", &mut buf, &pattern, &stream)?;
            check_host_view("pinned pool", &mut buf, 0x5eed_0001, &stream)?;
        }
        Err(e) if e.driver_code() == Some(CUDA_ERROR_NOT_SUPPORTED) => {
            println!(
                "{:<22} not supported by this driver: {}",
                "pinned pool",
                cudars_core::Report::new(&e)
            );
        }
        Err(e) => return Err(e.into()),
    }

    // 4. Classic page-locked host memory (`cuMemHostAlloc`). It is not
    // stream-ordered, so no stream is needed to allocate it.
    let legacy = Arc::new(LegacyPinnedMemoryResource::new(&dev));
    let mut pinned = legacy.allocate(BYTES, None)?;
    round_trip("legacy pinned", &mut pinned, &pattern, &stream)?;
    check_host_view("legacy pinned", &mut pinned, 0x5eed_0002, &stream)?;

    // 5. Managed memory that prefers to live on the device: filled there by a
    // device-to-device copy from the pinned buffer, then prefetched to the host
    // and read in place.
    let managed_mr = ManagedMemoryResource::with_preferred_location(&dev, Location::Device(dev))?;
    println!(
        "{:<22} preferred location {:?}",
        "managed",
        managed_mr.preferred_location()
    );
    let mut managed = Arc::new(managed_mr).allocate(BYTES, &stream)?;
    round_trip("managed", &mut managed, &pattern, &stream)?;
    pinned.copy_from_host(&pattern, &stream)?;
    managed.fill_pattern(0u32, &stream)?;
    managed.copy_from(&pinned, &stream)?;
    if dev.properties().concurrent_managed_access()? {
        managed.prefetch(Location::Host, &stream)?;
        println!("{:<22} prefetched to the host", "");
    } else {
        println!(
            "{:<22} (no concurrent managed access: pages migrate on first touch)",
            ""
        );
    }
    // Waits for the copy and the prefetch (both ordered before the buffer's free).
    let host: &mut [u32] = managed.host_slice_mut()?;
    if host != pattern.as_slice() {
        let i = host.iter().zip(&pattern).position(|(a, b)| a != b);
        return Err(wrong(
            "reading managed memory on the host",
            format!("the contents differ from element {i:?} on"),
        ));
    }
    println!(
        "{:<22} the host reads the copied {} u32s in place",
        "",
        host.len()
    );

    // 6. Our own resource: `allocate` on its `Arc` comes from `MemoryResourceExt`,
    // and is the inherent one of `dyn MemoryResource` once the type is erased (as
    // when it is set as a device's resource).
    let counting = Arc::new(CountingResource::new(DeviceMemoryResource::default_pool(
        &dev,
    )?));
    let mut a = counting.allocate(BYTES, &stream)?;
    let erased: Arc<dyn MemoryResource> = counting.clone();
    let b = erased.allocate(3 * BYTES, &stream)?;
    round_trip("counting (user type)", &mut a, &pattern, &stream)?;
    if counting.live() != 4 * BYTES {
        return Err(wrong(
            "counting live bytes",
            format!("{} live with two buffers of {}", counting.live(), 4 * BYTES),
        ));
    }
    println!("{:<22} two buffers: {} live bytes", "", counting.live());
    a.close(None)?;
    let after_close = counting.live();
    drop(b);
    stream.sync()?;
    if after_close != 3 * BYTES || counting.live() != 0 {
        return Err(wrong(
            "counting live bytes",
            format!(
                "{after_close} live after one close (expected {}), {} after both (expected 0)",
                3 * BYTES,
                counting.live()
            ),
        ));
    }
    println!(
        "{:<22} after close and drop: {} live, peak {}, {} allocations",
        "",
        counting.live(),
        counting.peak.load(Ordering::SeqCst),
        counting.allocations.load(Ordering::SeqCst)
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memory_resources: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
