"""The package layers (docs/architecture.md): imports point down only.

Every import in ``src/privloss`` is read from the syntax tree, function-level
(lazy) imports included, so a lazy import cannot hide an upward edge.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "src" / "privloss"

#: package (or top-level module) -> layer; a package may import only lower layers,
#: and, in the top layer, only the surfaces listed in SURFACE_EDGES
LAYERS = {
    "_lazy": 0, "_files": 0, "_exact": 0,
    "events": 1, "_cache": 1,
    "bounds": 2, "samplers": 2, "serialize": 2,
    "pld": 3, "fdp": 3,
    "accounting": 4, "mechanisms": 4,
    "attacks": 5, "query": 5,
    "releases": 6, "budget": 6,
    "api": 7,
    "client": 8, "service": 8, "cli": 8, "experiments": 8,
}
#: the top layer's allowed edges: the CLI starts the service, calls the client
#: (``--server``) and runs the reproductions
SURFACE_EDGES = {("cli", "service"), ("cli", "client"), ("cli", "experiments")}
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path):
    """(imported module name, line) for every import in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:    # ``from privloss import pld`` imports privloss.pld
                yield f"{target}.{alias.name}", node.lineno


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "privloss":
        return None
    return parts[1] if len(parts) > 1 else "privloss"


def _edges():
    for path in sorted(ROOT.rglob("*.py")):
        source = _package(_module_name(path))
        if source == "privloss":        # the root's lazy exports name every layer
            continue
        for target, line in _imports(path):
            package = _package(target)
            if package is None or package == source:
                continue
            if package == "privloss" or package == "__version__":
                package = "privloss"
            yield source, package, f"{path.relative_to(ROOT)}:{line}"


def test_every_package_has_a_layer():
    packages = {p.name if p.is_dir() else p.stem for p in ROOT.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    packages.discard("__init__")
    assert sorted(packages - set(LAYERS)) == []


def test_imports_point_down():
    upward = []
    for source, target, where in _edges():
        if target == "privloss":        # the public facade, above the api layer
            if LAYERS[source] < LAYERS["api"]:
                upward.append(f"{where}: {source} imports the root package")
            continue
        if LAYERS[target] < LAYERS[source] or (source, target) in SURFACE_EDGES:
            continue
        upward.append(f"{where}: {source} (layer {LAYERS[source]}) imports {target} "
                      f"(layer {LAYERS[target]})")
    assert upward == []


def test_no_cycles_between_packages():
    graph: dict = {}
    for source, target, _ in _edges():
        graph.setdefault(source, set()).add(target)
    for a, b in itertools.permutations(graph, 2):
        assert not (b in graph.get(a, ()) and a in graph.get(b, ())), f"{a} <-> {b}"


def test_service_modules_use_each_others_public_names():
    private = []
    for path in sorted((ROOT / "service").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "privloss.service"):
                private += [f"{path.name}:{node.lineno} {node.module}.{alias.name}"
                            for alias in node.names if alias.name.startswith("_")]
    assert private == []


#: the service's own storage (its session table), not queries over data
OWN_STORAGE = {"service/sessions.py"}


def test_surfaces_build_plans_not_sql():
    """No SQL keyword strings in the surfaces: they build plans (the engines
    alone write SQL over data, from our own identifiers)."""
    offenders = []
    for folder in ("cli", "service"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if str(path.relative_to(ROOT)) in OWN_STORAGE:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and node.value.lstrip().upper().startswith(("SELECT ", "WITH ")) \
                        and " FROM " in node.value.upper():
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_source_files_stay_short(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)}: {lines} lines"
