//! The bodies of the fuzz targets, shared by the libFuzzer binaries (built with
//! `cargo fuzz`, nightly) and their replay over the seed corpus (any
//! toolchain): each takes arbitrary bytes and panics only when cudars-core
//! breaks its contract.

use cudars_core::{CodeType, LinkerOptions, ObjectCode, ProgramOptions};

/// The bound every split-compile count is held to.
const BOUND: u64 = 1024;

/// The option parser: the bytes are option entries (one per line; the first
/// byte's low bits choose how many of them go to `ptxas_options`). Whatever
/// NVRTC's, NVVM's or nvJitLink's vector the crate accepts must hold only
/// split-compile counts within the bound, as the tool reads them (the model
/// below, written apart from the crate's parser).
pub fn options(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let entries: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let to_ptxas = usize::from(first & 3).min(entries.len());
    let (ptxas, extra) = entries.split_at(to_ptxas);
    let program = ProgramOptions {
        arch: Some("sm_90".into()),
        ptxas_options: ptxas.to_vec(),
        extra: extra.to_vec(),
        split_compile: (first & 4 != 0).then_some(u32::from(first >> 3) * 64),
        ..Default::default()
    };
    if let Ok(args) = program.to_nvrtc_args() {
        assert_within(&args, "NVRTC");
    }
    let nvvm = ProgramOptions {
        arch: Some("sm_90".into()),
        extra: entries.clone(),
        ..Default::default()
    };
    if let Ok(args) = nvvm.to_nvvm_args() {
        assert_within(&args, "NVVM");
    }
    let linker = LinkerOptions {
        ptxas_options: ptxas.to_vec(),
        extra: extra.to_vec(),
        split_compile_extended: (first & 4 != 0).then_some(u32::from(first >> 3) * 64),
        ..LinkerOptions::new("sm_90")
    };
    if let Ok(args) = linker.to_nvjitlink_args() {
        assert_within(&args, "nvJitLink");
    }
}

fn assert_within(args: &[String], tool: &str) {
    for count in counts(args) {
        let ok = readings(&count).is_some_and(|r| r.iter().all(|&n| n <= BOUND));
        assert!(
            ok,
            "{tool} would read a split compile of {count:?} in {args:?}"
        );
    }
}

fn is_split(name: &str) -> bool {
    let n = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('_', "-");
    n == "split-compile" || n == "split-compile-extended"
}

/// The tool a forwarding option hands its list to: ptxas (0) or NVVM (1).
fn forwards_to(name: &str) -> Option<usize> {
    match name.trim_start_matches('-').to_ascii_lowercase().as_str() {
        "xptxas" | "ptxas-options" => Some(0),
        "xnvvm" => Some(1),
        _ => None,
    }
}

/// The readings of a count by `strtoul` with base 0 and with base 10 over the
/// whole string (`None` when either cannot read it all).
fn readings(s: &str) -> Option<[u64; 2]> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"));
    let base10 = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse::<u64>().ok()?
    } else if hex.is_some() {
        0
    } else {
        return None;
    };
    let base0 = match hex {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None if s.len() > 1 && s.starts_with('0') => {
            let digits: String = s.chars().take_while(|c| ('0'..='7').contains(c)).collect();
            u64::from_str_radix(&digits, 8).ok()?
        }
        None => base10,
    };
    Some([base10, base0])
}

/// Every split-compile count in `args` as the tools read them: the tool's own
/// options, then what each forwarded-to tool reads (its lists joined in order,
/// split at commas and whitespace).
fn counts(args: &[String]) -> Vec<String> {
    fn scan(items: &[String], found: &mut Vec<String>, mut forward: Option<&mut [Vec<String>; 2]>) {
        let mut i = 0;
        while i < items.len() {
            let (name, value) = match items[i].split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (items[i].as_str(), None),
            };
            i += 1;
            let takes = is_split(name) || (forward.is_some() && forwards_to(name).is_some());
            if !name.starts_with('-') || !takes {
                continue;
            }
            let value = value.unwrap_or_else(|| {
                i += 1;
                items.get(i - 1).cloned().unwrap_or_default()
            });
            if is_split(name) {
                found.push(value);
            } else if let (Some(streams), Some(tool)) = (forward.as_deref_mut(), forwards_to(name))
            {
                streams[tool].extend(
                    value
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned),
                );
            }
        }
    }
    let mut found = Vec::new();
    let mut streams = [Vec::new(), Vec::new()];
    scan(args, &mut found, Some(&mut streams));
    for forwarded in &streams {
        scan(forwarded, &mut found, None);
    }
    found
}

/// The image check: any bytes, declared as any kind, give `Ok` or a typed
/// refusal, and what passes keeps the size fields the driver reads inside its
/// bytes (an ELF's section and program header tables, a fat binary's entries).
pub fn image(data: &[u8]) {
    let Some((&first, bytes)) = data.split_first() else {
        return;
    };
    let kind = match first % 3 {
        0 => CodeType::Ptx,
        1 => CodeType::Cubin,
        _ => CodeType::Fatbin,
    };
    let Ok(code) = ObjectCode::new(bytes.to_vec(), kind, "fuzz") else {
        return;
    };
    if code.check_image().is_err() {
        return;
    }
    let len = bytes.len() as u128;
    let u16_at = |o: usize| u128::from(u16::from_le_bytes([bytes[o], bytes[o + 1]]));
    let u64_at = |o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&bytes[o..o + 8]);
        u128::from(u64::from_le_bytes(a))
    };
    if bytes.starts_with(b"\x7fELF") {
        assert!(bytes.len() >= 64, "a short ELF passed");
        assert!(
            u64_at(40) + u16_at(58) * u16_at(60) <= len,
            "ELF sections past the end"
        );
        assert!(
            u64_at(32) + u16_at(54) * u16_at(56) <= len,
            "ELF segments past the end"
        );
    } else if bytes.starts_with(&0xBA55_ED50u32.to_le_bytes()) {
        assert!(u16_at(6) + u64_at(8) <= len, "fat binary past the end");
    } else {
        assert!(
            !bytes.starts_with(&0x4662_43B1u32.to_le_bytes()),
            "a fat-binary wrapper passed"
        );
        assert_eq!(kind, CodeType::Ptx, "a non-binary passed as {kind}");
    }
}

/// Runs `target` on every file named on the command line, or in the
/// directories named there (the seed corpus), and says how many ran.
pub fn replay(target: fn(&[u8])) {
    let mut n = 0usize;
    for arg in std::env::args_os().skip(1) {
        let path = std::path::PathBuf::from(arg);
        let files: Vec<std::path::PathBuf> = if path.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            v.sort();
            v
        } else {
            vec![path]
        };
        for file in files {
            let data =
                std::fs::read(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            target(&data);
            n += 1;
        }
    }
    assert!(n > 0, "no inputs: name corpus files or directories");
    println!("replayed {n} inputs");
}
