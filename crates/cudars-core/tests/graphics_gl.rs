//! OpenGL interop for real, on a headless OpenGL context made through EGL
//! (`libEGL.so.1`, the NVIDIA EGL device platform; no window system): a GL
//! buffer object written by CUDA and read back by GL, a GL texture written
//! through its mapped CUDA array with a 2-D copy and read back by GL, and the
//! driver's refusals (a name that is not a buffer, an image mapped as a
//! pointer, a buffer mapped as an array) as typed errors.
//!
//! Without a GPU it prints `SKIPPED`; without EGL or OpenGL libraries, or when
//! no EGL display can be made, likewise, with the EGL error codes; under
//! `CUDA_TEST_REQUIRE_GPU=1` either is a failure. With glvnd, the NVIDIA EGL
//! vendor library is found through `__EGL_VENDOR_LIBRARY_FILENAMES` (for
//! example `/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json`) when
//! it is not in the default vendor folders.
#![cfg(unix)]
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    ArrayFormat, GraphicsMapFlags, GraphicsRegisterFlags, GraphicsResource, StreamOptions,
};

mod common;

mod gl_headless;
use gl_headless::*;

#[test]
fn a_gl_buffer_is_written_by_cuda_and_read_by_gl() {
    let Some((d, gl, s)) = setup() else { return };
    const N: usize = 1024;

    let initial = vec![7u32; N];
    let name = gl.buffer(&initial);

    let mut res = GraphicsResource::from_gl_buffer(&d, name, GraphicsRegisterFlags::NONE).unwrap();
    assert!(!res.handle().is_null());
    assert_eq!(res.device(), &d);
    const FILL: u32 = 0xC0DE_1234;
    let expected: Vec<u32> = (0..N as u32)
        .map(|i| if i < 256 { i * 3 + 1 } else { FILL })
        .collect();
    {
        let mut mapping = res.map(&s).unwrap();
        let (ptr, size) = mapping.pointer().unwrap();
        assert_ne!(ptr, 0);
        assert_eq!(size, N * 4);
        // A buffer object is not an array.
        let e = mapping.array(0, 0).unwrap_err();
        assert_eq!(
            e.driver_code(),
            Some(sys::CUDA_ERROR_NOT_MAPPED_AS_ARRAY),
            "{e}"
        );
        let mut mem = mapping.buffer().unwrap();
        assert_eq!((mem.ptr(), mem.size()), (ptr, N * 4));
        // CUDA sees what GL wrote.
        assert_eq!(mem.view::<u32>().unwrap().to_vec(&s).unwrap(), initial);
        // CUDA writes: a copy over the first quarter on the mapping's stream,
        // and a fill of the rest (a memset on the device) on another stream,
        // held back by a host function until the mapping's stream is seen
        // waiting for it: the unmapping comes after work on any stream.
        let other = d.create_stream(StreamOptions::default()).unwrap();
        common::spin(&d, &other, 500 * common::CYCLES_PER_MS);
        let mut v = mem.view_mut::<u32>().unwrap();
        v.slice_mut(..256)
            .unwrap()
            .copy_from_host(&expected[..256], &s)
            .unwrap();
        v.slice_mut(256..).unwrap().fill(FILL, &other).unwrap();
        drop(mem);
        // The unmapping below is ordered after the fill, held back on the GPU
        // for half a second: GL's read-back after it sees the fill (a query
        // of the mapping's stream is no witness: a stream holding only a
        // wait may report itself done).
        mapping.unmap().unwrap();
    }
    s.sync().unwrap();

    let mut back = vec![0u32; N];
    // SAFETY: a current context; `back` has room for the whole buffer.
    unsafe {
        (gl.gl.bind_buffer)(GL_ARRAY_BUFFER, name);
        (gl.gl.get_buffer_sub_data)(
            GL_ARRAY_BUFFER,
            0,
            (N * 4) as isize,
            back.as_mut_ptr().cast(),
        );
    }
    gl.check("reading the GL buffer back");
    assert_eq!(back, expected, "GL reads what CUDA wrote");

    // Mapped again (read-only now), unmapped by drop.
    res.set_map_flags(GraphicsMapFlags::ReadOnly).unwrap();
    {
        let mut mapping = res.map(&s).unwrap();
        let mem = mapping.buffer().unwrap();
        assert_eq!(mem.view::<u32>().unwrap().to_vec(&s).unwrap(), expected);
    }
    res.close().unwrap();

    // A name that is not a buffer object is the driver's refusal, named.
    let e =
        GraphicsResource::from_gl_buffer(&d, 0x7fff_0001, GraphicsRegisterFlags::NONE).unwrap_err();
    assert!(e.driver_code().is_some(), "{e:?}");
    assert!(
        e.to_string()
            .contains("registering OpenGL buffer 2147418113"),
        "{e}"
    );

    // SAFETY: a current context; the buffer is no longer registered.
    unsafe { (gl.gl.delete_buffers)(1, &name) };
}

#[test]
fn a_gl_texture_is_written_through_its_mapped_array() {
    let Some((d, gl, s)) = setup() else { return };
    const W: usize = 16;
    const H: usize = 8;

    let mut tex = 0u32;
    // SAFETY: a current context; no initial data.
    unsafe {
        (gl.gl.gen_textures)(1, &mut tex);
        (gl.gl.bind_texture)(GL_TEXTURE_2D, tex);
        (gl.gl.tex_parameter_i)(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        (gl.gl.tex_parameter_i)(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        (gl.gl.pixel_store_i)(GL_UNPACK_ALIGNMENT, 1);
        (gl.gl.pixel_store_i)(GL_PACK_ALIGNMENT, 1);
        (gl.gl.tex_image_2d)(
            GL_TEXTURE_2D,
            0,
            GL_RGBA8,
            W as i32,
            H as i32,
            0,
            GL_RGBA,
            GL_UNSIGNED_BYTE,
            std::ptr::null(),
        );
        (gl.gl.finish)();
    }
    gl.check("creating the GL texture");

    // A texture is not a buffer object, and a buffer target is not an image's.
    let e = GraphicsResource::from_gl_buffer(&d, tex, GraphicsRegisterFlags::NONE);
    assert!(e.is_err(), "a texture registered as a buffer: {e:?}");

    let mut res =
        GraphicsResource::from_gl_image(&d, tex, GL_TEXTURE_2D, GraphicsRegisterFlags::NONE)
            .unwrap();
    // Pixel (x, y) is [x, y, x ^ y, 255].
    let expected: Vec<u8> = (0..H)
        .flat_map(|y| (0..W).flat_map(move |x| [x as u8, y as u8, (x ^ y) as u8, 255]))
        .collect();
    // The source: a device buffer with rows padded to 128 bytes, copied into
    // the array with a 2-D copy.
    let pitch = 128usize;
    let mut padded = vec![0xEEu8; pitch * H];
    for y in 0..H {
        padded[y * pitch..y * pitch + W * 4].copy_from_slice(&expected[y * W * 4..(y + 1) * W * 4]);
    }
    let mut src = d.allocate(padded.len(), &s).unwrap();
    src.copy_from_host(&padded, &s).unwrap();
    {
        let mut mapping = res.map(&s).unwrap();
        let e = mapping.buffer().unwrap_err();
        assert_eq!(
            e.driver_code(),
            Some(sys::CUDA_ERROR_NOT_MAPPED_AS_POINTER),
            "{e}"
        );
        let e = mapping.array(0, 3).unwrap_err();
        assert!(
            e.driver_code().is_some(),
            "a level the texture lacks: {e:?}"
        );
        let arr = mapping.array(0, 0).unwrap();
        let o = arr.options();
        assert_eq!(
            (o.format, o.channels, o.width, o.height),
            (ArrayFormat::U8, 4, W, H)
        );
        let copy = sys::CUDA_MEMCPY2D {
            srcMemoryType: sys::CU_MEMORYTYPE_DEVICE,
            srcDevice: src.ptr(),
            srcPitch: pitch,
            dstMemoryType: sys::CU_MEMORYTYPE_ARRAY,
            dstArray: arr.handle(),
            WidthInBytes: W * 4,
            Height: H,
            ..Default::default()
        };
        // SAFETY: `src` holds H rows of `pitch` bytes; the array is W x H of
        // 4 bytes, mapped until after the stream is synchronised below.
        let rc = unsafe { sys::cuMemcpy2DAsync(&copy, s.handle()) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        // CUDA reads the array back the same.
        let mut through_cuda = vec![0u8; W * H * 4];
        arr.copy_to_host(&mut through_cuda, &s).unwrap();
        assert_eq!(through_cuda, expected);
        drop(arr);
        mapping.unmap().unwrap();
    }
    s.sync().unwrap();

    let mut back = vec![0u8; W * H * 4];
    // SAFETY: a current context; `back` holds the whole level 0 as RGBA8
    // with rows packed (alignment 1).
    unsafe {
        (gl.gl.bind_texture)(GL_TEXTURE_2D, tex);
        (gl.gl.get_tex_image)(
            GL_TEXTURE_2D,
            0,
            GL_RGBA,
            GL_UNSIGNED_BYTE,
            back.as_mut_ptr().cast(),
        );
    }
    gl.check("reading the GL texture back");
    assert_eq!(back, expected, "GL reads what CUDA wrote");
    drop(res);
    // SAFETY: a current context; the texture is no longer registered.
    unsafe { (gl.gl.delete_textures)(1, &tex) };
}

/// Issue 26: leaking a mapping's guard (`std::mem::forget`, safe) left the
/// resource mapped, with no one to unmap it: mapping again failed
/// (`CUDA_ERROR_ALREADY_MAPPED`) and dropping the resource unregistered it
/// while mapped, under work still queued on it. The resource now records the
/// mapping and unmaps a leaked one on its stream before its next use and
/// before unregistering.
#[test]
fn a_leaked_mapping_is_unmapped_by_its_resource() {
    let Some((d, gl, s)) = setup() else { return };
    const N: usize = 256;
    let initial = vec![0u32; N];
    let name = gl.buffer(&initial);
    let mut res = GraphicsResource::from_gl_buffer(&d, name, GraphicsRegisterFlags::NONE).unwrap();
    {
        let mut mapping = res.map(&s).unwrap();
        let mut mem = mapping.buffer().unwrap();
        mem.view_mut::<u32>().unwrap().fill(5, &s).unwrap();
        drop(mem);
        std::mem::forget(mapping);
    }
    // Mapping again unmaps the leaked mapping first, on its stream.
    {
        let mut mapping = res.map(&s).unwrap();
        let mut mem = mapping.buffer().unwrap();
        assert_eq!(mem.view::<u32>().unwrap().to_vec(&s).unwrap(), vec![5; N]);
        mem.view_mut::<u32>().unwrap().fill(9, &s).unwrap();
        drop(mem);
        std::mem::forget(mapping);
    }
    // Closing unmaps the leaked mapping and waits for it before unregistering.
    res.close().unwrap();
    let mut back = vec![0u32; N];
    // SAFETY: a current context; `back` has room for the whole buffer.
    unsafe {
        (gl.gl.bind_buffer)(GL_ARRAY_BUFFER, name);
        (gl.gl.get_buffer_sub_data)(
            GL_ARRAY_BUFFER,
            0,
            (N * 4) as isize,
            back.as_mut_ptr().cast(),
        );
    }
    gl.check("reading the GL buffer back");
    assert_eq!(
        back,
        vec![9; N],
        "GL reads what CUDA wrote through a leaked mapping"
    );
    // SAFETY: a current context; the buffer is no longer registered.
    unsafe { (gl.gl.delete_buffers)(1, &name) };
}
