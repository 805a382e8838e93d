"""Small (user, item) CSV files the CLI and API tests share."""

from __future__ import annotations


def write_rows(path, counts: dict[str, int]) -> None:
    """``counts``: item -> number of users (u0, u1, ...) who have it; users take
    the items in the dict's order. One header line ``user,item``."""
    users = max(counts.values())
    lines = ["user,item"]
    for user in range(users):
        lines += [f"u{user},{item}" for item, count in counts.items() if user < count]
    path.write_text("\n".join(lines) + "\n")
