"""(user, item) rows from the public-domain texts in ``../shared/data``: speakers
as users and the words they speak as items.

``shakespeare.txt`` (tinyshakespeare) is a sequence of blocks ``NAME:`` followed
by the lines spoken and a blank line. Words are lower-cased runs of letters
(apostrophes inside words kept), as in the data README.
"""

from __future__ import annotations

import re
from pathlib import Path

_SPEAKER = re.compile(r"^([A-Z][A-Za-z .'-]*):\s*$")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def shakespeare_speaker_words(path) -> dict:
    """Columns ``speaker`` and ``word`` (one row per spoken word) as a dict of
    lists, which DuckDB and pandas read directly (``pyarrow.table(...)``)."""
    text = Path(path).read_text(encoding="utf-8")
    speakers: list[str] = []
    words: list[str] = []
    speaker = None
    for line in text.splitlines():
        match = _SPEAKER.match(line)
        if match:
            speaker = match.group(1).strip()
            continue
        if speaker is None or not line.strip():
            continue
        for word in _WORD.findall(line.lower()):
            speakers.append(speaker)
            words.append(word)
    if not words:
        raise ValueError(f"no speaker blocks found in {str(path)!r}")
    return {"speaker": speakers, "word": words}
