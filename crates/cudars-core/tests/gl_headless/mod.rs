//! A headless OpenGL context made through EGL (`libEGL.so.1`, the NVIDIA EGL
//! device platform; no window system), for the tests of OpenGL interop
//! (`graphics_gl.rs`, the conformance port of `test_graphics.py`): see
//! `graphics_gl.rs` and `docs/gpu-testing.md` for what it needs.
// Each test binary uses what it needs of the helpers.
#![allow(dead_code)]

use std::ffi::{CStr, c_char, c_void};

use cudars_core::{Device, Stream, StreamOptions, gl_devices};
use cudars_tests::{REQUIRE_GPU_VAR, current_test_name, require_or_skip};
use libloading::Library;

pub(crate) type EglBoolean = u32;
pub(crate) type EglInt = i32;
pub(crate) type Ptr = *mut c_void;

pub(crate) const EGL_NONE: EglInt = 0x3038;
pub(crate) const EGL_SURFACE_TYPE: EglInt = 0x3033;
pub(crate) const EGL_PBUFFER_BIT: EglInt = 0x0001;
pub(crate) const EGL_RENDERABLE_TYPE: EglInt = 0x3040;
pub(crate) const EGL_OPENGL_BIT: EglInt = 0x0008;
pub(crate) const EGL_OPENGL_API: u32 = 0x30A2;
pub(crate) const EGL_PLATFORM_DEVICE_EXT: u32 = 0x313F;
pub(crate) const EGL_CUDA_DEVICE_NV: EglInt = 0x323A;
pub(crate) const EGL_VENDOR: EglInt = 0x3053;
pub(crate) const EGL_VERSION: EglInt = 0x3054;

pub(crate) const GL_ARRAY_BUFFER: u32 = 0x8892;
pub(crate) const GL_DYNAMIC_DRAW: u32 = 0x88E8;
pub(crate) const GL_TEXTURE_2D: u32 = 0x0DE1;
pub(crate) const GL_TEXTURE_MIN_FILTER: u32 = 0x2801;
pub(crate) const GL_TEXTURE_MAG_FILTER: u32 = 0x2800;
pub(crate) const GL_NEAREST: i32 = 0x2600;
pub(crate) const GL_RGBA8: i32 = 0x8058;
pub(crate) const GL_RGBA: u32 = 0x1908;
pub(crate) const GL_UNSIGNED_BYTE: u32 = 0x1401;
pub(crate) const GL_PACK_ALIGNMENT: u32 = 0x0D05;
pub(crate) const GL_UNPACK_ALIGNMENT: u32 = 0x0CF5;
pub(crate) const GL_NO_ERROR: u32 = 0;
pub(crate) const GL_VENDOR: u32 = 0x1F00;
pub(crate) const GL_RENDERER: u32 = 0x1F01;

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

pub(crate) struct Egl {
    pub(crate) get_error: unsafe extern "C" fn() -> EglInt,
    pub(crate) get_proc_address: unsafe extern "C" fn(*const c_char) -> Ptr,
    pub(crate) get_display: unsafe extern "C" fn(Ptr) -> Ptr,
    pub(crate) initialize: unsafe extern "C" fn(Ptr, *mut EglInt, *mut EglInt) -> EglBoolean,
    pub(crate) bind_api: unsafe extern "C" fn(u32) -> EglBoolean,
    choose_config:
        unsafe extern "C" fn(Ptr, *const EglInt, *mut Ptr, EglInt, *mut EglInt) -> EglBoolean,
    pub(crate) create_context: unsafe extern "C" fn(Ptr, Ptr, Ptr, *const EglInt) -> Ptr,
    pub(crate) make_current: unsafe extern "C" fn(Ptr, Ptr, Ptr, Ptr) -> EglBoolean,
    pub(crate) destroy_context: unsafe extern "C" fn(Ptr, Ptr) -> EglBoolean,
    pub(crate) query_string: unsafe extern "C" fn(Ptr, EglInt) -> *const c_char,
    pub(crate) _lib: Library,
}

pub(crate) struct GlFns {
    pub(crate) get_error: unsafe extern "C" fn() -> u32,
    pub(crate) finish: unsafe extern "C" fn(),
    pub(crate) get_string: unsafe extern "C" fn(u32) -> *const c_char,
    pub(crate) pixel_store_i: unsafe extern "C" fn(u32, i32),
    pub(crate) gen_buffers: unsafe extern "C" fn(i32, *mut u32),
    pub(crate) delete_buffers: unsafe extern "C" fn(i32, *const u32),
    pub(crate) bind_buffer: unsafe extern "C" fn(u32, u32),
    pub(crate) buffer_data: unsafe extern "C" fn(u32, isize, *const c_void, u32),
    pub(crate) get_buffer_sub_data: unsafe extern "C" fn(u32, isize, isize, *mut c_void),
    pub(crate) gen_textures: unsafe extern "C" fn(i32, *mut u32),
    pub(crate) delete_textures: unsafe extern "C" fn(i32, *const u32),
    pub(crate) bind_texture: unsafe extern "C" fn(u32, u32),
    pub(crate) tex_parameter_i: unsafe extern "C" fn(u32, u32, i32),
    pub(crate) tex_image_2d:
        unsafe extern "C" fn(u32, i32, i32, i32, i32, i32, u32, u32, *const c_void),
    pub(crate) get_tex_image: unsafe extern "C" fn(u32, i32, u32, u32, *mut c_void),
}

/// A headless OpenGL context, current on the thread that made it.
pub(crate) struct Headless {
    pub(crate) egl: &'static Egl,
    pub(crate) gl: GlFns,
    pub(crate) display: Ptr,
    pub(crate) context: Ptr,
}

impl Egl {
    pub(crate) fn load() -> Result<Self, String> {
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

    pub(crate) fn proc_address(&self, name: &str) -> Ptr {
        let name = std::ffi::CString::new(name.trim_end_matches('\0')).unwrap();
        // SAFETY: a NUL-terminated name; EGL returns null or an entry point.
        unsafe { (self.get_proc_address)(name.as_ptr()) }
    }

    /// `what` failed, with EGL's error code.
    pub(crate) fn failure(&self, what: &str) -> String {
        // SAFETY: no arguments; reads the thread's last EGL error.
        let code = unsafe { (self.get_error)() };
        format!(
            "{what} failed: eglGetError() = {code:#06x}{}",
            egl_error_name(code)
        )
    }

    /// The displays to try: one per EGL device (the one CUDA names as device
    /// 0 first, when `EGL_NV_device_cuda` says), then the default display.
    pub(crate) fn displays(&self, notes: &mut Vec<String>) -> Vec<Ptr> {
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

pub(crate) fn egl_error_name(code: EglInt) -> &'static str {
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

pub(crate) fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        return "?".into();
    }
    // SAFETY: EGL and GL return NUL-terminated static strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Headless {
    /// A context on a display whose GPU CUDA knows as device 0, current on
    /// this thread, or why none could be made.
    pub(crate) fn new() -> Result<Self, String> {
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
    pub(crate) fn on(egl: &Egl, display: Ptr) -> Result<Ptr, String> {
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

    pub(crate) fn gl_fns(egl: &Egl, lib: Option<&Library>) -> Result<GlFns, String> {
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

    pub(crate) fn describe(&self) -> String {
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
    pub(crate) fn check(&self, what: &str) {
        // SAFETY: a current context.
        let e = unsafe { (self.gl.get_error)() };
        assert_eq!(e, GL_NO_ERROR, "{what}: glGetError() = {e:#x}");
    }

    /// A new GL buffer object holding `initial`, bound to `GL_ARRAY_BUFFER`.
    pub(crate) fn buffer(&self, initial: &[u32]) -> u32 {
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
pub(crate) fn setup() -> Option<(Device, Headless, Stream)> {
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
