//! `cargo xtask structure`: the module graph of a crate, read from its source.
//!
//! Every `.rs` file under `src/` is a *room* (a module file: `a.rs` and `a/mod.rs`
//! are module `a`, `lib.rs` is the crate root). An *arrow* runs from a room to each
//! other room whose items it names through `use crate::…`, `use super::…`,
//! `use self::…`, a `use` of a child module, or a path `crate::…`/`super::…` in
//! its code. Comments, string literals and `#[cfg(test)]`/`#[cfg(loom)]` inline
//! modules are left out (tests may import what production code may not). A path
//! is followed through the `pub use`/`pub(crate) use` re-exports of the modules it
//! passes, so `crate::Device` is an arrow to the room that defines `Device`, not to
//! the crate root. `mod` declarations are not arrows.
//!
//! *Floors* are measured, not declared: the rooms' import loops are condensed into
//! one node each, and a node's floor is the longest path from it down to a room
//! that imports no other room (floor 0).
//!
//! An arrow *runs back up* when it points into an import loop it belongs to (both
//! ends in the same strongly connected component) or when it goes from an area of
//! a lower declared floor to an area of a higher one ([`LAYERS`], also drawn in
//! docs/architecture.md). Arrows within one area run back up only in a loop.
//!
//! Also printed: the import loops (components of more than one room) and the
//! hand-written files over 800 lines (a `generated` path component or file, or
//! `// DO NOT EDIT` or `@generated` in the first three lines, as the tidy test
//! reads it, marks a generated file).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{no_more, take_value, workspace_root};

/// Files longer than this are listed.
const LONG_FILE: usize = 800;

/// The declared layer table: each area of cudars-core and the floor it sits on. An
/// area may import its own floor's areas and the floors below, never above. Keep it
/// in step with the table in docs/architecture.md.
const LAYERS: &[(&str, u32, &str)] = &[
    (
        "base",
        0,
        "errors, versions, locks: what everything else names",
    ),
    (
        "ground",
        1,
        "devices, contexts, streams, events, deferred frees, callbacks, timeline names",
    ),
    (
        "memory",
        2,
        "buffers, views, memory resources, pools, VMM, batches",
    ),
    (
        "code",
        3,
        "programs, compilers, linkers, fatbins, object code, libraries, modules, kernels, the cache",
    ),
    (
        "completion",
        3,
        "futures of stream work: the reactor, completions, event waits, the async copies",
    ),
    (
        "launch",
        4,
        "launch configurations, kernel arguments, typed kernels, tensor maps, textures",
    ),
    (
        "graph",
        5,
        "graphs, graph builders, stream capture, graph memory",
    ),
    (
        "interop",
        6,
        "DLPack, strided views, the CUDA Array Interface, OpenGL, IPC",
    ),
    (
        "system",
        2,
        "NVML: system and device information and control",
    ),
    ("root", 7, "lib.rs: the public paths (re-exports only)"),
];

/// The area of a room, by the first component of its module path. Both the flat
/// layout (before the floors) and the folders are named, so that one table measures
/// either. Rooms of other crates, or names missing here, have no area.
const AREAS: &[(&str, &str)] = &[
    // base
    ("error", "base"),
    ("versions", "base"),
    ("sync", "base"),
    // ground
    ("device", "ground"),
    ("context", "ground"),
    ("resources", "ground"),
    ("checkpoint", "ground"),
    ("properties", "ground"),
    ("stream", "ground"),
    ("stream_capture", "ground"),
    ("event", "ground"),
    ("deferred", "ground"),
    ("callback", "ground"),
    ("panics", "ground"),
    ("library_kit", "ground"),
    ("timeline", "ground"),
    // memory
    ("memory", "memory"),
    ("device_buffer", "memory"),
    ("pinned_buffer", "memory"),
    ("view", "memory"),
    ("arc_view", "memory"),
    ("vmm", "memory"),
    ("batch", "memory"),
    // code
    ("code", "code"),
    ("compile", "code"),
    ("linker", "code"),
    ("fatbin", "code"),
    ("object", "code"),
    ("library", "code"),
    ("module", "code"),
    ("kernel", "code"),
    ("jit", "code"),
    ("cache", "code"),
    ("arch", "code"),
    ("strings", "code"),
    // launch
    ("launch", "launch"),
    ("typed_kernel", "launch"),
    ("tensor_map", "launch"),
    ("texture", "launch"),
    // graph
    ("graph", "graph"),
    // interop
    ("interop", "interop"),
    ("dlpack", "interop"),
    ("strided", "interop"),
    ("graphics", "interop"),
    ("ipc", "interop"),
    // system
    ("system", "system"),
    // completion
    ("completion", "completion"),
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let krate = take_value(&mut args, "--crate")?.unwrap_or_else(|| "cudars-core".into());
    no_more(&args)?;
    let src = workspace_root().join("crates").join(&krate).join("src");
    if !src.is_dir() {
        return Err(format!("{} is not a directory", src.display()));
    }
    let crate_graph = Crate::read(&src)?;
    print!("{}", crate_graph.report(&krate, krate == "cudars-core"));
    Ok(())
}

/// A module path, `[]` for the crate root.
type ModPath = Vec<String>;

struct Room {
    file: PathBuf,
    lines: usize,
    generated: bool,
    /// The code with comments, literals and test modules blanked out.
    code: String,
}

struct Crate {
    rooms: BTreeMap<ModPath, Room>,
    /// Per room: the names it re-exports (`pub use`), to the absolute path they name.
    reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// Per room: the paths it re-exports with a glob.
    globs: BTreeMap<ModPath, Vec<ModPath>>,
    /// Per room: the absolute paths its `use` items and code name.
    refs: BTreeMap<ModPath, Vec<ModPath>>,
}

impl Crate {
    fn read(src: &Path) -> Result<Self, String> {
        let mut files = Vec::new();
        rust_files(src, &mut files)?;
        let mut rooms = BTreeMap::new();
        for file in files {
            let rel = file.strip_prefix(src).map_err(|e| e.to_string())?;
            let mut path: ModPath = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let last = path.pop().unwrap_or_default();
            let stem = last.trim_end_matches(".rs");
            if !(stem == "mod" || (stem == "lib" && path.is_empty())) {
                path.push(stem.to_string());
            }
            let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let generated = rel.iter().any(|c| c == "generated")
                || stem == "generated"
                || text
                    .lines()
                    .take(3)
                    .any(|l| l.contains("DO NOT EDIT") || l.contains("@generated"));
            let code = strip_test_modules(&blank(&text));
            rooms.insert(
                path,
                Room {
                    file,
                    lines: text.lines().count(),
                    generated,
                    code,
                },
            );
        }
        let mut this = Crate {
            rooms,
            reexports: BTreeMap::new(),
            globs: BTreeMap::new(),
            refs: BTreeMap::new(),
        };
        let paths: Vec<ModPath> = this.rooms.keys().cloned().collect();
        for m in &paths {
            let (uses, rest) = take_uses(&this.rooms[m].code);
            let mut refs = Vec::new();
            for (public, tree) in uses {
                for (p, alias) in expand_use(&tree) {
                    let Some(abs) = this.absolute(m, &p) else {
                        continue;
                    };
                    if public {
                        if alias == "*" {
                            this.globs.entry(m.clone()).or_default().push(abs.clone());
                        } else if !alias.is_empty() {
                            this.reexports
                                .entry(m.clone())
                                .or_default()
                                .insert(alias, abs.clone());
                        }
                    }
                    refs.push(abs);
                }
            }
            for p in inline_paths(&rest) {
                if let Some(abs) = this.absolute(m, &p) {
                    refs.push(abs);
                }
            }
            this.refs.insert(m.clone(), refs);
        }
        Ok(this)
    }

    /// `p` as written in room `m`, made absolute; `None` for another crate's path.
    fn absolute(&self, m: &ModPath, p: &[String]) -> Option<ModPath> {
        let first = p.first()?;
        let mut out: ModPath;
        let mut rest = &p[1..];
        match first.as_str() {
            "crate" => out = Vec::new(),
            "self" => out = m.clone(),
            "super" => {
                out = m.clone();
                out.pop();
                while rest.first().is_some_and(|s| s == "super") {
                    out.pop();
                    rest = &rest[1..];
                }
            }
            name => {
                let mut child = m.clone();
                child.push(name.to_string());
                if !self.rooms.contains_key(&child) {
                    return None;
                }
                out = m.clone();
                rest = p;
            }
        }
        out.extend(rest.iter().cloned());
        Some(out)
    }

    /// The room an absolute path leads to, following re-exports.
    fn resolve(&self, p: &[String], depth: u32) -> ModPath {
        let mut cur: ModPath = Vec::new();
        let mut i = 0;
        while i < p.len() {
            let mut next = cur.clone();
            next.push(p[i].clone());
            if self.rooms.contains_key(&next) {
                cur = next;
                i += 1;
            } else {
                break;
            }
        }
        if i < p.len() && depth < 8 {
            let name = &p[i];
            if let Some(target) = self.reexports.get(&cur).and_then(|r| r.get(name)) {
                let mut t = target.clone();
                t.extend(p[i + 1..].iter().cloned());
                return self.resolve(&t, depth + 1);
            }
            for g in self.globs.get(&cur).into_iter().flatten() {
                let mut t = g.clone();
                t.extend(p[i..].iter().cloned());
                let r = self.resolve(&t, depth + 1);
                if r != *g {
                    return r;
                }
            }
        }
        cur
    }

    /// The arrows: room → rooms it names (no self-arrows).
    fn arrows(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut out: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for (m, refs) in &self.refs {
            let set = out.entry(m.clone()).or_default();
            for r in refs {
                let to = self.resolve(r, 0);
                if std::env::var("STRUCTURE_WHY").is_ok_and(|w| w == name(m)) {
                    eprintln!("{} names {} -> {}", name(m), r.join("::"), name(&to));
                }
                if to != *m && !to.is_empty() && self.rooms.contains_key(&to) {
                    set.insert(to);
                }
            }
        }
        out
    }

    /// Imports that name an item by a root re-export rather than its module.
    fn through_root(&self) -> usize {
        let mut n = 0;
        for (m, refs) in &self.refs {
            if m.is_empty() {
                continue;
            }
            for r in refs {
                if !r.is_empty()
                    && !self.rooms.contains_key(&r[..1])
                    && self
                        .reexports
                        .get(&Vec::new())
                        .is_some_and(|e| e.contains_key(&r[0]))
                {
                    n += 1;
                }
            }
        }
        n
    }

    /// The rooms in order, the arrows as indices into it, and the strongly
    /// connected component of each room.
    fn graph(&self) -> (Vec<&ModPath>, Vec<Vec<usize>>, Vec<usize>) {
        let arrows = self.arrows();
        let nodes: Vec<&ModPath> = self.rooms.keys().collect();
        let index: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let adj: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                arrows
                    .get(*n)
                    .into_iter()
                    .flatten()
                    .map(|t| index[t])
                    .collect()
            })
            .collect();
        let comp = scc(&adj);
        (nodes, adj, comp)
    }

    /// The import loops: the rooms of each strongly connected component of more
    /// than one room, by name.
    fn loops(&self) -> Vec<Vec<String>> {
        let (nodes, _, comp) = self.graph();
        let mut members: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            members.entry(comp[i]).or_default().push(name(n));
        }
        members.into_values().filter(|m| m.len() > 1).collect()
    }

    fn report(&self, krate: &str, layered: bool) -> String {
        let (nodes, adj, comp) = self.graph();
        let ncomp = comp.iter().max().map_or(0, |m| m + 1);
        // Floors of the condensation: the longest path down to a leaf.
        let mut floor = vec![None::<u32>; ncomp];
        fn floor_of(c: usize, cadj: &[BTreeSet<usize>], floor: &mut [Option<u32>]) -> u32 {
            if let Some(f) = floor[c] {
                return f;
            }
            let f = cadj[c]
                .iter()
                .map(|&d| floor_of(d, cadj, floor) + 1)
                .max()
                .unwrap_or(0);
            floor[c] = Some(f);
            f
        }
        let mut cadj = vec![BTreeSet::new(); ncomp];
        for (a, ts) in adj.iter().enumerate() {
            for &b in ts {
                if comp[a] != comp[b] {
                    cadj[comp[a]].insert(comp[b]);
                }
            }
        }
        for c in 0..ncomp {
            floor_of(c, &cadj, &mut floor);
        }
        let floors = floor.iter().flatten().max().map_or(0, |m| m + 1);
        let mut members: BTreeMap<usize, Vec<&ModPath>> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            members.entry(comp[i]).or_default().push(n);
        }
        let loops = self.loops();

        let mut out = String::new();
        let n_arrows: usize = adj.iter().map(Vec::len).sum();
        out += &format!("crate {krate}\n");
        out += &format!("rooms: {}\n", nodes.len());
        out += &format!("arrows: {n_arrows}\n");
        out += &format!("floors: {floors}\n");
        out += &format!("imports through root re-exports: {}\n", self.through_root());
        let mut back = Vec::new();
        for (a, ts) in adj.iter().enumerate() {
            for &b in ts {
                let why = if comp[a] == comp[b] {
                    Some("in a loop".to_string())
                } else if layered {
                    match (declared(nodes[a]), declared(nodes[b])) {
                        (Some((aa, fa)), Some((ab, fb))) if fb > fa => {
                            Some(format!("{aa} (floor {fa}) -> {ab} (floor {fb})"))
                        }
                        _ => None,
                    }
                } else {
                    None
                };
                if let Some(why) = why {
                    back.push(format!("  {} -> {}: {why}", name(nodes[a]), name(nodes[b])));
                }
            }
        }
        out += &format!("arrows running back up: {}\n", back.len());
        for b in &back {
            out += b;
            out += "\n";
        }
        out += &format!("import loops: {}\n", loops.len());
        for l in &loops {
            out += &format!("  {}\n", l.join(" <-> "));
        }
        let mut long: Vec<(&Room, &ModPath)> = self
            .rooms
            .iter()
            .filter(|(_, r)| !r.generated && r.lines > LONG_FILE)
            .map(|(m, r)| (r, m))
            .collect();
        long.sort_by_key(|a| std::cmp::Reverse(a.0.lines));
        out += &format!(
            "hand-written files over {LONG_FILE} lines: {}\n",
            long.len()
        );
        for (r, _) in &long {
            let file = r.file.strip_prefix(workspace_root()).unwrap_or(&r.file);
            out += &format!("  {:>5} {}\n", r.lines, file.display());
        }
        if std::env::var_os("STRUCTURE_ARROWS").is_some() {
            out += "arrows by room:\n";
            for (i, n) in nodes.iter().enumerate() {
                let ts: Vec<String> = adj[i].iter().map(|&t| name(nodes[t])).collect();
                out += &format!("  {} -> {}\n", name(n), ts.join(" "));
            }
        }
        out += "rooms by floor:\n";
        let mut by_floor: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            by_floor
                .entry(floor[comp[i]].unwrap_or(0))
                .or_default()
                .push(name(n));
        }
        for (f, ns) in by_floor.iter().rev() {
            out += &format!("  {f}: {}\n", ns.join(" "));
        }
        out
    }
}

/// A room's name as printed: its module path, `crate` for the root.
fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// The declared area and floor of a room of cudars-core.
fn declared(m: &ModPath) -> Option<(&'static str, u32)> {
    let area = match m.first() {
        None => "root",
        Some(first) => AREAS.iter().find(|(n, _)| n == first)?.1,
    };
    LAYERS
        .iter()
        .find(|(a, _, _)| *a == area)
        .map(|(a, f, _)| (*a, *f))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// `text` with comments, string and character literals replaced by spaces (line
/// breaks kept).
fn blank(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !prev_is_ident(&b, i)
            && raw_string_start(&b, i).is_some()
        {
            let (hashes, body) = raw_string_start(&b, i).unwrap_or((0, i));
            for _ in i..body {
                out.push(' ');
            }
            i = body;
            while i < b.len() {
                if b[i] == '"' && (1..=hashes).all(|k| b.get(i + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += hashes + 1;
                    break;
                }
                out.push(keep(b[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{..}') or a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// At `r"`, `r#"`, `br"`…: the number of hashes and where the body starts.
fn raw_string_start(b: &[char], i: usize) -> Option<(usize, usize)> {
    let mut k = i + if b[i] == 'b' { 2 } else { 1 };
    let mut hashes = 0;
    while b.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    (b.get(k) == Some(&'"')).then_some((hashes, k + 1))
}

/// Blanks the inline modules whose attributes name `test` or `loom` (`#[cfg(test)]
/// mod tests { … }`).
fn strip_test_modules(code: &str) -> String {
    let mut b: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == '#' && b[i + 1] == '[' {
            // Read the attribute run and see whether an inline `mod` follows.
            let start = i;
            let mut k = i;
            let mut attrs = String::new();
            while b.get(k) == Some(&'#') && b.get(k + 1) == Some(&'[') {
                let mut depth = 0;
                while k < b.len() {
                    attrs.push(b[k]);
                    if b[k] == '[' {
                        depth += 1;
                    } else if b[k] == ']' {
                        depth -= 1;
                        if depth == 0 {
                            k += 1;
                            break;
                        }
                    }
                    k += 1;
                }
                while b.get(k).is_some_and(|c| c.is_whitespace()) {
                    k += 1;
                }
            }
            let rest: String = b[k..b.len().min(k + 200)].iter().collect();
            let rest_t = rest
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            let is_test = words(&attrs).iter().any(|w| w == "test" || w == "loom");
            if is_test && rest_t.starts_with("mod ") {
                if let Some(open) = (k..b.len()).find(|&j| b[j] == '{' || b[j] == ';') {
                    if b[open] == '{' {
                        let mut depth = 0;
                        let mut j = open;
                        while j < b.len() {
                            if b[j] == '{' {
                                depth += 1;
                            } else if b[j] == '}' {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            j += 1;
                        }
                        let last = j.min(b.len() - 1);
                        for c in &mut b[start..=last] {
                            if *c != '\n' {
                                *c = ' ';
                            }
                        }
                        i = j + 1;
                        continue;
                    }
                }
            }
            i = k.max(i + 1);
        } else {
            i += 1;
        }
    }
    b.into_iter().collect()
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The `use` items of `code` (whether public, and the tree after `use`), and the
/// code with them blanked out.
fn take_uses(code: &str) -> (Vec<(bool, String)>, String) {
    let b: Vec<char> = code.chars().collect();
    let mut out = b.clone();
    let mut uses = Vec::new();
    let mut i = 0;
    while i + 4 <= b.len() {
        let is_use =
            b[i..i + 3] == ['u', 's', 'e'] && b[i + 3].is_whitespace() && !prev_is_ident(&b, i);
        if !is_use {
            i += 1;
            continue;
        }
        let Some(end) = (i..b.len()).find(|&j| b[j] == ';') else {
            break;
        };
        // `pub`, `pub(crate)`, `pub(super)` before it on the same statement.
        let before: String = b[i.saturating_sub(24)..i].iter().collect();
        let before = before.trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let tree: String = b[i + 3..end].iter().collect();
        let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
        uses.push((public, tree));
        for c in &mut out[i..=end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end + 1;
    }
    (uses, out.into_iter().collect())
}

/// A use tree (`crate::a::{b, c::D as E, self}`) as paths and the names they bind
/// (`*` for a glob).
fn expand_use(tree: &str) -> Vec<(ModPath, String)> {
    fn split_top(s: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
    }
    fn go(prefix: &[String], tree: &str, out: &mut Vec<(ModPath, String)>) {
        let tree = tree.trim().trim_start_matches("::");
        if let Some(open) = tree.find('{') {
            let head: Vec<String> = tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut p = prefix.to_vec();
            p.extend(head);
            for part in split_top(inner) {
                go(&p, part, out);
            }
            return;
        }
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p, Some(a.trim())),
            None => (tree, None),
        };
        let mut p = prefix.to_vec();
        p.extend(
            path.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        if p.last().is_some_and(|l| l == "self") {
            p.pop();
        }
        let bound = match alias {
            Some(a) => a.to_string(),
            None => p.last().cloned().unwrap_or_default(),
        };
        if p.last().is_some_and(|l| l == "*") {
            p.pop();
            out.push((p, "*".into()));
        } else {
            out.push((p, if bound == "_" { String::new() } else { bound }));
        }
    }
    let mut out = Vec::new();
    go(&[], tree, &mut out);
    out
}

/// The paths `crate::…` and `super::…` in code (outside `use` items).
fn inline_paths(code: &str) -> Vec<ModPath> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if (b[i].is_alphabetic() || b[i] == '_') && !prev_is_ident(&b, i) {
            let mut j = i;
            while j < b.len() && (b[j].is_alphanumeric() || b[j] == '_') {
                j += 1;
            }
            let word: String = b[i..j].iter().collect();
            if (word == "crate" || word == "super")
                && b.get(j) == Some(&':')
                && b.get(j + 1) == Some(&':')
                && !(i >= 4 && b[i - 4..i].iter().collect::<String>() == "pub(")
            {
                let mut segs = vec![word];
                let mut k = j;
                while b.get(k) == Some(&':') && b.get(k + 1) == Some(&':') {
                    k += 2;
                    let s = k;
                    while k < b.len() && (b[k].is_alphanumeric() || b[k] == '_') {
                        k += 1;
                    }
                    if s == k {
                        break;
                    }
                    segs.push(b[s..k].iter().collect());
                }
                out.push(segs);
                i = k;
                continue;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Tarjan's strongly connected components: the component of each node.
fn scc(adj: &[Vec<usize>]) -> Vec<usize> {
    struct St<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        comp: Vec<usize>,
        next: usize,
        ncomp: usize,
    }
    fn visit(s: &mut St<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        for &w in &s.adj[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                s.comp[w] = s.ncomp;
                if w == v {
                    break;
                }
            }
            s.ncomp += 1;
        }
    }
    let n = adj.len();
    let mut s = St {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        comp: vec![0; n],
        next: 0,
        ncomp: 0,
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.comp
}

#[cfg(test)]
mod tests;
