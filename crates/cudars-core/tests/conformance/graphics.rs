//! `cuda_core/tests/test_graphics.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! Names: `GraphicsResource.from_gl_buffer(buf, flags="write_discard")` is
//! [`GraphicsResource::from_gl_buffer`]`(&device, buf,
//! GraphicsRegisterFlags::WRITE_DISCARD)` (flags `|`-combined constants,
//! `bits()` their driver value), `from_gl_image(tex, target)` is
//! `from_gl_image(&device, tex, target, flags)`; `resource.map(stream=s)` is
//! `resource.map(&s)`, a guard ([`GraphicsMapping`]) that borrows the resource
//! exclusively and unmaps when it drops (Python's `with resource.map(…) as
//! buf`), its `buffer()` the mapped `Buffer`; `unmap()` is the guard's;
//! `close()` consumes the resource. So the states Python checks at run time
//! (`is_mapped`, mapping twice, unmapping what is not mapped, using a closed
//! resource) are the borrow checker's here (porting guide, "OpenGL interop").
//!
//! The GL side is Python's `pyglet` hidden context: a headless OpenGL context
//! through EGL (`tests/gl_headless`, as `graphics_gl.rs` uses). Where none can
//! be made (no EGL or OpenGL libraries, no display for device 0) Python skips;
//! here each test instead asserts that registering a buffer without an OpenGL
//! context is refused with the driver's error (`Error::Driver`: no OpenGL
//! context current, `CUDA_ERROR_INVALID_GRAPHICS_CONTEXT` or the like), and
//! prints why there was no context.

use cudars_core::{
    Device, Error, GraphicsMapping, GraphicsRegisterFlags, GraphicsResource, Stream, StreamOptions,
    StridedMemoryView,
};
use cudars_tests::require_gpu;

use crate::gl_headless::{
    GL_NEAREST, GL_RGBA, GL_RGBA8, GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_TEXTURE_MIN_FILTER,
    GL_UNSIGNED_BYTE, Headless,
};

/// Device 0, a headless OpenGL context sharing it, and a stream; or `None`
/// after asserting the driver's refusal to register without a context.
fn gl() -> Option<(Device, Headless, Stream)> {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    match Headless::new() {
        Ok(gl) => {
            let s = d.create_stream(StreamOptions::default()).unwrap();
            Some((d, gl, s))
        }
        Err(why) => {
            // Nothing made an OpenGL context current on this thread.
            let e = GraphicsResource::from_gl_buffer(&d, 1, GraphicsRegisterFlags::NONE)
                .expect_err("registering an OpenGL buffer without an OpenGL context");
            assert!(
                matches!(e, Error::Driver { .. }) && e.driver_code().is_some(),
                "not the driver's error: {e:?}"
            );
            println!("no headless OpenGL context ({why}); registering without one is refused: {e}");
            None
        }
    }
}

/// `_gl_context_and_buffer(nbytes)`: a GL buffer object of `nbytes` bytes.
fn gl_buffer(gl: &Headless, nbytes: usize) -> u32 {
    gl.buffer(&vec![0u32; nbytes / 4])
}

/// `_gl_context_and_texture()`: a 16×16 `GL_RGBA8` texture.
fn gl_texture(gl: &Headless) -> u32 {
    let mut tex = 0u32;
    // SAFETY: a current context; no initial data.
    unsafe {
        (gl.gl.gen_textures)(1, &mut tex);
        (gl.gl.bind_texture)(GL_TEXTURE_2D, tex);
        (gl.gl.tex_parameter_i)(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        (gl.gl.tex_parameter_i)(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        (gl.gl.tex_image_2d)(
            GL_TEXTURE_2D,
            0,
            GL_RGBA8,
            16,
            16,
            0,
            GL_RGBA,
            GL_UNSIGNED_BYTE,
            std::ptr::null(),
        );
        (gl.gl.finish)();
    }
    gl.check("creating the GL texture");
    tex
}

/// Deletes a GL buffer object once CUDA has let it go.
fn delete_buffer(gl: &Headless, name: u32) {
    // SAFETY: a current context; the buffer is no longer registered.
    unsafe { (gl.gl.delete_buffers)(1, &name) };
}

/// A write-discard registration of a new `nbytes`-byte GL buffer.
fn write_discard(d: &Device, gl: &Headless, nbytes: usize) -> (u32, GraphicsResource) {
    let name = gl_buffer(gl, nbytes);
    let res =
        GraphicsResource::from_gl_buffer(d, name, GraphicsRegisterFlags::WRITE_DISCARD).unwrap();
    (name, res)
}

/// The mapped buffer's address and size, checked non-null and non-empty.
fn mapped(m: &mut GraphicsMapping<'_>) -> (u64, usize) {
    let b = m.buffer().unwrap();
    assert!(b.size() > 0);
    assert_ne!(b.ptr(), 0);
    (b.ptr(), b.size())
}

// ---- TestRegisterFlags ----

/// `_parse_register_flags(None) == 0`.
#[test]
fn TestRegisterFlags__test_parse_none() {
    assert_eq!(GraphicsRegisterFlags::NONE.bits(), 0);
    assert_eq!(GraphicsRegisterFlags::default().bits(), 0);
}

#[test]
fn TestRegisterFlags__test_parse_single_string() {
    assert_eq!(GraphicsRegisterFlags::READ_ONLY.bits(), 1);
    assert_eq!(GraphicsRegisterFlags::WRITE_DISCARD.bits(), 2);
}

#[test]
fn TestRegisterFlags__test_parse_combined_flags() {
    let flags = GraphicsRegisterFlags::SURFACE_LOAD_STORE | GraphicsRegisterFlags::READ_ONLY;
    assert_eq!(flags.bits(), 4 | 1);
}

// ---- TestFromGLBuffer ----

#[test]
fn TestFromGLBuffer__test_register_default_flags() {
    require_gpu!();
    let Some((d, gl, _s)) = gl() else { return };
    let name = gl_buffer(&gl, 1024);
    let res = GraphicsResource::from_gl_buffer(&d, name, GraphicsRegisterFlags::NONE).unwrap();
    assert!(!res.handle().is_null());
    res.close().unwrap();
    delete_buffer(&gl, name);
}

#[test]
fn TestFromGLBuffer__test_register_write_discard() {
    require_gpu!();
    let Some((d, gl, _s)) = gl() else { return };
    let (name, res) = write_discard(&d, &gl, 1024);
    assert!(!res.handle().is_null());
    res.close().unwrap();
    delete_buffer(&gl, name);
}

// ---- TestFromGLImage ----

#[test]
fn TestFromGLImage__test_register_image() {
    require_gpu!();
    let Some((d, gl, _s)) = gl() else { return };
    let tex = gl_texture(&gl);
    let res = GraphicsResource::from_gl_image(&d, tex, GL_TEXTURE_2D, GraphicsRegisterFlags::NONE)
        .unwrap();
    assert!(!res.handle().is_null());
    res.close().unwrap();
    // SAFETY: a current context; the texture is no longer registered.
    unsafe { (gl.gl.delete_textures)(1, &tex) };
}

// ---- TestMapUnmap ----

/// The mapped memory is a `Buffer` of its own address (not the resource's
/// handle); `unmap` ends it (the borrow checker then refuses its use, where
/// Python's reads handle 0).
#[test]
fn TestMapUnmap__test_map_returns_buffer() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 4096);
    let handle = res.handle() as u64;
    let mut m = res.map(&s).unwrap();
    let (ptr, _) = mapped(&mut m);
    assert_ne!(handle, ptr);
    m.unmap().unwrap();
    res.close().unwrap();
    delete_buffer(&gl, name);
}

/// Dropping the guard unmaps: the resource maps again at once.
#[test]
fn TestMapUnmap__test_context_manager_unmaps() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 4096);
    {
        let mut m = res.map(&s).unwrap();
        mapped(&mut m);
    }
    // Unmapped: mapping again succeeds.
    drop(res.map(&s).unwrap());
    res.close().unwrap();
    delete_buffer(&gl, name);
}

/// An error leaving the mapping's scope still unmaps.
#[test]
fn TestMapUnmap__test_context_manager_unmaps_on_exception() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 4096);
    // The body of Python's `with resource.map(…)`, which raises.
    fn body(res: &mut GraphicsResource, s: &Stream) -> Result<(), &'static str> {
        let mut m = res.map(s).unwrap();
        mapped(&mut m);
        Err("test error")
    }
    let r = body(&mut res, &s);
    assert_eq!(r, Err("test error"));
    drop(res.map(&s).unwrap());
    res.close().unwrap();
    delete_buffer(&gl, name);
}

/// A strided view of the mapped buffer's 256 `float32` (through its address:
/// `from_buffer` takes a shared `Arc<Buffer>`, which a borrowed mapping is not).
#[test]
fn TestMapUnmap__test_strided_memory_view_from_mapped_buffer() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 256 * 4);
    {
        let mut m = res.map(&s).unwrap();
        let (ptr, _) = mapped(&mut m);
        let cai = cudars_core::CudaArrayInterface::new(ptr, &[256], "<f4");
        // SAFETY: the mapped range, which outlives the view (dropped in this
        // scope, before the mapping).
        let view = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, None) }.unwrap();
        assert_eq!(view.ptr(), ptr);
        assert_eq!(view.shape(), &[256]);
        assert_ne!(
            view.device().device_type,
            cudars_core::dlpack::DLDeviceType::CPU
        );
    }
    res.close().unwrap();
    delete_buffer(&gl, name);
}

/// Python's `from_gl_buffer(buf, stream=s)` registers and maps in one call;
/// here the two calls. The mapped buffer is the whole GL buffer.
#[test]
fn TestMapUnmap__test_from_gl_buffer_with_stream_context_manager() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let nbytes = 256 * 4;
    let name = gl_buffer(&gl, nbytes);
    let mut res = GraphicsResource::from_gl_buffer(&d, name, GraphicsRegisterFlags::NONE).unwrap();
    {
        let mut m = res.map(&s).unwrap();
        let (ptr, size) = mapped(&mut m);
        assert_eq!(size, nbytes);
        let cai = cudars_core::CudaArrayInterface::new(ptr, &[256], "<f4");
        // SAFETY: the mapped range, which outlives the view.
        let view = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, None) }.unwrap();
        assert_eq!(view.ptr(), ptr);
        assert_eq!(view.shape(), &[256]);
    }
    res.close().unwrap();
    delete_buffer(&gl, name);
}

#[test]
fn TestMapUnmap__test_resource_context_manager_can_map_inside_scope() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 4096);
    {
        let mut m = res.map(&s).unwrap();
        mapped(&mut m);
    }
    drop(res);
    delete_buffer(&gl, name);
}

#[test]
fn TestMapUnmap__test_map_with_stream() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 4096);
    {
        let mut m = res.map(&s).unwrap();
        mapped(&mut m);
    }
    res.close().unwrap();
    delete_buffer(&gl, name);
}

// ---- TestErrorHandling ----

/// `close()` of a resource still mapped unmaps it first: here a mapping whose
/// guard was leaked (a live guard borrows the resource, so it cannot be
/// closed under it).
#[test]
fn TestErrorHandling__test_close_while_mapped() {
    require_gpu!();
    let Some((d, gl, s)) = gl() else { return };
    let (name, mut res) = write_discard(&d, &gl, 1024);
    let mut m = res.map(&s).unwrap();
    mapped(&mut m);
    std::mem::forget(m);
    res.close().unwrap();
    delete_buffer(&gl, name);
}

// ---- TestMisc ----

/// Dropping a registered resource unregisters it without an error.
#[test]
fn TestMisc__test_gc_cleanup() {
    require_gpu!();
    let Some((d, gl, _s)) = gl() else { return };
    let name = gl_buffer(&gl, 1024);
    let res = GraphicsResource::from_gl_buffer(&d, name, GraphicsRegisterFlags::NONE).unwrap();
    assert!(!res.handle().is_null());
    drop(res);
    delete_buffer(&gl, name);
}
