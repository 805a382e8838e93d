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


#: a missing third-party module -> the extra that installs it (pyproject.toml)
EXTRAS = {"duckdb": "analytics", "pyarrow": "analytics", "sqlglot": "analytics",
          "mpmath": "analytics", "rich": "analytics", "fastapi": "service",
          "uvicorn": "service", "argon2": "service", "jinja2": "service", "httpx": "service",
          "multipart": "service", "pyspark": "spark", "psycopg": "postgres",
          "pandas": "frames", "polars": "frames", "matplotlib": "plot", "randomgen": "samplers"}


def missing_extra_message(error: ImportError) -> str | None:
    """One line naming the extra to install, for a missing third-party module
    (None for anything else: a real bug keeps its traceback)."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    extra = EXTRAS.get(name)
    if extra is None:
        return None
    return (f"this needs the '{extra}' extra (the module {name!r} is missing): "
            f"pip install 'privloss[{extra}]'")


def optional_import(module: str):
    """``module`` imported, or ``ModuleNotFoundError`` whose message names the
    extra that installs it (its ``name`` kept, so callers can still tell)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        message = missing_extra_message(error)
        if message is None:
            raise
        raise ModuleNotFoundError(message, name=error.name) from None

