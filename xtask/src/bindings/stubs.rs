//! The stand-in headers bindgen reads in place of headers the bindings must
//! not depend on: CCCL's `<nv/target>`, OpenGL's `<GL/gl.h>` and, for Windows,
//! the C library's.

use std::fs;

use super::apis::Os;

/// CCCL's `<nv/target>`, which `cuda_fp16.h` and `cuda_bf16.h` include even when
/// read as C, only for C++ and device code: an empty stand-in (in `target/`) keeps
/// the bindings independent of the CCCL headers. OpenGL's `<GL/gl.h>`, which
/// `cudaGL.h` includes for `GLuint` and `GLenum` alone: a stand-in with the two
/// types as the OpenGL specification defines them (32-bit unsigned), so the
/// bindings depend on no OpenGL headers and are the same on every machine.
///
/// For Windows, also the C library headers the CUDA headers include
/// ([`WINDOWS_LIBC_STANDINS`]): there is no Windows C library (nor a clang
/// resource folder) here, and bindgen keeps only the CUDA headers' items anyway.
/// The stand-ins define the C types and limits from clang's predefined macros
/// for the target (`__SIZE_TYPE__`, `__LONG_MAX__`, …), so they are the target's
/// own; a CUDA header that used anything more of the C library would fail to
/// parse (an unknown name is clang's error) rather than bind wrongly.
pub(super) fn stub_include_dir(os: Os) -> Result<std::path::PathBuf, String> {
    let dir = crate::util::workspace_root()
        .join("target")
        .join("bindgen-stubs")
        .join(os.name());
    let write = |rel: &str, text: &str| -> Result<(), String> {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write(
        "nv/target",
        "/* cuda-rs: empty stand-in for CCCL's <nv/target>, used only by C++ and device code */\n",
    )?;
    write(
        "GL/gl.h",
        "/* cuda-rs: stand-in for OpenGL's <GL/gl.h>: the two types cudaGL.h uses */\n\
         #pragma once\n\
         typedef unsigned int GLenum;\n\
         typedef unsigned int GLuint;\n",
    )?;
    if os == Os::Windows {
        for (h, body) in WINDOWS_LIBC_STANDINS {
            write(
                h,
                &format!(
                    "/* cuda-rs: stand-in for the C library's <{h}>, from clang's target macros */\n\
                     #pragma once\n{body}"
                ),
            )?;
        }
    }
    Ok(dir)
}

/// The C library headers the bound CUDA headers include, as stand-ins built on
/// clang's predefined macros (see [`stub_include_dir`]).
const WINDOWS_LIBC_STANDINS: [(&str, &str); 6] = [
    (
        "stddef.h",
        "typedef __SIZE_TYPE__ size_t;\n\
         typedef __PTRDIFF_TYPE__ ptrdiff_t;\n\
         typedef __WCHAR_TYPE__ wchar_t;\n\
         #define NULL ((void *)0)\n\
         #define offsetof(t, m) __builtin_offsetof(t, m)\n",
    ),
    (
        "stdint.h",
        "typedef __INT8_TYPE__ int8_t;\n\
         typedef __INT16_TYPE__ int16_t;\n\
         typedef __INT32_TYPE__ int32_t;\n\
         typedef __INT64_TYPE__ int64_t;\n\
         typedef __UINT8_TYPE__ uint8_t;\n\
         typedef __UINT16_TYPE__ uint16_t;\n\
         typedef __UINT32_TYPE__ uint32_t;\n\
         typedef __UINT64_TYPE__ uint64_t;\n\
         typedef __INTPTR_TYPE__ intptr_t;\n\
         typedef __UINTPTR_TYPE__ uintptr_t;\n\
         #define INT32_MAX __INT32_MAX__\n\
         #define INT64_MAX __INT64_MAX__\n\
         #define UINT32_MAX __UINT32_MAX__\n\
         #define UINT64_MAX __UINT64_MAX__\n",
    ),
    (
        "limits.h",
        "#define CHAR_BIT __CHAR_BIT__\n\
         #define SCHAR_MAX __SCHAR_MAX__\n\
         #define SHRT_MAX __SHRT_MAX__\n\
         #define INT_MAX __INT_MAX__\n\
         #define LONG_MAX __LONG_MAX__\n\
         #define LLONG_MAX __LONG_LONG_MAX__\n\
         #define INT_MIN (-__INT_MAX__ - 1)\n\
         #define LONG_MIN (-__LONG_MAX__ - 1L)\n\
         #define LLONG_MIN (-__LONG_LONG_MAX__ - 1LL)\n\
         #define UCHAR_MAX (__SCHAR_MAX__ * 2 + 1)\n\
         #define USHRT_MAX (__SHRT_MAX__ * 2 + 1)\n\
         #define UINT_MAX (__INT_MAX__ * 2U + 1U)\n\
         #define ULONG_MAX (__LONG_MAX__ * 2UL + 1UL)\n\
         #define ULLONG_MAX (__LONG_LONG_MAX__ * 2ULL + 1ULL)\n",
    ),
    ("stdlib.h", "#include <stddef.h>\n"),
    (
        // `cuComplex.h`'s inline functions call these.
        "math.h",
        "double fabs(double);\n\
         float fabsf(float);\n\
         double sqrt(double);\n\
         float sqrtf(float);\n\
         double hypot(double, double);\n\
         float hypotf(float, float);\n",
    ),
    (
        // `cublasLtLoggerSetFile` takes a `FILE *`, whose layout is the C
        // library's own: opaque here, as the Windows C library declares it to users.
        "stdio.h",
        "#include <stddef.h>\ntypedef struct _iobuf FILE;\n",
    ),
];
