"""Lazy package exports: ``import privloss.x`` loads a submodule only when one
of its names is first used (keeps heavy engines and mpmath off the import path)."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]):
    """(``__getattr__``, ``__dir__``, ``__all__``) for a package whose public names
    live in submodules: ``exports`` maps module name -> names it provides."""
    where = {name: module for module, names in exports.items() for name in names}
    public = sorted(where)

    def __getattr__(name: str):
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return public

    return __getattr__, __dir__, public
