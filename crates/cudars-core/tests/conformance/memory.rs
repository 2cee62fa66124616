//! `cuda_core/tests/test_memory.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says. Every test
//! needs a GPU.
//!
//! Names: `Buffer.handle` is `Buffer::ptr`, `buffer.device_id` is
//! `buffer.device().ordinal()`, `mr.allocate(n, stream=s)` is
//! `mr.allocate(n, &s)` (or `Buffer::allocate(mr, n, &s)`), `buffer.close()` is
//! `close(None)` or the drop, `buffer.copy_to(dst, stream=s)` is
//! `copy_to(&mut dst, &s)`, `mr.attributes.x` is `mr.attributes()?.x`,
//! `mr.peer_accessible_by = [...]` is `set_peer_accessible_by(&[...])`,
//! `Buffer.from_handle(ptr, size)` is `Buffer::from_raw(ptr, size,
//! MemoryKind::of_pointer(ptr)?, &device)` (with `owner=`: `from_raw_with_owner`).
//!
//! The test file's dummy resources are the crate's own: `DummyDeviceMemoryResource`
//! (`cuMemAlloc`) the device's default pool, `DummyUnifiedMemoryResource`
//! (`cuMemAllocManaged`) `ManagedMemoryResource::legacy`,
//! `DummyPinnedMemoryResource` (`cuMemAllocHost`) `LegacyPinnedMemoryResource`
//! (`cuMemHostAlloc`). `DummyHostMemoryResource` (pageable `ctypes` memory) has
//! none: a `Buffer` is always memory CUDA knows (porting guide, "Pageable host
//! memory is not a Buffer"); its cases are left out where a test loops over the
//! resources.

use std::sync::{Arc, Mutex};

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    Buffer, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, Error,
    LegacyPinnedMemoryResource, Location, ManagedMemoryResource, ManagedMemoryResourceOptions,
    MemoryKind, MemoryResource, PinnedMemoryResource, PinnedMemoryResourceOptions, Stream,
    StreamOptions,
};

const POOL_SIZE: usize = 2_097_152; // 2MB size

/// `Device(); device.set_current()`.
fn device() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

fn stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// Whether `mr` is the very resource `b` was allocated from.
fn same_mr(b: &Buffer, mr: &Arc<dyn MemoryResource>) -> bool {
    b.memory_resource()
        .is_some_and(|m| std::ptr::addr_eq(Arc::as_ptr(m), Arc::as_ptr(mr)))
}

/// The test file's dummy resources (see the module's doc), by the name of the
/// Python class.
fn dummy_mrs(d: &Device) -> Vec<(&'static str, Arc<dyn MemoryResource>)> {
    vec![
        (
            "DummyDeviceMemoryResource",
            DeviceMemoryResource::default_pool(d).unwrap(),
        ),
        (
            "DummyUnifiedMemoryResource",
            Arc::new(ManagedMemoryResource::legacy(d, None)),
        ),
        (
            "DummyPinnedMemoryResource",
            Arc::new(LegacyPinnedMemoryResource::new(d)),
        ),
    ]
}

/// `skip_if_managed_memory_unsupported`.
fn managed_supported(d: &Device) -> bool {
    let p = d.properties();
    let ok = p.managed_memory().unwrap() && p.concurrent_managed_access().unwrap();
    if !ok {
        eprintln!("SKIPPED: the device has no (concurrent) managed memory");
    }
    ok
}

/// `device.properties.memory_pools_supported`, printing a skip without.
fn pools_supported(d: &Device) -> bool {
    let ok = d.properties().memory_pools_supported().unwrap();
    if !ok {
        eprintln!("SKIPPED: Device does not support mempool operations");
    }
    ok
}

/// `skip_if_pinned_memory_unsupported`: host memory pools.
fn pinned_supported(d: &Device) -> bool {
    let ok = d
        .properties()
        .host_memory_pools_supported()
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: Device does not support host mempool operations");
    }
    ok
}

fn vmm_supported(d: &Device) -> bool {
    let ok = d
        .properties()
        .virtual_memory_management_supported()
        .unwrap();
    if !ok {
        eprintln!("SKIPPED: Virtual memory management is not supported on this device");
    }
    ok
}

/// `supports_ipc_mempool(device)`: whether the driver makes an IPC-enabled pool.
fn supports_ipc_mempool(d: &Device) -> bool {
    let ok = DeviceMemoryResource::new_pool(
        d,
        DeviceMemoryPoolOptions {
            max_size: POOL_SIZE,
            ipc_enabled: true,
            ..Default::default()
        },
    )
    .is_ok();
    if !ok {
        eprintln!("SKIPPED: Driver rejects IPC-enabled mempool creation on this platform");
    }
    ok
}

fn pinned_options(max_size: usize, ipc_enabled: bool) -> PinnedMemoryResourceOptions {
    PinnedMemoryResourceOptions {
        max_size,
        ipc_enabled,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------
// Buffers of the dummy resources

#[test]
fn test_buffer_initialization() {
    cudars_tests::require_gpu!();
    let d = device();
    let s = stream(&d);
    for (name, mr) in dummy_mrs(&d) {
        let buffer = Buffer::allocate(mr.clone(), 1024, &s).unwrap();
        assert_ne!(buffer.ptr(), 0, "{name}");
        assert_eq!(buffer.size(), 1024);
        assert!(same_mr(&buffer, &mr), "{name}");
        assert!(buffer.is_device_accessible());
        assert_eq!(
            buffer.is_host_accessible(),
            mr.kind() != MemoryKind::Device,
            "{name}"
        );
        assert!(!buffer.is_mapped());
        buffer.close(None).unwrap();
    }
    // `MemoryResource()` (abstract) raising TypeError: a trait is not a value.
}

fn fill_host_pattern(b: &mut Buffer, s: &Stream, seed: bool) {
    if seed {
        s.sync().unwrap();
        // SAFETY: pinned memory nothing else uses; the stream was synchronised.
        let h = unsafe { b.as_host_slice_mut::<u8>() }.unwrap();
        for (i, x) in h.iter_mut().enumerate() {
            *x = i as u8;
        }
    }
}

fn buffer_copy(copy_to: bool) {
    let d = device();
    let s0 = stream(&d);
    for (name, mr) in dummy_mrs(&d) {
        let check = name == "DummyPinnedMemoryResource";
        let mut src = Buffer::allocate(mr.clone(), 1024, &s0).unwrap();
        let mut dst = Buffer::allocate(mr.clone(), 1024, &s0).unwrap();
        fill_host_pattern(&mut src, &s0, check);
        let stream = stream(&d);
        if copy_to {
            src.copy_to(&mut dst, &stream).unwrap();
        } else {
            dst.copy_from(&src, &stream).unwrap();
        }
        d.sync().unwrap();
        if check {
            // SAFETY: the device is synchronised; nothing writes either buffer.
            let (a, b) = unsafe {
                (
                    src.as_host_slice::<u8>().unwrap(),
                    dst.as_host_slice::<u8>().unwrap(),
                )
            };
            assert_eq!(&b[..10], &a[..10]);
        }
        dst.close(None).unwrap();
        src.close(None).unwrap();
    }
}

#[test]
fn test_buffer_copy_to() {
    cudars_tests::require_gpu!();
    buffer_copy(true);
}

#[test]
fn test_buffer_copy_from() {
    cudars_tests::require_gpu!();
    buffer_copy(false);
}

const FILL_SIZE: usize = 64;

/// One case of `test_buffer_fill`: fills a `size`-byte buffer of each dummy
/// resource with `value`, expecting an `InvalidArgument` when `bad`, and checks
/// the bytes where the host can read them.
fn fill_case<T: bytemuck::Pod>(value: T, size: usize, bad: bool) {
    let d = device();
    for (name, mr) in dummy_mrs(&d) {
        let stream = stream(&d);
        let mut buffer = Buffer::allocate(mr, size, &stream).unwrap();
        let r = buffer.fill_pattern(value, &stream);
        if bad {
            assert!(
                matches!(r, Err(Error::InvalidArgument { .. })),
                "{name}: {r:?}"
            );
            continue;
        }
        r.unwrap();
        d.sync().unwrap();
        if buffer.is_host_accessible() {
            let pat = bytemuck::bytes_of(&value);
            // SAFETY: the device is synchronised; nothing else writes the buffer.
            let got = unsafe { buffer.as_host_slice::<u8>() }.unwrap();
            assert_eq!(got, pat.repeat(size / pat.len()).as_slice(), "{name}");
        }
    }
}

/// All the cases of `_FILL_CASES`, for each resource of `fill_env`. Python's
/// `OverflowError` and `TypeError` cases (`-1`, `256`, `1000`, `"invalid"`) and
/// its empty and 3-byte patterns do not compile (`fill` takes a `u8`;
/// `fill_pattern` a 1-, 2-, 4- or 8-byte `Pod` value). The 8-byte patterns,
/// `ValueError` in `cuda.core`, fill here (porting guide, "Eight-byte fill
/// patterns").
#[test]
fn test_buffer_fill() {
    cudars_tests::require_gpu!();
    // int -> 1-byte pattern
    fill_case(0x42u8, FILL_SIZE, false);
    {
        // `buffer.fill(0x42)`: the byte form.
        let d = device();
        let s = stream(&d);
        for (_, mr) in dummy_mrs(&d) {
            let mut b = Buffer::allocate(mr, FILL_SIZE, &s).unwrap();
            b.fill(0x42, &s).unwrap();
            s.sync().unwrap();
            if b.is_host_accessible() {
                // SAFETY: synchronised; nothing else writes it.
                let h = unsafe { b.as_host_slice::<u8>() }.unwrap();
                assert!(h.iter().all(|&x| x == 0x42));
            }
        }
    }
    // bytes-like patterns
    fill_case(0x7fu8, FILL_SIZE, false);
    fill_case(u16::from_le_bytes([0x34, 0x12]), FILL_SIZE, false);
    fill_case(
        u32::from_le_bytes([0xef, 0xbe, 0xad, 0xde]),
        FILL_SIZE,
        false,
    );
    fill_case(u16::from_le_bytes([0x34, 0x12]), FILL_SIZE + 1, true);
    fill_case(
        u32::from_le_bytes([0xef, 0xbe, 0xad, 0xde]),
        FILL_SIZE + 2,
        true,
    );
    // 8-bit patterns
    fill_case(0u8, FILL_SIZE, false);
    fill_case(255u8, FILL_SIZE, false);
    fill_case(-1i8, FILL_SIZE, false);
    fill_case(127i8, FILL_SIZE, false);
    fill_case(-128i8, FILL_SIZE, false);
    // 16-bit patterns
    fill_case(0x1234u16, FILL_SIZE, false);
    fill_case(0xFFFFu16, FILL_SIZE, false);
    fill_case(-1i16, FILL_SIZE, false);
    fill_case(32767i16, FILL_SIZE, false);
    fill_case(-32768i16, FILL_SIZE, false);
    fill_case(0x1234u16, FILL_SIZE + 1, true);
    // 32-bit patterns
    fill_case(0xDEADBEEFu32, FILL_SIZE, false);
    fill_case(0xFFFFFFFFu32, FILL_SIZE, false);
    fill_case(-1i32, FILL_SIZE, false);
    fill_case(2147483647i32, FILL_SIZE, false);
    fill_case(-2147483648i32, FILL_SIZE, false);
    fill_case(0xDEADBEEFu32, FILL_SIZE + 2, true);
    // float32 (bit-pattern fill)
    fill_case(1.0f32, FILL_SIZE, false);
    // 64-bit patterns: filled here (see above).
    fill_case(0u64, FILL_SIZE, false);
    fill_case(0i64, FILL_SIZE, false);
    fill_case(0f64, FILL_SIZE, false);
}

// ---------------------------------------------------------------------------
// Buffers wrapping foreign memory

/// The last device, current; with `change_device`, device 0 made current after
/// (Python's `change_device`).
fn external_device(
    change_device: bool,
    after: impl FnOnce(&Device) -> sys::CUdeviceptr,
) -> (Device, sys::CUdeviceptr) {
    let n = Device::count().unwrap();
    let d = Device::new(n - 1).unwrap();
    d.set_current().unwrap();
    let ptr = after(&d);
    if change_device {
        Device::new(0).unwrap().set_current().unwrap();
    }
    (d, ptr)
}

fn buffer_external_device(change_device: bool) {
    let n = Device::count().unwrap();
    let owner = Device::new(n - 1).unwrap();
    let s = stream(&owner);
    let buffer_ = owner.allocate(32, &s).unwrap();
    let (d, ptr) = external_device(change_device, |_| buffer_.ptr());
    let kind = MemoryKind::of_pointer(ptr).unwrap();
    // SAFETY: 32 bytes of `buffer_`, which outlives `buffer`.
    let buffer = unsafe { Buffer::from_raw(ptr, 32, kind, &d) };
    assert!(buffer.is_device_accessible());
    assert!(!buffer.is_host_accessible());
    assert_eq!(buffer.device().ordinal(), n - 1);
    drop(buffer);
    buffer_.close(None).unwrap();
}

#[test]
fn test_buffer_external_device__True() {
    cudars_tests::require_gpu!();
    buffer_external_device(true);
}

#[test]
fn test_buffer_external_device__False() {
    cudars_tests::require_gpu!();
    buffer_external_device(false);
}

fn buffer_external_pinned_alloc(change_device: bool) {
    let (d, ptr) = external_device(change_device, |_| {
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `p` is valid for writes; the device's context is current.
        let rc = unsafe { sys::cuMemAllocHost(&mut p, 32) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        p as sys::CUdeviceptr
    });
    let kind = MemoryKind::of_pointer(ptr).unwrap();
    // SAFETY: 32 bytes of pinned memory, freed after the buffer is gone.
    let buffer = unsafe { Buffer::from_raw(ptr, 32, kind, &d) };
    assert!(buffer.is_device_accessible());
    assert!(buffer.is_host_accessible());
    assert_eq!(buffer.device().ordinal(), Device::count().unwrap() - 1);
    drop(buffer);
    // SAFETY: what cuMemAllocHost returned, freed once.
    let rc = unsafe { sys::cuMemFreeHost(ptr as *mut std::ffi::c_void) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
}

#[test]
fn test_buffer_external_pinned_alloc__True() {
    cudars_tests::require_gpu!();
    buffer_external_pinned_alloc(true);
}

#[test]
fn test_buffer_external_pinned_alloc__False() {
    cudars_tests::require_gpu!();
    buffer_external_pinned_alloc(false);
}

/// Python's first half wraps the pageable memory before registering it, as a
/// buffer only the host can reach; pageable memory is no buffer here (porting
/// guide, "Pageable host memory is not a Buffer"). Registered, it is pinned
/// memory. The memory is a page of its own, so that no other registration
/// (another test's, on another thread) overlaps it.
fn buffer_external_pinned_registered(change_device: bool) {
    let n = Device::count().unwrap();
    let d = Device::new(n - 1).unwrap();
    d.set_current().unwrap();
    let page = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
    // SAFETY: a non-zero size.
    let a = unsafe { std::alloc::alloc_zeroed(page) };
    assert!(!a.is_null());
    let ptr = a as sys::CUdeviceptr;

    // SAFETY: `a` is 4096 live bytes, unregistered below before they are freed.
    let rc = unsafe { sys::cuMemHostRegister(a.cast(), 20, 0) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    if change_device {
        Device::new(0).unwrap().set_current().unwrap();
    }
    let kind = MemoryKind::of_pointer(ptr).unwrap();
    // SAFETY: `a`, registered, outlives the buffer.
    let buffer = unsafe { Buffer::from_raw(ptr, 20, kind, &d) };
    assert!(buffer.is_device_accessible());
    assert!(buffer.is_host_accessible());
    assert_eq!(buffer.device().ordinal(), n - 1);
    drop(buffer);
    // SAFETY: registered above.
    let rc = unsafe { sys::cuMemHostUnregister(a.cast()) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    // SAFETY: allocated above with `page`, freed once.
    unsafe { std::alloc::dealloc(a, page) };
}

#[test]
fn test_buffer_external_pinned_registered__True() {
    cudars_tests::require_gpu!();
    buffer_external_pinned_registered(true);
}

#[test]
fn test_buffer_external_pinned_registered__False() {
    cudars_tests::require_gpu!();
    buffer_external_pinned_registered(false);
}

fn buffer_external_managed(change_device: bool) {
    let (d, ptr) = external_device(change_device, |_| {
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: `p` is valid for writes; the device's context is current.
        let rc = unsafe { sys::cuMemAllocManaged(&mut p, 32, sys::CU_MEM_ATTACH_GLOBAL.0) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        p
    });
    let kind = MemoryKind::of_pointer(ptr).unwrap();
    // SAFETY: 32 bytes of managed memory, freed after the buffer is gone.
    let buffer = unsafe { Buffer::from_raw(ptr, 32, kind, &d) };
    assert!(buffer.is_device_accessible());
    assert!(buffer.is_host_accessible());
    assert_eq!(buffer.device().ordinal(), Device::count().unwrap() - 1);
    drop(buffer);
    // SAFETY: what cuMemAllocManaged returned, freed once.
    assert_eq!(unsafe { sys::cuMemFree(ptr) }, sys::CUDA_SUCCESS);
}

#[test]
fn test_buffer_external_managed__True() {
    cudars_tests::require_gpu!();
    buffer_external_managed(true);
}

#[test]
fn test_buffer_external_managed__False() {
    cudars_tests::require_gpu!();
    buffer_external_managed(false);
}

// ---------------------------------------------------------------------------
// A resource of the user's (`TrackingMR`)

/// `helpers.buffers.TrackingMR`: device memory (the default pool) whose live
/// allocations it records, with the stream each free was given.
#[derive(Debug)]
struct TrackingMR {
    inner: Arc<DeviceMemoryResource>,
    active: Mutex<Vec<sys::CUdeviceptr>>,
    freed_on: Mutex<Option<usize>>,
}

impl TrackingMR {
    fn new(d: &Device) -> Arc<Self> {
        Arc::new(Self {
            inner: DeviceMemoryResource::default_pool(d).unwrap(),
            active: Mutex::new(Vec::new()),
            freed_on: Mutex::new(None),
        })
    }
    fn active(&self) -> usize {
        self.active.lock().unwrap().len()
    }
}

// SAFETY: every call is the default pool's, which meets the contract.
unsafe impl MemoryResource for TrackingMR {
    unsafe fn allocate_raw(
        &self,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<sys::CUdeviceptr> {
        // SAFETY: forwarded under the same contract.
        let p = unsafe { self.inner.allocate_raw(size, stream) }?;
        self.active.lock().unwrap().push(p);
        Ok(p)
    }
    unsafe fn deallocate(
        &self,
        ptr: sys::CUdeviceptr,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<()> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.deallocate(ptr, size, stream) }?;
        self.active.lock().unwrap().retain(|&p| p != ptr);
        *self.freed_on.lock().unwrap() = Some(stream.handle() as usize);
        Ok(())
    }
    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }
    fn device(&self) -> Device {
        MemoryResource::device(&*self.inner)
    }
}

#[test]
fn test_mr_deallocate_called_on_close() {
    cudars_tests::require_gpu!();
    let d = device();
    let s = stream(&d);
    let mr = TrackingMR::new(&d);
    let buf = Buffer::allocate(mr.clone(), 1024, &s).unwrap();
    assert_eq!(mr.active(), 1);
    buf.close(None).unwrap();
    assert_eq!(mr.active(), 0);
}

#[test]
fn test_mr_deallocate_called_on_gc() {
    cudars_tests::require_gpu!();
    let d = device();
    let s = stream(&d);
    let mr = TrackingMR::new(&d);
    let buf = Buffer::allocate(mr.clone(), 1024, &s).unwrap();
    assert_eq!(mr.active(), 1);
    drop(buf);
    assert_eq!(mr.active(), 0);
}

#[test]
fn test_mr_deallocate_receives_stream() {
    cudars_tests::require_gpu!();
    let d = device();
    let s0 = stream(&d);
    let stream = stream(&d);
    let mr = TrackingMR::new(&d);
    let buf = Buffer::allocate(mr.clone(), 1024, &s0).unwrap();
    buf.close(Some(&stream)).unwrap();
    assert_eq!(*mr.freed_on.lock().unwrap(), Some(stream.handle() as usize));
}

/// `Buffer.from_handle(ptr, size, owner=a)` keeps `a` alive until the buffer
/// goes: here an `Arc` (of a device buffer, where Python's is a `ctypes`
/// array), whose count is Python's refcount.
#[test]
fn test_owner_close() {
    cudars_tests::require_gpu!();
    let d = device();
    let s = stream(&d);
    let a = Arc::new(d.allocate(20, &s).unwrap());
    let ptr = a.ptr();
    let before = Arc::strong_count(&a);
    // SAFETY: 20 bytes of device memory that `a`, kept by the buffer, owns.
    let buffer = unsafe { Buffer::from_raw_with_owner(ptr, 20, MemoryKind::Device, &d, a.clone()) };
    assert_ne!(Arc::strong_count(&a), before);
    drop(buffer);
    assert_eq!(Arc::strong_count(&a), before);
}

// ---------------------------------------------------------------------------
// DLPack device of a buffer

/// `buffer.__dlpack_device__()`: the device of a tensor exported from it.
fn dlpack_device(buffer: Buffer) -> (i32, i32) {
    let buffer = Arc::new(buffer);
    let size = i64::try_from(buffer.size()).unwrap();
    let t = buffer
        .to_dlpack(&[size], cudars_core::dlpack::DLDataType::U8)
        .unwrap();
    // SAFETY: a live tensor just exported, released once with its deleter.
    unsafe {
        let dev = (*t).dl_tensor.device;
        if let Some(del) = (*t).deleter {
            del(t);
        }
        (dev.device_type.0, dev.device_id)
    }
}

fn dunder_dlpack_device_success(which: &str, expected: (cudars_core::dlpack::DLDeviceType, i32)) {
    let d = device();
    let s = stream(&d);
    let mr = dummy_mrs(&d)
        .into_iter()
        .find(|(n, _)| *n == which)
        .unwrap()
        .1;
    let buffer = Buffer::allocate(mr, 1024, &s).unwrap();
    assert_eq!(dlpack_device(buffer), (expected.0.0, expected.1));
}

#[test]
fn test_buffer_dunder_dlpack_device_success__DummyDeviceMemoryResource_expected0() {
    cudars_tests::require_gpu!();
    dunder_dlpack_device_success(
        "DummyDeviceMemoryResource",
        (cudars_core::dlpack::DLDeviceType::CUDA, 0),
    );
}

#[test]
fn test_buffer_dunder_dlpack_device_success__DummyUnifiedMemoryResource_expected2() {
    cudars_tests::require_gpu!();
    dunder_dlpack_device_success(
        "DummyUnifiedMemoryResource",
        (cudars_core::dlpack::DLDeviceType::CUDA_MANAGED, 0),
    );
}

#[test]
fn test_buffer_dunder_dlpack_device_success__DummyPinnedMemoryResource_expected3() {
    cudars_tests::require_gpu!();
    dunder_dlpack_device_success(
        "DummyPinnedMemoryResource",
        (cudars_core::dlpack::DLDeviceType::CUDA_HOST, 0),
    );
}

/// The managed buffer's device survives the trip through a DLPack tensor into
/// a `StridedMemoryView`.
#[test]
fn test_managed_buffer_dlpack_roundtrip_device_type() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    let mr: Arc<dyn MemoryResource> = Arc::new(ManagedMemoryResource::legacy(&d, None));
    let s = stream(&d);
    let buf = Arc::new(Buffer::allocate(mr, 1024, &s).unwrap());
    managed_roundtrip(&buf);
}

fn managed_roundtrip(buf: &Arc<Buffer>) {
    let t = buf
        .to_dlpack(&[1024], cudars_core::dlpack::DLDataType::U8)
        .unwrap();
    // SAFETY: a live tensor just exported, handed over once.
    let view = unsafe { cudars_core::StridedMemoryView::from_dlpack(t) }.unwrap();
    assert_eq!(
        view.device().device_type,
        cudars_core::dlpack::DLDeviceType::CUDA_MANAGED
    );
    assert_eq!(view.device().device_id, 0);
}

#[test]
fn test_managed_memory_resource_buffer_dlpack_device_type() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    let mr = Arc::new(
        ManagedMemoryResource::new_pool(
            &d,
            ManagedMemoryResourceOptions::preferred_at(Location::Device(d)),
        )
        .unwrap(),
    );
    let s = stream(&d);
    let buf = mr.allocate(1024, &s).unwrap();
    assert!(buf.is_managed());
    let buf = Arc::new(buf.into_buffer());
    assert!(buf.is_managed());
    managed_roundtrip(&buf);
}

fn non_managed_resources_report_not_managed(pinned: bool) {
    let d = device();
    if !pools_supported(&d) {
        return;
    }
    let s = d.default_stream().unwrap();
    if pinned && !pinned_supported(&d) {
        return;
    }
    let mr: Arc<dyn MemoryResource> = if pinned {
        Arc::new(PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()).unwrap())
    } else {
        DeviceMemoryResource::default_pool(&d).unwrap()
    };
    assert_ne!(mr.kind(), MemoryKind::Managed);
    let buf = Buffer::allocate(mr, 1024, &s).unwrap();
    assert!(!buf.is_managed());
    buf.close(None).unwrap();
}

#[test]
fn test_non_managed_resources_report_not_managed__device() {
    cudars_tests::require_gpu!();
    non_managed_resources_report_not_managed(false);
}

#[test]
fn test_non_managed_resources_report_not_managed__pinned() {
    cudars_tests::require_gpu!();
    non_managed_resources_report_not_managed(true);
}

// ---------------------------------------------------------------------------
// The memory resources

fn device_memory_resource_initialization(use_device_object: bool) {
    let d = Device::new(0).unwrap();
    if !pools_supported(&d) {
        return;
    }
    d.set_current().unwrap();
    // The resource is made from a device; an ordinal is `Device::new(ordinal)`.
    let device_arg = if use_device_object {
        d
    } else {
        Device::new(d.ordinal()).unwrap()
    };
    let mr = DeviceMemoryResource::default_pool(&device_arg).unwrap();
    assert_eq!(MemoryResource::device(&*mr), d);
    assert_eq!(mr.kind(), MemoryKind::Device); // device-, not host-accessible
    assert!(!mr.is_ipc_enabled());
    let s = d.default_stream().unwrap();
    let buffer = mr.allocate(1024, &s).unwrap();
    assert_eq!(buffer.size(), 1024);
    assert_eq!(buffer.device(), &d);
    buffer.close(None).unwrap();
}

#[test]
fn test_device_memory_resource_initialization__True() {
    cudars_tests::require_gpu!();
    device_memory_resource_initialization(true);
}

#[test]
fn test_device_memory_resource_initialization__False() {
    cudars_tests::require_gpu!();
    device_memory_resource_initialization(false);
}

#[test]
fn test_pinned_memory_resource_initialization() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    let mr =
        Arc::new(PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()).unwrap());
    assert_eq!(mr.kind(), MemoryKind::Pinned); // device- and host-accessible
    let s = d.default_stream().unwrap();
    let buffer = mr.allocate(1024, &s).unwrap();
    assert_eq!(buffer.size(), 1024);
    // `buffer.device_id == -1`: a buffer's device here is the one whose
    // context made the allocation (porting guide, "Memory").
    assert!(buffer.is_host_accessible());
    let as_dyn: Arc<dyn MemoryResource> = mr.clone();
    assert!(same_mr(&buffer, &as_dyn));
    assert!(buffer.is_device_accessible());
    buffer.close(None).unwrap();
}

#[test]
fn test_managed_memory_resource_initialization() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    let mr = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    assert_eq!(mr.kind(), MemoryKind::Managed);
    let s = d.default_stream().unwrap();
    let buffer = mr.allocate(1024, &s).unwrap();
    assert_eq!(buffer.size(), 1024);
    assert!(buffer.is_host_accessible());
    let as_dyn: Arc<dyn MemoryResource> = mr.clone();
    assert!(same_mr(&buffer, &as_dyn));
    assert!(buffer.is_device_accessible());
    buffer.close(None).unwrap();
}

/// The allocation and copy steps the three `*_with_options` tests share.
fn with_options_steps(mr: Arc<dyn MemoryResource>, d: &Device) {
    let s = d.default_stream().unwrap();
    let buffer1 = Buffer::allocate(mr.clone(), 1024, &s).unwrap();
    assert_ne!(buffer1.ptr(), 0);
    assert_eq!(buffer1.size(), 1024);
    assert!(same_mr(&buffer1, &mr));
    buffer1.close(None).unwrap();

    let buffer1 = Buffer::allocate(mr.clone(), 1024, &s).unwrap();
    let buffer2 = Buffer::allocate(mr.clone(), 2048, &s).unwrap();
    assert_ne!(buffer1.ptr(), buffer2.ptr());
    assert_eq!(buffer1.size(), 1024);
    assert_eq!(buffer2.size(), 2048);
    buffer1.close(None).unwrap();
    buffer2.close(None).unwrap();

    let st = stream(d);
    let buffer = Buffer::allocate(mr.clone(), 1024, &st).unwrap();
    assert_ne!(buffer.ptr(), 0);
    buffer.close(Some(&st)).unwrap();

    let src = Buffer::allocate(mr.clone(), 64, &s).unwrap();
    let mut dst = Buffer::allocate(mr, 64, &s).unwrap();
    let st = stream(d);
    src.copy_to(&mut dst, &st).unwrap();
    d.sync().unwrap();
    dst.close(None).unwrap();
    src.close(None).unwrap();
    d.sync().unwrap();
}

#[test]
fn test_device_memory_resource_with_options() {
    cudars_tests::require_gpu!();
    let d = Device::new(0).unwrap();
    if !pools_supported(&d) {
        return;
    }
    d.set_current().unwrap();
    let mr = Arc::new(
        DeviceMemoryResource::new_pool(
            &d,
            DeviceMemoryPoolOptions {
                max_size: POOL_SIZE,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    assert_eq!(MemoryResource::device(&*mr), d);
    assert_eq!(mr.kind(), MemoryKind::Device);
    assert!(!mr.is_ipc_enabled());
    with_options_steps(mr, &d);
}

#[test]
fn test_pinned_memory_resource_with_options() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    let mr = Arc::new(PinnedMemoryResource::new(&d, pinned_options(POOL_SIZE, false)).unwrap());
    // `mr.device_id == -1`: see `test_pinned_memory_resource_initialization`.
    assert_eq!(mr.kind(), MemoryKind::Pinned);
    assert!(!mr.is_ipc_enabled());
    with_options_steps(mr, &d);
}

#[test]
fn test_managed_memory_resource_with_options() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    let mr = Arc::new(
        ManagedMemoryResource::new_pool(&d, ManagedMemoryResourceOptions::default()).unwrap(),
    );
    assert_eq!(mr.kind(), MemoryKind::Managed);
    assert!(!mr.is_ipc_enabled());
    with_options_steps(mr, &d);
}

#[test]
fn test_managed_memory_resource_preferred_location_default() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    let mr = ManagedMemoryResource::new(&d).unwrap();
    assert_eq!(mr.preferred_location(), None);
}

#[test]
fn test_managed_memory_resource_preferred_location_device() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    // Python's legacy (`preferred_location=ordinal`) and explicit styles are one
    // `Location::Device` here.
    let opts = ManagedMemoryResourceOptions::preferred_at(Location::Device(d));
    let mr = ManagedMemoryResource::new_pool(&d, opts).unwrap();
    assert_eq!(mr.preferred_location(), Some(Location::Device(d)));
}

#[test]
fn test_managed_memory_resource_preferred_location_host() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    // Python's `preferred_location=-1` and `preferred_location_type="host"`.
    let opts = ManagedMemoryResourceOptions::preferred_at(Location::Host);
    let mr = ManagedMemoryResource::new_pool(&d, opts).unwrap();
    assert_eq!(mr.preferred_location(), Some(Location::Host));
}

/// Python's first half (`preferred_location_type="host_numa"` with no id: the
/// current device's host NUMA node) is `Location::HostNumaCurrent`, which a
/// pool refuses here: `cudars-core` does not resolve it (issue 42 lists the
/// automatic host NUMA id as missing).
#[test]
#[ignore = "differs: a managed pool refuses Location::HostNumaCurrent where cuda.core resolves host_numa to the device's NUMA node"]
fn test_managed_memory_resource_preferred_location_host_numa() {
    cudars_tests::require_gpu!();
    let d = device();
    if !managed_supported(&d) {
        return;
    }
    let numa_id = d.properties().host_numa_id().unwrap();
    if numa_id < 0 {
        eprintln!("SKIPPED: System does not support NUMA");
        return;
    }
    let numa = u32::try_from(numa_id).unwrap();
    // Auto-resolved from current device
    let opts = ManagedMemoryResourceOptions::preferred_at(Location::HostNumaCurrent);
    let mr = ManagedMemoryResource::new_pool(&d, opts).unwrap();
    assert_eq!(mr.preferred_location(), Some(Location::HostNuma(numa)));
    // Explicit NUMA node ID
    let opts = ManagedMemoryResourceOptions::preferred_at(Location::HostNuma(numa));
    let mr = ManagedMemoryResource::new_pool(&d, opts).unwrap();
    assert_eq!(mr.preferred_location(), Some(Location::HostNuma(numa)));
}

// ---------------------------------------------------------------------------
// IPC and NUMA nodes of the pools

#[cfg(all(unix, feature = "ipc"))]
#[test]
fn test_mempool_ipc_errors() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pools_supported(&d) {
        return;
    }
    let s = d.default_stream().unwrap();
    let mr = Arc::new(
        DeviceMemoryResource::new_pool(
            &d,
            DeviceMemoryPoolOptions {
                max_size: POOL_SIZE,
                ipc_enabled: false,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let buffer = mr.allocate(64, &s).unwrap();
    // `mr.allocation_handle`
    let r = mr.export_handle();
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    // `buffer.ipc_descriptor`
    assert!(buffer.ipc_descriptor().is_err());
    // `Buffer.from_ipc_descriptor(mr, IPCBufferDescriptor._init(b"", 0))`
    let handle = cudars_core::IpcBufferDescriptor {
        data: [0; 64],
        size: 0,
    };
    assert!(Buffer::from_ipc_descriptor(&mr, &handle, &s).is_err());
    buffer.close(None).unwrap();
    d.sync().unwrap();
}

#[cfg(all(unix, feature = "ipc"))]
#[test]
fn test_pinned_mempool_ipc_basic() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    if !supports_ipc_mempool(&d) {
        return;
    }
    let mr = match PinnedMemoryResource::new(&d, pinned_options(POOL_SIZE, true)) {
        Ok(mr) => Arc::new(mr),
        Err(e) => {
            eprintln!("SKIPPED: the driver makes no IPC-enabled pinned pool here: {e}");
            return;
        }
    };
    assert!(mr.is_ipc_enabled());
    assert_eq!(mr.kind(), MemoryKind::Pinned);
    assert!(mr.numa_id() >= 0);
    let _alloc_handle = mr.export_handle().unwrap();
    let s = d.default_stream().unwrap();
    let buffer = mr.allocate(1024, &s).unwrap();
    assert_eq!(buffer.size(), 1024);
    assert!(buffer.is_device_accessible());
    assert!(buffer.is_host_accessible());
    let ipc_desc = buffer.ipc_descriptor().unwrap();
    assert_eq!(ipc_desc.size, 1024);
    buffer.close(None).unwrap();
    d.sync().unwrap();
}

#[cfg(all(unix, feature = "ipc"))]
#[test]
fn test_pinned_mempool_ipc_errors() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    let mr = Arc::new(PinnedMemoryResource::new(&d, pinned_options(POOL_SIZE, false)).unwrap());
    assert!(!mr.is_ipc_enabled());
    assert_eq!(mr.numa_id(), -1);
    let s = d.default_stream().unwrap();
    let buffer = mr.allocate(64, &s).unwrap();
    let r = mr.export_handle();
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    assert!(buffer.ipc_descriptor().is_err());
    let handle = cudars_core::IpcBufferDescriptor {
        data: [0; 64],
        size: 0,
    };
    assert!(Buffer::from_ipc_descriptor(&mr, &handle, &s).is_err());
    buffer.close(None).unwrap();
    d.sync().unwrap();
}

#[test]
fn test_pinned_mr_numa_id_default_no_ipc() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    let mr = PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()).unwrap();
    assert_eq!(mr.numa_id(), -1);
    drop(mr);
    let mr = PinnedMemoryResource::new(&d, pinned_options(0, false)).unwrap();
    assert_eq!(mr.numa_id(), -1);
}

#[test]
fn test_pinned_mr_numa_id_default_with_ipc() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    if !supports_ipc_mempool(&d) {
        return;
    }
    let expected = d.properties().host_numa_id().unwrap();
    if expected < 0 {
        eprintln!("SKIPPED: System does not support NUMA");
        return;
    }
    let mr = PinnedMemoryResource::new(&d, pinned_options(POOL_SIZE, true)).unwrap();
    assert_eq!(mr.numa_id(), expected);
}

#[test]
fn test_pinned_mr_numa_id_explicit() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    let host_numa_id = d.properties().host_numa_id().unwrap();
    if host_numa_id < 0 {
        eprintln!("SKIPPED: System does not support NUMA");
        return;
    }
    let opts = PinnedMemoryResourceOptions {
        numa_id: Some(host_numa_id),
        ..Default::default()
    };
    let mr = PinnedMemoryResource::new(&d, opts).unwrap();
    assert_eq!(mr.numa_id(), host_numa_id);
    drop(mr);
    if !supports_ipc_mempool(&d) {
        return;
    }
    let opts = PinnedMemoryResourceOptions {
        numa_id: Some(host_numa_id),
        max_size: POOL_SIZE,
        ipc_enabled: true,
    };
    match PinnedMemoryResource::new(&d, opts) {
        Ok(mr) => assert_eq!(mr.numa_id(), host_numa_id),
        // `create_pinned_memory_resource_or_xfail`.
        Err(e) => eprintln!("SKIPPED (xfail): no IPC-enabled pinned pool here: {e}"),
    }
}

#[test]
fn test_pinned_mr_numa_id_negative_error() {
    cudars_tests::require_gpu!();
    let d = device();
    if !pinned_supported(&d) {
        return;
    }
    for numa_id in [-1, -42] {
        let opts = PinnedMemoryResourceOptions {
            numa_id: Some(numa_id),
            ..Default::default()
        };
        let r = PinnedMemoryResource::new(&d, opts);
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    }
}

// ---------------------------------------------------------------------------
// Pool attributes

/// A pool of `memory_resource_factory` as a resource, with a reader of its
/// attributes.
type AttributePool = (
    Arc<dyn MemoryResource>,
    Box<dyn Fn() -> cudars_core::PoolAttributes>,
);

/// `memory_resource_factory`'s three pools, `MR(options(max_size=POOL_SIZE,
/// ipc_enabled=ipc))` (`None`: skipped, as Python skips).
fn attribute_pool(which: &str, ipc: bool, d: &Device) -> Option<AttributePool> {
    match which {
        "DeviceMR" => {
            if !pools_supported(d) || (ipc && !supports_ipc_mempool(d)) {
                return None;
            }
            let opts = DeviceMemoryPoolOptions {
                max_size: POOL_SIZE,
                ipc_enabled: ipc,
                ..Default::default()
            };
            let mr = Arc::new(DeviceMemoryResource::new_pool(d, opts).unwrap());
            assert_eq!(mr.is_ipc_enabled(), ipc);
            let r = mr.clone();
            Some((mr, Box::new(move || r.attributes().unwrap())))
        }
        "PinnedMR" => {
            if !pinned_supported(d) || (ipc && !supports_ipc_mempool(d)) {
                return None;
            }
            let mr =
                Arc::new(PinnedMemoryResource::new(d, pinned_options(POOL_SIZE, ipc)).unwrap());
            assert_eq!(mr.is_ipc_enabled(), ipc);
            let r = mr.clone();
            Some((mr, Box::new(move || r.attributes().unwrap())))
        }
        _ => {
            if !managed_supported(d) {
                return None;
            }
            if ipc {
                eprintln!("SKIPPED: ManagedMemoryResource does not support IPC");
                return None;
            }
            let mr = Arc::new(
                ManagedMemoryResource::new_pool(d, ManagedMemoryResourceOptions::default())
                    .unwrap(),
            );
            assert!(!mr.is_ipc_enabled());
            let r = mr.clone();
            Some((mr, Box::new(move || r.attributes().unwrap())))
        }
    }
}

/// `test_mempool_attributes[<MR>-<property>-<type>-<ipc>]`: reads the
/// property (its type, `bool` or `u64`, is Python's `isinstance` and `>= 0`);
/// a current value does not fall across an allocation of 1024 bytes; a high
/// mark is not below its current value.
fn mempool_attributes(which: &str, property: &str, ipc: bool) {
    let d = device();
    let Some((mr, attributes)) = attribute_pool(which, ipc, &d) else {
        return;
    };
    let get = |a: &cudars_core::PoolAttributes| -> u64 {
        match property {
            "reuse_follow_event_dependencies" => u64::from(a.reuse_follow_event_dependencies),
            "reuse_allow_opportunistic" => u64::from(a.reuse_allow_opportunistic),
            "reuse_allow_internal_dependencies" => u64::from(a.reuse_allow_internal_dependencies),
            "release_threshold" => a.release_threshold,
            "reserved_mem_current" => a.reserved_mem_current,
            "reserved_mem_high" => a.reserved_mem_high,
            "used_mem_current" => a.used_mem_current,
            "used_mem_high" => a.used_mem_high,
            _ => unreachable!("{property}"),
        }
    };
    let value = get(&attributes());
    if property == "reserved_mem_current" || property == "used_mem_current" {
        let s = d.default_stream().unwrap();
        let buffer = Buffer::allocate(mr, 1024, &s).unwrap();
        let new_value = get(&attributes());
        assert!(
            new_value >= value,
            "{property} should increase or stay same after allocation"
        );
        buffer.close(None).unwrap();
    }
    if property == "reserved_mem_high" || property == "used_mem_high" {
        let a = attributes();
        let current = if property == "reserved_mem_high" {
            a.reserved_mem_current
        } else {
            a.used_mem_current
        };
        assert!(
            value >= current,
            "{property} should be >= its current value"
        );
    }
}

#[test]
fn test_mempool_attributes__DeviceMR_release_threshold_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "release_threshold", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_release_threshold_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "release_threshold", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_reserved_mem_current_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reserved_mem_current", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_reserved_mem_current_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reserved_mem_current", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_reserved_mem_high_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reserved_mem_high", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_reserved_mem_high_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reserved_mem_high", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_reuse_allow_internal_dependencies_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reuse_allow_internal_dependencies", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_reuse_allow_internal_dependencies_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reuse_allow_internal_dependencies", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_reuse_allow_opportunistic_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reuse_allow_opportunistic", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_reuse_allow_opportunistic_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reuse_allow_opportunistic", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_reuse_follow_event_dependencies_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reuse_follow_event_dependencies", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_reuse_follow_event_dependencies_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "reuse_follow_event_dependencies", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_used_mem_current_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "used_mem_current", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_used_mem_current_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "used_mem_current", true);
}

#[test]
fn test_mempool_attributes__DeviceMR_used_mem_high_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "used_mem_high", false);
}

#[test]
fn test_mempool_attributes__DeviceMR_used_mem_high_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("DeviceMR", "used_mem_high", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_release_threshold_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "release_threshold", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_release_threshold_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "release_threshold", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_reserved_mem_current_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reserved_mem_current", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_reserved_mem_current_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reserved_mem_current", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_reserved_mem_high_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reserved_mem_high", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_reserved_mem_high_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reserved_mem_high", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_reuse_allow_internal_dependencies_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reuse_allow_internal_dependencies", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_reuse_allow_internal_dependencies_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reuse_allow_internal_dependencies", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_reuse_allow_opportunistic_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reuse_allow_opportunistic", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_reuse_allow_opportunistic_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reuse_allow_opportunistic", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_reuse_follow_event_dependencies_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reuse_follow_event_dependencies", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_reuse_follow_event_dependencies_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "reuse_follow_event_dependencies", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_used_mem_current_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "used_mem_current", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_used_mem_current_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "used_mem_current", true);
}

#[test]
fn test_mempool_attributes__ManagedMR_used_mem_high_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "used_mem_high", false);
}

#[test]
fn test_mempool_attributes__ManagedMR_used_mem_high_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("ManagedMR", "used_mem_high", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_release_threshold_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "release_threshold", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_release_threshold_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "release_threshold", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_reserved_mem_current_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reserved_mem_current", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_reserved_mem_current_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reserved_mem_current", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_reserved_mem_high_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reserved_mem_high", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_reserved_mem_high_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reserved_mem_high", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_reuse_allow_internal_dependencies_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reuse_allow_internal_dependencies", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_reuse_allow_internal_dependencies_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reuse_allow_internal_dependencies", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_reuse_allow_opportunistic_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reuse_allow_opportunistic", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_reuse_allow_opportunistic_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reuse_allow_opportunistic", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_reuse_follow_event_dependencies_bool_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reuse_follow_event_dependencies", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_reuse_follow_event_dependencies_bool_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "reuse_follow_event_dependencies", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_used_mem_current_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "used_mem_current", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_used_mem_current_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "used_mem_current", true);
}

#[test]
fn test_mempool_attributes__PinnedMR_used_mem_high_int_False() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "used_mem_high", false);
}

#[test]
fn test_mempool_attributes__PinnedMR_used_mem_high_int_True() {
    cudars_tests::require_gpu!();
    mempool_attributes("PinnedMR", "used_mem_high", true);
}

// ---------------------------------------------------------------------------
// Legacy pinned memory, virtual memory, peer access

#[test]
fn test_legacy_pinned_device_id_raises() {
    cudars_tests::require_gpu!();
    // Python raises "not bound to any GPU"; the answer here is `None`.
    let mr = LegacyPinnedMemoryResource::new(&device());
    assert_eq!(mr.device_id(), None);
}

#[cfg(feature = "vmm")]
mod vmm {
    use super::*;
    use cudars_core::{VirtualMemoryHandleType, VirtualMemoryOptions, VirtualMemoryResource};

    fn posix_fd() -> VirtualMemoryOptions {
        VirtualMemoryOptions {
            handle_type: VirtualMemoryHandleType::PosixFd,
            ..Default::default()
        }
    }

    /// Both `use_device_object` cases (a `Device`, or the ordinal made one
    /// with `Device::new`) and the one Linux handle type (`posix_fd`).
    #[test]
    fn test_vmm_allocator_basic_allocation() {
        cudars_tests::require_gpu!();
        let d = device();
        if !vmm_supported(&d) {
            return;
        }
        for device_arg in [d, Device::new(d.ordinal()).unwrap()] {
            let vmm_mr = Arc::new(VirtualMemoryResource::new(&device_arg, posix_fd()).unwrap());
            let buffer = vmm_mr.allocate(4096, None).unwrap();
            assert!(buffer.size() >= 4096);
            assert_eq!(buffer.device(), &d);
            let as_dyn: Arc<dyn MemoryResource> = vmm_mr.clone();
            assert!(same_mr(&buffer, &as_dyn));
            buffer.close(None).unwrap();
            let mut buffers = Vec::new();
            for i in 0..5 {
                let buf = vmm_mr.allocate(1024 * (i + 1), None).unwrap();
                assert!(buf.size() >= 1024 * (i + 1));
                buffers.push(buf);
            }
            for buf in buffers {
                buf.close(None).unwrap();
            }
        }
    }

    #[test]
    fn test_vmm_allocator_grow_allocation() {
        cudars_tests::require_gpu!();
        let d = device();
        if !vmm_supported(&d) {
            return;
        }
        let vmm_mr = Arc::new(VirtualMemoryResource::new(&d, posix_fd()).unwrap());
        let mut buffer = vmm_mr.allocate(2 * 1024 * 1024, None).unwrap();
        let original_size = buffer.size();
        vmm_mr
            .modify_allocation(&mut buffer, 4 * 1024 * 1024)
            .unwrap();
        assert!(buffer.size() >= 4 * 1024 * 1024);
        assert!(buffer.size() > original_size);
        assert_ne!(buffer.ptr(), 0);
        let grown = buffer.size();
        vmm_mr
            .modify_allocation(&mut buffer, 4 * 1024 * 1024)
            .unwrap();
        assert_eq!(buffer.size(), grown);
        vmm_mr
            .modify_allocation(&mut buffer, 2 * 1024 * 1024)
            .unwrap();
        assert_eq!(buffer.size(), grown);
        buffer.close(None).unwrap();
    }

    #[test]
    fn test_vmm_allocator_rdma_unsupported_exception() {
        cudars_tests::require_gpu!();
        let d = device();
        if !vmm_supported(&d) {
            return;
        }
        if d.properties().gpu_direct_rdma_supported().unwrap() {
            eprintln!("SKIPPED: This test requires a device that doesn't support GPU Direct RDMA");
            return;
        }
        let options = VirtualMemoryOptions {
            gpu_direct_rdma: true,
            ..Default::default()
        };
        let r = VirtualMemoryResource::new(&d, options);
        assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    }
}

fn owned_pool(d: &Device) -> DeviceMemoryResource {
    DeviceMemoryResource::new_pool(
        d,
        DeviceMemoryPoolOptions {
            max_size: POOL_SIZE,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn test_device_memory_resource_peer_accessible_by_non_owned() {
    cudars_tests::require_gpu!();
    let dev = device();
    if !pools_supported(&dev) {
        return;
    }
    let mr = DeviceMemoryResource::default_pool(&dev).unwrap();
    assert!(!mr.is_handle_owned());
    let peers = mr.peer_accessible_by().unwrap();
    assert!(!peers.contains(&dev));
}

#[test]
fn test_dmr_peer_accessible_by_setter_empty() {
    cudars_tests::require_gpu!();
    let dev = device();
    if !pools_supported(&dev) {
        return;
    }
    let mr = owned_pool(&dev);
    assert!(mr.peer_accessible_by().unwrap().is_empty());
    mr.set_peer_accessible_by(&[]).unwrap();
    assert!(mr.peer_accessible_by().unwrap().is_empty());
}

/// `DMR_mempool_get_access(mr, peer)` ("" or "rw") is whether `peer` is in
/// `peer_accessible_by()`.
#[test]
fn test_dmr_mempool_get_access_peer() {
    if !cudars_tests::require_gpus(&cudars_tests::current_test_name(), 2) {
        return;
    }
    let dev = device();
    let peer = Device::new(1).unwrap();
    if !pools_supported(&dev) || !dev.can_access_peer(&peer).unwrap() {
        eprintln!("SKIPPED: the devices cannot access each other's memory");
        return;
    }
    let mr = owned_pool(&dev);
    assert!(!mr.peer_accessible_by().unwrap().contains(&peer));
    mr.set_peer_accessible_by(&[peer]).unwrap();
    assert!(mr.peer_accessible_by().unwrap().contains(&peer));
    mr.set_peer_accessible_by(&[]).unwrap();
    assert!(!mr.peer_accessible_by().unwrap().contains(&peer));
}

/// `DMR_mempool_get_access(mr, own device) == "rw"`: the owning device is never
/// listed as a peer (its access is implied), and it reads and writes the
/// pool's memory.
#[test]
fn test_dmr_mempool_get_access_self() {
    cudars_tests::require_gpu!();
    let dev = device();
    if !pools_supported(&dev) {
        return;
    }
    let mr = DeviceMemoryResource::default_pool(&dev).unwrap();
    assert!(!mr.peer_accessible_by().unwrap().contains(&dev));
    let s = stream(&dev);
    let mut buf = mr.allocate(64, &s).unwrap();
    buf.fill(7, &s).unwrap();
    let mut host = [0u8; 64];
    buf.copy_to_host(&mut host, &s).unwrap();
    assert!(host.iter().all(|&x| x == 7));
}
