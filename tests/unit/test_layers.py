"""The import direction of the library's layers, read from the source with ``ast``.

Each module under fstdecode/ belongs to a layer: the first name after ``fstdecode``
(``fstdecode/decoder.py`` is the layer ``decoder``). A module may import modules of its own
layer and of lower ranks only. ``fstdecode/__init__.py`` and ``fstdecode/__main__.py`` (the
facade and the entry point) may import anything.

Every import counts: at module level, inside functions and ``if TYPE_CHECKING:`` blocks,
``import fstdecode.x``, ``from fstdecode.x import y``, relative imports, and
``importlib.import_module("fstdecode.x")`` with a literal name. Besides the order, no two
layers may import each other (directly or round a longer cycle), and no module may import a
private name (``_x``) from another module. Importing the facade (``from fstdecode import
__version__``) is importing what the facade imports: it ranks with the highest of those.

Each failure lists every offending ``module -> imported module``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared import ROOT

PACKAGE = ROOT / "fstdecode"

#: Layer -> rank. A module may import its own layer and lower ranks.
RANKS = {
    "errors": 0,
    "io": 1,
    "model": 2,
    "problem": 3,
    "statespace": 4,
    "_native": 1,  # the compiled core: the LM reader (io) and the searches stand on it
    "search": 5,
    "fst": 6,
    "reference": 6,
    "decoder": 7,
    "run": 8,
    "research": 8,
    "tune": 8,  # beside run: decodes through a Decoder the CLI hands it, optimizes, writes the tuned ini
    "cli": 9,
    "server": 9,  # beside the CLI: the CLI starts it and hands it its output writers; it imports no CLI module
}
#: May import anything: the facade (fstdecode/__init__.py) and the entry point.
EXEMPT = {"fstdecode", "fstdecode.__main__"}
FACADE = "fstdecode"


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, e.g. fstdecode.search.stack
    target: str  # the module imported (or imported from), e.g. fstdecode.statespace.ngram
    names: tuple[str, ...]  # for ``from target import a, b``: a, b
    line: int

    def __str__(self) -> str:
        names = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.importer} -> {self.target}{names}  [{module_path(self.importer)}:{self.line}]"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_path(name: str) -> str:
    base = ROOT.joinpath(*name.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    return str(path.relative_to(ROOT))


def is_module(name: str) -> bool:
    """A package, a .py module or a compiled extension (``_core.cpython-311-x86_64-linux-gnu.so``)."""
    base = ROOT.joinpath(*name.split("."))
    if (base / "__init__.py").is_file() or base.with_suffix(".py").is_file():
        return True
    return any(base.parent.glob(f"{base.name}.*.so")) or any(base.parent.glob(f"{base.name}.*.pyd"))


def layer(name: str) -> str | None:
    """``fstdecode.search.stack`` -> ``search``; the facade and the entry point have none."""
    if name in EXEMPT or name == FACADE:
        return None
    return name.split(".")[1]


def rank(name: str) -> int:
    """A module's layer rank; the facade's is the highest rank of what it exports (its names load
    lazily, from the modules its ``_EXPORTS`` names) or imports."""
    if name == FACADE:
        import fstdecode

        sources = set(fstdecode._EXPORTS.values()) | {imp.target for imp in imports_of(ROOT / "fstdecode" / "__init__.py")}
        return max(rank(target) for target in sources if target != FACADE)
    return RANKS[layer(name)]


def imports_of(path: Path) -> list[Import]:
    """Every import of a fstdecode module in the file at ``path``."""
    importer = module_name(path)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    found: list[Import] = []

    def add(target: str, names: tuple[str, ...], line: int) -> None:
        if target == "fstdecode" or target.startswith("fstdecode."):
            found.append(Import(importer, target, names, line))

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            plain: list[str] = []
            for alias in node.names:
                # ``from fstdecode.search import stack``: the import of a submodule.
                if is_module(f"{source}.{alias.name}"):
                    add(f"{source}.{alias.name}", (), node.lineno)
                else:
                    plain.append(alias.name)
            if plain:
                add(source, tuple(plain), node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    add(arg.value, (), node.lineno)
    return found


def library_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return [imp for path in library_modules() for imp in imports_of(path)]


def report(title: str, offending: list) -> str:
    return f"{title} ({len(offending)}):\n" + "\n".join(f"  {x}" for x in offending)


def test_every_module_is_in_a_layer():
    names = [module_name(p) for p in library_modules()]
    assert "fstdecode.errors" in names and "fstdecode.cli.main" in names  # the walk finds the package
    unplaced = [n for n in names if n not in EXEMPT and layer(n) not in RANKS]
    assert not unplaced, report("modules in no layer of RANKS", unplaced)


@pytest.mark.slow
def test_layers_import_only_their_own_and_lower_ranks(imports):
    offending = [
        f"{imp}: {layer(imp.importer)} ({rank(imp.importer)}) imports "
        + (f"{layer(imp.target)} ({rank(imp.target)})" if imp.target != FACADE else f"the facade ({rank(FACADE)})")
        for imp in imports
        if imp.importer not in EXEMPT and is_placed(imp.target) and rank(imp.target) > rank(imp.importer)
    ]
    assert not offending, report("imports against the layer order (module -> imported module)", offending)


def is_placed(name: str) -> bool:
    return name == FACADE or (name not in EXEMPT and layer(name) in RANKS)


def test_no_import_cycle_between_layers(imports):
    edges: dict[str, dict[str, list[Import]]] = {}
    for imp in imports:
        a, b = layer(imp.importer), layer(imp.target)
        if a is not None and b is not None and a != b:
            edges.setdefault(a, {}).setdefault(b, []).append(imp)
    offending = []
    for cycle in layer_cycles({a: set(bs) for a, bs in edges.items()}):
        hops = zip(cycle, cycle[1:] + cycle[:1])
        offending.append(" -> ".join(cycle + cycle[:1]) + ":\n" + "\n".join(f"    {imp}" for a, b in hops for imp in edges[a][b]))
    assert not offending, report("import cycles between layers", offending)


def layer_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each strongly connected group of two or more layers."""
    nodes = sorted(set(graph) | {b for bs in graph.values() for b in bs})
    reach = {a: reachable(graph, a) for a in nodes}
    groups, seen = [], set()
    for a in nodes:
        if a in seen:
            continue
        group = sorted(b for b in nodes if b in reach[a] and a in reach[b])
        if len(group) > 1:
            groups.append(group)
        seen.update(group or [a])
    return [shortest_cycle(graph, group) for group in groups]


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    todo, seen = [start], set()
    while todo:
        for b in graph.get(todo.pop(), ()):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def shortest_cycle(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    start = group[0]
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for b in sorted(graph.get(path[-1], ())):
            if b == start:
                return path
            if b in group and b not in seen:
                seen.add(b)
                paths.append(path + [b])
    raise AssertionError(f"no cycle through {group}")


def test_no_private_name_is_imported_from_another_module(imports):
    offending = [
        f"{imp.importer} -> {imp.target}.{name}  [{module_path(imp.importer)}:{imp.line}]"
        for imp in imports
        for name in imp.names
        if is_private(name) and imp.target != imp.importer
    ]
    # ``import fstdecode.search._impl`` or ``from fstdecode.search import _impl`` from outside
    # fstdecode.search: a private module of another package (a layer named _x is public).
    offending += [
        f"{imp}"
        for imp in imports
        if any(is_private(part) for part in imp.target.split(".")[2:]) and not within(imp.importer, imp.target)
    ]
    assert not offending, report("private names imported from another module (module -> imported name)", offending)


def within(importer: str, target: str) -> bool:
    """``importer`` is the package of the private module ``target``, or a module in it."""
    package = target.rpartition(".")[0]
    return importer == package or importer.startswith(package + ".")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# ----------------------------------------------------------------------------- the checker itself


def test_the_checker_reads_every_kind_of_import(tmp_path, monkeypatch):
    """On a small fake package: absolute, relative, submodule, dynamic and in-function imports."""
    root = tmp_path / "fstdecode"
    for rel, text in {
        "__init__.py": "",
        "errors.py": "",
        "io/__init__.py": "",
        "io/arpa.py": "from ..errors import E\nfrom . import files\n",
        "io/files.py": "def f():\n    import fstdecode.search.stack\n",
        "search/__init__.py": "from .stack import run, _private\n",
        "search/stack.py": "import importlib\nm = importlib.import_module('fstdecode.io')\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = {(i.importer, i.target, i.names) for p in sorted(root.rglob("*.py")) for i in imports_of(p)}
    assert found == {
        ("fstdecode.io.arpa", "fstdecode.errors", ("E",)),
        ("fstdecode.io.arpa", "fstdecode.io.files", ()),
        ("fstdecode.io.files", "fstdecode.search.stack", ()),
        ("fstdecode.search", "fstdecode.search.stack", ("run", "_private")),
        ("fstdecode.search.stack", "fstdecode.io", ()),
    }
    graph = {"io": {"errors", "search"}, "search": {"io"}, "fst": {"errors"}}
    assert layer_cycles(graph) == [["io", "search"]]
