"""(user, item) rows from the public-domain texts in ``../shared/data``: speakers
as users and the words they speak as items.

``shakespeare.txt`` (tinyshakespeare) is a sequence of blocks separated by blank
lines; the first line of a block is the speaker's header ``NAME:`` and the other
lines are the words spoken (data README). Words are lower-cased runs of letters
(apostrophes inside words kept).

Why blocks and not a line pattern: verse lines such as "And Warwick rages like
a chafed bull:" also end with a colon. Taking every such line as a speaker
splits one person's words over several user ids, so a per-user contribution
bound (l0) would no longer bound a person and the user-level guarantee would
not hold for the people in the data.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: Environment variable naming a data file or the folder holding the data files.
DATA_VARIABLE = "PRIVLOSS_DATA"
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def _candidates(name: str) -> list[Path]:
    """Where ``name`` may be, in order: ``shared/data`` beside any folder above the
    current directory (a checkout run from its root or below), then above the
    installed package (an editable install inside a checkout)."""
    places: list[Path] = []
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidate = folder / "shared" / "data" / name
            if candidate not in places:
                places.append(candidate)
    return places


def find_data_file(name: str) -> Path | None:
    """The shared data file ``name`` (e.g. ``"macbeth.txt"``), or None if not found.

    ``$PRIVLOSS_DATA`` wins when set: a file is used when its name is ``name``
    (otherwise ``name`` is looked for beside it), a folder is looked into; no
    fallback then, so a typo in the variable is not hidden. Without it:
    ``shared/data/NAME`` in the current directory or any folder above it (a
    checkout with ``shared/`` beside it), then above the package's location.
    """
    if not name or Path(name).name != name:
        raise ValueError(f"name: a file name without folders is required, got {name!r}")
    configured = os.environ.get(DATA_VARIABLE)
    if configured:
        given = Path(configured).expanduser()
        if given.is_file():
            chosen = given if given.name == name else given.parent / name
        else:
            chosen = given / name
        return chosen if chosen.is_file() else None
    for candidate in _candidates(name):
        if candidate.is_file():
            return candidate
    return None


def data_file(name: str) -> Path:
    """:func:`find_data_file`, raising ``FileNotFoundError`` with where it looked."""
    found = find_data_file(name)
    if found is not None:
        return found
    configured = os.environ.get(DATA_VARIABLE)
    where = (f"{DATA_VARIABLE}={configured!r} (a file named {name!r} or a folder holding it)"
             if configured else
             f"shared/data/{name} above the current directory {str(Path.cwd())!r} or the package")
    raise FileNotFoundError(f"data file {name!r} not found: looked in {where}; set "
                            f"{DATA_VARIABLE} to the file or to its folder")


def _blocks(lines: list[str]):
    """(first line number, lines) of each run of non-blank lines (1-based numbers)."""
    block: list[str] = []
    start = 0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            if not block:
                start = number
            block.append(line)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def _speaker_of(header: str, path, number: int) -> str:
    name = header.strip()
    if not name.endswith(":") or ":" in name[:-1] or not name[:-1].strip():
        # fail closed: words without a known speaker cannot be given a privacy unit
        raise ValueError(f"path: block at line {number} of {str(path)!r} does not start with a "
                         f"speaker header 'NAME:' (got {header[:60]!r})")
    return name[:-1].strip()


def shakespeare_speaker_words(path) -> dict:
    """Columns ``speaker`` and ``word`` (one row per spoken word) as a dict of
    lists, which DuckDB and pandas read directly (``pyarrow.table(...)``).

    Definition
        A speaker is the header line ``NAME:`` of a blank-line-separated block
        (the name string is the user id, as the data README says: one name may be
        the same role in several plays); the block's other lines are that
        speaker's words. On ``shakespeare.txt``: 7,220 speeches by 309 speakers,
        of whom 299 have words (10 headers have an empty speech in the excerpt).
    Privacy guarantee
        None by itself: it defines the privacy unit (the speaker) that a later
        per-user contribution bound protects. A block without a header raises
        ``ValueError`` rather than guessing its speaker.
    Runtime
        One pass over the text (about 0.3 s for the 1.1 MB file).
    """
    text = Path(path).read_text(encoding="utf-8")
    speakers: list[str] = []
    words: list[str] = []
    for number, block in _blocks(text.splitlines()):
        speaker = _speaker_of(block[0], path, number)
        for line in block[1:]:
            for word in _WORD.findall(line.lower()):
                speakers.append(speaker)
                words.append(word)
    if not words:
        raise ValueError(f"path: no speaker blocks with words found in {str(path)!r}")
    return {"speaker": speakers, "word": words}


def synthetic_events(rows: int, folder: str) -> tuple[str, int, int]:
    """Synthetic public (user, item) rows for the demos, in a Parquet file in
    ``folder``: (path, rows, users).  Items follow a Zipf-like law; a fixed
    DuckDB seed makes the file reproducible (the data is synthetic, so this is
    no privacy concern)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SELECT setseed(0.42)").fetchall()   # synthetic public data: a fixed seed is fine
    # users own up to 50 consecutive row slots, each kept with probability 0.6 (so users
    # have different numbers of rows); enough slots are drawn for exactly `rows` rows
    slots = int(rows / 0.6) + 10_000
    con.execute("""
        CREATE TABLE events AS
        SELECT (i // 50)::BIGINT AS user_id,
               'item-' || LEAST(CAST(floor(pow(random(), -1.0 / 1.1)) AS BIGINT), 100000)::VARCHAR
                   AS item
        FROM range(?) t(i)
        WHERE random() < 0.6
        LIMIT ?""", [slots, rows])
    [(count, users)] = con.execute(
        "SELECT count(*), count(DISTINCT user_id) FROM events").fetchall()
    path = str(Path(folder) / "events.parquet")
    con.table("events").write_parquet(path)
    con.close()
    return path, count, users
