"""Reproductions of the seed documents' figures and tables (``privloss reproduce``).

Each reproduction is a module of this package exposing ``NAME`` (the CLI name),
``TITLE``, ``SOURCE`` and ``run(out_dir, *, quick=False, seed=None,
progress=None) -> dict`` (see :mod:`privloss.experiments._common`). The
registry imports them lazily, by module name, from :data:`MODULES`; a module
that does not exist yet is reported as unavailable instead of failing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

#: Module names of the reproductions, in the order ``privloss reproduce all`` runs them.
MODULES = ("cr_fig1", "cr_interpolation", "cr_fig3", "cr_fig4", "cr_fig5", "cr_fig6",
           "kang_table", "fdp_blog", "cks_fig4", "notes_examples")


@dataclass(frozen=True)
class Entry:
    """One registry row: ``module`` is None when unavailable, with ``reason``."""

    module_name: str
    module: ModuleType | None
    reason: str = ""

    @property
    def name(self) -> str:
        if self.module is not None:
            return self.module.NAME
        return self.module_name.replace("_", "-")

    @property
    def available(self) -> bool:
        return self.module is not None


def _load(module_name: str) -> Entry:
    full = f"{__name__}.{module_name}"
    try:
        module = importlib.import_module(full)
    except ModuleNotFoundError as error:
        if error.name != full:
            # the module exists but one of its imports is missing: say which
            return Entry(module_name, None, f"cannot import {error.name!r} ({error})")
        return Entry(module_name, None, "not implemented yet")
    for attribute in ("NAME", "TITLE", "SOURCE", "run"):
        if not hasattr(module, attribute):
            return Entry(module_name, None, f"module lacks {attribute}")
    return Entry(module_name, module)


def entries() -> list[Entry]:
    """Every registered reproduction, available or not, in :data:`MODULES` order."""
    return [_load(module_name) for module_name in MODULES]


def available() -> dict[str, ModuleType]:
    """CLI name -> module for the reproductions that can run."""
    return {entry.name: entry.module for entry in entries() if entry.available}


def get(name: str) -> ModuleType:
    """The reproduction called ``name`` (CLI name, or module name with underscores).

    Raises ``LookupError`` with a one-line message when it is unknown or unavailable."""
    wanted = name.replace("_", "-")
    for entry in entries():
        if entry.name == wanted or entry.module_name == name:
            if not entry.available:
                raise LookupError(f"reproduction {name!r} is not available: {entry.reason}")
            return entry.module
    known = ", ".join(entry.name for entry in entries())
    raise LookupError(f"unknown reproduction {name!r}; known: {known}")


def run(name: str, out_dir, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Run the reproduction ``name`` into ``out_dir`` (see the module docstring).

    Raises ``ImportError`` with the install hint before computing when matplotlib
    is missing, ``LookupError`` for an unknown name."""
    from privloss.experiments._common import require_matplotlib

    module = get(name)
    require_matplotlib()
    return module.run(out_dir, quick=quick, seed=seed, progress=progress)


__all__ = ["MODULES", "Entry", "entries", "available", "get", "run"]
