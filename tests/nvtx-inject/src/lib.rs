//! A recording NVTX tool for tests.
//!
//! Loaded as an NVTX injection library (`NVTX_INJECTION64_PATH=…/libcudars_nvtx_inject.so`),
//! it implements every call of the core, core2 (domains) and CUDA modules and
//! appends one line per call to the file `CUDARS_NVTX_INJECT_LOG` names (nothing
//! is recorded without it, but the calls still answer):
//!
//! ```text
//! <kernel thread id>\t<call>\t<details>
//! ```
//!
//! `<details>` are space-separated `key=value` pairs, the message last as
//! `msg=<text>` (a registered string as `msg=reg:<text>`). Range ids, domain and
//! string handles are small integers counted from 1. Each line is written with one
//! `write` on a file opened for appending, so lines of concurrent threads do not mix.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The variable naming the file the calls are appended to.
pub const LOG_VAR: &str = "CUDARS_NVTX_INJECT_LOG";

static LOG: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Registered strings by handle, for `msg=reg:<text>`.
static STRINGS: Mutex<Option<HashMap<usize, String>>> = Mutex::new(None);

thread_local! {
    /// Per domain handle (0: the default domain), the depth of the push/pop stack.
    static DEPTH: std::cell::RefCell<HashMap<usize, c_int>> = std::cell::RefCell::new(HashMap::new());
}

fn tid() -> i64 {
    // SAFETY: `gettid` has no preconditions.
    i64::from(unsafe { libc::syscall(libc::SYS_gettid) } as i32)
}

/// Appends a line for `call` (its details computed only when a log is open).
fn record(call: &str, details: impl FnOnce() -> String) {
    let log = LOG.get_or_init(|| {
        let path = std::env::var_os(LOG_VAR)?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        Some(Mutex::new(f))
    });
    if let Some(f) = log {
        let line = format!("{}\t{call}\t{}\n", tid(), details());
        if let Ok(mut f) = f.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The text at `p`, which an NVTX client passed (null or NUL-terminated text, by
/// the protocol's contract; the functions below receive nothing else).
fn text(p: *const c_char) -> String {
    if p.is_null() {
        return "<null>".into();
    }
    // SAFETY: an NVTX client passes NUL-terminated text, alive for the call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// `nvtxEventAttributes_t`, version 3.
#[repr(C)]
struct Attributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_void,
}

/// The attributes at `a`, which an NVTX client passed (null or valid attributes,
/// alive for the call, by the protocol's contract).
fn describe(a: *const Attributes) -> String {
    if a.is_null() {
        return "attrs=<null>".into();
    }
    // SAFETY: an NVTX client passes valid attributes, alive for the call.
    let a = unsafe { &*a };
    let mut s = format!("v={} size={}", a.version, a.size);
    if a.category != 0 {
        s += &format!(" cat={}", a.category);
    }
    if a.color_type == 1 {
        s += &format!(" color={:#010x}", a.color);
    }
    let p = a.payload;
    match a.payload_type {
        1 => s += &format!(" payload=u64:{p}"),
        2 => s += &format!(" payload=i64:{}", p as i64),
        3 => s += &format!(" payload=f64:{}", f64::from_bits(p)),
        4 => s += &format!(" payload=u32:{}", p as u32),
        5 => s += &format!(" payload=i32:{}", p as u32 as i32),
        6 => s += &format!(" payload=f32:{}", f32::from_bits(p as u32)),
        _ => {}
    }
    match a.message_type {
        // An ASCII message is NUL-terminated text.
        1 => s += &format!(" msg={}", text(a.message.cast())),
        3 => {
            let key = a.message as usize;
            let t = STRINGS
                .lock()
                .ok()
                .and_then(|m| m.as_ref().and_then(|m| m.get(&key).cloned()))
                .unwrap_or_else(|| format!("<unknown {key}>"));
            s += &format!(" msg=reg:{t}");
        }
        0 => {}
        t => s += &format!(" msg=<type {t}>"),
    }
    s
}

fn push_depth(domain: usize) -> c_int {
    DEPTH.with(|d| {
        let mut d = d.borrow_mut();
        let e = d.entry(domain).or_insert(0);
        *e += 1;
        *e - 1
    })
}

fn pop_depth(domain: usize) -> c_int {
    DEPTH.with(|d| {
        let mut d = d.borrow_mut();
        let e = d.entry(domain).or_insert(0);
        if *e == 0 {
            return -1;
        }
        *e -= 1;
        *e
    })
}

// ---- core ----

unsafe extern "C" fn mark_ex(a: *const Attributes) {
    record("mark", || describe(a));
}
unsafe extern "C" fn range_start_ex(a: *const Attributes) -> u64 {
    let id = next_id();
    record("start", || format!("id={id} {}", describe(a)));
    id
}
unsafe extern "C" fn range_end(id: u64) {
    record("end", || format!("id={id}"));
}
unsafe extern "C" fn range_push_ex(a: *const Attributes) -> c_int {
    let depth = push_depth(0);
    record("push", || format!("depth={depth} {}", describe(a)));
    depth
}
unsafe extern "C" fn range_pop() -> c_int {
    let depth = pop_depth(0);
    record("pop", || format!("depth={depth}"));
    depth
}
unsafe extern "C" fn name_category_a(id: u32, name: *const c_char) {
    record("name_category", || format!("id={id} name={}", text(name)));
}
unsafe extern "C" fn name_os_thread_a(id: u32, name: *const c_char) {
    record("name_os_thread", || format!("tid={id} name={}", text(name)));
}

// ---- core2 (domains) ----

unsafe extern "C" fn domain_mark_ex(d: *mut c_void, a: *const Attributes) {
    record("dmark", || format!("domain={} {}", d as usize, describe(a)));
}
unsafe extern "C" fn domain_range_start_ex(d: *mut c_void, a: *const Attributes) -> u64 {
    let id = next_id();
    record("dstart", || {
        format!("domain={} id={id} {}", d as usize, describe(a))
    });
    id
}
unsafe extern "C" fn domain_range_end(d: *mut c_void, id: u64) {
    record("dend", || format!("domain={} id={id}", d as usize));
}
unsafe extern "C" fn domain_range_push_ex(d: *mut c_void, a: *const Attributes) -> c_int {
    let depth = push_depth(d as usize);
    record("dpush", || {
        format!("domain={} depth={depth} {}", d as usize, describe(a))
    });
    depth
}
unsafe extern "C" fn domain_range_pop(d: *mut c_void) -> c_int {
    let depth = pop_depth(d as usize);
    record("dpop", || format!("domain={} depth={depth}", d as usize));
    depth
}
unsafe extern "C" fn domain_name_category_a(d: *mut c_void, id: u32, name: *const c_char) {
    let name = text(name);
    record("dname_category", || {
        format!("domain={} id={id} name={name}", d as usize)
    });
}
unsafe extern "C" fn domain_register_string_a(d: *mut c_void, s: *const c_char) -> *mut c_void {
    let id = next_id() as usize;
    let s = text(s);
    if let Ok(mut m) = STRINGS.lock() {
        m.get_or_insert_with(HashMap::new).insert(id, s.clone());
    }
    record("register", || {
        format!("domain={} id={id} text={s}", d as usize)
    });
    id as *mut c_void
}
unsafe extern "C" fn domain_create_a(name: *const c_char) -> *mut c_void {
    let id = next_id() as usize;
    record("domain_create", || format!("id={id} name={}", text(name)));
    id as *mut c_void
}
unsafe extern "C" fn domain_destroy(d: *mut c_void) {
    record("domain_destroy", || format!("id={}", d as usize));
}
unsafe extern "C" fn initialize(_reserved: *const c_void) {
    record("initialize", || "".to_string());
}

// ---- CUDA ----

unsafe extern "C" fn name_cu_device_a(dev: c_int, name: *const c_char) {
    record("name_cu_device", || {
        format!("device={dev} name={}", text(name))
    });
}
unsafe extern "C" fn name_cu_context_a(h: *mut c_void, name: *const c_char) {
    record("name_cu_context", || {
        format!("handle={h:p} name={}", text(name))
    });
}
unsafe extern "C" fn name_cu_stream_a(h: *mut c_void, name: *const c_char) {
    record("name_cu_stream", || {
        format!("handle={h:p} name={}", text(name))
    });
}
unsafe extern "C" fn name_cu_event_a(h: *mut c_void, name: *const c_char) {
    record("name_cu_event", || {
        format!("handle={h:p} name={}", text(name))
    });
}

type GetModuleFunctionTable =
    unsafe extern "C" fn(c_int, *mut *mut *mut *mut c_void, *mut c_uint) -> c_int;

#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: GetModuleFunctionTable,
}

/// Writes `fns` (callback id, function) into `module`'s table; false when the
/// client has no such module.
///
/// # Safety
/// `get` is the client's `GetModuleFunctionTable`.
unsafe fn fill(get: GetModuleFunctionTable, module: c_int, fns: &[(usize, *mut c_void)]) -> bool {
    let mut table: *mut *mut *mut c_void = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: the client's function with writable out-parameters.
    if unsafe { get(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(id, f) in fns {
        if id == 0 || id >= size as usize {
            continue;
        }
        // SAFETY: entries 1..size of the table point to the client's slots.
        let slot = unsafe { *table.add(id) };
        if !slot.is_null() {
            // SAFETY: as above.
            unsafe { *slot = f };
        }
    }
    true
}

/// The NVTX tool entry point: fills the client's core, core2 and CUDA tables.
///
/// # Safety
/// Called by an NVTX client with its `nvtxGetExportTable`, as the protocol says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: unsafe extern "C" fn(u32) -> *const c_void,
) -> c_int {
    // SAFETY: export table 1 is `NvtxExportTableCallbacks`.
    let cb = unsafe { get_export_table(1) }.cast::<ExportTableCallbacks>();
    if cb.is_null() {
        return 0;
    }
    // SAFETY: as above.
    let get = unsafe { (*cb).get_module_function_table };
    macro_rules! f {
        ($f:expr) => {
            $f as *mut c_void
        };
    }
    let core: [(usize, *mut c_void); 7] = [
        (1, f!(mark_ex as unsafe extern "C" fn(_))),
        (4, f!(range_start_ex as unsafe extern "C" fn(_) -> _)),
        (7, f!(range_end as unsafe extern "C" fn(_))),
        (8, f!(range_push_ex as unsafe extern "C" fn(_) -> _)),
        (11, f!(range_pop as unsafe extern "C" fn() -> _)),
        (12, f!(name_category_a as unsafe extern "C" fn(_, _))),
        (14, f!(name_os_thread_a as unsafe extern "C" fn(_, _))),
    ];
    let core2: [(usize, *mut c_void); 10] = [
        (1, f!(domain_mark_ex as unsafe extern "C" fn(_, _))),
        (
            2,
            f!(domain_range_start_ex as unsafe extern "C" fn(_, _) -> _),
        ),
        (3, f!(domain_range_end as unsafe extern "C" fn(_, _))),
        (
            4,
            f!(domain_range_push_ex as unsafe extern "C" fn(_, _) -> _),
        ),
        (5, f!(domain_range_pop as unsafe extern "C" fn(_) -> _)),
        (
            8,
            f!(domain_name_category_a as unsafe extern "C" fn(_, _, _)),
        ),
        (
            10,
            f!(domain_register_string_a as unsafe extern "C" fn(_, _) -> _),
        ),
        (12, f!(domain_create_a as unsafe extern "C" fn(_) -> _)),
        (14, f!(domain_destroy as unsafe extern "C" fn(_))),
        (15, f!(initialize as unsafe extern "C" fn(_))),
    ];
    let cuda: [(usize, *mut c_void); 4] = [
        (1, f!(name_cu_device_a as unsafe extern "C" fn(_, _))),
        (3, f!(name_cu_context_a as unsafe extern "C" fn(_, _))),
        (5, f!(name_cu_stream_a as unsafe extern "C" fn(_, _))),
        (7, f!(name_cu_event_a as unsafe extern "C" fn(_, _))),
    ];
    // SAFETY: `get` is the client's `GetModuleFunctionTable`.
    let ok = unsafe { fill(get, 1, &core) && fill(get, 5, &core2) && fill(get, 2, &cuda) };
    record("attach", || (if ok { "ok" } else { "failed" }).to_string());
    c_int::from(ok)
}
