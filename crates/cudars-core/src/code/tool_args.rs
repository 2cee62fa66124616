//! The one reading of a compiler's or linker's assembled argument vector
//! ([`check_args`]), and [`UncheckedOptions`], the escape hatch for what it
//! cannot read.
//!
//! NVRTC, NVVM and nvJitLink take their options as one vector of strings, and
//! NVRTC and nvJitLink hand some of them on to ptxas (or NVVM), which reads them
//! again. A count of split-compile threads beyond what the system can start
//! crashes (SIGSEGV) or hangs the whole process, and it can be spelled in many
//! ways: NVRTC's own `--split-compile`, nvJitLink's `-split-compile` and
//! `-split-compile-extended`, or ptxas's, forwarded through `-Xptxas`,
//! `--ptxas-options`, in the same entry or the next, split over several
//! forwarded pieces (`-Xptxas=--split-compile -Xptxas=99999`). So the typed
//! fields are rendered first, the free-form ones (`ptxas_options`, `extra`)
//! after them, and this one function reads the whole vector as the tool does
//! and checks every count in it. An option it does not know is refused, not
//! passed: an unknown option may forward its argument to another tool, where a
//! count could hide.

use crate::error::{Error, Result};

/// The most threads a split compile may ask for, by any spelling: NVRTC's
/// `--split-compile` (`ProgramOptions::split_compile`), nvJitLink's
/// `-split-compile` and `-split-compile-extended` (`LinkerOptions`), and
/// ptxas's own, forwarded through `ptxas_options` or `extra`.
///
/// NVRTC (12.9 and 13.0) compiling for a real architecture (`sm_XY`) runs its
/// ptxas with a pool of exactly that many threads, however little there is to
/// compile. It allocates 16 bytes per thread unchecked, so a count whose table
/// the system will not allocate (about a 16th of the memory: 1 962 186 399 on a
/// 24 GiB machine) crashes the process with SIGSEGV; and when it cannot start
/// them all (past the process's or container's thread limit: 32 256 on a
/// machine whose `pid_max` is 32 768) it waits forever for the missing ones, a
/// hang; nvJitLink's ptxas does the same. Where that limit lies depends on the
/// machine, so a sound bound is the number of threads a machine can run, not
/// what a tool happens to survive here: 1024 is more hardware threads than
/// today's largest servers have (0 still asks for one per CPU), and starting
/// that many threads is cheap everywhere a compiler runs.
pub(crate) const MAX_SPLIT_COMPILE_THREADS: u64 = 1024;

/// The tool an argument vector is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    /// NVRTC (`nvrtcCompileProgram`).
    Nvrtc,
    /// libNVVM (`nvvmCompileProgram`).
    Nvvm,
    /// nvJitLink (`nvJitLinkCreate`).
    NvJitLink,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Self::Nvrtc => "NVRTC",
            Self::Nvvm => "NVVM",
            Self::NvJitLink => "nvJitLink",
        }
    }
}

/// How an option the parser knows takes its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// Nothing (`--device-debug`).
    Nothing,
    /// A plain value, after `=` or in the next entry (`--define-macro=N`).
    Value,
    /// A value after `=`, in the next entry, or attached to the short name
    /// (`-DN`, `-I/inc`, `-O3`).
    Attached,
    /// A count of split-compile threads, after `=` or in the next entry.
    Count,
    /// A comma-separated list of options for another tool, after `=` or in
    /// the next entry (`-Xptxas=-v,-O3`).
    Forward(Stream),
}

/// The tools options are forwarded to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Ptxas,
    Nvvm,
}

/// NVRTC's options (CUDA 12 and 13), by name without the leading dashes
/// (NVRTC takes `-` and `--` alike), long and short spellings.
const NVRTC: &[(&str, Takes)] = &[
    ("gpu-architecture", Takes::Value),
    ("arch", Takes::Value),
    ("relocatable-device-code", Takes::Value),
    ("rdc", Takes::Value),
    ("extensible-whole-program", Takes::Nothing),
    ("ewp", Takes::Nothing),
    ("device-debug", Takes::Nothing),
    ("G", Takes::Nothing),
    ("generate-line-info", Takes::Nothing),
    ("lineinfo", Takes::Nothing),
    ("dopt", Takes::Value),
    ("ptxas-options", Takes::Forward(Stream::Ptxas)),
    ("Xptxas", Takes::Forward(Stream::Ptxas)),
    ("maxrregcount", Takes::Value),
    ("ftz", Takes::Value),
    ("prec-sqrt", Takes::Value),
    ("prec-div", Takes::Value),
    ("fmad", Takes::Value),
    ("use_fast_math", Takes::Nothing),
    ("extra-device-vectorization", Takes::Nothing),
    ("modify-stack-limit", Takes::Value),
    ("dlink-time-opt", Takes::Nothing),
    ("dlto", Takes::Nothing),
    ("gen-opt-lto", Takes::Nothing),
    ("optix-ir", Takes::Nothing),
    ("jump-table-density", Takes::Value),
    ("device-stack-protector", Takes::Value),
    ("define-macro", Takes::Value),
    ("D", Takes::Attached),
    ("undefine-macro", Takes::Value),
    ("U", Takes::Attached),
    ("include-path", Takes::Value),
    ("I", Takes::Attached),
    ("pre-include", Takes::Value),
    ("include", Takes::Value),
    ("no-source-include", Takes::Nothing),
    ("std", Takes::Value),
    ("builtin-move-forward", Takes::Value),
    ("builtin-initializer-list", Takes::Value),
    ("disable-warnings", Takes::Nothing),
    ("w", Takes::Nothing),
    ("restrict", Takes::Nothing),
    ("Wno-deprecated-gpu-targets", Takes::Nothing),
    ("Wno-deprecated-declarations", Takes::Nothing),
    ("Wreorder", Takes::Nothing),
    ("Werror", Takes::Value),
    ("device-as-default-execution-space", Takes::Nothing),
    ("default-device", Takes::Nothing),
    ("device-int128", Takes::Nothing),
    ("device-float128", Takes::Nothing),
    ("optimization-info", Takes::Value),
    ("opt-info", Takes::Value),
    ("display-error-number", Takes::Nothing),
    ("err-no", Takes::Nothing),
    ("no-display-error-number", Takes::Nothing),
    ("no-err-no", Takes::Nothing),
    ("diag-error", Takes::Value),
    ("diag-suppress", Takes::Value),
    ("diag-warn", Takes::Value),
    ("brief-diagnostics", Takes::Value),
    ("brief-diag", Takes::Value),
    ("time", Takes::Value),
    ("split-compile", Takes::Count),
    ("fdevice-syntax-only", Takes::Nothing),
    ("minimal", Takes::Nothing),
    ("no-cache", Takes::Nothing),
    ("device-time-trace", Takes::Value),
    ("fdevice-time-trace", Takes::Value),
    ("frandom-seed", Takes::Value),
    ("Ofast-compile", Takes::Value),
    ("Ofc", Takes::Value),
    ("pch", Takes::Nothing),
    ("create-pch", Takes::Value),
    ("use-pch", Takes::Value),
    ("pch-dir", Takes::Value),
    ("pch-messages", Takes::Value),
    ("pch-verbose", Takes::Value),
    ("instantiate-templates-in-pch", Takes::Value),
    ("use-bundled-headers", Takes::Value),
    ("extended-lambda", Takes::Nothing),
    ("expt-extended-lambda", Takes::Nothing),
    ("expt-relaxed-constexpr", Takes::Nothing),
    ("static-global-template-stub", Takes::Value),
    ("numba-debug", Takes::Nothing),
];

/// libNVVM's options (`nvvmCompileProgram`).
const NVVM: &[(&str, Takes)] = &[
    ("arch", Takes::Value),
    ("opt", Takes::Value),
    ("g", Takes::Nothing),
    ("generate-line-info", Takes::Nothing),
    ("ftz", Takes::Value),
    ("prec-sqrt", Takes::Value),
    ("prec-div", Takes::Value),
    ("fma", Takes::Value),
    ("gen-lto", Takes::Nothing),
    ("jump-table-density", Takes::Value),
    ("numba-debug", Takes::Nothing),
];

/// nvJitLink's options (`nvJitLinkCreate`).
const NVJITLINK: &[(&str, Takes)] = &[
    ("arch", Takes::Value),
    ("maxrregcount", Takes::Value),
    ("time", Takes::Nothing),
    ("verbose", Takes::Nothing),
    ("lto", Takes::Nothing),
    ("ptx", Takes::Nothing),
    ("O", Takes::Attached),
    ("g", Takes::Nothing),
    ("lineinfo", Takes::Nothing),
    ("ftz", Takes::Value),
    ("prec-div", Takes::Value),
    ("prec-sqrt", Takes::Value),
    ("fma", Takes::Value),
    ("kernels-used", Takes::Value),
    ("variables-used", Takes::Value),
    ("optimize-unused-variables", Takes::Nothing),
    ("Xptxas", Takes::Forward(Stream::Ptxas)),
    ("Xnvvm", Takes::Forward(Stream::Nvvm)),
    ("split-compile", Takes::Count),
    ("split-compile-extended", Takes::Count),
    ("jump-table-density", Takes::Value),
    ("no-cache", Takes::Nothing),
    ("device-stack-protector", Takes::Value),
    ("r", Takes::Nothing),
    ("numba-debug", Takes::Nothing),
];

fn table(tool: Tool) -> &'static [(&'static str, Takes)] {
    match tool {
        Tool::Nvrtc => NVRTC,
        Tool::Nvvm => NVVM,
        Tool::NvJitLink => NVJITLINK,
    }
}

/// One forwarded option (a piece of a `-Xptxas` list), with the field it came from.
struct Forwarded<'a> {
    field: &'a str,
    token: &'a str,
}

/// [`check_args`] over an assembled vector whose entries came from the fields
/// `marks` names: each mark is (the index of the first entry from the field,
/// the field), in order; entries before the first mark are the typed
/// `options`.
pub(crate) fn check_marked(
    tool: Tool,
    args: &[String],
    marks: &[(usize, &'static str)],
    context: &'static str,
) -> Result<()> {
    let labeled: Vec<(&str, &str)> = args
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let field = marks
                .iter()
                .rev()
                .find(|(start, _)| *start <= i)
                .map_or("options", |(_, f)| f);
            (field, arg.as_str())
        })
        .collect();
    check_args(tool, &labeled, context)
}

/// Checks an assembled argument vector (each entry with the field it came
/// from, for messages) as `tool` reads it, before `tool` sees it.
///
/// Every entry is an option the parser knows for `tool` (`-` or `--`, the
/// value after `=`, in the next entry, or for `-D`/`-U`/`-I`/`-O` attached),
/// or the value of the option before it. The options forwarded to ptxas
/// (`-Xptxas`, `--ptxas-options`, comma-separated) and to NVVM (`-Xnvvm`) are
/// joined, in order, into the argument vector the forwarded-to tool reads, and
/// that is read in turn: every split-compile count in either vector (NVRTC's,
/// nvJitLink's, ptxas's; `=N` or the next entry; decimal, octal or hex) is
/// within [`MAX_SPLIT_COMPILE_THREADS`]. A plain option's value given in the
/// next entry never starts with `-` (else it is read as an option of its own:
/// whichever way the tool reads it, it is checked).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the field and the option: an option the
/// parser does not know for `tool` (an unknown `-X…` forwarding option among
/// them), an entry that is no option, an empty entry, a forwarded option of
/// only whitespace or holding quotes or backslashes, a forwarding option or a
/// count with nothing after it, or (kind
/// [`OutOfRange`](crate::InvalidKind::OutOfRange)) a split-compile count that
/// is not a plain decimal, octal or hex number within the bound.
pub(crate) fn check_args<'a>(
    tool: Tool,
    args: &[(&'a str, &'a str)],
    context: &'static str,
) -> Result<()> {
    let known = table(tool);
    let mut ptxas: Vec<Forwarded<'a>> = Vec::new();
    let mut nvvm: Vec<Forwarded<'a>> = Vec::new();
    let unknown = |field: &str, arg: &str, why: &str| {
        Error::invalid(
            context,
            format!(
                "`{field}` has {arg:?}, {why}; options that cannot be checked can be passed, \
                 with a proof, through `extra_unchecked`"
            ),
        )
    };
    let mut i = 0;
    while i < args.len() {
        let (field, arg) = args[i];
        i += 1;
        if arg.is_empty() {
            return Err(Error::invalid(
                context,
                format!("`{field}` has an empty entry"),
            ));
        }
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(unknown(
                field,
                arg,
                &format!(
                    "which is not an option of {} (options start with `-`)",
                    tool.name()
                ),
            ));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let (takes, inline) = match known.iter().find(|(n, _)| *n == name) {
            Some(&(_, takes)) => (takes, inline),
            None => {
                // A short option with its value attached (`-DN=1`, `-O3`).
                let attached = known.iter().find(|(n, t)| {
                    *t == Takes::Attached && n.len() == 1 && body.starts_with(n) && body.len() > 1
                });
                match attached {
                    Some(&(n, _)) => (Takes::Nothing, Some(&body[n.len()..])),
                    None if name.starts_with(['X', 'x']) => {
                        return Err(unknown(
                            field,
                            arg,
                            &format!(
                                "a forwarding option {} does not have or the parser does not \
                                 know: what it forwards cannot be checked",
                                tool.name()
                            ),
                        ));
                    }
                    None => {
                        return Err(unknown(
                            field,
                            arg,
                            &format!("an option the parser does not know for {}", tool.name()),
                        ));
                    }
                }
            }
        };
        // The value in the next entry, for options that need one.
        let next_value = |i: &mut usize| -> Option<(&'a str, &'a str)> {
            let next = args.get(*i).copied();
            if next.is_some() {
                *i += 1;
            }
            next
        };
        match takes {
            Takes::Nothing => {}
            Takes::Value | Takes::Attached => {
                // A next entry that does not start with `-` can only be this
                // option's value (the tool reads no positional arguments); one
                // that does is read as an option of its own, whichever way the
                // tool takes it, and checked as one.
                if inline.is_none() && args.get(i).is_some_and(|(_, a)| !a.starts_with('-')) {
                    i += 1;
                }
            }
            Takes::Count => {
                let (vfield, value) = match inline {
                    Some(v) => (field, v),
                    None => next_value(&mut i).ok_or_else(|| {
                        Error::out_of_range(
                            context,
                            format!(
                                "`{field}` ends with {arg:?}: a split compile needs a count of \
                                 threads, from 0 to {MAX_SPLIT_COMPILE_THREADS}"
                            ),
                        )
                    })?,
                };
                check_count(vfield, arg, value, context)?;
            }
            Takes::Forward(stream) => {
                let (vfield, value) = match inline {
                    Some(v) => (field, v),
                    None => next_value(&mut i).ok_or_else(|| {
                        Error::invalid(
                            context,
                            format!("`{field}` ends with {arg:?}, which needs options to forward"),
                        )
                    })?,
                };
                let into = match stream {
                    Stream::Ptxas => &mut ptxas,
                    Stream::Nvvm => &mut nvvm,
                };
                forward(vfield, value, into, context)?;
            }
        }
    }
    check_forwarded(&ptxas, "ptxas", context)?;
    check_forwarded(&nvvm, "NVVM", context)
}

/// Splits a forwarded list (`-v,--split-compile=4`) into the options the
/// forwarded-to tool reads, refusing pieces that cannot be read one way.
fn forward<'a>(
    field: &'a str,
    value: &'a str,
    into: &mut Vec<Forwarded<'a>>,
    context: &'static str,
) -> Result<()> {
    for piece in value.split(',') {
        if piece.trim().is_empty() {
            return Err(Error::invalid(
                context,
                format!(
                    "`{field}` forwards an option that is empty or of only whitespace \
                     ({value:?}): ptxas, as NVRTC 12.9 runs it, aborts the whole process on one"
                ),
            ));
        }
        if piece.contains(['"', '\'', '\\']) {
            return Err(Error::invalid(
                context,
                format!(
                    "`{field}` forwards {piece:?}, with quotes or backslashes, which the tools \
                     may read as quoting: it cannot be checked one way"
                ),
            ));
        }
        // A tool that splits at whitespace reads the words; one that does not
        // reads one option, which the split-compile check below refuses
        // whenever a word of it would be refused.
        into.extend(
            piece
                .split_whitespace()
                .map(|token| Forwarded { field, token }),
        );
    }
    Ok(())
}

/// Reads the options forwarded to ptxas (or NVVM) as that tool reads them: a
/// split-compile count after `=` or in the next option is within the bound;
/// any other option that speaks of a split compile is refused.
fn check_forwarded(opts: &[Forwarded<'_>], tool: &str, context: &'static str) -> Result<()> {
    let mut it = opts.iter();
    while let Some(opt) = it.next() {
        let body = opt
            .token
            .strip_prefix("--")
            .or_else(|| opt.token.strip_prefix('-'));
        let (name, inline) = match body {
            Some(b) => match b.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (b, None),
            },
            None => ("", None),
        };
        if is_split_compile(name) {
            let (field, value) = match inline {
                Some(v) => (opt.field, v),
                None => match it.next() {
                    Some(next) => (next.field, next.token),
                    None => {
                        return Err(Error::out_of_range(
                            context,
                            format!(
                                "`{}` forwards {:?} to {tool} with no count after it: a split \
                                 compile needs a count of threads, from 0 to \
                                 {MAX_SPLIT_COMPILE_THREADS}",
                                opt.field, opt.token
                            ),
                        ));
                    }
                },
            };
            check_count(field, opt.token, value, context)?;
        } else if opt.token.to_ascii_lowercase().contains("split") {
            return Err(Error::invalid(
                context,
                format!(
                    "`{}` forwards {:?} to {tool}, which speaks of a split compile in a spelling \
                     the parser does not know: write `--split-compile=N`",
                    opt.field, opt.token
                ),
            ));
        }
    }
    Ok(())
}

/// Checks an option string the driver's JIT compiler or linker reads when it
/// loads a fat binary's PTX or LTO-IR entry (`FatbinBuilder::ptx`'s and
/// `ltoir`'s options, or the options block of a loaded fat binary's entry),
/// split at whitespace, as [`check_args`] checks forwarded ptxas options: every
/// split-compile count within the bound, no other option speaking of a split
/// compile, no quotes or backslashes.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `field`.
pub(crate) fn check_jit_options(field: &str, options: &str, context: &'static str) -> Result<()> {
    if options.contains(['"', '\'', '\\']) {
        return Err(Error::invalid(
            context,
            format!(
                "`{field}` holds {options:?}, with quotes or backslashes, which the driver may \
                 read as quoting: it cannot be checked one way"
            ),
        ));
    }
    let tokens: Vec<Forwarded<'_>> = options
        .split_whitespace()
        .map(|token| Forwarded { field, token })
        .collect();
    check_forwarded(&tokens, "the driver's JIT", context)
}

/// Whether `name` (without dashes) is a split-compile option, in any case and
/// with `_` for `-`.
fn is_split_compile(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('_', "-");
    name == "split-compile" || name == "split-compile-extended"
}

/// The largest number of threads `count` may stand for, as the tools read a
/// count (C's `strtoul` with base 0, or base 10): plain digits (their decimal
/// reading is never below their octal one) or `0x` and hex digits. `None` for
/// anything else: signs, spaces, other characters, or a number past `u64`.
pub(crate) fn read_count(count: &str) -> Option<u64> {
    if let Some(hex) = count
        .strip_prefix("0x")
        .or_else(|| count.strip_prefix("0X"))
    {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        return u64::from_str_radix(hex, 16).ok();
    }
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    count.parse().ok()
}

fn check_count(field: &str, option: &str, count: &str, context: &'static str) -> Result<()> {
    match read_count(count) {
        Some(n) if n <= MAX_SPLIT_COMPILE_THREADS => Ok(()),
        _ => Err(Error::out_of_range(
            context,
            format!(
                "`{field}` asks for a split compile of {count:?} threads ({option:?}); it takes \
                 a count from 0 (one per CPU) to {MAX_SPLIT_COMPILE_THREADS}, in decimal, octal \
                 or hex (the tool starts that many threads, and hangs or crashes the process \
                 when it cannot)"
            ),
        )),
    }
}

/// Options passed to the compiler or linker after all the others, **unchecked**:
/// the escape hatch for an option the crate's parser does not know (a newer
/// tool's, say), which [`ProgramOptions::extra`](crate::ProgramOptions::extra)
/// and [`LinkerOptions::extra`](crate::LinkerOptions::extra) refuse.
///
/// The default is empty; only [`new`](Self::new), which is `unsafe`, puts
/// options in. Entries with NUL bytes or empty ones are still refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct UncheckedOptions(Vec<String>);

impl UncheckedOptions {
    /// Options passed verbatim after every checked one.
    ///
    /// # Safety
    /// The caller proves that the tool the options go to (NVRTC, NVVM or
    /// nvJitLink), reading them after the checked options, neither crashes nor
    /// hangs the process on them: in particular that no split-compile count
    /// they set or forward (NVRTC's `--split-compile`, nvJitLink's
    /// `-split-compile`/`-split-compile-extended`, ptxas's through `-Xptxas` or
    /// `--ptxas-options`, or anything forwarded to another tool) exceeds the
    /// threads the system can start (this crate's bound is 1024), nor that a
    /// checked option left waiting for its value (`--split-compile` as the
    /// last checked option) is completed by them.
    pub unsafe fn new<I, S>(options: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self(options.into_iter().map(Into::into).collect())
    }

    /// The options, in order.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(tool: Tool, args: &[&str]) -> Result<()> {
        let labeled: Vec<(&str, &str)> = args.iter().map(|a| ("extra", *a)).collect();
        check_args(tool, &labeled, "test")
    }

    #[test]
    fn counts_are_read_as_the_tools_read_them() {
        for (s, n) in [
            ("0", 0),
            ("1024", 1024),
            ("0x400", 1024),
            ("0X10", 16),
            ("02000", 2000),
            ("0777", 777),
            ("0009", 9),
        ] {
            assert_eq!(read_count(s), Some(n), "{s}");
        }
        for s in [
            "",
            "+1",
            "-1",
            " 1",
            "1 ",
            "0x",
            "0xg",
            "1e3",
            "99999999999999999999",
        ] {
            assert_eq!(read_count(s), None, "{s}");
        }
    }

    #[test]
    fn every_spelling_of_a_split_compile_is_bounded() {
        let refused: &[&[&str]] = &[
            &["--split-compile=1025"],
            &["-split-compile=1025"],
            &["--split-compile", "1025"],
            &["-split-compile", "0x401"],
            &["--split-compile=02001"],
            &["--split-compile"],
            &["--split-compile", "-1"],
            &["-Xptxas=--split-compile=2000"],
            &["-Xptxas", "--split-compile=2000"],
            &["-Xptxas=-v,--split-compile,2000"],
            &["--ptxas-options=--split-compile", "--ptxas-options=2000"],
            &["--ptxas-options", "-split-compile=2000"],
            &["-Xptxas=--split-compile", "-Xptxas=1962186399"],
            &["-Xptxas=--split-compile 2000"],
            &["-Xptxas=--SPLIT_COMPILE=2000"],
            &["-Xptxas=--split-compile"],
            &["-Xptxas=-split-compile-extended=2000"],
            &["-Xptxas=--split-compile2000"],
            &["-Xptxas=-v", "--split-compile=1025"],
        ];
        for args in refused {
            let e = check(Tool::Nvrtc, args).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{args:?}: {e}");
        }
        let nvjitlink: &[&[&str]] = &[
            &["-split-compile=1025"],
            &["-split-compile-extended=1025"],
            &["-split-compile-extended", "4096"],
            &["-Xptxas=--split-compile=1962186399"],
            &["-Xnvvm=-split-compile=5000"],
            &["-Xptxas", "-split-compile", "-Xptxas", "9999"],
        ];
        for args in nvjitlink {
            assert!(check(Tool::NvJitLink, args).is_err(), "{args:?}");
        }
        let accepted: &[&[&str]] = &[
            &["--split-compile=1024"],
            &["--split-compile", "0x400"],
            &["-split-compile=0"],
            &["-Xptxas=-v,--split-compile=4"],
            &["-Xptxas", "--split-compile=4"],
            &["--ptxas-options=--split-compile", "--ptxas-options=8"],
            &["-Xptxas", "-v", "-lineinfo"],
            &["--maxrregcount=32", "-maxrregcount", "64"],
            &[
                "-DSPLIT=99999",
                "-D",
                "N=1",
                "-I/inc",
                "--define-macro",
                "split",
            ],
        ];
        for args in accepted {
            check(Tool::Nvrtc, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        check(
            Tool::NvJitLink,
            &["-split-compile-extended=4", "-O3", "-Xnvvm=-opt=3"],
        )
        .unwrap();
    }

    #[test]
    fn what_the_parser_cannot_read_is_refused() {
        for args in [
            &["-Xcompiler=-v"][..],
            &["-Xfoo", "--split-compile=99999"],
            &["--no-such-option"],
            &["positional"],
            &[""],
            &["-Xptxas"],
            &["-Xptxas= "],
            &["-Xptxas=-v,,-O3"],
            &["-Xptxas=\"--split-compile=9\""],
            &["--define-macro", "--split-compile=99999"],
            &["--split-comp=99999"],
        ] {
            let e = check(Tool::Nvrtc, args).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{args:?}: {e}");
        }
        // NVVM runs no ptxas: forwarding to it is unknown there.
        assert!(check(Tool::Nvvm, &["-Xptxas=-v"]).is_err());
        assert!(check(Tool::Nvvm, &["-opt=3", "-g"]).is_ok());
    }
}
