//! Safe, idiomatic CUDA for Rust: the counterpart of NVIDIA's `cuda.core`.
//!
//! ```no_run
//! use cudars_core::{
//!     CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, Program,
//!     ProgramOptions, SourceCode, StreamOptions, TypedKernel,
//! };
//!
//! let dev = Device::new(0)?;
//! dev.set_current()?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//!
//! // Compile with NVRTC for this GPU, load, look the kernel up, type it (its
//! // parameters are checked once, here).
//! let src = r#"extern "C" __global__ void scale(const float *x, float *y, float a, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) y[i] = a * x[i];
//! }"#;
//! let code = Program::new(SourceCode::Cxx(src), ProgramOptions::for_device(&dev)?)?
//!     .compile(CompileTarget::Cubin, &[])?;
//! let scale = TypedKernel::<(ConstPtr<f32>, MutPtr<f32>, f32, u32)>::new(code.get_kernel("scale")?)?;
//!
//! // Typed arrays from the device's stream-ordered pool; views for the kernel.
//! let n = 1024u32;
//! let x = DeviceBuffer::from_host(&dev, &vec![1.0f32; n as usize], &stream)?;
//! let mut y = DeviceBuffer::<f32>::zeroed(&dev, n as usize, &stream)?;
//! // SAFETY: `scale` reads x[0..n] and writes y[0..n]; both hold `n` floats.
//! unsafe { scale.launch(&stream, &LaunchConfig::for_elements(n.into(), 256), (x.view(), y.view_mut(), 3.0, n))? };
//! assert!(y.to_vec(&stream)?.iter().all(|&v| v == 3.0));
//! # Ok::<(), cudars_core::Error>(())
//! ```
//!
//! Built on [`cudars_bindings`] (and [`cudars_pathfinder`], which finds the libraries
//! and headers; both re-exported); nothing links to CUDA at build time. Every failure
//! is an [`Error`]: what was being done, with CUDA's error (code, name,
//! description) as its [`source`](std::error::Error::source); a missing driver or
//! compiler is [`Error::Unavailable`], whose reason lists where it was searched
//! for. Each level of an error says its own part once: print the whole chain with
//! [`Error::report`] (or `anyhow`'s `{:#}`), not `to_string()` alone.
//!
//! | area | types |
//! |---|---|
//! | devices and contexts | [`Device`] ([`Device::current`]), [`DeviceProperties`], [`Context`] |
//! | green contexts | [`Device::resources`], [`SmResource`] (split into groups; [`SmResource::split_groups`] per group, CUDA 13.1), [`WorkqueueResource`] (CUDA 13.1), [`Context::create_green`], [`Context::green_id`] |
//! | failures no caller can receive | [`set_cleanup_hook`], [`cleanup_failures`] (a `Drop` whose destroy fails) |
//! | checkpoint and restore | [`checkpoint`] (lock, checkpoint, restore, unlock a process by pid) |
//! | ordering and timing | [`Stream`], [`Event`] |
//! | awaiting GPU work (any executor) | [`Stream::completion`] and [`Stream::completion_with`] ([`Completion`]), [`Event::wait_async`] and `(&event).await` ([`EventWait`]), [`DeviceView::to_vec_async`] ([`ToVec`]), [`DeviceViewMut::copy_from_pinned_async`], [`DeviceView::copy_to_pinned_async`], [`trim_completion_pools`]: one reactor thread for the process, a first-poll spin, pooled events and staging, cancellation that frees nothing in use |
//! | typed memory | [`DeviceBuffer`], [`DeviceView`] and [`DeviceViewMut`] (slices, splits, offset copies), [`ArcView`] (an owned sub-range, for graph nodes and DLPack), [`PinnedBuffer`] (asynchronous host copies; its `view` and `view_mut` are kernel arguments) |
//! | memory | [`Buffer`], [`MemoryResource`] and [`DeviceMemoryResource`], [`PinnedMemoryResource`], [`LegacyPinnedMemoryResource`], [`ManagedMemoryResource`] ([`ManagedBuffer`]), `VirtualMemoryResource` (feature `vmm`; shared with other processes: `VirtualMemoryIpcDescriptor`) |
//! | batched memory operations (CUDA 13) | [`copy_batch`], [`copy_batch_with`] (options per copy) ([`BatchCopy`], [`BatchViewCopy`], `zip` for two lists), [`prefetch_batch`], [`discard_batch`], [`discard_prefetch_batch`] (whole buffers or views) |
//! | compiling and linking | [`Program`] (NVRTC, NVVM, PTX; [`ProgramBackend`]), [`nvrtc`] (NVRTC's version, architectures and PCH heap), [`ProgramOptions`] ([`ProgramOptions::for_device`]; headers: [`ProgramOptions::with_toolkit_headers`]), [`Linker`] (nvJitLink, or the driver's), [`FatbinBuilder`] (nvFatbin: cubins, PTX and LTO-IR for several architectures in one fatbin), [`ObjectCode`] |
//! | loading and launching | [`Library`], [`Module`], [`Kernel`] (attributes, occupancy), [`LaunchConfig`] (clusters: [`Grid`] names the grid's unit), [`TypedKernel`] (checked once, launched with a tuple), [`launch`] (the byte API) |
//! | kernels from a `.cu` file | `kernels!` (feature `macros`): a struct with one typed launch function per `extern "C"` kernel, compiled with NVRTC at run time |
//! | graphs (CUDA 13) | [`GraphBuilder`] (`cuda.core`'s: building by capture, split and joined, with conditional bodies; the graph keeps everything queued into it alive; graph memory: [`GraphView`]), [`Graph`] (stream capture, also into an existing graph or a conditional body: [`Stream::begin_capture_into`]; explicit, conditional and memory nodes; typed kernel nodes: [`Graph::add_kernel_typed`]; typed fill and copy nodes on sub-ranges: [`Graph::add_fill`], [`Graph::add_copy`]), [`GraphExec`] |
//! | system information | `system` (feature `nvml`; NVML: versions, memory, BAR1, utilisation, temperature, power, clocks and clock event reasons, PCI, MIG, field values, InfoROM, CPU and memory affinity, fans; errors by `NvmlErrorKind`) |
//! | program cache | `cache` (feature `cache`: cache keys, in-memory and file caches safe across processes) |
//! | arrays, textures, surfaces | feature `arrays`: `OpaqueArray`, `MipmappedArray`, `TextureObject` (filtered, addressed reads), `SurfaceObject` |
//! | Hopper TMA | feature `tensor-maps`: `TensorMapDescriptor` (tiled, im2col and im2col-wide tensor maps, passed to kernels by value; `TensorMapDescriptor::from_tiled` takes the element type and shape from a typed view, `TiledOptions` every option with a default; `TensorMapDescriptor::replace_address`) |
//! | for library crates | [`LibraryError`] (the error shape cuBLAS, cuRAND, cuFFT, NCCL and cuFile share), [`ContextScope`] (a stream's context current for a scope, green contexts included), [`rebind_stream`] (moving a library handle to another stream), [`DriverGate`] and [`LibraryRelease`] (a library of a newer CUDA major than the driver is a typed error), [`release_or_defer`] (a handle's destroy from its `Drop`, deferred on a driver callback thread) |
//! | interop | feature `dlpack`: `StridedMemoryView` (of a [`Buffer`] or an [`ArcView`], DLPack import, the CUDA Array Interface: `CudaArrayInterface`; host arrays: NumPy's `ArrayInterface`, a borrowed slice (`StridedHostView`); functions take `IntoStridedMemoryView`, ordered per call with the consumer's stream; other producers: `ViaDLPack`, `ForeignCudaArray`), `Buffer::to_dlpack` and `ArcView::to_dlpack` (export, typed: `DLPackDType`; the C structures in `dlpack`); feature `ipc`, IPC (Linux): pool file descriptors, `IpcBufferDescriptor`, IPC events; feature `gl`, OpenGL: `GraphicsResource` (register a buffer or image, map it: `GraphicsMapping`) |
//!
//! Ownership follows CUDA's ordering rules: streams keep their context, buffers
//! keep their memory resource and the stream they are freed on (and work a safe
//! method queues on another stream is ordered before that free), kernels keep their
//! library. Launching a kernel ([`launch`], [`Graph::add_kernel`],
//! [`GraphBuilder::launch`]) and capturing a stream directly
//! ([`Stream::begin_capture`]) are `unsafe`: device code can touch any memory its
//! arguments point to, and captured work names memory by address (a
//! [`GraphBuilder`] keeps what is queued into it alive instead).
//!
//! # Features
//!
//! None is on by default: a dependency on `cudars-core` alone builds the driver,
//! NVRTC, nvJitLink, nvFatbin and NVVM, with no proc-macro and no hashing crate,
//! and without the parts most programs do not call (interop, IPC, virtual
//! memory, arrays and textures, tensor maps), so that a dependent's first build
//! is short (`docs/performance.md`, "A
//! dependent's build"). Each feature adds a part and what it needs; they are
//! additive. The `cudars` umbrella crate turns them all on by default.
//!
//! | feature | what it adds | dependencies it adds |
//! |---|---|---|
//! | `macros` | `kernels!` (turns `cache` and `half` on, for its `load_cached` and `__half` parameters) | `cudars-core-macros` (`syn`) |
//! | `half` | `half::f16` and `half::bf16` as [`TypedKernel`] parameters, DLPack dtypes and tensor map elements, and the `half` crate as `cudars_core::half` (as [`launch`] arguments and fill values they need no feature: any `Pod` type is one, `half`'s with its `bytemuck` feature) | `half` |
//! | `cache` | `cache`: the program cache (keys, in-memory and file caches) | `sha2`, `tempfile` |
//! | `nvml` | `system` (NVML's system information), `Error::Nvml`, `NvmlErrorKind`, `Device::to_system_device`, NVML in [`versions`] | NVML's bindings |
//! | `runtime` | the runtime (`libcudart`) in [`versions`] (cudars-core makes no runtime call) | the runtime's bindings |
//! | `dlpack` | DLPack, the CUDA Array Interface and strided views: `StridedMemoryView`, `StridedHostView`, `StridedLayout`, `ArrayInterface`, `CudaArrayInterface`, `ViaDLPack`, `ForeignCudaArray`, `Buffer::to_dlpack`, `ArcView::to_dlpack`, the `dlpack` module | none |
//! | `ipc` | sharing pools and buffers with other processes (Unix): `IpcMemoryPool`, `IpcBufferDescriptor`, `PoolUuid`, IPC events | none |
//! | `vmm` | virtual memory: `VirtualMemoryResource` and its options, `VirtualMemoryIpcDescriptor` | none |
//! | `arrays` | `OpaqueArray`, `MipmappedArray`, `TextureObject`, `SurfaceObject` | none |
//! | `gl` | OpenGL interop: `GraphicsResource`, `GraphicsMapping` (turns `arrays` on) | none |
//! | `tensor-maps` | Hopper's tensor maps: `TensorMapDescriptor` (with `dlpack`, also from a `StridedMemoryView`) | none |

#![cfg_attr(docsrs, feature(doc_cfg))]

mod callback;
pub mod checkpoint;
mod cleanup;
mod code;
mod completion;
mod context;
mod deferred;
mod device;
mod error;
mod event;
mod graph;
mod interop;
mod launch;
mod library_kit;
mod memory;
mod panics;
mod properties;
mod resources;
mod stream;
mod stream_capture;
mod sync;
#[cfg(feature = "nvml")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
pub mod system;
mod timeline;
mod versions;

pub use cleanup::{CleanupFailures, cleanup_failures, clear_cleanup_hook, set_cleanup_hook};
#[cfg(feature = "cache")]
#[cfg_attr(docsrs, doc(cfg(feature = "cache")))]
pub use code::cache;
pub use code::compile::nvrtc;
pub use code::compile::{
    CompileTarget, CompilerBackend, PchStatus, Program, ProgramBackend, ProgramHandle,
    ProgramOptions, RawProgramHandle, SourceCode, toolkit_include_dirs,
};
pub use code::fatbin::FatbinBuilder;
pub use code::jit::JitOptions;
pub use code::kernel::{CachePreference, Kernel, KernelAttributes, Occupancy};
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use code::kernel_check;
pub use code::library::{Global, LibraryOptions};
pub use code::library_handle::Library;
pub use code::linker::{Linker, LinkerBackend, LinkerHandle};
pub use code::linker_options::LinkerOptions;
pub use code::module::{LoadingMode, Module};
pub use code::object::{CodeType, ObjectCode};
pub use code::tool_args::UncheckedOptions;
pub use completion::Completion;
pub use completion::copies::ToVec;
pub use completion::event_wait::EventWait;
pub use completion::staging::trim_completion_pools;
pub use context::{Context, ContextOptions, PreviousContext};
pub use cudars_bindings;
/// Typed launch functions generated from the `extern "C" __global__` kernels of
/// a CUDA C++ file.
///
/// ```text
/// cudars_core::kernels! {
///     /// Documentation and attributes of the generated struct.
///     pub struct Ops = "kernels/ops.cu";     // relative to the crate's Cargo.toml
///     type Affine = crate::Affine;           // a C struct → a Rust `Pod` type (checked)
///     unsafe type Vec3 = crate::Vec3;        // a type the macro cannot check (yours to prove)
///     only saxpy, affine;                    // optional: these kernels alone
/// }
/// ```
///
/// The macro reads the file when the crate is compiled (no CUDA toolkit is
/// needed then; cargo rebuilds when it changes), embeds it, and generates
/// `struct Ops` with
///
/// * `Ops::load(&device)`: NVRTC compiles the source for the
///   device's architecture ([`ProgramOptions::for_device`]), with a check of
///   each kernel's signature after it ([`kernel_check`]): the compiler, with
///   its own preprocessor, proves each kernel has the type its launch function
///   takes, or the compilation is an [`Error::InvalidArgument`] of kind
///   [`InvalidKind::KernelSignature`] naming the kernel and both signatures;
///   each kernel then becomes a [`TypedKernel`], checked against the kernel's
///   parameters (`cuKernelGetParamInfo`): a size that differs is an
///   [`Error::InvalidArgument`] naming the kernel and the parameter;
///   `load_cached(&device, &cache)` goes through a [program cache](cache);
///   `load_with(options, cache)`, `compile(options, cache)` and
///   `from_object(&code)` are the steps; `SOURCE`, `PROGRAM_NAME` and
///   `KERNELS` are constants;
/// * per kernel, an `unsafe fn name(&self, stream, config, …)` taking the
///   kernel's parameters by their C names, with the C signature in its
///   documentation, and `name_kernel(&self) -> &TypedKernel<…>`.
///
/// `= source "…"` takes the source inline instead of from a file;
/// `only saxpy, affine;` generates those kernels alone (the others' parameters
/// are not looked at), and names why when one cannot be had (a template, a C++
/// name, no such kernel).
///
/// A source kept in a `const` or `static` (as NVIDIA's Python examples keep
/// theirs in a module-level string), or any other constant `&'static str`
/// expression (`include_str!`, `concat!`), is `= source EXPR;`. The macro runs
/// before such a value exists, so it cannot read the signatures from it: repeat
/// the declarations the kernels need (their prototypes, and the `struct`s and
/// `typedef`s they name) in `declare "…";`. The signatures are read from
/// `declare`. The proof that they are the source's is the compiler's, as for
/// any source: `compile` (and so `load`) compiles `SOURCE` with the check of
/// the signatures read from `declare`, and refuses a kernel the compiler sees
/// otherwise. Earlier, as a convenience, a constant of the generated code fails
/// to evaluate, naming the declaration, unless `SOURCE`'s text holds each of
/// them as written (whitespace aside; a kernel inside an `extern "C" { … }`
/// block is declared with or without its `extern "C"`): a textual search, which
/// a comment or an inactive `#if` arm holding the words satisfies; the
/// compiler's check does not. At load time, each parameter's size is checked
/// too, as for any source (CUDA 12.4 and later). Without `declare`
/// the macro says what to write; a file is better named by its path
/// (`= "kernels/ops.cu"`, which the macro reads itself). A source made at run
/// time (read from a file, formatted) has no `SOURCE` to embed: compile it with
/// [`Program`] and type its kernels with [`TypedKernel::new`].
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// const CODE: &str = r#"
///     extern "C" __global__ void scale(float a, float* y, unsigned long long n) {
///         unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
///         if (i < n) y[i] *= a;
///     }
/// "#;
/// cudars_core::kernels! {
///     struct Scale = source CODE;
///     declare r#"extern "C" __global__ void scale(float a, float* y, unsigned long long n);"#;
/// }
/// let k = Scale::load(dev)?;
/// let mut y = cudars_core::DeviceBuffer::<f32>::zeroed(dev, 512, s)?;
/// // SAFETY: scale touches y[0..n], n = 512 = the view's length.
/// unsafe { k.scale(s, &cudars_core::LaunchConfig::for_elements(512, 128), 2.0, y.view_mut(), 512)? };
/// # Ok(()) }
/// ```
///
/// A declaration the source does not hold does not compile:
///
/// ```compile_fail,E0080
/// const CODE: &str = r#"extern "C" __global__ void scale(float a, float* y, int n) {}"#;
/// cudars_core::kernels! {
///     struct Scale = source CODE;
///     declare r#"extern "C" __global__ void scale(float a, float* y, unsigned long long n);"#;
/// }
/// ```
///
/// nor does a source expression without `declare`:
///
/// ```compile_fail
/// const CODE: &str = r#"extern "C" __global__ void scale(float a, float* y, int n) {}"#;
/// cudars_core::kernels! {
///     struct Scale = source CODE;
/// }
/// ```
///
/// A `PinnedBuffer`'s [`view`](PinnedBuffer::view) and
/// [`view_mut`](PinnedBuffer::view_mut) are arguments as a `DeviceBuffer`'s are.
///
/// | C parameter | Rust argument |
/// |---|---|
/// | `const T* x`, `T const* x`, `const T* __restrict__ x`, `const T x[]` | `x: DeviceView<'_, T>` |
/// | `T* x`, `T* const x`, `T x[]` | `x: DeviceViewMut<'_, T>` |
/// | `float`, `double` | `f32`, `f64` |
/// | `char`, `signed char`, `unsigned char` | `c_char`, `i8`, `u8` |
/// | `short`, `int`, `long long` (`unsigned` too) | `i16`, `i32`, `i64` (`u16`, `u32`, `u64`) |
/// | `long`, `unsigned long` | `c_long`, `c_ulong` (the platform's, as CUDA's) |
/// | `int8_t` … `uint64_t`, `size_t`, `ptrdiff_t` (`std::` too) | `i8` … `u64`, `usize`, `isize` |
/// | `bool` | `bool` |
/// | `__half`, `__nv_bfloat16` | [`half::f16`], [`half::bf16`] |
/// | `cudaTextureObject_t`, `cudaSurfaceObject_t`, `const __grid_constant__ CUtensorMap` | `&TextureObject`, `&SurfaceObject`, `&TensorMapDescriptor` (a typedef of them in the source: `u64`) |
/// | a `typedef` or `using` name of the source (`typedef double real;`, chains, `const`, pointer typedefs) | what it names: `real* y` takes `y: DeviceViewMut<'_, f64>` |
/// | `Name p`, `const __grid_constant__ Name p` (a struct, union or enum of the source) | `p: &T`, with `type Name = T;` (`T: Pod`; its size and alignment checked at compile time); a struct with pointer fields: `p: LentVal<'_, T>` (its `ViewPtr` fields made from views, which stay borrowed for the launch) |
/// | `const Name*`, `Name*` | views of `T`, with `type Name = T;` (checked the same way) |
///
/// Every pointer's element type and every value's type is read from the
/// source: a `typedef` or `using` (any chain of them) is followed to what it
/// names, so `typedef double real;` makes `real*` a view of `f64`. A mapping
/// `type Name = T;` is checked at compile time: for a name that is a C scalar,
/// `T` must be that scalar's Rust type (`type real = f32;` over
/// `typedef double real;` is a compile error); for a struct or union whose
/// fields the macro can lay out (scalars, pointers, arrays, other such structs,
/// enums with a fixed type, `__align__`/`alignas` on the type), `T` must have
/// its size and alignment; for an enum with a fixed underlying type (or an
/// `enum class`), that type's. That the fields of a mapped struct are the C
/// fields in order is the caller's to keep (each launch function's `# Safety`
/// says so).
///
/// What the macro cannot resolve is a compile error that says why and what to
/// do: a name the source does not declare (from a header, say), a name that
/// is a `#define` (the preprocessor is not run), a name declared differently
/// under two arms of an `#if`, `void*`, a struct whose layout it does not read
/// (bit-fields, base classes, virtual functions, member attributes). Write the
/// type out or declare it in the source; or, for one you can vouch for, map it
/// with `unsafe type Name = T;` (`unsafe type void = u8;` for a `void*`): the
/// launch functions that use it then say in their `# Safety` that `T` having
/// that layout is the caller's to prove. `unsafe type` for a type the macro
/// can check is refused, so that it marks exactly what is unproven.
///
/// Any other parameter (a pointer to a pointer, a reference, a template type,
/// a default argument, `long double`, a `bool*`), or more than 16 parameters,
/// is a compile error naming the file, line, kernel, parameter and type; so is
/// a mapping no parameter uses. `__global__` functions that are not
/// `extern "C"` (templates, C++ names) have no name to load by and are left
/// out. The macro does not run the preprocessor (it reads `#define`s, with
/// comments and line splices as the preprocessor reads them, and refuses a type
/// they name): write kernel signatures without macros (a kernel under both arms
/// of an `#if` must be declared the same way in both). What the preprocessor
/// and the compile options would make of a signature otherwise is the
/// compiler's check's to catch, at `compile`. Only the named file is embedded and watched for changes: a header it
/// includes from its own directory needs that directory in
/// [`ProgramOptions::include_path`] (`load_with`), and a cache refuses options
/// with include paths, whose files the key cannot see (see
/// [`cache::make_program_cache_key`]): compile those without one. The struct derives
/// `Debug` and `Clone`.
///
/// The generated code names this crate however it is reached: through the
/// `cudars` umbrella (`cudars::core::kernels!`, with no dependency on
/// `cudars-core` of your own) or under a renamed dependency
/// (`cuda-core = { package = "cudars-core", … }`, then `cuda_core::kernels!`),
/// the macro passes its own path. `crate = path;` first in the input names it
/// explicitly, as serde's `#[serde(crate = "…")]` does:
/// `cudars_core::kernels! { crate = ::my_reexport::cuda; struct Ops = …; }`.
///
/// ```no_run
/// # fn main() -> cudars_core::Result<()> {
/// use cudars_core::{Device, DeviceBuffer, LaunchConfig, StreamOptions};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Affine { scale: f32, shift: f32, n: u32 }
///
/// cudars_core::kernels! {
///     /// Two kernels.
///     struct Ops = source r#"
///         struct Affine { float scale; float shift; unsigned n; };
///         extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
///             int i = blockIdx.x * blockDim.x + threadIdx.x;
///             if (i < n) y[i] = a * x[i] + y[i];
///         }
///         extern "C" __global__ void affine(const __grid_constant__ Affine p, float* y) {
///             unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///             if (i < p.n) y[i] = p.scale * y[i] + p.shift;
///         }
///     "#;
///     type Affine = Affine;
/// }
///
/// let dev = Device::new(0)?;
/// let stream = dev.create_stream(StreamOptions::default())?;
/// let ops = Ops::load(&dev)?; // compiled and checked here
/// let x = DeviceBuffer::from_host(&dev, &[1.0f32; 1024], &stream)?;
/// let mut y = DeviceBuffer::<f32>::zeroed(&dev, 1024, &stream)?;
/// let cfg = LaunchConfig::for_elements(1024, 256);
/// // SAFETY: saxpy touches x[0..n] and y[0..n]; both hold n = 1024 floats.
/// unsafe { ops.saxpy(&stream, &cfg, 2.0, x.view(), y.view_mut(), 1024)? };
/// let p = Affine { scale: 0.5, shift: 1.0, n: 1024 };
/// // SAFETY: affine touches y[0..p.n].
/// unsafe { ops.affine(&stream, &cfg, &p, y.view_mut())? };
/// # Ok(()) }
/// ```
///
/// A typedef's pointer takes views of the C type it names:
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// cudars_core::kernels! {
///     struct Reals = source r#"
///         typedef double real;
///         extern "C" __global__ void fill(real* out, real v, int n) {
///             int i = blockIdx.x * blockDim.x + threadIdx.x;
///             if (i < n) out[i] = v;
///         }
///     "#;
/// }
/// let k = Reals::load(dev)?;
/// let mut y = cudars_core::DeviceBuffer::<f64>::zeroed(dev, 512, s)?;
/// let cfg = cudars_core::LaunchConfig::for_elements(512, 128);
/// // SAFETY: fill writes out[0..n], n = 512 = the view's length.
/// unsafe { k.fill(s, &cfg, y.view_mut(), 1.5, 512)? };
/// # Ok(()) }
/// ```
///
/// and a mapping that says otherwise does not compile (the `f32` view of 512
/// elements would take 512 `double`s, twice its bytes):
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Reals = source r#"
///         typedef double real;
///         extern "C" __global__ void fill(real* out, real v, int n) {}
///     "#;
///     type real = f32;
/// }
/// ```
///
/// nor does an `f32` view for it:
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Reals = source r#"
///         typedef double real;
///         extern "C" __global__ void fill(real* out, int n) {}
///     "#;
/// }
/// fn f(k: &Reals, y: &mut cudars_core::DeviceBuffer<f32>, s: &cudars_core::Stream) {
///     let c = cudars_core::LaunchConfig::for_elements(512, 128);
///     unsafe { k.fill(s, &c, y.view_mut(), 512) };
/// }
/// ```
///
/// A type named through a macro is not resolved, mapped or not:
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Reals = source r#"
///         #define real double
///         extern "C" __global__ void fill(real* out, int n) {}
///     "#;
///     type real = f32;
/// }
/// ```
///
/// nor is one hidden behind a comment or a line splice, which the preprocessor
/// reads as a space and as nothing (and the compiler's check at `compile`
/// would refuse what the macro missed):
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Reals = source "typedef float real;\n#define/**/real double\n\
///         extern \"C\" __global__ void fill(real* out, int n) {}";
/// }
/// ```
///
/// A mapped struct of the wrong size does not compile (the source lays out
/// `P` as 12 bytes):
///
/// ```compile_fail
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Short { a: f32, b: f32 }
/// cudars_core::kernels! {
///     struct Ops = source r#"
///         struct P { float a; float b; unsigned n; };
///         extern "C" __global__ void k(const P* p, float* y) {}
///     "#;
///     type P = Short;
/// }
/// ```
///
/// A C type with no Rust type named is a compile error:
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Ops = source r#"
///         struct P { float a; };
///         extern "C" __global__ void k(P p, float* y) {}
///     "#;
/// }
/// ```
///
/// So is a parameter with no view type:
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Ops = source r#"extern "C" __global__ void k(float** rows) {}"#;
/// }
/// ```
///
/// And a shared view cannot stand for a `T*` parameter:
///
/// ```compile_fail
/// cudars_core::kernels! {
///     struct Ops = source r#"extern "C" __global__ void k(float* y) {}"#;
/// }
/// fn f(ops: &Ops, y: &cudars_core::DeviceBuffer<f32>, s: &cudars_core::Stream) {
///     let c = cudars_core::LaunchConfig::for_elements(1, 1);
///     unsafe { ops.k(s, &c, y.view()) };
/// }
/// ```
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[macro_export]
macro_rules! kernels {
    (crate = $($input:tt)*) => {
        $crate::__kernels_proc_macro! { crate = $($input)* }
    };
    ($($input:tt)*) => {
        $crate::__kernels_proc_macro! { crate = $crate; $($input)* }
    };
}

/// The procedural macro behind [`kernels!`], which passes it this crate's
/// path (`$crate`): called directly it names `::cudars_core` unless given
/// `crate = path;`.
#[cfg(feature = "macros")]
#[doc(hidden)]
pub use cudars_core_macros::kernels as __kernels_proc_macro;
/// The `cudars-nvtx` crate this one names its objects on the Nsight timeline with
/// (ranges, marks, domains, and [`TimelineName`](cudars_nvtx::TimelineName), which
/// [`Device`], [`Context`], [`Stream`] and [`Event`] implement), so that it need
/// not be a dependency of its own.
pub use cudars_nvtx;
/// The `cudars-pathfinder` crate this one finds CUDA's libraries and headers with
/// (its `find_nvidia_header_directory`, `PathfinderError`, …), so that it need not
/// be a dependency of its own.
pub use cudars_pathfinder;
pub use deferred::{DeferredFrees, deferred_frees, drain_deferred_frees};
pub use device::Device;
#[cfg(feature = "nvml")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
pub use error::NvmlErrorKind;
pub use error::{CallbackPanic, DriverRequirement, Error, InvalidKind, Report, Result, ToolError};
pub use event::{Event, EventOptions};
pub use graph::{
    CaptureArg, CaptureMode, CaptureStatus, ConditionalKind, ConditionalNodeInfo, Graph,
    GraphAllocOptions, GraphAllocation, GraphBuilder, GraphCapture, GraphCompleteOptions,
    GraphCondition, GraphDebugPrintOptions, GraphEdge, GraphEdgeKind, GraphExec, GraphMemUsage,
    GraphMemoryResource, GraphMemoryType, GraphNode, GraphNodeKind, GraphNodeParams, GraphView,
    HostNodeInfo, KernelNodeInfo, MemAllocNodeInfo, MemcpyNodeInfo, MemsetNodeInfo, NodeEvent,
};
/// The `half` crate, whose `f16` and `bf16` are kernel arguments ([`KernelArg`]).
#[cfg(feature = "half")]
#[cfg_attr(docsrs, doc(cfg(feature = "half")))]
pub use half;
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::cai::CudaArrayInterface;
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::dlpack;
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
#[doc(no_inline)]
pub use interop::dlpack::DLPackDType;
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::dlpack_producer::{DLPackProducer, ViaDLPack};
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::foreign_array::ForeignCudaArray;
#[cfg(feature = "gl")]
#[cfg_attr(docsrs, doc(cfg(feature = "gl")))]
pub use interop::graphics::{
    GraphicsMapFlags, GraphicsMapping, GraphicsRegisterFlags, GraphicsResource, MappedArray,
    MappedBuffer, gl_devices,
};
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::host_strided::{ArrayInterface, IntoStridedView, StridedHostView};
#[cfg(all(unix, feature = "ipc"))]
#[cfg_attr(docsrs, doc(cfg(all(unix, feature = "ipc"))))]
pub use interop::ipc::{IpcBufferDescriptor, IpcMemoryPool, PoolUuid};
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::strided::{IntoStridedMemoryView, StridedMemoryView};
#[cfg(feature = "dlpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
pub use interop::strided_layout::{AxisSlice, STRIDED_LAYOUT_MAX_NDIM, StrideOrder, StridedLayout};
#[cfg(feature = "arrays")]
#[cfg_attr(docsrs, doc(cfg(feature = "arrays")))]
pub use launch::array::{ArrayFormat, ArrayOptions, MipmappedArray, OpaqueArray};
#[cfg(feature = "tensor-maps")]
#[cfg_attr(docsrs, doc(cfg(feature = "tensor-maps")))]
pub use launch::tensor_map::TensorMapDescriptor;
#[cfg(feature = "tensor-maps")]
#[cfg_attr(docsrs, doc(cfg(feature = "tensor-maps")))]
pub use launch::tensor_map_array::{TensorMapElement, TiledOptions};
#[cfg(feature = "tensor-maps")]
#[cfg_attr(docsrs, doc(cfg(feature = "tensor-maps")))]
pub use launch::tensor_map_options::{
    TensorMapDataType, TensorMapDescriptorOptions, TensorMapIm2colOptions, TensorMapIm2colWideMode,
    TensorMapIm2colWideOptions, TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill,
    TensorMapSwizzle,
};
#[cfg(feature = "arrays")]
#[cfg_attr(docsrs, doc(cfg(feature = "arrays")))]
pub use launch::texture::{
    AddressMode, FilterMode, ReadMode, SurfaceObject, TextureObject, TextureOptions,
    TextureResource,
};
pub use launch::typed_kernel::{
    CaptureParam, CaptureSignature, ConstPtr, Lender, Lent, LentVal, MutPtr, Param, Signature,
    TypedKernel, Val, ViewPtr,
};
pub use launch::{DevicePtr, Dim3, Grid, KernelArg, LaunchConfig, launch, launch_raw};
pub use library_kit::release::release_or_defer;
pub use library_kit::{ContextScope, DriverGate, LibraryError, LibraryRelease, rebind_stream};
pub use memory::arc_view::ArcView;
pub use memory::batch::{
    BatchCopy, BatchCopyEntry, BatchRange, BatchRangeMut, BatchViewCopy, CopyOptions,
    MemcpyOverlapMode, MemcpySrcAccessOrder, copy_batch, copy_batch_with, discard_batch,
    discard_prefetch_batch, prefetch_batch,
};
pub use memory::device_buffer::DeviceBuffer;
pub use memory::pinned_buffer::PinnedBuffer;
pub use memory::view::{DeviceView, DeviceViewMut};
#[cfg(feature = "vmm")]
#[cfg_attr(docsrs, doc(cfg(feature = "vmm")))]
pub use memory::vmm::VirtualMemoryResource;
#[cfg(all(unix, feature = "vmm"))]
#[cfg_attr(docsrs, doc(cfg(all(unix, feature = "vmm"))))]
pub use memory::vmm_ipc::VirtualMemoryIpcDescriptor;
#[cfg(feature = "vmm")]
#[cfg_attr(docsrs, doc(cfg(feature = "vmm")))]
pub use memory::vmm_options::{
    ExportedChunk, Granularity, ShareableHandle, VirtualMemoryAccess, VirtualMemoryAllocationType,
    VirtualMemoryHandleType, VirtualMemoryLocation, VirtualMemoryOptions,
};
pub use memory::{
    Buffer, DeviceMemoryPoolOptions, DeviceMemoryResource, LegacyPinnedMemoryResource, Location,
    ManagedBuffer, ManagedMemoryResource, ManagedMemoryResourceOptions, MemoryKind, MemoryResource,
    MemoryResourceExt, PinnedMemoryResource, PinnedMemoryResourceOptions, PoolAttributes,
    PoolReuse,
};
pub use properties::DeviceProperties;
pub use resources::{
    DeviceResources, SmGroup, SmResource, SmResourceFlags, SmResourceOptions, SmSplit,
    WorkqueueResource, WorkqueueResourceOptions, WorkqueueSharingScope,
};
pub use stream::{Stream, StreamOptions};
#[doc(hidden)]
pub use stream_capture::hooks as __test_hooks;
pub use versions::{Component, Versions, versions};
