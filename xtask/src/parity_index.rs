//! The generated last column of `docs/parity.md`'s name table: for each row,
//! the conformance tests (`crates/cudars-core/tests/conformance/*.rs`, cuda.core's
//! own tests ported) that exercise the row's Rust item, or "no conformance test
//! yet". Part of `cargo xtask codegen`; `--check` fails when the column is stale,
//! so a port that lands without regenerating the page fails CI.
//!
//! A test exercises a row when its body, or the body of a function of its own
//! file that it calls (transitively), uses the row's Rust item with its type:
//! - `Type` (a type or a module-level item): the name itself, outside a method
//!   call or field access (`x.Type` is not a use);
//! - `module::item`: that path, or for a type-like (capitalised) item its name;
//! - `Type::member`: the path `Type::member`; or `.member` on a receiver whose type
//!   is known to be `Type`: a variable declared `v: Type` (a `let` or a
//!   parameter, references allowed) or bound by `let v = Type::f(..)`,
//!   `Type { .. }` or a call of a local function returning `Type` (a trailing
//!   `?`, `.unwrap()` or `.expect(..)` stripped), or such an expression itself
//!   (`Type::new(..).unwrap().member`); or `member` set in a `Type { .. }`
//!   literal. A `.member` whose receiver's type is not known counts for no type:
//!   the same name on another type is not a use.
//!
//! A type is also exercised by a test that uses one of its members (so known
//! through a path, its value's type or a literal). A row is matched on its
//! first Rust path and the other paths it names of the same type or the same
//! member (paths into `cudars_bindings` aside). Tests marked
//! `#[ignore = "differs: …"]` are listed with "(differs)".

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use crate::codegen::{Generator, Outcome, ensure_file_contents};
use crate::util::{no_more, report, take_flag, workspace_root};

/// The page, relative to the workspace root.
const DOC: &str = "docs/parity.md";
/// The conformance suite, relative to the workspace root.
const SUITE: &str = "crates/cudars-core/tests/conformance";
/// The name table's header and rule, with the generated column.
const HEADER: &str = "| Python | status | Rust | conformance tests |";
const RULE: &str = "|---|---|---|---|";
/// How many tests a row names before "(N more)".
const SHOWN: usize = 3;

/// `cargo xtask codegen [--check]`'s part for `docs/parity.md`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let check = take_flag(&mut args, "--check");
    no_more(&args)?;
    let root = workspace_root();
    let path = root.join(DOC);
    let old = std::fs::read_to_string(&path).map_err(|e| format!("reading {DOC}: {e}"))?;
    let suite = Suite::read(&root.join(SUITE))?;
    let fresh = regenerate(&old, &suite)?;
    match ensure_file_contents(Generator::ParityIndex, &path, &fresh, check) {
        Ok(Outcome::Unchanged) => eprintln!("codegen: {DOC} is up to date"),
        Ok(Outcome::Written) => {}
        Err(e) => return Err(report(&e)),
    }
    Ok(())
}

/// What one function of a test file uses.
#[derive(Debug, Default, Clone)]
struct Uses {
    /// Identifiers used other than as a method or field (`x.name`).
    names: BTreeSet<String>,
    /// `(Type, member)`: paths `Type::member`, and members used on a value of
    /// known type or set in a struct literal.
    pairs: BTreeSet<(String, String)>,
    /// Identifiers called as functions (`name(..)`).
    calls: BTreeSet<String>,
}

impl Uses {
    fn extend(&mut self, other: &Uses) {
        self.names.extend(other.names.iter().cloned());
        self.pairs.extend(other.pairs.iter().cloned());
    }
}

/// One test of the suite.
#[derive(Debug)]
struct Test {
    /// `module::test_name`.
    id: String,
    /// Marked `#[ignore = "differs: …"]`.
    differs: bool,
    /// Its uses and those of the local functions it calls.
    uses: Uses,
}

/// The conformance suite's tests.
#[derive(Debug, Default)]
struct Suite {
    tests: Vec<Test>,
}

impl Suite {
    /// Every `#[test]` of every module of the suite (`main.rs` and the
    /// manifest's checks aside).
    fn read(dir: &Path) -> Result<Suite, String> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("reading {SUITE}: {e}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        let mut suite = Suite::default();
        for file in files {
            let module = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if module == "main" || module == "manifest" {
                continue;
            }
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            suite.add_file(&module, &text)?;
        }
        Ok(suite)
    }

    fn add_file(&mut self, module: &str, text: &str) -> Result<(), String> {
        let parsed =
            syn::parse_file(text).map_err(|e| format!("parsing {SUITE}/{module}.rs: {e}"))?;
        let mut fns = Vec::new();
        collect_fns(&parsed.items, &mut fns);
        // Each local function's return type, for `let v = helper(..)`.
        let returns: BTreeMap<String, String> = fns
            .iter()
            .filter_map(|f| Some((f.sig.ident.to_string(), returned_type(&f.sig.output)?)))
            .collect();
        let uses: BTreeMap<String, Uses> = fns
            .iter()
            .map(|f| (f.sig.ident.to_string(), fn_uses(f, &returns)))
            .collect();
        for f in &fns {
            let is_test = f.attrs.iter().any(|a| a.path().is_ident("test"));
            if !is_test {
                continue;
            }
            let differs = f.attrs.iter().any(|a| {
                a.path().is_ident("ignore")
                    && matches!(&a.meta, syn::Meta::NameValue(nv)
                        if matches!(&nv.value, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })
                            if s.value().starts_with("differs")))
            });
            let name = f.sig.ident.to_string();
            // The test and every local function it reaches.
            let mut seen = BTreeSet::from([name.clone()]);
            let mut todo = vec![name.clone()];
            let mut all = Uses::default();
            while let Some(n) = todo.pop() {
                let Some(u) = uses.get(&n) else { continue };
                all.extend(u);
                for c in &u.calls {
                    if uses.contains_key(c) && seen.insert(c.clone()) {
                        todo.push(c.clone());
                    }
                }
            }
            self.tests.push(Test {
                id: format!("{module}::{name}"),
                differs,
                uses: all,
            });
        }
        Ok(())
    }
}

/// Every function of `items`, inline modules' included.
fn collect_fns<'a>(items: &'a [syn::Item], out: &mut Vec<&'a syn::ItemFn>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => out.push(f),
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_fns(items, out);
                }
            }
            _ => {}
        }
    }
}

/// The type a function returns, `Result`/`Option` unwrapped: `T` of
/// `-> cudars_core::Result<T>`.
fn returned_type(output: &syn::ReturnType) -> Option<String> {
    let syn::ReturnType::Type(_, ty) = output else {
        return None;
    };
    type_name(ty)
}

/// The last name of a type's path, through references and `Result`/`Option`.
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            if matches!(name.as_str(), "Result" | "Option") {
                if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = args.args.first() {
                        return type_name(inner);
                    }
                }
                return None;
            }
            Some(name)
        }
        _ => None,
    }
}

/// What a function uses: its signature's names, and its body's.
fn fn_uses(f: &syn::ItemFn, returns: &BTreeMap<String, String>) -> Uses {
    let mut uses = Uses::default();
    let mut bindings = BTreeMap::new();
    for input in &f.sig.inputs {
        if let syn::FnArg::Typed(pt) = input {
            if let (syn::Pat::Ident(pi), Some(ty)) = (&*pt.pat, type_name(&pt.ty)) {
                bindings.insert(pi.ident.to_string(), ty);
            }
        }
    }
    let sig = &f.sig;
    let sig_tokens: TokenStream = quote::quote!(#sig);
    let mut sig_names = Vec::new();
    flatten_names(sig_tokens, &mut sig_names);
    uses.names.extend(sig_names);
    let block = &f.block;
    let body: TokenStream = quote::quote!(#block);
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    // Bindings first (anywhere in the body), then uses.
    collect_bindings(&tokens, returns, &mut bindings);
    scan(&tokens, returns, &bindings, &mut uses);
    uses
}

/// Every identifier of `tokens`, groups included.
fn flatten_names(tokens: TokenStream, out: &mut Vec<String>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => flatten_names(g.stream(), out),
            _ => {}
        }
    }
}

fn ident(t: Option<&TokenTree>) -> Option<String> {
    match t {
        Some(TokenTree::Ident(i)) => Some(i.to_string()),
        _ => None,
    }
}

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

fn is_group(t: Option<&TokenTree>, d: Delimiter) -> bool {
    matches!(t, Some(TokenTree::Group(g)) if g.delimiter() == d)
}

fn capitalised(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase())
}

/// Whether `tokens[i]` and `tokens[i + 1]` are `::`.
fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    is_punct(tokens.get(i), ':') && is_punct(tokens.get(i + 1), ':')
}

/// The type of the expression `tokens[..end]` ends with, where it can be told:
/// `Type::f(..)`, `Type::Variant`, `Type { .. }`, `helper(..)` of a local
/// function returning a type, or a variable of known type; a trailing `?`,
/// `.unwrap()`, `.expect(..)`, `.clone()` or leading `&` does not change it.
fn expr_type(
    tokens: &[TokenTree],
    end: usize,
    returns: &BTreeMap<String, String>,
    bindings: &BTreeMap<String, String>,
) -> Option<String> {
    let mut end = end;
    loop {
        if end >= 1 && is_punct(tokens.get(end - 1), '?') {
            end -= 1;
            continue;
        }
        if end >= 3
            && is_group(tokens.get(end - 1), Delimiter::Parenthesis)
            && matches!(
                ident(tokens.get(end - 2)).as_deref(),
                Some("unwrap" | "expect" | "clone")
            )
            && is_punct(tokens.get(end - 3), '.')
        {
            end -= 3;
            continue;
        }
        break;
    }
    if end == 0 {
        return None;
    }
    let last = tokens.get(end - 1)?;
    match last {
        TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis && end >= 2 => {
            let callee = ident(tokens.get(end - 2))?;
            if end >= 3 && is_punct(tokens.get(end - 3), '.') {
                return None;
            }
            if end >= 5 && is_path_sep(tokens, end - 4) {
                let owner = ident(tokens.get(end - 5))?;
                return capitalised(&owner).then_some(owner);
            }
            returns.get(&callee).cloned()
        }
        TokenTree::Group(g) if g.delimiter() == Delimiter::Brace && end >= 2 => {
            let ty = ident(tokens.get(end - 2))?;
            capitalised(&ty).then_some(ty)
        }
        TokenTree::Ident(i) => {
            let name = i.to_string();
            if end >= 2 && is_punct(tokens.get(end - 2), '.') {
                return None;
            }
            if end >= 4 && is_path_sep(tokens, end - 3) {
                // `Type::Variant` or `Type::CONST`.
                let owner = ident(tokens.get(end - 4))?;
                return capitalised(&owner).then_some(owner);
            }
            bindings.get(&name).cloned()
        }
        _ => None,
    }
}

/// `let [mut] v [: T] = expr;` and `v: T` anywhere in `tokens`: the variables
/// whose type can be told, into `bindings`.
fn collect_bindings(
    tokens: &[TokenTree],
    returns: &BTreeMap<String, String>,
    bindings: &mut BTreeMap<String, String>,
) {
    for (i, t) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = t {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            collect_bindings(&inner, returns, bindings);
            continue;
        }
        if ident(Some(t)).as_deref() != Some("let") {
            continue;
        }
        let mut j = i + 1;
        if ident(tokens.get(j)).as_deref() == Some("mut") {
            j += 1;
        }
        let Some(var) = ident(tokens.get(j)) else {
            continue;
        };
        j += 1;
        // `: [&] [mut] Type[<..>]`
        if is_punct(tokens.get(j), ':') && !is_path_sep(tokens, j) {
            let mut k = j + 1;
            while is_punct(tokens.get(k), '&') || ident(tokens.get(k)).as_deref() == Some("mut") {
                k += 1;
            }
            // The last segment of a path.
            let mut ty = None;
            while let Some(seg) = ident(tokens.get(k)) {
                ty = Some(seg);
                if is_path_sep(tokens, k + 1) {
                    k += 3;
                } else {
                    break;
                }
            }
            if let Some(ty) = ty.filter(|t| capitalised(t) && t != "Result" && t != "Option") {
                bindings.insert(var, ty);
                continue;
            }
        }
        if !is_punct(tokens.get(j), '=') {
            continue;
        }
        // The expression up to the statement's `;`.
        let Some(semi) = (j + 1..tokens.len()).find(|&k| is_punct(tokens.get(k), ';')) else {
            continue;
        };
        let start = j + 1;
        let expr: Vec<TokenTree> = tokens[start..semi]
            .iter()
            .skip_while(|t| is_punct(Some(t), '&'))
            .cloned()
            .collect();
        if let Some(ty) = expr_type(&expr, expr.len(), returns, bindings) {
            bindings.insert(var, ty);
        }
    }
}

/// The uses in `tokens` (and its groups), into `uses`.
fn scan(
    tokens: &[TokenTree],
    returns: &BTreeMap<String, String>,
    bindings: &BTreeMap<String, String>,
    uses: &mut Uses,
) {
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                // A struct literal `Type { field: .., shorthand, ..rest }`.
                if g.delimiter() == Delimiter::Brace {
                    if let Some(ty) = ident(i.checked_sub(1).and_then(|k| tokens.get(k)))
                        .filter(|t| capitalised(t))
                    {
                        for field in literal_fields(&inner) {
                            uses.pairs.insert((ty.clone(), field));
                        }
                    }
                }
                scan(&inner, returns, bindings, uses);
            }
            TokenTree::Ident(id) => {
                let name = id.to_string();
                let after_dot = i >= 1 && is_punct(tokens.get(i - 1), '.');
                if after_dot {
                    // `.member`: on a receiver of known type.
                    if let Some(ty) = expr_type(tokens, i - 1, returns, bindings) {
                        uses.pairs.insert((ty, name));
                    }
                    continue;
                }
                uses.names.insert(name.clone());
                if is_group(tokens.get(i + 1), Delimiter::Parenthesis) {
                    uses.calls.insert(name.clone());
                }
                if is_path_sep(tokens, i + 1) {
                    if let Some(member) = ident(tokens.get(i + 3)) {
                        uses.pairs.insert((name, member));
                    }
                }
            }
            _ => {}
        }
    }
}

/// The field names a struct literal's braces set: `name:` (not `name::`) and
/// the shorthand `name,` at the top level, `..rest` aside.
fn literal_fields(inner: &[TokenTree]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at_start = true;
    for (k, t) in inner.iter().enumerate() {
        if is_punct(Some(t), ',') {
            at_start = true;
            continue;
        }
        if at_start {
            if let Some(name) = ident(Some(t)) {
                let next = inner.get(k + 1);
                let field = (is_punct(next, ':') && !is_path_sep(inner, k + 1))
                    || next.is_none()
                    || is_punct(next, ',');
                if field && !capitalised(&name) {
                    out.push(name);
                }
            }
        }
        at_start = false;
    }
    out
}

/// One row of the name table.
struct Row<'a> {
    status: &'a str,
    rust: &'a str,
}

/// A row's first three cells, from a row with three or four.
fn row_cells(line: &str) -> Option<[&str; 3]> {
    let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
    match cells[..] {
        [a, b, c] | [a, b, c, _] => Some([a.trim(), b.trim(), c.trim()]),
        _ => None,
    }
}

/// Whether `s` is a Rust path: identifiers joined by `::`.
fn is_path(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|seg| {
            let mut chars = seg.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// The Rust paths a row is matched on: its first, and every other path of the
/// same type (`Buffer::copy_from`; `Buffer::copy_from_host`) or the same member
/// (`Device::workqueue_resource`, `Context::workqueue_resource`); the other
/// paths a row names in passing (an error it returns, a type it mentions) are
/// not the row's item.
fn row_paths(rust: &str) -> Vec<String> {
    let paths: Vec<&str> = rust
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| is_path(c) && !c.starts_with("cudars_bindings::"))
        .map(|c| c.strip_prefix("cudars_core::").unwrap_or(c))
        .collect();
    let Some(first) = paths.first() else {
        return Vec::new();
    };
    let split = |p: &str| -> (String, String) {
        match p.rsplit_once("::") {
            Some((owner, member)) => (
                owner.rsplit("::").next().unwrap_or(owner).to_owned(),
                member.to_owned(),
            ),
            None => (p.to_owned(), String::new()),
        }
    };
    let (owner, member) = split(first);
    let mut out = vec![(*first).to_owned()];
    for p in &paths[1..] {
        let (o, m) = split(p);
        let same_type = p.contains("::") && capitalised(&o) && o == owner;
        let same_member = !member.is_empty() && capitalised(&o) && m == member;
        if (same_type || same_member) && !out.iter().any(|x| x == p) {
            out.push((*p).to_owned());
        }
    }
    out
}

/// Whether `uses` uses the item `path` names (see the module's documentation).
fn uses_path(uses: &Uses, path: &str) -> bool {
    let segments: Vec<&str> = path.split("::").collect();
    let last = segments[segments.len() - 1];
    if segments.len() == 1 {
        // A type is also exercised through its members.
        return uses.names.contains(last)
            || (capitalised(last) && uses.pairs.iter().any(|(o, _)| o == last));
    }
    let owner = segments[segments.len() - 2];
    let pair = uses.pairs.contains(&(owner.to_owned(), last.to_owned()));
    if capitalised(owner) {
        return pair;
    }
    // `module::item`: the path, or a type-like item by its name.
    pair || (capitalised(last) && uses.names.contains(last))
}

impl Suite {
    /// The tests that use any of `paths`, by id.
    fn tests_using(&self, paths: &[String]) -> BTreeSet<usize> {
        self.tests
            .iter()
            .enumerate()
            .filter(|(_, t)| paths.iter().any(|p| uses_path(&t.uses, p)))
            .map(|(i, _)| i)
            .collect()
    }
}

/// The generated cell for a row exercised by `tests`.
fn cell(suite: &Suite, status: &str, tests: &BTreeSet<usize>) -> String {
    if status.starts_with("n/a") {
        return "—".to_owned();
    }
    if tests.is_empty() {
        return "no conformance test yet".to_owned();
    }
    let mut s = String::new();
    for (n, &i) in tests.iter().take(SHOWN).enumerate() {
        let t = &suite.tests[i];
        if n > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "`{}`", t.id);
        if t.differs {
            s.push_str(" (differs)");
        }
    }
    if tests.len() > SHOWN {
        let _ = write!(s, " ({} more)", tests.len() - SHOWN);
    }
    s
}

/// `doc` with every name-table row's last cell (and the tables' headers)
/// regenerated from `suite`.
fn regenerate(doc: &str, suite: &Suite) -> Result<String, String> {
    // First pass: the rows, and the tests of each.
    let mut rows = Vec::new();
    for line in doc.lines() {
        if line.starts_with("| `") {
            let [_, status, rust] =
                row_cells(line).ok_or_else(|| format!("{DOC}: a row of 3 or 4 cells: {line}"))?;
            rows.push(Row { status, rust });
        }
    }
    let tests: Vec<BTreeSet<usize>> = rows
        .iter()
        .map(|r| suite.tests_using(&row_paths(r.rust)))
        .collect();
    // Second pass: the page with the cells replaced.
    let mut out = String::with_capacity(doc.len() + 64 * rows.len());
    let mut k = 0;
    for line in doc.lines() {
        if line == "| Python | status | Rust |" || line == HEADER {
            out.push_str(HEADER);
        } else if line == "|---|---|---|" || line == RULE {
            out.push_str(RULE);
        } else if line.starts_with("| `") {
            let r = &rows[k];
            // The Python cell as written (it may say more than the name).
            let python = row_cells(line).map_or("", |[p, _, _]| p);
            let _ = write!(
                out,
                "| {python} | {} | {} | {} |",
                r.status,
                r.rust,
                cell(suite, r.status, &tests[k])
            );
            k += 1;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const SOURCE: &str = r#"
use cudars_core::{Buffer, PinnedMemoryResource, Program, ProgramOptions};

fn make() -> cudars_core::Result<Program> {
    Program::new(src, ProgramOptions { use_pch: true, ..Default::default() })
}

fn pinned_helper(mr: &PinnedMemoryResource) {
    let b = mr.allocate(4).unwrap();
    b.size();
}

#[test]
fn test_a() {
    let p = make().unwrap();
    p.compile();
    let unrelated = something();
    unrelated.handle();
}

#[test]
#[ignore = "differs: how"]
fn test_b() {
    let buf: Buffer = other();
    buf.copy_to(&x);
    Buffer::from_raw(p);
    Program::new(s).unwrap().backend();
}

#[test]
fn test_c() {
    pinned_helper(&mr);
}
"#;

    fn suite() -> Suite {
        let mut s = Suite::default();
        s.add_file("m", SOURCE).unwrap();
        s
    }

    fn ids(s: &Suite, path: &str) -> Vec<String> {
        s.tests_using(&[path.to_owned()])
            .into_iter()
            .map(|i| s.tests[i].id.clone())
            .collect()
    }

    #[test]
    fn members_count_only_on_their_own_type() {
        let s = suite();
        assert_eq!(s.tests.len(), 3);
        // Through a helper returning `Result<Program>`.
        assert_eq!(ids(&s, "Program::compile"), ["m::test_a"]);
        // A struct literal's field, in a helper.
        assert_eq!(ids(&s, "ProgramOptions::use_pch"), ["m::test_a"]);
        // `.handle()` on a value of unknown type is no type's use.
        assert!(ids(&s, "PinnedMemoryResource::handle").is_empty());
        assert!(ids(&s, "Buffer::handle").is_empty());
        // A declared type, a path, a chain.
        assert_eq!(ids(&s, "Buffer::copy_to"), ["m::test_b"]);
        assert_eq!(ids(&s, "Buffer::from_raw"), ["m::test_b"]);
        assert_eq!(ids(&s, "Program::backend"), ["m::test_b"]);
        // A parameter's type, reached through the test's call of a helper.
        assert_eq!(ids(&s, "PinnedMemoryResource::allocate"), ["m::test_c"]);
        // The type of `mr.allocate(4).unwrap()` is not known: `size` is no one's.
        assert!(ids(&s, "Buffer::size").is_empty());
        // A type by name: named in the test or a helper it calls.
        assert_eq!(ids(&s, "Program"), ["m::test_a", "m::test_b"]);
        assert!(ids(&s, "Program::new_from_nothing").is_empty());
        assert!(s.tests[1].differs && !s.tests[0].differs);
    }

    #[test]
    fn cells_name_three_tests_then_count_the_rest() {
        let s = suite();
        assert_eq!(cell(&s, "n/a", &BTreeSet::from([0])), "—");
        assert_eq!(
            cell(&s, "covered", &BTreeSet::new()),
            "no conformance test yet"
        );
        assert_eq!(
            cell(&s, "covered", &BTreeSet::from([0, 1])),
            "`m::test_a`, `m::test_b` (differs)"
        );
    }

    #[test]
    fn regenerating_replaces_the_last_column_and_is_stable() {
        let s = suite();
        let doc = "# t\n\n## `cuda.core`\n\n| Python | status | Rust |\n|---|---|---|\n\
                   | `Program` | covered | `Program` |\n| `cu13` | n/a | nothing |\n\n\
                   ## `Program`\n\n| Python | status | Rust |\n|---|---|---|\n\
                   | `compile` | covered | `Program::compile` |\n| `pch` | partial | `Program::pch` |\n";
        let once = regenerate(doc, &s).unwrap();
        assert!(once.contains(&format!("{HEADER}\n{RULE}\n| `Program` | covered | `Program` | `m::test_a`, `m::test_b` (differs) |\n")));
        assert!(once.contains("| `cu13` | n/a | nothing | — |\n"));
        assert!(once.contains("| `compile` | covered | `Program::compile` | `m::test_a` |\n"));
        assert!(once.contains("| `pch` | partial | `Program::pch` | no conformance test yet |\n"));
        assert_eq!(regenerate(&once, &s).unwrap(), once);
    }
}
