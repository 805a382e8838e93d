"""Every non-Python file the package needs is declared as package data, so a
wheel (a non-editable install) has it: the dashboard's templates and stylesheet
were missing once, and `privloss serve --demo` failed after `pip install .`."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_data_file_is_declared_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = config["tool"]["setuptools"].get("package-data", {})
    source = ROOT / "src"
    missing = []
    for path in (source / "privloss").rglob("*"):
        if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
            continue
        package = ".".join(path.parent.relative_to(source).parts)
        covered = False
        for owner, patterns in declared.items():
            if package == owner or package.startswith(owner + "."):
                relative = path.relative_to(source / owner.replace(".", "/")).as_posix()
                covered = covered or any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)
        if not covered:
            missing.append(str(path.relative_to(ROOT)))
    assert missing == [], f"not declared in [tool.setuptools.package-data]: {missing}"
