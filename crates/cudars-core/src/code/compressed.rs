//! The compressed payloads of fat-binary entries, decompressed for the image
//! check ([`check_image`](super::jit::check_image)) so that the ELF images (or
//! fat binaries) inside them are checked as the uncompressed ones are: the
//! driver decompresses an entry and hands the result to the same loader.
//!
//! The layout, as nvFatbin 13.0 writes it (`-compress`, `-compress-all`, and
//! each `-compress-mode=`; read from its output), of an entry header's fields
//! past the first 16 bytes (kind u16, version u16, header size u32, payload
//! size u64):
//!
//! | offset | field |
//! | --- | --- |
//! | 16 | the compressed size (u32): the bytes of the payload that hold the compressed stream (the payload is padded to 8 bytes); 0 when not compressed |
//! | 20 | the JIT options' offset from the entry (u32) |
//! | 32, 36 | the name's offset from the entry, its length (u32 each) |
//! | 40 | the flags (u64): 0x1 64-bit, 0x10 Linux, [`LZ4`] or [`ZSTD`], [`SCRAMBLED`] |
//! | 48 | for LTO-IR, a key of the scrambling (u32) |
//! | 56 | the uncompressed size (u64); 0 when not compressed |
//!
//! `-compress-mode=speed` writes a raw LZ4 block (no frame, no size prefix:
//! the size is the header's) under the flag 0x2000; `default`, `size` and
//! `balance` write one Zstandard frame (single segment, the content size in
//! its header) under the flag 0x8000; `none` (and `-compress=false`) leaves the
//! flags and both sizes 0. Small entries are left uncompressed unless
//! `-compress-all` is given (`size` compresses them all).
//!
//! LTO-IR entries (kind 8) carry [`SCRAMBLED`] as well, compressed or not: their
//! payload is neither an LZ4 block nor a Zstandard frame nor LTO-IR as read
//! (nvFatbin scrambles it, and the driver's JIT linker alone unscrambles it).
//! Such a payload cannot be checked: the image check lets it through for
//! LTO-IR entries only, which no loader reads as an ELF image.

use std::io::Read as _;

/// The flag of an entry whose payload is one raw LZ4 block.
pub(crate) const LZ4: u64 = 0x2000;
/// The flag of an entry whose payload is one Zstandard frame.
pub(crate) const ZSTD: u64 = 0x8000;
/// The flag of an entry whose payload is scrambled (LTO-IR's, as nvFatbin
/// writes it).
pub(crate) const SCRAMBLED: u64 = 0x1_0000;
/// The largest uncompressed size an entry may declare: 1 GiB, far past any
/// cubin, and the most the check decompresses for one entry.
pub(crate) const MAX_UNCOMPRESSED: u64 = 1 << 30;
/// The most an LZ4 block can expand: a byte of a match's length (255 more
/// bytes of output) at best, so `255 × input` bounds any valid block.
const LZ4_MAX_RATIO: u64 = 255;
/// The most a Zstandard frame can expand: a block of 128 KiB repeating one
/// byte takes 4 bytes (its header and the byte), so `32768 × input` bounds
/// any valid frame.
const ZSTD_MAX_RATIO: u64 = 32 * 1024;

/// How an entry's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// One raw LZ4 block ([`LZ4`]).
    Lz4,
    /// One Zstandard frame ([`ZSTD`]).
    Zstd,
}

/// How an entry's payload is compressed, by its flags: `None` when it is not,
/// an error when the flags name both codecs.
pub(crate) fn codec(flags: u64) -> Result<Option<Codec>, &'static str> {
    match flags & (LZ4 | ZSTD) {
        0 => Ok(None),
        LZ4 => Ok(Some(Codec::Lz4)),
        ZSTD => Ok(Some(Codec::Zstd)),
        _ => Err("a fat binary entry is flagged as compressed with both LZ4 and Zstandard"),
    }
}

/// Decompresses `data` (an entry's compressed stream) compressed with `codec` into exactly `declared` bytes (the uncompressed size
/// of the entry's header). A size past [`MAX_UNCOMPRESSED`] or past what the
/// codec can make of `data` is refused before anything is allocated for it;
/// a stream that does not decode, or decodes to another size, or leaves bytes
/// unread, is refused (the driver would read something else than what was
/// checked).
pub(crate) fn decompress(
    codec: Codec,
    data: &[u8],
    declared: u64,
) -> Result<Vec<u8>, &'static str> {
    let ratio = match codec {
        Codec::Lz4 => LZ4_MAX_RATIO,
        Codec::Zstd => ZSTD_MAX_RATIO,
    };
    if declared == 0 {
        return Err("a compressed fat binary entry declares no uncompressed size");
    }
    if declared > MAX_UNCOMPRESSED {
        return Err("a compressed fat binary entry declares more than 1 GiB uncompressed");
    }
    if declared > (data.len() as u64).saturating_mul(ratio) {
        return Err("a compressed fat binary entry declares more than its payload can hold");
    }
    // Within `MAX_UNCOMPRESSED`, which fits a `usize` on every target built for.
    let declared = usize::try_from(declared)
        .map_err(|_| "a compressed fat binary entry declares more than this host can address")?;
    if codec == Codec::Lz4 {
        // The ratio bounds `declared` by 255 times the payload's size.
        let mut out = vec![0u8; declared];
        match lz4_flex::block::decompress_into(data, &mut out) {
            Ok(n) if n == declared => Ok(out),
            Ok(_) => Err("a compressed fat binary entry's LZ4 block is shorter than it declares"),
            Err(_) => Err("a compressed fat binary entry's LZ4 block does not decode"),
        }
    } else {
        let mut rest = data;
        let mut decoder = ruzstd::StreamingDecoder::new(&mut rest).map_err(
            |_| "a compressed fat binary entry's Zstandard frame header does not decode",
        )?;
        // Grows with what is decoded (never from the declared size), and stops
        // one byte past it.
        let mut out = Vec::new();
        let limit = declared as u64 + 1;
        (&mut decoder)
            .take(limit)
            .read_to_end(&mut out)
            .map_err(|_| "a compressed fat binary entry's Zstandard frame does not decode")?;
        drop(decoder);
        if out.len() != declared {
            return Err(
                "a compressed fat binary entry's Zstandard frame is not the size it declares",
            );
        }
        if !rest.is_empty() {
            return Err("a compressed fat binary entry has bytes past its Zstandard frame");
        }
        Ok(out)
    }
}
