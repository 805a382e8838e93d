"""Grey-box neighbouring harness (issue 18, item 5).

Run one release path on a dataset ``D`` and on neighbours ``D'`` (one privacy
unit added, with one row, many rows, a new group, extreme values, a malformed
row, a null, or a value that changes a column's inferred type), with the same
insecure seed, and compare *everything* but the DP-noised values and the
DP-selected keys: exit status, stdout structure, stderr, the log records and
warnings a plain process would print, the ledger afterwards (Cebere et al.,
arXiv:2602.17454, found 13 violations in 12 DP libraries this way).

What is masked (and nothing else):

* noisy values: every field but the label of a release's ``items`` / an
  aggregate's ``rows`` / a rollup's ``others`` (``count``, ``ci95``,
  ``values``), and ``totals``
  (elsewhere, e.g. an event's ``count``, nothing is masked); a masked value
  keeps its type name
  (``Noisy("int")``), so an int turning into a float is still a difference;
* DP-selected keys: the ``items`` / ``rows`` list of an unknown-domain
  release becomes ``DpSelected(types)``, equal to another when the label
  types agree (an empty release matches any), so ``1`` becoming ``1.0`` is
  still a difference; with public keys (a domain, a keys file) the labels,
  their number and their order are compared;
* random, data-independent tokens: ``error id XXXXXXXX``, private temporary
  directory names, times, the keyed data MAC (a PRF of the data, the
  repeated-query key: the operator's) and each run's own directory.

Where the noise draws line up (public keys, same seed), :func:`noisy_gaps`
gives the differences of the noisy values so a test can bound them by the
sensitivity: a neighbour moving a count by more than one unit can move it is
a leak even though the values are noisy ((c) of the audit: one null turned an
int64 column into double and the counts of known keys 1, 2, 3 fell to 0).

"A plain process": stdout and stderr captured, pytest's root log handlers
removed for the call, ``logging.lastResort`` (what Python prints for a record
nobody handles: WARNING and above, to stderr) writing into the captured
stderr, and every warning printed.  :func:`run_cli_process` runs the real
``python -m privloss.cli.main`` for the cases where only a process will do.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

# ----------------------------------------------------------------------------------
# datasets and neighbours
# ----------------------------------------------------------------------------------

#: users of D; 3 rows each plus the header: 21,001 lines, past DuckDB's CSV
#: sniffing sample (20,480 lines), so a row can sit before or after it
USERS = 7000
#: lines DuckDB's CSV sniffer reads (its default ``sample_size``)
SNIFF_LINES = 20_480
COLUMNS = ("user", "item", "amount")
#: the public item domain / group keys (CSV labels); Parquet items are 1..4
DOMAIN = ("a", "b", "c", "d")
INTEGER_DOMAIN = (1, 2, 3, 4)
EXTRA_USER = "u-extra"

#: neighbour kinds: one unit added with ...
NEIGHBOURS = ("one_row", "many_rows", "new_group", "extreme", "null", "type_change",
              "null_user", "malformed_early", "malformed_late", "bad_utf8_early", "bad_utf8_late")
#: kinds whose added row cannot be read: they must all fail the same way
MALFORMED = ("malformed_early", "malformed_late", "bad_utf8_early", "bad_utf8_late")


def base_rows() -> list[tuple]:
    """D: (user, item, amount); item a for everyone, b for even users, c for
    every fifth, d for every 50th (else b or c again), amounts 0..9."""
    rows = []
    for user in range(USERS):
        second = "b" if user % 2 == 0 else "a"
        third = "d" if user % 50 == 0 else ("c" if user % 5 == 0 else "b")
        for item, amount in (("a", user % 10), (second, (3 * user) % 10), (third, 5)):
            rows.append((f"u{user}", item, amount))
    return rows


def added_rows(kind: str) -> list[tuple]:
    """The added unit's rows for ``kind`` (``None`` is a null)."""
    if kind == "one_row":
        return [(EXTRA_USER, "a", 1)]
    if kind == "many_rows":
        return [(EXTRA_USER, DOMAIN[i % 3], i % 10) for i in range(40)]
    if kind == "new_group":
        return [(EXTRA_USER, "z-new", 1)]
    if kind == "extreme":
        return [(EXTRA_USER, "a", 1e300), (EXTRA_USER, "b", -1e300),
                (EXTRA_USER, "x" * 2000, 2 ** 62), (EXTRA_USER, "c", "nan"),
                (EXTRA_USER, "d", "-inf"), (EXTRA_USER, "line\nbreak,\"quoted\"", 1)]
    if kind == "null":
        return [(EXTRA_USER, None, 1), (EXTRA_USER, "a", None)]
    if kind == "type_change":           # CSV: text in the numeric column
        return [(EXTRA_USER, "a", "not-a-number")]
    raise ValueError(kind)


#: malformed rows (too many fields); different content early and late, so an
#: echo of the row differs even between the two
MALFORMED_ROWS = {"malformed_early": f"{EXTRA_USER},a,US,5,1,extra",
                  "malformed_late": f"{EXTRA_USER},b,FR,7,2,other",
                  # invalid UTF-8 in the column no release reads (written as bytes)
                  "bad_utf8_early": f"{EXTRA_USER},a,5\udcff\udcfe",
                  "bad_utf8_late": f"{EXTRA_USER},b,7\udcfe\udcff"}


def _csv_field(value) -> str:
    if value is None:
        return ""
    text = str(value)
    if any(c in text for c in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_csv(path: Path, kind: str | None = None) -> Path:
    """D (``kind`` None) or the neighbour ``kind`` as a CSV file."""
    lines = ["user,item,amount"] + [",".join(map(_csv_field, row)) for row in base_rows()]
    if kind in MALFORMED:
        row = MALFORMED_ROWS[kind]
        if kind.endswith("_early"):
            lines.insert(2, row)
        else:
            lines.append(row)
        assert (lines.index(row) > SNIFF_LINES) == kind.endswith("_late")
    elif kind is not None:
        lines += [",".join(map(_csv_field, row)) for row in added_rows(kind)]
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    return path


def _integer_frame_rows(kind: str | None) -> list[tuple]:
    """D as integers (user id, item 1..4, amount) and the neighbour's rows."""
    codes = {label: number for number, label in zip(INTEGER_DOMAIN, DOMAIN)}
    rows = [(int(user[1:]), codes[item], float(amount)) for user, item, amount in base_rows()]
    extra = 10 ** 6
    if kind in (None,) + MALFORMED:
        return rows
    if kind == "type_change":           # one null item: pandas makes the column float64
        return rows + [(extra, None, 1.0)]
    if kind == "null_user":             # a row without a user: the user column float64
        return rows + [(None, 1, 1.0)]
    if kind == "null":
        return rows + [(extra, 1, None)]
    if kind == "new_group":
        return rows + [(extra, 99, 1.0)]
    if kind == "extreme":
        return rows + [(extra, 1, 1e300), (extra, 2 ** 62, -1e300)]
    return rows + [(extra, codes.get(item, 1), float(amount))
                   for _, item, amount in added_rows(kind)]


def frame(kind: str | None = None):
    """D / D' as a pandas DataFrame built the ordinary way (so a None in an
    integer column makes it float64, as a data pipeline would)."""
    import pandas as pd
    return pd.DataFrame(_integer_frame_rows(kind), columns=list(COLUMNS))


def write_parquet(path: Path, kind: str | None = None) -> Path:
    frame(kind).to_parquet(path, index=False)
    return path


# ----------------------------------------------------------------------------------
# observations
# ----------------------------------------------------------------------------------

@dataclass
class Observation:
    """What a caller sees: ``status`` (exit code, HTTP status, or the name of
    the exception a library call raised), ``stdout`` (printed text, HTTP body,
    or the release's JSON), ``stderr`` (printed text, the exception's message,
    default-visible log records and warnings), ``extra`` (e.g. the ledger
    afterwards, named views)."""

    status: object
    stdout: str
    stderr: str
    extra: dict = field(default_factory=dict)


@contextlib.contextmanager
def plain_process():
    """Capture stdout / stderr as a plain Python process would show them
    (module docstring): yields the two StringIO buffers."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.lastResort
    last_resort = logging.StreamHandler(err)
    last_resort.setLevel(logging.WARNING)
    root.handlers = []
    root.setLevel(logging.WARNING)
    logging.lastResort = last_resort

    def show(message, category, filename, lineno, file=None, line=None):
        err.write(f"{category.__name__}: {message}\n")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            # a plain process never shows ResourceWarning (ignored by default); here
            # one comes from objects of earlier tests collected at random moments
            warnings.simplefilter("ignore", ResourceWarning)
            warnings.showwarning = show
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                yield out, err
    finally:
        root.handlers, _, logging.lastResort = saved
        root.setLevel(saved[1])


def run_cli(argv) -> Observation:
    """``privloss ARGV`` in this process, as a plain process would show it."""
    from privloss.cli.main import main

    with plain_process() as (out, err):
        try:
            status = main([str(word) for word in argv])
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
    return Observation(status, out.getvalue(), err.getvalue())


def run_library(call) -> Observation:
    """A library call: its result's JSON (``to_dict``-like, via ``as_json``)
    or the exception's type and message."""
    with plain_process() as (out, err):
        try:
            result = call()
        except Exception as error:       # noqa: BLE001 - the type is the observation
            print(str(error), file=sys.stderr)
            status, text = type(error).__name__, ""
        else:
            status, text = "ok", json.dumps(as_json(result), sort_keys=True, default=str)
    return Observation(status, out.getvalue() + text, err.getvalue())


def as_json(result):
    from privloss.api.protocol import payload_of
    if hasattr(result, "to_dict") and not hasattr(result, "rows"):
        return result.to_dict()
    if hasattr(result, "events") and hasattr(result, "algorithm"):
        return payload_of(result)
    return result.to_dict()


def run_cli_process(argv, env_home: str, timeout: float = 120) -> Observation:
    """``python -m privloss.cli.main ARGV`` as a real process (default logging)."""
    env = {**os.environ, "PRIVLOSS_HOME": env_home}
    env.pop("PRIVLOSS_FINGERPRINT_KEY", None)
    done = subprocess.run([sys.executable, "-m", "privloss.cli.main", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    return Observation(done.returncode, done.stdout, done.stderr)


# ----------------------------------------------------------------------------------
# masking
# ----------------------------------------------------------------------------------

class Noisy:
    """A DP-noised value, of this type."""

    def __init__(self, value):
        self.kind = type(value).__name__ if not isinstance(value, list) else \
            "[" + ",".join(sorted({type(v).__name__ for v in value})) + "]"

    def __eq__(self, other):
        return isinstance(other, Noisy) and other.kind == self.kind

    def __repr__(self):
        return f"Noisy({self.kind})"


class DpSelected:
    """A DP-selected list of keys: only the label types are compared (an empty
    list matches any)."""

    def __init__(self, labels):
        self.kinds = frozenset(type(label).__name__ for label in labels)

    def __eq__(self, other):
        return isinstance(other, DpSelected) and (
            not self.kinds or not other.kinds or self.kinds == other.kinds)

    def __repr__(self):
        return f"DpSelected({sorted(self.kinds)})"


_RANDOM_TOKENS = [
    (re.compile(r"error id [0-9a-f]{8}"), "error id <ID>"),
    (re.compile(r"privloss-[a-z]+-[A-Za-z0-9_]{6,}"), "<TMP>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<TIME>"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "<MAC>"),
]
#: noisy values outside the rows of a release (inside them every non-key field is)
_NOISY_KEYS = {"totals"}
_TIME_KEYS = {"time", "created", "mac", "elapsed"}


def mask_text(text: str, run_directory: str | None = None) -> str:
    """Random tokens and the run's own directory replaced (module docstring)."""
    if run_directory:
        text = text.replace(run_directory, "<RUN>")
    for pattern, replacement in _RANDOM_TOKENS:
        text = pattern.sub(replacement, text)
    return text


def mask_json(value, *, public_keys: bool):
    """Noisy values and (unless ``public_keys``) DP-selected keys masked."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("items", "rows", "others") and isinstance(item, list) and all(
                    isinstance(row, dict) for row in item):
                out[key] = _mask_rows(item, public_keys)
            elif key == "periods" and isinstance(item, list):
                # running totals: the periods are public (from --start/--end), in order;
                # every other field of a period is noisy
                out[key] = [{name: (value if name == "period" else _noisy(value))
                             for name, value in row.items()} for row in item]
            elif key in _NOISY_KEYS and not isinstance(item, str):
                out[key] = _noisy(item)
            elif key in _TIME_KEYS:
                out[key] = "<TOKEN>"
            elif key == "result" and isinstance(item, str) and item.startswith("{"):
                out[key] = mask_json(json.loads(item), public_keys=public_keys)
            else:
                out[key] = mask_json(item, public_keys=public_keys)
        return out
    if isinstance(value, list):
        return [mask_json(item, public_keys=public_keys) for item in value]
    return value


def _noisy(value):
    if isinstance(value, dict):
        return {key: _noisy(item) for key, item in value.items()}
    if value is None:
        return None
    return Noisy(value)


def _mask_rows(rows: list, public_keys: bool):
    if not public_keys:
        return DpSelected(_label_of(row) for row in rows)
    # public keys are compared as a set with their noisy values masked; their
    # order (by noisy count) is post-processing of the noise
    return sorted(({key: (_noisy(item) if key not in ("item", "group") else item)
                    for key, item in row.items()} for row in rows),
                  key=lambda row: json.dumps(_label_of(row), default=str))


def _label_of(row: dict):
    label = row.get("item", row.get("group"))
    return tuple(label) if isinstance(label, list) else label


def noisy_gaps(base: dict, other: dict) -> dict:
    """{label: |noisy(D') - noisy(D)|} for the count of each public key (a
    histogram's items, an aggregate's rows' first value column)."""
    def counts(payload):
        if "items" in payload:
            return {json.dumps(row["item"]): row["count"] for row in payload["items"]}
        return {json.dumps(row["group"]): row["values"][payload["columns"][0]]
                for row in payload["rows"]}
    mine, theirs = counts(base), counts(other)
    return {label: abs(theirs.get(label, 0) - mine.get(label, 0))
            for label in set(mine) | set(theirs)}


def parse_json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def masked(observation: Observation, *, public_keys: bool,
           run_directory: str | None = None, text_masks=()) -> dict:
    """The comparable view of an observation: JSON stdout masked as JSON, text
    stdout through ``text_masks`` (pairs of pattern, replacement: the noisy
    columns of a text table), everything through :func:`mask_text`."""
    def clean(text):
        return mask_text(text, run_directory)
    payload = parse_json(observation.stdout) if observation.stdout.strip() else None
    if payload is not None:
        stdout = mask_json(json.loads(clean(json.dumps(payload))), public_keys=public_keys)
    else:
        stdout = clean(observation.stdout)
        for pattern, replacement in text_masks:
            stdout = re.sub(pattern, replacement, stdout, flags=re.MULTILINE)
    extra = {}
    for name, value in observation.extra.items():
        if isinstance(value, Observation):
            extra[name] = masked(value, public_keys=public_keys, run_directory=run_directory)
        else:
            extra[name] = mask_json(json.loads(clean(json.dumps(value, default=str))),
                                    public_keys=public_keys)
    return {"status": observation.status, "stdout": stdout, "stderr": clean(observation.stderr),
            "extra": extra}


def differences(base: dict, other: dict, where: str = "") -> list[str]:
    """Readable differences of two masked views (empty: identical)."""
    if isinstance(base, dict) and isinstance(other, dict):
        found = []
        for key in list(base) + [k for k in other if k not in base]:
            if key not in base or key not in other:
                found.append(f"{where}/{key}: only in {'D' if key in base else 'the neighbour'}")
                continue
            found += differences(base[key], other[key], f"{where}/{key}")
        return found
    if isinstance(base, list) and isinstance(other, list) and len(base) == len(other):
        found = []
        for index, (mine, theirs) in enumerate(zip(base, other)):
            found += differences(mine, theirs, f"{where}[{index}]")
        return found
    if base == other:
        return []
    if isinstance(base, str) and isinstance(other, str):
        return [f"{where}: D {base[-600:]!r}\n   D' {other[-600:]!r}"]
    return [f"{where}: D {base!r} != D' {other!r}"]


def assert_same(base: dict, other: dict, context: str) -> None:
    found = differences(base, other)
    assert not found, f"{context}: D and D' differ beyond the noise:\n" + "\n".join(found)
