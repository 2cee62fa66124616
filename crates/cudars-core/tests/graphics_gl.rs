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

use std::ffi::{CStr, c_char, c_void};

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    ArrayFormat, Device, GraphicsMapFlags, GraphicsRegisterFlags, GraphicsResource, Stream,
    StreamOptions, gl_devices,
};
use cudars_tests::{REQUIRE_GPU_VAR, current_test_name, require_or_skip};
use libloading::Library;

mod common;

type EglBoolean = u32;
type EglInt = i32;
type Ptr = *mut c_void;

const EGL_NONE: EglInt = 0x3038;
const EGL_SURFACE_TYPE: EglInt = 0x3033;
const EGL_PBUFFER_BIT: EglInt = 0x0001;
const EGL_RENDERABLE_TYPE: EglInt = 0x3040;
const EGL_OPENGL_BIT: EglInt = 0x0008;
const EGL_OPENGL_API: u32 = 0x30A2;
const EGL_PLATFORM_DEVICE_EXT: u32 = 0x313F;
const EGL_CUDA_DEVICE_NV: EglInt = 0x323A;
const EGL_VENDOR: EglInt = 0x3053;
const EGL_VERSION: EglInt = 0x3054;

const GL_ARRAY_BUFFER: u32 = 0x8892;
const GL_DYNAMIC_DRAW: u32 = 0x88E8;
const GL_TEXTURE_2D: u32 = 0x0DE1;
const GL_TEXTURE_MIN_FILTER: u32 = 0x2801;
const GL_TEXTURE_MAG_FILTER: u32 = 0x2800;
const GL_NEAREST: i32 = 0x2600;
const GL_RGBA8: i32 = 0x8058;
const GL_RGBA: u32 = 0x1908;
const GL_UNSIGNED_BYTE: u32 = 0x1401;
const GL_PACK_ALIGNMENT: u32 = 0x0D05;
const GL_UNPACK_ALIGNMENT: u32 = 0x0CF5;
const GL_NO_ERROR: u32 = 0;
const GL_VENDOR: u32 = 0x1F00;
const GL_RENDERER: u32 = 0x1F01;

/// Loads a function pointer of type `F` by name.
macro_rules! load {
    ($lookup:expr, $name:literal) => {{
        let p: Ptr = $lookup(concat!($name, "\0"));
        if p.is_null() {
            Err(format!("`{}` not found", $name))
        } else {
            // SAFETY: a non-null entry point of the C signature this test
            // declares for it (the EGL and OpenGL specifications').
            Ok(unsafe { std::mem::transmute_copy(&p) })
        }
    }};
}

struct Egl {
    get_error: unsafe extern "C" fn() -> EglInt,
    get_proc_address: unsafe extern "C" fn(*const c_char) -> Ptr,
    get_display: unsafe extern "C" fn(Ptr) -> Ptr,
    initialize: unsafe extern "C" fn(Ptr, *mut EglInt, *mut EglInt) -> EglBoolean,
    bind_api: unsafe extern "C" fn(u32) -> EglBoolean,
    choose_config:
        unsafe extern "C" fn(Ptr, *const EglInt, *mut Ptr, EglInt, *mut EglInt) -> EglBoolean,
    create_context: unsafe extern "C" fn(Ptr, Ptr, Ptr, *const EglInt) -> Ptr,
    make_current: unsafe extern "C" fn(Ptr, Ptr, Ptr, Ptr) -> EglBoolean,
    destroy_context: unsafe extern "C" fn(Ptr, Ptr) -> EglBoolean,
    query_string: unsafe extern "C" fn(Ptr, EglInt) -> *const c_char,
    _lib: Library,
}

struct GlFns {
    get_error: unsafe extern "C" fn() -> u32,
    finish: unsafe extern "C" fn(),
    get_string: unsafe extern "C" fn(u32) -> *const c_char,
    pixel_store_i: unsafe extern "C" fn(u32, i32),
    gen_buffers: unsafe extern "C" fn(i32, *mut u32),
    delete_buffers: unsafe extern "C" fn(i32, *const u32),
    bind_buffer: unsafe extern "C" fn(u32, u32),
    buffer_data: unsafe extern "C" fn(u32, isize, *const c_void, u32),
    get_buffer_sub_data: unsafe extern "C" fn(u32, isize, isize, *mut c_void),
    gen_textures: unsafe extern "C" fn(i32, *mut u32),
    delete_textures: unsafe extern "C" fn(i32, *const u32),
    bind_texture: unsafe extern "C" fn(u32, u32),
    tex_parameter_i: unsafe extern "C" fn(u32, u32, i32),
    tex_image_2d: unsafe extern "C" fn(u32, i32, i32, i32, i32, i32, u32, u32, *const c_void),
    get_tex_image: unsafe extern "C" fn(u32, i32, u32, u32, *mut c_void),
}

/// A headless OpenGL context, current on the thread that made it.
struct Headless {
    egl: &'static Egl,
    gl: GlFns,
    display: Ptr,
    context: Ptr,
}

impl Egl {
    fn load() -> Result<Self, String> {
        // SAFETY: loading the system's EGL loader runs its initialisers, which
        // is what any EGL program does.
        let lib = unsafe { Library::new("libEGL.so.1") }
            .map_err(|e| format!("libEGL.so.1 could not be loaded: {e}"))?;
        let sym = |name: &str| -> Ptr {
            // SAFETY: looking a symbol up; its type is fixed by `load!`.
            unsafe { lib.get::<Ptr>(name.as_bytes()) }
                .map(|s| *s)
                .unwrap_or(std::ptr::null_mut())
        };
        Ok(Self {
            get_error: load!(sym, "eglGetError")?,
            get_proc_address: load!(sym, "eglGetProcAddress")?,
            get_display: load!(sym, "eglGetDisplay")?,
            initialize: load!(sym, "eglInitialize")?,
            bind_api: load!(sym, "eglBindAPI")?,
            choose_config: load!(sym, "eglChooseConfig")?,
            create_context: load!(sym, "eglCreateContext")?,
            make_current: load!(sym, "eglMakeCurrent")?,
            destroy_context: load!(sym, "eglDestroyContext")?,
            query_string: load!(sym, "eglQueryString")?,
            _lib: lib,
        })
    }

    fn proc_address(&self, name: &str) -> Ptr {
        let name = std::ffi::CString::new(name.trim_end_matches('\0')).unwrap();
        // SAFETY: a NUL-terminated name; EGL returns null or an entry point.
        unsafe { (self.get_proc_address)(name.as_ptr()) }
    }

    /// `what` failed, with EGL's error code.
    fn failure(&self, what: &str) -> String {
        // SAFETY: no arguments; reads the thread's last EGL error.
        let code = unsafe { (self.get_error)() };
        format!(
            "{what} failed: eglGetError() = {code:#06x}{}",
            egl_error_name(code)
        )
    }

    /// The displays to try: one per EGL device (the one CUDA names as device
    /// 0 first, when `EGL_NV_device_cuda` says), then the default display.
    fn displays(&self, notes: &mut Vec<String>) -> Vec<Ptr> {
        let mut out = Vec::new();
        type QueryDevices = unsafe extern "C" fn(EglInt, *mut Ptr, *mut EglInt) -> EglBoolean;
        type QueryDeviceAttrib = unsafe extern "C" fn(Ptr, EglInt, *mut isize) -> EglBoolean;
        type PlatformDisplay = unsafe extern "C" fn(u32, Ptr, *const EglInt) -> Ptr;
        let lookup = |n: &str| self.proc_address(n);
        let query_devices: Result<QueryDevices, _> = load!(lookup, "eglQueryDevicesEXT");
        let query_attrib: Result<QueryDeviceAttrib, _> = load!(lookup, "eglQueryDeviceAttribEXT");
        let platform_display: Result<PlatformDisplay, _> =
            load!(lookup, "eglGetPlatformDisplayEXT");
        match (query_devices, platform_display) {
            (Ok(query_devices), Ok(platform_display)) => {
                let mut devices = [std::ptr::null_mut(); 16];
                let mut n: EglInt = 0;
                // SAFETY: room for 16 devices; `n` is valid for writes.
                if unsafe { query_devices(16, devices.as_mut_ptr(), &mut n) } == 0 {
                    notes.push(self.failure("eglQueryDevicesEXT"));
                }
                let mut devices: Vec<(Ptr, Option<isize>)> = devices[..n.clamp(0, 16) as usize]
                    .iter()
                    .map(|&d| {
                        let cuda = query_attrib.as_ref().ok().and_then(|q| {
                            let mut v: isize = -1;
                            // SAFETY: a device EGL listed; `v` is valid for writes.
                            (unsafe { q(d, EGL_CUDA_DEVICE_NV, &mut v) } != 0).then_some(v)
                        });
                        (d, cuda)
                    })
                    .collect();
                notes.push(format!(
                    "EGL devices: {} (CUDA devices per EGL_NV_device_cuda: {:?})",
                    devices.len(),
                    devices.iter().map(|d| d.1).collect::<Vec<_>>()
                ));
                devices.sort_by_key(|d| d.1 != Some(0));
                for (d, _) in devices {
                    // SAFETY: a device EGL listed; no attributes.
                    let dpy = unsafe {
                        platform_display(EGL_PLATFORM_DEVICE_EXT, d, [EGL_NONE].as_ptr())
                    };
                    if dpy.is_null() {
                        notes.push(
                            self.failure("eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT)"),
                        );
                    } else {
                        out.push(dpy);
                    }
                }
            }
            (a, b) => notes.push(format!(
                "no EGL device platform: {}",
                [a.err(), b.err()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        // SAFETY: EGL_DEFAULT_DISPLAY.
        let dpy = unsafe { (self.get_display)(std::ptr::null_mut()) };
        if dpy.is_null() {
            notes.push(self.failure("eglGetDisplay(EGL_DEFAULT_DISPLAY)"));
        } else {
            out.push(dpy);
        }
        out
    }
}

fn egl_error_name(code: EglInt) -> &'static str {
    match code {
        0x3000 => " (EGL_SUCCESS)",
        0x3001 => " (EGL_NOT_INITIALIZED)",
        0x3002 => " (EGL_BAD_ACCESS)",
        0x3003 => " (EGL_BAD_ALLOC)",
        0x3004 => " (EGL_BAD_ATTRIBUTE)",
        0x3005 => " (EGL_BAD_CONFIG)",
        0x3006 => " (EGL_BAD_CONTEXT)",
        0x3008 => " (EGL_BAD_DISPLAY)",
        0x3009 => " (EGL_BAD_MATCH)",
        0x300C => " (EGL_BAD_PARAMETER)",
        _ => "",
    }
}

fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        return "?".into();
    }
    // SAFETY: EGL and GL return NUL-terminated static strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Headless {
    /// A context on a display whose GPU CUDA knows as device 0, current on
    /// this thread, or why none could be made.
    fn new() -> Result<Self, String> {
        // Leaked: EGL stays loaded for the process, as the displays do.
        let egl: &'static Egl = Box::leak(Box::new(Egl::load()?));
        let mut notes = vec![format!(
            "__EGL_VENDOR_LIBRARY_FILENAMES={:?}",
            std::env::var_os("__EGL_VENDOR_LIBRARY_FILENAMES")
        )];
        let gl_lib = ["libOpenGL.so.0", "libGL.so.1"].iter().find_map(|n| {
            // SAFETY: loading the system's OpenGL library, as any GL program does.
            unsafe { Library::new(n) }.ok()
        });
        // Leaked like EGL: the GL entry points stay valid for the process.
        let gl_lib: Option<&'static Library> = gl_lib.map(|l| &*Box::leak(Box::new(l)));
        for display in egl.displays(&mut notes) {
            match Self::on(egl, display) {
                Ok(context) => {
                    let gl = Self::gl_fns(egl, gl_lib)?;
                    let ctx = Self {
                        egl,
                        gl,
                        display,
                        context,
                    };
                    // Only a context CUDA shares with device 0 will do.
                    match gl_devices() {
                        Ok(devs) if devs.iter().any(|d| d.ordinal() == 0) => {
                            println!("{}: OpenGL on {}", current_test_name(), ctx.describe());
                            return Ok(ctx);
                        }
                        Ok(devs) => notes.push(format!(
                            "{}: CUDA devices {:?}, not device 0",
                            ctx.describe(),
                            devs.iter().map(Device::ordinal).collect::<Vec<_>>()
                        )),
                        Err(e) => notes.push(format!(
                            "{}: cuGLGetDevices: {}",
                            ctx.describe(),
                            cudars_tests::report(&e)
                        )),
                    }
                    // Dropped: released and destroyed; the next display is tried.
                }
                Err(why) => notes.push(why),
            }
        }
        Err(notes.join("; "))
    }

    /// Initialises `display` and makes a pbuffer-capable desktop OpenGL
    /// context current without a surface.
    fn on(egl: &Egl, display: Ptr) -> Result<Ptr, String> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: a display EGL returned; outputs valid for writes.
        if unsafe { (egl.initialize)(display, &mut major, &mut minor) } == 0 {
            return Err(egl.failure("eglInitialize"));
        }
        // SAFETY: a valid API enum.
        if unsafe { (egl.bind_api)(EGL_OPENGL_API) } == 0 {
            return Err(egl.failure("eglBindAPI(EGL_OPENGL_API)"));
        }
        let attribs = [
            EGL_SURFACE_TYPE,
            EGL_PBUFFER_BIT,
            EGL_RENDERABLE_TYPE,
            EGL_OPENGL_BIT,
            EGL_NONE,
        ];
        let mut config: Ptr = std::ptr::null_mut();
        let mut n: EglInt = 0;
        // SAFETY: an initialised display; a terminated attribute list; room
        // for one config.
        if unsafe { (egl.choose_config)(display, attribs.as_ptr(), &mut config, 1, &mut n) } == 0
            || n < 1
        {
            return Err(format!("{} ({n} configs)", egl.failure("eglChooseConfig")));
        }
        // SAFETY: a config of this display; no sharing; default attributes.
        let context = unsafe {
            (egl.create_context)(display, config, std::ptr::null_mut(), [EGL_NONE].as_ptr())
        };
        if context.is_null() {
            return Err(egl.failure("eglCreateContext"));
        }
        // SAFETY: a context of this display, current without a surface
        // (EGL_KHR_surfaceless_context, which NVIDIA's EGL has).
        if unsafe {
            (egl.make_current)(display, std::ptr::null_mut(), std::ptr::null_mut(), context)
        } == 0
        {
            let why = egl.failure("eglMakeCurrent(EGL_NO_SURFACE)");
            // SAFETY: the context just made, not current.
            unsafe { (egl.destroy_context)(display, context) };
            return Err(why);
        }
        Ok(context)
    }

    fn gl_fns(egl: &Egl, lib: Option<&Library>) -> Result<GlFns, String> {
        let lookup = |name: &str| -> Ptr {
            let from_lib = lib
                // SAFETY: looking a symbol up; its type is fixed by `load!`.
                .and_then(|l| unsafe { l.get::<Ptr>(name.as_bytes()) }.ok().map(|s| *s))
                .unwrap_or(std::ptr::null_mut());
            if from_lib.is_null() {
                egl.proc_address(name)
            } else {
                from_lib
            }
        };
        Ok(GlFns {
            get_error: load!(lookup, "glGetError")?,
            finish: load!(lookup, "glFinish")?,
            get_string: load!(lookup, "glGetString")?,
            pixel_store_i: load!(lookup, "glPixelStorei")?,
            gen_buffers: load!(lookup, "glGenBuffers")?,
            delete_buffers: load!(lookup, "glDeleteBuffers")?,
            bind_buffer: load!(lookup, "glBindBuffer")?,
            buffer_data: load!(lookup, "glBufferData")?,
            get_buffer_sub_data: load!(lookup, "glGetBufferSubData")?,
            gen_textures: load!(lookup, "glGenTextures")?,
            delete_textures: load!(lookup, "glDeleteTextures")?,
            bind_texture: load!(lookup, "glBindTexture")?,
            tex_parameter_i: load!(lookup, "glTexParameteri")?,
            tex_image_2d: load!(lookup, "glTexImage2D")?,
            get_tex_image: load!(lookup, "glGetTexImage")?,
        })
    }

    fn describe(&self) -> String {
        // SAFETY: a current context (made by `on`); static strings.
        let (vendor, renderer) = unsafe {
            (
                (self.gl.get_string)(GL_VENDOR),
                (self.gl.get_string)(GL_RENDERER),
            )
        };
        // SAFETY: an initialised display.
        let (egl_vendor, egl_version) = unsafe {
            (
                (self.egl.query_string)(self.display, EGL_VENDOR),
                (self.egl.query_string)(self.display, EGL_VERSION),
            )
        };
        format!(
            "{} / {} (EGL {} {})",
            c_text(vendor),
            c_text(renderer),
            c_text(egl_vendor),
            c_text(egl_version)
        )
    }

    /// Panics when OpenGL reports an error for `what`.
    fn check(&self, what: &str) {
        // SAFETY: a current context.
        let e = unsafe { (self.gl.get_error)() };
        assert_eq!(e, GL_NO_ERROR, "{what}: glGetError() = {e:#x}");
    }

    /// A new GL buffer object holding `initial`, bound to `GL_ARRAY_BUFFER`.
    fn buffer(&self, initial: &[u32]) -> u32 {
        let mut name = 0u32;
        // SAFETY: a current context; `initial` holds its length of u32s.
        unsafe {
            (self.gl.gen_buffers)(1, &mut name);
            (self.gl.bind_buffer)(GL_ARRAY_BUFFER, name);
            (self.gl.buffer_data)(
                GL_ARRAY_BUFFER,
                std::mem::size_of_val(initial) as isize,
                initial.as_ptr().cast(),
                GL_DYNAMIC_DRAW,
            );
            (self.gl.finish)();
        }
        self.check("creating the GL buffer");
        name
    }
}

impl Drop for Headless {
    fn drop(&mut self) {
        // SAFETY: this thread's context, released and destroyed once. The
        // display is left initialised: another test's context may use it.
        unsafe {
            (self.egl.make_current)(
                self.display,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            (self.egl.destroy_context)(self.display, self.context);
        }
    }
}

/// Device 0 current, a headless OpenGL context sharing it and a stream, or
/// `None` after printing why there is none (a failure under
/// `CUDA_TEST_REQUIRE_GPU=1`).
fn setup() -> Option<(Device, Headless, Stream)> {
    if !cudars_tests::require_gpu(&current_test_name()) {
        return None;
    }
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let gl = match Headless::new() {
        Ok(gl) => gl,
        Err(why) => {
            require_or_skip(
                &current_test_name(),
                "a headless OpenGL context through EGL",
                REQUIRE_GPU_VAR,
                Err(why),
            );
            return None;
        }
    };
    let s = d.create_stream(StreamOptions::default()).unwrap();
    Some((d, gl, s))
}

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
