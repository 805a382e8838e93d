"""Helpers shared by the reproductions: output files, claims, verdicts, progress, data path.

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


def data_file(name: str) -> Path:
    """The shared data file ``name``: ``$PRIVLOSS_DATA`` (the file or its folder), else
    ``shared/data`` above the current directory or the package (see
    :func:`privloss.query.corpora.find_data_file`); ``FileNotFoundError`` if absent."""
    from privloss.query.corpora import data_file as locate

    return locate(name)


#: What to run when matplotlib is missing (the package is not on any index).
PLOT_HINT = ("install the 'plot' extra: pip install '.[plot]' from a privloss checkout, "
             "or pip install matplotlib")


def require_matplotlib() -> None:
    """Raise ``ImportError`` with the install hint, before any computation, when
    matplotlib (needed for every figure) is not importable."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError(f"the reproductions draw figures with matplotlib: {PLOT_HINT}")


def parameter(name: str, value, origin: str, note: str = "") -> dict:
    """One parameter row: ``origin`` is :data:`OURS` or :data:`DOCUMENT`."""
    if origin not in (OURS, DOCUMENT):
        raise ValueError(f"origin must be {OURS!r} or {DOCUMENT!r}, got {origin!r}")
    return {"name": name, "value": value, "origin": origin, "note": note}


def wrapped(text: str, width: int = 90) -> str:
    """``text`` broken into lines of at most ``width`` characters (figure titles that
    would otherwise be clipped at the figure's edge)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width=width, break_on_hyphens=False))


def ours_suffix(parameters: Sequence[Mapping]) -> str:
    """Short text for figure titles: ``eps=0.1, delta=1e-06 (ours)``."""
    parts = []
    for row in parameters:
        flag = " (ours)" if row["origin"] == OURS else ""
        parts.append(f"{row['name']}={row['value']}{flag}")
    return ", ".join(parts)


#: Verdicts of a claim: the first three come from a confidence interval (see
#: :func:`difference_verdict`); "n/a" marks a row that is not a comparison.
VERDICTS = ("agree", "disagree", "inconclusive", "n/a")
_AGREE_OF = {"agree": True, "disagree": False, "inconclusive": None, "n/a": None}


def claim(claim_text: str, document, ours, agree: bool | None, why: str,
          verdict: str | None = None) -> dict:
    """One comparison row of the summary: the document's statement and our result.

    ``verdict`` (one of :data:`VERDICTS`) overrides the yes/no/n-a reading of
    ``agree``; an ``"inconclusive"`` verdict sets ``agree`` to None."""
    if verdict is None:
        verdict = {True: "agree", False: "disagree", None: "n/a"}[agree]
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return {"claim": claim_text, "document": document, "ours": ours,
            "agree": _AGREE_OF[verdict], "why": why, "verdict": verdict}


def difference_verdict(differences, confidence: float = 0.95) -> dict:
    """Verdict on "the mean of ``differences`` is positive" from a two-sided
    Student-t confidence interval of that mean (paired trials).

    Definition
        ``differences[t]`` is one trial's (claim-supporting minus opposing)
        quantity. Interval: mean +- t_{n-1, (1+confidence)/2} sd / sqrt(n).
        Verdict: ``agree`` if the interval lies above 0, ``disagree`` if below,
        ``inconclusive`` if it contains 0 (or n < 2: no interval).
    Runtime
        O(n).
    Returns ``{"n", "mean", "low", "high", "confidence", "verdict", "text"}``;
    ``text`` reads e.g. "inconclusive at 10 trials (95% CI of the difference
    [-1.2, 3.4] contains 0)".
    """
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    values = np.asarray(differences, dtype=np.float64).ravel()
    if not np.all(np.isfinite(values)):
        raise ValueError("differences must be finite numbers")
    n = int(values.size)
    mean = float(values.mean()) if n else math.nan
    if n < 2:
        low, high = -math.inf, math.inf
    else:
        from scipy import stats

        half = float(stats.t.ppf(0.5 + confidence / 2.0, n - 1)) * float(values.std(ddof=1)) / math.sqrt(n)
        low, high = mean - half, mean + half
    interval = f"{100 * confidence:g}% CI of the difference [{low:.4g}, {high:.4g}]"
    if low > 0:
        verdict, text = "agree", f"agree at {n} trials ({interval} above 0)"
    elif high < 0:
        verdict, text = "disagree", f"disagree at {n} trials ({interval} below 0)"
    else:
        verdict, text = "inconclusive", f"inconclusive at {n} trials ({interval} contains 0)"
    return {"n": n, "mean": mean, "low": low, "high": high, "confidence": confidence,
            "verdict": verdict, "text": text}


def numpy_generator(seed: int | None):
    """A numpy PCG64 for Monte Carlo simulations (not releases), keyed by four words of
    ``InsecureSeededSource(seed)`` or, without a seed, of the secure default source."""
    import numpy as np

    from privloss.samplers import InsecureSeededSource, default_source

    source = InsecureSeededSource(int(seed)) if seed is not None else default_source()
    words = source.random_words(4)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(w) for w in words])))


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
        raise ImportError(f"the reproductions draw figures with matplotlib: {PLOT_HINT}") from error
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


def _agree_text(row: Mapping) -> str:
    verdict = row.get("verdict")
    if verdict == "inconclusive":
        return "inconclusive"
    return {True: "yes", False: "**no**", None: "n/a"}[row["agree"]]


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
                     f"| {_agree_text(row)} | {_cell(row['why'])} |")
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
    "data_file", "wrapped", "PLOT_HINT", "require_matplotlib", "parameter", "ours_suffix", "claim",
    "VERDICTS", "difference_verdict", "numpy_generator", "relative_difference", "format_number",
    "write_csv", "read_csv", "pyplot", "save_figure", "write_markdown", "result",
]
