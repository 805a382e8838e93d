"""Tests of the reproductions (``privloss reproduce``).

:func:`assert_outputs` is shared by the per-reproduction test files.
"""

from pathlib import Path


def assert_outputs(outcome: dict, out_dir: Path, name: str) -> None:
    """The run wrote NAME.csv, NAME.png, NAME.md into ``out_dir``, non-empty, and
    the returned dict has the contract's keys; parameters of ours are flagged."""
    assert {"csv", "png", "md", "key_numbers", "claims"} <= set(outcome)
    for key, suffix in (("csv", ".csv"), ("png", ".png"), ("md", ".md")):
        path = Path(outcome[key])
        assert path == Path(out_dir) / f"{name}{suffix}"
        assert path.is_file() and path.stat().st_size > 0
    assert Path(outcome["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for row in outcome["claims"]:
        assert {"claim", "document", "ours", "agree", "why"} <= set(row)
        assert row["agree"] in (True, False, None)
    assert outcome["key_numbers"]
