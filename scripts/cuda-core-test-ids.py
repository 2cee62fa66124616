#!/usr/bin/env python3
"""List the pytest ids of cuda.core's own test suite, read statically (``ast``).

Usage::

    python3 scripts/cuda-core-test-ids.py --tests DIR > docs/reference/cuda-core-tests.txt

``DIR`` is the ``cuda_core/tests`` folder of a checkout of NVIDIA/cuda-python at the
pinned commit (``PINNED_COMMIT`` below). Python 3.11 or later, standard library only;
nothing is imported from or run in the checkout.

Getting the pinned files (they are not committed here: this project commits no code
of NVIDIA's, only the list of ids this script derives from it)::

    git clone https://github.com/NVIDIA/cuda-python cuda-python
    git -C cuda-python archive cb56ab9f9ae3b4a0ef19666697336945925589a5 cuda_core/tests | tar -x -C /tmp/cct
    python3 scripts/cuda-core-test-ids.py --tests /tmp/cct/cuda_core/tests \
        > docs/reference/cuda-core-tests.txt

(``git clone --filter=blob:none`` keeps the download small. In the sessions of this
project, where the whole repository is over the snapshot limit, the same commit is on
the main branch of the ``mdboom/cuda-python`` fork, which the search tool's ``fetch``
brings whole; ``git --git-dir=<its git directory> archive <commit> cuda_core/tests``
then gives the same tree.) ``docs/reference/cuda-core-tests-files.txt`` lists the
files of that tree with their git blob ids, so a checkout can be compared with
``git -C cuda-python ls-tree -r <commit> cuda_core/tests``.

What is collected, as pytest (9.x) would with the suite's ``pytest.ini``:

* files ``test_*.py`` / ``*_test.py`` under ``DIR``; the ``cython`` folder is not
  recursed by pytest (``norecursedirs``) but is listed here too: the test functions
  of each ``.pyx`` module that ``cython/test_cython.py`` re-exports are listed as
  ``cython/test_cython.py::<name>``;
* module-level functions named ``test*``; classes named ``Test*`` without
  ``__init__`` (nested ones too, and methods inherited from classes of the same
  module), their methods named ``test*``;
* ``@pytest.mark.parametrize`` on the function, its classes and the module's
  ``pytestmark``, with literal ``argvalues`` (also a module-level name bound to a
  literal list), ``pytest.param(..., id=...)`` and ``ids=`` lists;
* ``params=`` of fixtures (``@pytest.fixture`` in the module, its classes and the
  ``conftest.py`` files above it) that the test uses, directly, through other
  fixtures, by ``autouse`` or ``usefixtures``; a fixture of the same name closer to
  the test wins, and a name the test parametrizes itself is not taken from a fixture.

The id of each case joins the parts as pytest does: the fixtures' parameters first
(in the order of the fixture closure, wider scopes first), then the ``parametrize``
marks from the one nearest the function outward; values become ids as pytest's
``IdMaker`` makes them (strings escaped to ASCII, numbers, ``None`` and booleans as
``str``, functions and classes of the module by name, anything else
``<argname><index>``, as is a string longer than 100 characters), and duplicates are
numbered the same way.

Where a case's id cannot be known without running the code (values computed at run
time: a comprehension, a call, an attribute such as an enum member, ``ids=`` given as
a function, a module-level list that an ``if`` extends or ``.append`` changes, which
depends on the CUDA version or backend), the function gets one line ``<id>[*]``
followed by `` # <why>``.

Checked against ``pytest --collect-only`` (pytest 9.2, cuda-core 1.2.2 and its
cuda-bindings installed, the files of the pinned commit, no GPU driver): for the 46
files that collect there, every id listed is one pytest collects, and every function
pytest expands that this list does not is one of its ``[*]`` lines. Ten files
(``test_program.py``, ``test_linker.py``, ``test_memory.py``, ``test_event.py``, …) need
the driver when imported, and ``system/`` a helper module of cuda-bindings' own tests,
so they (and the Cython test) were not compared.

Output: a header of ``#`` lines naming the pinned commit, then one id per line,
sorted, ``<path relative to DIR>::<Class>::<function>[<case>]``.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

#: The NVIDIA/cuda-python commit the list in docs/reference/cuda-core-tests.txt is read from.
PINNED_COMMIT = "cb56ab9f9ae3b4a0ef19666697336945925589a5"


class Dynamic(Exception):
    """A value (or id) that only running the code would give."""


@dataclass
class Opaque:
    """A static value whose pytest id is known (a function or class: its name) or not."""

    name: str | None


@dataclass
class Instance:
    """An object pytest has no id for (a dict, an instance): ``<argname><index>``."""


#: Builtin classes (their pytest id is their name; called, they make an instance).
BUILTIN_CLASSES = {"object", "int", "float", "bool", "str", "bytes", "bytearray", "complex", "type"} | {
    n for n in dir(__builtins__) if n.endswith(("Error", "Exception", "Warning"))
}
#: Lower-case callables known to return instances that get ``<argname><index>``.
INSTANCE_FACTORIES = {"dtype", "c_bool", "c_int", "c_uint", "c_size_t", "c_void_p", "c_float", "c_double"}


@dataclass
class Param:
    """``pytest.param(*values, id=...)``."""

    values: tuple
    id: str | None


@dataclass
class Fixture:
    name: str
    deps: list[str]
    params: list[str] | None  # ids of the cases, or None when not parametrized
    dynamic: str | None  # why the params can't be read, if so
    autouse: bool
    scope: int  # 0 session .. 4 function (for the closure's sort)


SCOPES = {"session": 0, "package": 1, "module": 2, "class": 3, "function": 4}


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return dotted(node.func) + "()"
    return "?"


def module_level_nodes(tree: ast.Module):
    """Every statement run at import: the module's body and its blocks, not the
    bodies of functions and classes."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                stack.append(child)


class Module:
    """One parsed file: its literal module-level names, defs and classes."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.env: dict[str, ast.AST] = {}
        self.defs: set[str] = set()
        self.classes: dict[str, ast.ClassDef] = {}
        self.imported: set[str] = set()
        self.modules: set[str] = set()
        for stmt in ast.walk(tree):
            if isinstance(stmt, ast.ImportFrom):
                self.imported |= {a.asname or a.name for a in stmt.names}
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    self.modules.add(a.asname or a.name)
        # names bound more than once at module level (also inside `if`/`try`/`for`
        # blocks, or changed by `+=`): their value depends on which binding ran
        counts: Counter[str] = Counter()
        for node in module_level_nodes(tree):
            if isinstance(node, ast.Assign):
                for tgt in node.targets:
                    for name in ast.walk(tgt):
                        if isinstance(name, ast.Name):
                            counts[name.id] += 1
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
                counts[node.target.id] += 2 if isinstance(node, ast.AugAssign) else 1
            elif (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and isinstance(node.value.func.value, ast.Name)
                and node.value.func.attr in ("append", "extend", "insert", "remove", "pop", "clear", "update")
            ):
                counts[node.value.func.value.id] += 2  # changed in place
            elif isinstance(node, (ast.For, ast.With)):
                for name in ast.walk(node.target if isinstance(node, ast.For) else node):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        counts[name.id] += 2
        self.rebound = {n for n, c in counts.items() if c > 1}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                for tgt in stmt.targets:
                    if isinstance(tgt, ast.Name):
                        self.env[tgt.id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                self.env[stmt.target.id] = stmt.value
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.add(stmt.name)
            elif isinstance(stmt, ast.ClassDef):
                self.defs.add(stmt.name)
                self.classes[stmt.name] = stmt

    def value(self, node: ast.AST, depth: int = 0):
        """The static value of an expression, or raise Dynamic."""
        if depth > 20:
            raise Dynamic("too deep")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    inner = self.value(elt.value, depth + 1)
                    if not isinstance(inner, (list, tuple)):
                        raise Dynamic("starred non-sequence")
                    out.extend(inner)
                else:
                    out.append(self.value(elt, depth + 1))
            return tuple(out) if isinstance(node, ast.Tuple) else out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value(node.operand, depth + 1)
            if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
                return -v if isinstance(node.op, ast.USub) else v
            raise Dynamic("unary on non-number")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            if isinstance(a, list) and isinstance(b, list):
                return a + b
            if isinstance(a, tuple) and isinstance(b, tuple):
                return a + b
            raise Dynamic(f"`{ast.unparse(node)}`")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            a, b = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            if isinstance(a, (str, bytes, list, tuple)) and isinstance(b, int):
                return a * b
            raise Dynamic(f"`{ast.unparse(node)}`")
        if isinstance(node, ast.Lambda):
            return Opaque("<lambda>")
        if isinstance(node, ast.Dict):
            return Instance()
        if isinstance(node, ast.Name):
            if node.id in self.rebound:
                raise Dynamic(f"`{node.id}` is bound more than once at import (its value depends on which ran)")
            if node.id in self.env:
                return self.value(self.env[node.id], depth + 1)
            if node.id in self.defs or node.id in BUILTIN_CLASSES:
                return Opaque(node.id)
            if node.id in ("None", "True", "False"):
                return {"None": None, "True": True, "False": False}[node.id]
            if node.id in self.imported and not node.id.isupper():
                # an imported class or function: pytest uses its __name__
                return Opaque(node.id)
            raise Dynamic(f"name `{node.id}`")
        if isinstance(node, ast.Attribute):
            full = dotted(node)
            if full in self.modules:
                return Opaque(full)  # a module: its __name__
            if node.attr.isupper():
                raise Dynamic(f"`{full}` (an enum member or constant)")
            # a class, function or method reached through a module or class: __name__
            return Opaque(node.attr)
        if isinstance(node, ast.Call) and not (
            dotted(node.func).startswith("pytest") and dotted(node.func).endswith("param")
        ):
            callee = dotted(node.func).split(".")[-1]
            if callee in BUILTIN_CLASSES or callee[:1].isupper() or callee in INSTANCE_FACTORIES:
                # an instance of a class that is not str/bytes/number/None/enum:
                # pytest's id is <argname><index>
                return Instance()
            raise Dynamic(f"`{ast.unparse(node)[:60]}`")
        if isinstance(node, ast.Call) and dotted(node.func).split(".")[-1] == "param" and dotted(
            node.func
        ).startswith("pytest"):
            values = []
            for a in node.args:
                try:
                    values.append(self.value(a, depth + 1))
                except Dynamic:
                    values.append(Opaque(None))
            pid = None
            for kw in node.keywords:
                if kw.arg == "id":
                    pid = self.value(kw.value, depth + 1)
                    if pid is not None and not isinstance(pid, str):
                        raise Dynamic("non-string pytest.param id")
            return Param(tuple(values), pid)
        raise Dynamic(f"`{ast.unparse(node)[:60]}`")


def escape(s: str) -> str:
    """pytest's ascii_escaped for str."""
    return s.encode("unicode_escape").decode("ascii")


#: pytest 9 gives an automatic id to a string of at most this many characters; a longer
#: one gets ``<argname><index>`` (its ``parametrize_long_str_id_strategy = short``).
LONG_STR = 100


def idval(val, argname: str, idx: int) -> str:
    if isinstance(val, (str, bytes)) and len(val) > LONG_STR:
        return f"{argname}{idx}"
    if isinstance(val, str):
        return escape(val)
    if isinstance(val, bytes):
        return val.decode("ascii", "backslashreplace")
    if val is None or isinstance(val, (bool, int, float, complex)):
        return str(val)
    if isinstance(val, Instance):
        return f"{argname}{idx}"
    if isinstance(val, Opaque):
        if val.name is None:
            raise Dynamic(f"value of `{argname}` is computed")
        return val.name
    return f"{argname}{idx}"


def disambiguate(ids: list[str]) -> list[str]:
    """pytest 8's numbering of duplicate ids."""
    if len(set(ids)) == len(ids):
        return ids
    counts = Counter(ids)
    suffixes: dict[str, int] = defaultdict(int)
    out = list(ids)
    for i, ident in enumerate(ids):
        if counts[ident] > 1:
            sep = "_" if ident and ident[-1].isdigit() else ""
            new = f"{ident}{sep}{suffixes[ident]}"
            while new in set(out):
                suffixes[ident] += 1
                new = f"{ident}{sep}{suffixes[ident]}"
            out[i] = new
            suffixes[ident] += 1
    return out


def case_ids(mod: Module, argnames: list[str], argvalues_node: ast.AST, ids_node: ast.AST | None) -> list[str]:
    """The ids of one parametrization (a mark or a fixture's params)."""
    values = mod.value(argvalues_node)
    if not isinstance(values, (list, tuple)):
        raise Dynamic("argvalues not a sequence")
    explicit: list | None = None
    if ids_node is not None:
        explicit = mod.value(ids_node)  # a function here raises Dynamic
        if not isinstance(explicit, (list, tuple)):
            raise Dynamic("ids= is not a list")
    if not values:
        # pytest collects one (skipped) case with NOTSET values
        return ["NOTSET"]
    out = []
    for idx, v in enumerate(values):
        given = explicit[idx] if explicit is not None and idx < len(explicit) else None
        if isinstance(v, Param):
            if v.id is not None:
                out.append(escape(v.id))
                continue
            parts = v.values
        else:
            parts = (v,) if len(argnames) == 1 else v
        if given is not None:
            if not isinstance(given, str):
                given = str(given)
            out.append(escape(given))
            continue
        if len(argnames) > 1 and not isinstance(parts, (list, tuple)):
            raise Dynamic("case is not a tuple")
        out.append("-".join(idval(p, n, idx) for p, n in zip(parts, argnames)))
    return disambiguate(out)


def is_mark(node: ast.AST, name: str) -> bool:
    d = dotted(node)
    return d.endswith("mark." + name) or d == name


def parametrize_calls(mod: Module, decorators: list[ast.AST]) -> list[ast.Call]:
    """The parametrize marks among decorators, nearest the function first."""
    out = []
    for dec in reversed(decorators):
        node = dec
        if isinstance(node, ast.Name) and node.id in mod.env:
            node = mod.env[node.id]
        if isinstance(node, ast.Call) and is_mark(node.func, "parametrize"):
            out.append(node)
    return out


def argnames_of(mod: Module, call: ast.Call) -> list[str]:
    node = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "argnames")
    names = mod.value(node)
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    return list(names)


def mark_ids(mod: Module, call: ast.Call) -> tuple[list[str], list[str]]:
    names = argnames_of(mod, call)
    argvalues = call.args[1] if len(call.args) > 1 else next(k.value for k in call.keywords if k.arg == "argvalues")
    ids_node = next((k.value for k in call.keywords if k.arg == "ids"), None)
    return names, case_ids(mod, names, argvalues, ids_node)


def fixtures_in(mod: Module, body: list[ast.stmt]) -> dict[str, Fixture]:
    out = {}
    for stmt in body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in stmt.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            target = call.func if call else dec
            if not (dotted(target) in ("pytest.fixture", "fixture", "pytest.yield_fixture")):
                continue
            kw = {k.arg: k.value for k in (call.keywords if call else [])}
            name = stmt.name
            if "name" in kw:
                name = mod.value(kw["name"])
            deps = [a.arg for a in stmt.args.args + stmt.args.kwonlyargs if a.arg not in ("self", "cls", "request")]
            params = dynamic = None
            if "params" in kw:
                try:
                    params = case_ids(mod, ["param"], kw["params"], kw.get("ids"))
                    # a fixture's auto id is f"{fixturename}{idx}", not "param{idx}"
                    params = [re.sub(r"^param(\d+)$", rf"{name}\1", p) for p in params]
                except Dynamic as e:
                    dynamic = f"fixture `{name}` params: {e}"
            autouse = False
            if "autouse" in kw:
                try:
                    autouse = bool(mod.value(kw["autouse"]))
                except Dynamic:
                    autouse = True
            scope = 4
            if "scope" in kw:
                try:
                    scope = SCOPES.get(mod.value(kw["scope"]), 4)
                except Dynamic:
                    pass
            out[name] = Fixture(name, deps, params, dynamic, autouse, scope)
    return out


def module_pytestmark(mod: Module) -> list[ast.Call]:
    node = mod.env.get("pytestmark")
    if node is None:
        return []
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    return [c for c in reversed(items) if isinstance(c, ast.Call) and is_mark(c.func, "parametrize")]


def usefixtures(decorators: list[ast.AST]) -> list[str]:
    out = []
    for dec in decorators:
        if isinstance(dec, ast.Call) and is_mark(dec.func, "usefixtures"):
            out += [a.value for a in dec.args if isinstance(a, ast.Constant)]
    return out


@dataclass
class Scope:
    """Fixtures visible at one level (conftest, module, class), outermost first."""

    levels: list[dict[str, Fixture]] = field(default_factory=list)

    def lookup(self, name: str) -> Fixture | None:
        for level in reversed(self.levels):
            if name in level:
                return level[name]
        return None

    def autouse(self) -> list[str]:
        names: list[str] = []
        for level in self.levels:
            names += [f.name for f in level.values() if f.autouse and f.name not in names]
        return names


def test_ids(
    mod: Module, prefix: str, func: ast.FunctionDef, scope: Scope, outer_marks: list[ast.Call], uses: list[str]
) -> list[str]:
    """Every id of one test function, or its `[*]` line."""
    try:
        marks = parametrize_calls(mod, func.decorator_list) + outer_marks
        mark_parts = [mark_ids(mod, m) for m in marks]
        marked = {n for names, _ in mark_parts for n in names}
        args = [a.arg for a in func.args.args + func.args.kwonlyargs if a.arg not in ("self", "cls")]
        initial = scope.autouse() + uses + usefixtures(func.decorator_list) + args
        closure: list[str] = []
        queue = list(initial)
        while queue:
            name = queue.pop(0)
            if name in closure or name == "request":
                continue
            closure.append(name)
            if name in marked:
                continue
            fx = scope.lookup(name)
            if fx is not None:
                queue += fx.deps
        closure.sort(key=lambda n: (scope.lookup(n).scope if scope.lookup(n) and n not in marked else 4))
        parts: list[list[str]] = []
        for name in closure:
            fx = scope.lookup(name)
            if fx is None or name in marked:
                continue
            if fx.dynamic:
                raise Dynamic(fx.dynamic)
            if fx.params is not None:
                parts.append(fx.params)
        parts += [ids for _, ids in mark_parts]
    except Dynamic as e:
        return [f"{prefix}[*] # {e}"]
    except (StopIteration, IndexError, TypeError, ValueError) as e:
        return [f"{prefix}[*] # unread parametrization ({type(e).__name__})"]
    if not parts:
        return [prefix]
    cases = [""]
    for ids in parts:
        cases = [f"{c}-{i}" if c else i for c in cases for i in ids]
    return [f"{prefix}[{c}]" for c in cases]


def is_test_func(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test")


def class_ids(
    mod: Module, prefix: str, cls: ast.ClassDef, scope: Scope, outer_marks: list[ast.Call], uses: list[str]
) -> list[str]:
    body: dict[str, ast.stmt] = {}
    # inherited methods from classes of this module (bases first, so overrides win)
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in mod.classes:
            for stmt in mod.classes[base.id].body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    body[stmt.name] = stmt
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body[stmt.name] = stmt
    if "__init__" in body:
        return []
    marks = parametrize_calls(mod, cls.decorator_list) + outer_marks
    inner = Scope(scope.levels + [fixtures_in(mod, list(body.values()))])
    uses = uses + usefixtures(cls.decorator_list)
    out = []
    for stmt in body.values():
        if is_test_func(stmt):
            out += test_ids(mod, f"{prefix}::{stmt.name}", stmt, inner, marks, uses)
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            out += class_ids(mod, f"{prefix}::{stmt.name}", stmt, inner, marks, uses)
    return out


def parse(path: Path) -> Module:
    return Module(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))


def conftest_scope(root: Path, file: Path, cache: dict[Path, dict[str, Fixture]]) -> Scope:
    levels = []
    d = file.parent
    chain = []
    while True:
        chain.append(d)
        if d == root or root not in d.parents:
            break
        d = d.parent
    for d in reversed(chain):
        conf = d / "conftest.py"
        if conf not in cache:
            cache[conf] = {}
            if conf.exists():
                m = parse(conf)
                cache[conf] = fixtures_in(m, m.tree.body)
        levels.append(cache[conf])
    return Scope(levels)


def cython_ids(root: Path) -> list[str]:
    """`cython/test_cython.py` re-exports the `test_*` functions of its .pyx modules."""
    out = []
    driver = root / "cython" / "test_cython.py"
    if not driver.exists():
        return out
    mod = parse(driver)
    try:
        names = mod.value(mod.env["cython_test_modules"])
    except (KeyError, Dynamic):
        return [f"cython/test_cython.py::*[*] # module list not literal"]
    for name in names:
        pyx = root / "cython" / f"{name}.pyx"
        if not pyx.exists():
            out.append(f"cython/test_cython.py::{name}[*] # {name}.pyx not found")
            continue
        for m in re.finditer(r"^(?:cp)?def\s+(test\w*)\s*\(", pyx.read_text(encoding="utf-8"), re.M):
            out.append(f"cython/test_cython.py::{m.group(1)}")
    return out


def collect(root: Path) -> list[str]:
    ids: list[str] = []
    cache: dict[Path, dict[str, Fixture]] = {}
    files = sorted(
        p for p in root.rglob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py")
    )
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel.startswith("cython/"):
            continue  # not collected by pytest (norecursedirs); see cython_ids
        mod = parse(path)
        scope = conftest_scope(root, path, cache)
        scope = Scope(scope.levels + [fixtures_in(mod, mod.tree.body)])
        marks = module_pytestmark(mod)
        for stmt in mod.tree.body:
            if is_test_func(stmt):
                ids += test_ids(mod, f"{rel}::{stmt.name}", stmt, scope, marks, [])
            elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
                ids += class_ids(mod, f"{rel}::{stmt.name}", stmt, scope, marks, [])
    ids += cython_ids(root)
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", required=True, type=Path, help="a checkout's cuda_core/tests folder")
    ap.add_argument("--commit", default=PINNED_COMMIT, help="the commit named in the header")
    args = ap.parse_args()
    ids = sorted(set(collect(args.tests)))
    dyn = sum(1 for i in ids if "[*]" in i)
    print(f"# cuda.core's test suite (NVIDIA/cuda-python, cuda_core/tests) at commit {args.commit}.")
    print("# Generated by scripts/cuda-core-test-ids.py (its header says how to fetch the files); do not edit.")
    print("# One pytest id a line, sorted: <file>::<Class>::<function>[<case>]. A `[*]` id stands")
    print("# for every case of a function whose cases are computed at run time; ` # ` gives why.")
    print(f"# {len(ids)} ids, {dyn} of them `[*]`.")
    for i in ids:
        print(i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
