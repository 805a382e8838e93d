"""Neighbouring datasets and helpers for the leak tests.

``D``: 60 users; item a is used by 60, b by 40, c by 3, d by 1 (users own a few
more items e0..e9 so l0 bounding bites).  Neighbours add one user:
``new_item`` (a brand-new item z), ``existing`` (items a, b, c).
"""

from __future__ import annotations

import json
import re

from privloss.cli.main import main

NEIGHBOURS = ("new_item", "existing")
DOMAIN = ("a", "b", "c", "d", "z")


def rows(kind: str | None = None) -> list[tuple[str, str]]:
    out = []
    for user in range(60):
        out.append((f"u{user}", "a"))
        if user < 40:
            out.append((f"u{user}", "b"))
        if user < 3:
            out.append((f"u{user}", "c"))
        if user < 1:
            out.append((f"u{user}", "d"))
        out.append((f"u{user}", f"e{user % 10}"))
    if kind == "new_item":
        out.append(("extra-user", "z"))
    elif kind == "existing":
        out += [("extra-user", "a"), ("extra-user", "b"), ("extra-user", "c")]
    return out


def write_csv(path, kind: str | None = None):
    path.write_text("user,item\n" + "".join(f"{u},{i}\n" for u, i in rows(kind)))
    return path


def run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def without_noise(payload: dict) -> dict:
    """A release payload with the noisy outputs removed (items, their counts and
    intervals): what must be identical on neighbouring inputs."""
    return {key: value for key, value in payload.items() if key != "items"}


def half_widths(payload: dict) -> set:
    return {row["ci95"][1] - row["ci95"][0] for row in payload["items"]}


_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


def integers_in(value) -> set[int]:
    """Every standalone integer written in ``value`` (a string, or JSON of it);
    digits inside a hex MAC or a longer word do not count."""
    text = value if isinstance(value, str) else json.dumps(value)
    return {int(match) for match in _NUMBER.findall(text)}
