"""Per-user contribution bounding: the one rule every engine implements.

Definition
----------
Rows are (user, item) pairs.  Let ``c(u, i)`` be the number of rows of user
``u`` with item ``i``.  Two bounds are applied per user, inside the engine:

* **l0** (``Delta_0``): a user with more than ``l0`` distinct items keeps
  ``l0`` of them, chosen uniformly at random (not by row order); a user with at
  most ``l0`` distinct items keeps all of them.  ``l0=None`` keeps everything.
* **linf** (``Delta_inf``): each kept count is capped, ``min(c(u, i), linf)``.

The bounded histogram is ``h(i) = sum over users u keeping i of min(c(u, i), linf)``.

**The random choice.**  Each distinct pair gets a *selection key*; a user keeps
the ``l0`` items with the smallest ``(key(u, i), code(i), tie(i))``, where
``tie(i)`` is the label itself, except that in a text column canonical integer
text comes after all other text (its code is itself, so it ties with at most
one other label: one whose md5 code equals that integer).  Users are
always told apart by their exact id, never by their code: md5 prefixes can be
made to collide on purpose, and a user merged with another one could change up
to ``2 l0`` counts.  A code collision only makes two choices correlated.  Keys are a
keyed hash computed inside the engine, with only integer operations that give
identical results in DuckDB, Spark and Python, so every engine chooses the same
subsets for the same seed (this is what makes engine results equal):

* ``code(v)``: for integer columns the value itself (signed 64-bit); for every
  other column, the integer ``int(text(v))`` when ``text(v)`` is *canonical
  integer text* (:data:`CANONICAL_INTEGER`: ``0`` or an optional ``-`` and at
  most 18 ASCII digits without a leading zero; "007", "+7", "-0", " 7" are
  not), else the first 15 hex digits of ``md5(text(v))`` read as an integer
  (60 bits).  ``text`` is the engine's cast to string (identical in DuckDB and
  Spark for strings and integers; CSV files are read as text by both).  The
  rule is decided **per value**, inside the engine: a value's code never
  depends on the other rows (a per-column rule, "integers if every value is
  one", would let one user's non-integer label change every other user's
  choice).  Integer-valued text thus chooses as its integers do, and engines
  group it as BIGINT (much faster than strings) while labels stay the text;
* 32-bit lanes of a code ``v``: ``lo(v) = v & M``, ``hi(v) = (v >> 32) & M``
  with ``M = 2^32 - 1`` (arithmetic shift, two's complement);
* ``mix(x)`` for ``x`` in ``[0, 2^32)``: ``x = ((x >> 16) ^ x) * C & M`` twice,
  then ``(x >> 16) ^ x``, with ``C = 0x45d9f3b`` (a bijection of 32-bit words
  with full avalanche, T. Mueller's integer hash);
* four round keys ``K0..K3`` in ``[0, 2^32)`` derived from the seed by SHA-256:

  ``a = mix(((mix((lo(u) + K0) & M) ^ hi(u)) + K1) & M)`` (the user only),
  ``key = mix(((mix(((a + lo(i)) & M) ^ K2) ^ hi(i)) + K3) & M)``.

  Every intermediate is below ``2^59``, so no engine overflows (Spark's ANSI
  mode and DuckDB both raise on overflow) and no floating point is involved.

For one user the item keys behave as independent uniform values, so the kept
subset is uniform among the ``l0``-subsets (checked by chi-square tests in
``tests/analytics``); the user term ``a`` makes different users' choices
independent.  Keys are 32 bits: ties (probability at most ``n^2 / 2^33`` for
a user with ``n`` items) fall back to ``code(i)`` and then to the label.

Privacy guarantee
-----------------
Whatever the seed, a user's kept items depend only on that user's own rows, so
adding or removing one user changes at most ``l0`` counts of the bounded
histogram, each by at most ``linf`` (``l1`` change at most ``l0 * linf``).  The
seed need not be secret for this; it is drawn from the secure source by default
so that the choice is unpredictable, and an explicit ``seed`` (tests,
reproducible runs) is **not** secure.  The hash is a statistical mixer, not a
cryptographic PRF: it is used for uniformity of the choice (utility), never for
the privacy guarantee.

Citation
--------
Contribution bounding as in Wilson et al., "Differentially Private SQL with
Bounded User Contribution" (PoPETs 2020), and Rogers et al., "LinkedIn's
Audience Engagements API" (arXiv:2002.05839); ``mix`` is Thomas Mueller's
32-bit integer hash (constant ``0x45d9f3b``, https://stackoverflow.com/a/12996028).

Runtime
-------
About 40 vectorised integer operations (shifts, xors, masks, small products)
per distinct (user, item) pair; no division, no floating point.
"""

from __future__ import annotations

import hashlib
import numbers
import re
from dataclasses import dataclass

__all__ = [
    "LANE_BITS",
    "LANE_MASK",
    "MIX_MULTIPLIER",
    "MIX_SHIFT",
    "SEED_BITS",
    "CANONICAL_INTEGER",
    "ContributionBounds",
    "SelectionKey",
    "check_bounds",
    "draw_seed",
    "integer_code",
    "is_canonical_integer",
    "mix32",
    "text_code",
    "text_code_digits",
]

LANE_BITS = 32
LANE_MASK = (1 << LANE_BITS) - 1
#: Below 2^27, so ``x * MIX_MULTIPLIER < 2^59`` for any 32-bit ``x``.
MIX_MULTIPLIER = 0x45D9F3B
MIX_SHIFT = 16
#: Bits of a seed drawn from the secure source.
SEED_BITS = 128
#: Canonical integer text (a full match): no sign but '-', no leading zero, no
#: "-0", at most 18 digits (so it fits a signed 64-bit integer).  Such text is
#: exactly the text of its BIGINT, so engines group it as BIGINT (the labels
#: come back unchanged and "007" never meets "7").
CANONICAL_INTEGER = "0|-?[1-9][0-9]{0,17}"
#: Hex digits of md5(text) kept as the code of a non-integer value (60 bits).
text_code_digits = 15
_CANONICAL = re.compile(CANONICAL_INTEGER, re.ASCII)
_ROUND_KEYS = 4
_DOMAIN_TAG = b"privloss/analytics/l0-selection/v2"
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _positive_int_or_none(name: str, value, *, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        allowed = "None or an integer >= 1" if allow_none else "an integer >= 1"
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return value


@dataclass(frozen=True)
class ContributionBounds:
    """Validated bounds: ``l0`` (None = unrestricted) and ``linf`` (>= 1)."""

    l0: int | None
    linf: int


def check_bounds(l0, linf) -> ContributionBounds:
    """Validate ``l0`` (None or integer >= 1) and ``linf`` (integer >= 1)."""
    return ContributionBounds(_positive_int_or_none("l0", l0, allow_none=True),
                              _positive_int_or_none("linf", linf, allow_none=False))


def draw_seed(source=None) -> int:
    """A fresh ``SEED_BITS``-bit seed from ``source`` (default: the secure source)."""
    from privloss.samplers.randomness import default_source

    source = default_source() if source is None else source
    return int(source.random_int_bits(SEED_BITS))


def integer_code(value) -> int:
    """Code of an integer value: the value itself, which must fit in signed 64 bits."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"integer_code needs an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"integer label {value} does not fit in a signed 64-bit integer")
    return value


def is_canonical_integer(text: str) -> bool:
    """Does ``text`` fully match :data:`CANONICAL_INTEGER`?  (ASCII digits only:
    ``str.isdigit`` would accept other scripts' digits.)"""
    return _CANONICAL.fullmatch(text) is not None


def text_code(text: str) -> int:
    """Code of a non-integer value from its text: the integer itself for
    canonical integer text (:data:`CANONICAL_INTEGER`), else the md5 hex prefix
    (60 bits)."""
    if is_canonical_integer(text):
        return int(text)
    digest = hashlib.md5(text.encode("utf-8")).hexdigest()
    return int(digest[:text_code_digits], 16)


def mix32(x: int) -> int:
    """Mueller's 32-bit integer hash (a bijection of ``[0, 2^32)``)."""
    x = ((x >> MIX_SHIFT) ^ x) * MIX_MULTIPLIER & LANE_MASK
    x = ((x >> MIX_SHIFT) ^ x) * MIX_MULTIPLIER & LANE_MASK
    return (x >> MIX_SHIFT) ^ x


def _lanes(code: int) -> tuple[int, int]:
    return code & LANE_MASK, (code >> LANE_BITS) & LANE_MASK


@dataclass(frozen=True)
class SelectionKey:
    """The keyed hash of the module docstring, with round keys from a seed.

    Engines build the same arithmetic from :attr:`round_keys`; :meth:`key` is
    the Python definition the tests compare them with.
    """

    round_keys: tuple[int, ...]

    @classmethod
    def from_seed(cls, seed) -> "SelectionKey":
        """Derive the round keys from a non-negative integer ``seed`` (SHA-256)."""
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be a non-negative integer or None, got "
                            f"{type(seed).__name__} {seed!r}")
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        seed_bytes = str(seed).encode("ascii")
        keys = []
        for index in range(_ROUND_KEYS):
            digest = hashlib.sha256(_DOMAIN_TAG + b"\x00" + seed_bytes + b"\x00"
                                    + bytes([index])).digest()
            keys.append(int.from_bytes(digest[:4], "big"))
        return cls(tuple(keys))

    def user_term(self, user_code: int) -> int:
        """``a``: the per-user term (depends on the user only)."""
        k = self.round_keys
        low, high = _lanes(user_code)
        return mix32(((mix32((low + k[0]) & LANE_MASK) ^ high) + k[1]) & LANE_MASK)

    def key(self, user_code: int, item_code: int) -> int:
        """The selection key of a (user, item) pair, in ``[0, 2^32)``."""
        k = self.round_keys
        a = self.user_term(user_code)
        low, high = _lanes(item_code)
        inner = mix32(((a + low) & LANE_MASK) ^ k[2])
        return mix32(((inner ^ high) + k[3]) & LANE_MASK)
