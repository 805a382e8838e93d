"""Helpers shared by the reproductions: output files, claims, progress, data path.

Every reproduction writes three files into one output directory:
``<NAME>.csv`` (the numbers), ``<NAME>.png`` (a matplotlib figure, imported
lazily) and ``<NAME>.md`` (the document's statements next to our results).
Parameters that the document lost and that we chose are *flagged as ours*
in all three: a ``parameters_source`` column in the CSV, "(ours)" in the figure
title and a parameter table in the Markdown.

Nothing here is private: these are reports about public bounds.
"""

from __future__ import annotations

import csv
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

#: Marker for a parameter value chosen by us because the document's value was lost.
OURS = "ours"
#: Marker for a parameter value stated by the document.
DOCUMENT = "document"

Progress = Callable[[float, str], None]


def output_dir(out_dir) -> Path:
    """``out_dir`` as a Path, created (with parents) if missing."""
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def notify(progress: Progress | None, fraction: float, message: str) -> None:
    """Call ``progress(fraction, message)`` if a progress callback was given."""
    if progress is not None:
        progress(min(max(float(fraction), 0.0), 1.0), message)


def progress_printer(label: str, stream=None, width: int = 20) -> Progress:
    """A progress callback printing one line per step, e.g.
    ``[cr-fig1] [#####...............]  25% eq. (3) curves``."""
    out = sys.stderr if stream is None else stream

    def show(fraction: float, message: str) -> None:
        filled = int(round(fraction * width))
        bar = "#" * filled + "." * (width - filled)
        print(f"[{label}] [{bar}] {100 * fraction:3.0f}% {message}", file=out, flush=True)

    return show


def seeded_source(seed: int | None):
    """``InsecureSeededSource(seed)`` when a seed is given (reproducible runs), else the
    default secure source (``None`` lets each sampler use it)."""
    if seed is None:
        return None
    from privloss.samplers import InsecureSeededSource

    return InsecureSeededSource(int(seed))


def data_dir() -> Path:
    """Directory of the shared data files: ``$PRIVLOSS_DATA`` if set, else
    ``<repo>/../shared/data``."""
    env = os.environ.get("PRIVLOSS_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def parameter(name: str, value, origin: str, note: str = "") -> dict:
    """One parameter row: ``origin`` is :data:`OURS` or :data:`DOCUMENT`."""
    if origin not in (OURS, DOCUMENT):
        raise ValueError(f"origin must be {OURS!r} or {DOCUMENT!r}, got {origin!r}")
    return {"name": name, "value": value, "origin": origin, "note": note}


def ours_suffix(parameters: Sequence[Mapping]) -> str:
    """Short text for figure titles: ``eps=0.1, delta=1e-06 (ours)``."""
    parts = []
    for row in parameters:
        flag = " (ours)" if row["origin"] == OURS else ""
        parts.append(f"{row['name']}={row['value']}{flag}")
    return ", ".join(parts)


def claim(claim_text: str, document, ours, agree: bool | None, why: str) -> dict:
    """One comparison row of the summary: the document's statement and our result."""
    return {"claim": claim_text, "document": document, "ours": ours, "agree": agree, "why": why}


def relative_difference(a: float, b: float) -> float:
    """|a - b| / max(|a|, |b|) (0 when both are 0)."""
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def format_number(value) -> str:
    """Full-precision text for a number (repr for floats), other values as str."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence],
              parameters: Sequence[Mapping] = ()) -> Path:
    """Write ``rows`` under ``columns``; every row also carries a
    ``parameters_source`` column naming the parameters that are ours."""
    ours = ";".join(f"{row['name']}={row['value']}" for row in parameters if row["origin"] == OURS)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(columns) + ["parameters_source"])
        for row in rows:
            if len(row) != len(columns):
                raise ValueError(f"row has {len(row)} values for {len(columns)} columns: {row!r}")
            writer.writerow([format_number(value) for value in row]
                            + [f"ours: {ours}" if ours else DOCUMENT])
    return path


def read_csv(path: Path) -> list[dict]:
    """Rows of a CSV written by :func:`write_csv` as dicts of strings (for tests)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def pyplot():
    """matplotlib.pyplot with the file-only Agg backend (imported lazily)."""
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError("the reproductions draw figures with matplotlib: "
                          "pip install 'privloss[plot]'") from error
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path: Path) -> Path:
    """Save and close ``figure``."""
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot().close(figure)
    return path


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    if value is None:
        return "n/a"
    return str(value).replace("|", "\\|")


def _agree_text(agree: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "n/a"}[agree]


def write_markdown(path: Path, *, name: str, title: str, source: str,
                   parameters: Sequence[Mapping], key_numbers: Mapping[str, float],
                   claims: Sequence[Mapping], png_name: str, notes: Sequence[str] = ()) -> Path:
    """The summary: parameters (ours flagged), the figure, claims vs our results,
    key numbers and free-form notes."""
    lines = [f"# {name}: {title}", "", f"Source: {source}", "", "## Parameters", "",
             "| parameter | value | origin | note |", "|---|---|---|---|"]
    for row in parameters:
        origin = "**ours** (document's value lost)" if row["origin"] == OURS else "document"
        lines.append(f"| {row['name']} | {_cell(row['value'])} | {origin} | {_cell(row['note'])} |")
    lines += ["", f"![{name}]({png_name})", "", "## The document's claims and our results", "",
              "| claim | document | ours | agree | why |", "|---|---|---|---|---|"]
    for row in claims:
        lines.append(f"| {_cell(row['claim'])} | {_cell(row['document'])} | {_cell(row['ours'])} "
                     f"| {_agree_text(row['agree'])} | {_cell(row['why'])} |")
    lines += ["", "## Key numbers", "", "| name | value |", "|---|---|"]
    for key, value in key_numbers.items():
        lines.append(f"| {key} | {_cell(value)} |")
    if notes:
        lines += ["", "## Notes", ""] + [f"* {note}" for note in notes]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def result(csv_path: Path, png_path: Path, md_path: Path, key_numbers: Mapping,
           claims: Sequence[Mapping]) -> dict:
    """The dictionary every reproduction's ``run`` returns."""
    return {"csv": csv_path, "png": png_path, "md": md_path,
            "key_numbers": dict(key_numbers), "claims": list(claims)}


__all__ = [
    "OURS", "DOCUMENT", "Progress", "output_dir", "notify", "progress_printer", "seeded_source",
    "data_dir", "parameter", "ours_suffix", "claim", "relative_difference", "format_number",
    "write_csv", "read_csv", "pyplot", "save_figure", "write_markdown", "result",
]
