//! What an NVTX event carries: its message, colour, category and payload.

use std::ffi::{CStr, CString, c_char, c_void};
use std::marker::PhantomData;

/// A colour on the timeline, as ARGB (`0xAARRGGBB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Color(pub u32);

impl Color {
    /// An opaque colour from its red, green and blue parts.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Self {
        Color(0xff00_0000 | (r as u32) << 16 | (g as u32) << 8 | b as u32)
    }
    /// Red.
    pub const RED: Color = Color::rgb(0xe0, 0x40, 0x40);
    /// Green.
    pub const GREEN: Color = Color::rgb(0x40, 0xb0, 0x40);
    /// Blue.
    pub const BLUE: Color = Color::rgb(0x40, 0x70, 0xe0);
    /// Yellow.
    pub const YELLOW: Color = Color::rgb(0xe0, 0xc0, 0x30);
    /// Orange.
    pub const ORANGE: Color = Color::rgb(0xf0, 0x90, 0x30);
    /// Purple.
    pub const PURPLE: Color = Color::rgb(0x90, 0x50, 0xc0);
    /// Grey.
    pub const GREY: Color = Color::rgb(0x90, 0x90, 0x90);
}

/// A number attached to an event (Nsight shows it beside the range).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A signed 64-bit integer.
    I64(i64),
    /// A double.
    F64(f64),
    /// An unsigned 32-bit integer.
    U32(u32),
    /// A signed 32-bit integer.
    I32(i32),
    /// A float.
    F32(f32),
}

macro_rules! payload_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Payload {
            fn from(x: $t) -> Self {
                Payload::$v(x)
            }
        }
    )*};
}
payload_from!(u64 => U64, i64 => I64, f64 => F64, u32 => U32, i32 => I32, f32 => F32);

/// An event's text: borrowed Rust or C text, or a string registered once with a
/// [`Domain`](crate::Domain) for hot paths.
///
/// Rust text is copied into a NUL-terminated buffer only when a tool is attached
/// (with none, nothing is read); it ends at its first NUL, if it has one.
#[derive(Clone, Copy, Debug)]
pub enum Message<'a> {
    /// Rust text.
    Str(&'a str),
    /// C text, passed as is.
    CStr(&'a CStr),
    /// A registered string (in another domain, or outside any domain, its text
    /// is sent instead).
    Registered(&'a RegisteredString<'a>),
}

impl<'a> From<&'a str> for Message<'a> {
    fn from(s: &'a str) -> Self {
        Message::Str(s)
    }
}
impl<'a> From<&'a String> for Message<'a> {
    fn from(s: &'a String) -> Self {
        Message::Str(s)
    }
}
impl<'a> From<&'a CStr> for Message<'a> {
    fn from(s: &'a CStr) -> Self {
        Message::CStr(s)
    }
}
impl<'a> From<&'a RegisteredString<'a>> for Message<'a> {
    fn from(s: &'a RegisteredString<'a>) -> Self {
        Message::Registered(s)
    }
}

/// Everything an event (a mark or a range) carries: message, colour, category and
/// payload. Anything a [`Message`] converts from converts into attributes with
/// only that message.
///
/// ```
/// use cudars_nvtx::{Attributes, Color};
/// let _range = cudars_nvtx::range(Attributes::new("decode").color(Color::GREEN).payload(42u64));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub(crate) message: Message<'a>,
    pub(crate) color: Option<Color>,
    pub(crate) category: u32,
    pub(crate) payload: Option<Payload>,
}

impl<'a> Attributes<'a> {
    /// Attributes with this message, no colour, category 0 (none) and no payload.
    pub fn new(message: impl Into<Message<'a>>) -> Self {
        Attributes {
            message: message.into(),
            color: None,
            category: 0,
            payload: None,
        }
    }
    /// With this colour.
    #[must_use]
    pub fn color(mut self, color: Color) -> Self {
        self.color = Some(color);
        self
    }
    /// In this category (named with [`name_category`](crate::name_category) or
    /// [`Domain::name_category`](crate::Domain::name_category); 0 is none).
    #[must_use]
    pub fn category(mut self, category: u32) -> Self {
        self.category = category;
        self
    }
    /// With this payload.
    #[must_use]
    pub fn payload(mut self, payload: impl Into<Payload>) -> Self {
        self.payload = Some(payload.into());
        self
    }
}

macro_rules! attributes_from {
    ($($t:ty),*) => {$(
        impl<'a> From<$t> for Attributes<'a> {
            fn from(m: $t) -> Self {
                Attributes::new(m)
            }
        }
    )*};
}
attributes_from!(
    &'a str,
    &'a String,
    &'a CStr,
    &'a RegisteredString<'a>,
    Message<'a>
);

/// `nvtxEventAttributes_t` (version 3, `NVTX_EVENT_ATTRIB_STRUCT_SIZE`).
#[repr(C)]
pub(crate) struct RawAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: RawPayload,
    message_type: i32,
    message: *const c_void,
}

/// `nvtxEventAttributes_t::payload`.
#[repr(C)]
#[derive(Clone, Copy)]
union RawPayload {
    u64: u64,
    i64: i64,
    f64: f64,
    u32: u32,
    i32: i32,
    f32: f32,
}

const COLOR_ARGB: i32 = 1;
const MESSAGE_ASCII: i32 = 1;
const MESSAGE_REGISTERED: i32 = 3;

/// The longest Rust message copied on the stack; longer ones are copied to the heap.
const STACK_MESSAGE: usize = 256;

impl Attributes<'_> {
    /// Calls `f` with the C form of these attributes; `domain` is the domain the
    /// event goes to (null outside any), for registered strings.
    pub(crate) fn with_raw<R>(
        &self,
        domain: *mut c_void,
        f: impl FnOnce(&RawAttributes) -> R,
    ) -> R {
        let (payload_type, payload) = match self.payload {
            None => (0, RawPayload { u64: 0 }),
            Some(Payload::U64(v)) => (1, RawPayload { u64: v }),
            Some(Payload::I64(v)) => (2, RawPayload { i64: v }),
            Some(Payload::F64(v)) => (3, RawPayload { f64: v }),
            Some(Payload::U32(v)) => (4, RawPayload { u32: v }),
            Some(Payload::I32(v)) => (5, RawPayload { i32: v }),
            Some(Payload::F32(v)) => (6, RawPayload { f32: v }),
        };
        let raw = |message_type: i32, message: *const c_void| RawAttributes {
            version: crate::tool::NVTX_VERSION as u16,
            size: size_of::<RawAttributes>() as u16,
            category: self.category,
            color_type: if self.color.is_some() { COLOR_ARGB } else { 0 },
            color: self.color.map_or(0, |c| c.0),
            payload_type,
            reserved0: 0,
            payload,
            message_type,
            message,
        };
        match self.message {
            Message::CStr(s) => f(&raw(MESSAGE_ASCII, s.as_ptr().cast())),
            Message::Str(s) => with_c_str(s, |p| f(&raw(MESSAGE_ASCII, p.cast()))),
            Message::Registered(r) => {
                if !domain.is_null() && r.domain_handle() == domain && !r.handle().is_null() {
                    f(&raw(MESSAGE_REGISTERED, r.handle()))
                } else {
                    f(&raw(MESSAGE_ASCII, r.text().as_ptr().cast()))
                }
            }
        }
    }
}

/// Text registered with a [`Domain`](crate::Domain) ([`Domain::register_string`](crate::Domain::register_string)): a message
/// that costs the tool a handle lookup instead of a copy. It borrows its domain,
/// so it cannot outlive it.
#[derive(Debug)]
pub struct RegisteredString<'d> {
    /// The tool's `nvtxStringHandle_t` (null without a tool).
    handle: *mut c_void,
    /// The handle of the domain it was registered in.
    domain: *mut c_void,
    text: CString,
    /// Borrows the domain it was registered in (made only by
    /// [`Domain::register_string`](crate::Domain::register_string), whose `&self` gives `'d`).
    _domain: PhantomData<&'d ()>,
}

// SAFETY: the handles are opaque tokens of the tool, never dereferenced here, and
// usable from any thread by NVTX's contract; the text is an owned `CString`.
// Soundness contract: rule 11.
unsafe impl Send for RegisteredString<'_> {}
// SAFETY: as for `Send`; nothing is mutated through `&self`.
// Soundness contract: rule 11.
unsafe impl Sync for RegisteredString<'_> {}

impl RegisteredString<'_> {
    pub(crate) fn new(handle: *mut c_void, domain: *mut c_void, text: CString) -> Self {
        RegisteredString {
            handle,
            domain,
            text,
            _domain: PhantomData,
        }
    }

    /// The registered text.
    pub fn text(&self) -> &CStr {
        &self.text
    }
    pub(crate) fn handle(&self) -> *mut c_void {
        self.handle
    }
    pub(crate) fn domain_handle(&self) -> *mut c_void {
        self.domain
    }
}

/// Calls `f` with `s` as NUL-terminated C text (ending at `s`'s first NUL, if any).
pub(crate) fn with_c_str<R>(s: &str, f: impl FnOnce(*const c_char) -> R) -> R {
    let bytes = s.as_bytes();
    let bytes = match bytes.iter().position(|&b| b == 0) {
        Some(n) => &bytes[..n],
        None => bytes,
    };
    if bytes.len() < STACK_MESSAGE {
        let mut buf = [0u8; STACK_MESSAGE];
        buf[..bytes.len()].copy_from_slice(bytes);
        f(buf.as_ptr().cast())
    } else {
        let mut v = Vec::with_capacity(bytes.len() + 1);
        v.extend_from_slice(bytes);
        v.push(0);
        f(v.as_ptr().cast())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_struct_has_the_headers_layout() {
        // NVTX_EVENT_ATTRIB_STRUCT_SIZE on 64-bit targets, and the union at 24.
        #[cfg(target_pointer_width = "64")]
        assert_eq!(size_of::<RawAttributes>(), 48);
        assert_eq!(std::mem::offset_of!(RawAttributes, payload), 24);
        assert_eq!(std::mem::offset_of!(RawAttributes, message_type), 32);
    }

    #[test]
    fn rust_text_is_cut_at_its_first_nul_and_long_text_is_whole() {
        let got = with_c_str("ab\0cd", |p| {
            // SAFETY: `with_c_str` hands out NUL-terminated text alive for the call.
            unsafe { CStr::from_ptr(p) }.to_owned()
        });
        assert_eq!(got.as_bytes(), b"ab");
        let long = "x".repeat(1000);
        let n = with_c_str(&long, |p| {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(p) }.to_bytes().len()
        });
        assert_eq!(n, 1000);
    }

    #[test]
    fn colors_are_opaque_argb() {
        assert_eq!(Color::rgb(1, 2, 3).0, 0xff01_0203);
    }

    #[test]
    fn payloads_carry_their_type_and_value() {
        let a = Attributes::new("x")
            .payload(-3i32)
            .category(7)
            .color(Color(5));
        a.with_raw(std::ptr::null_mut(), |r| {
            assert_eq!(r.payload_type, 5);
            // SAFETY: the payload was written as `i32`.
            assert_eq!(unsafe { r.payload.i32 }, -3);
            assert_eq!((r.category, r.color_type, r.color), (7, COLOR_ARGB, 5));
            assert_eq!(r.message_type, MESSAGE_ASCII);
        });
    }
}
