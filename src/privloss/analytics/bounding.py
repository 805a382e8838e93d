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
the ``l0`` items with the smallest ``(key(u, i), code(i), i)``.  Keys are a
keyed hash computed inside the engine, with only integer operations that give
identical results in DuckDB, Spark and Python, so every engine chooses the same
subsets for the same seed (this is what makes engine results equal):

* ``code(v)``: for integer columns the value itself (signed 64-bit); for every
  other column the first 15 hex digits of ``md5(text(v))`` read as an integer
  (60 bits), where ``text`` is the engine's cast to string (identical in DuckDB
  and Spark for strings and integers; CSV files are read as text by both);
* limbs of a 64-bit code ``v``: ``v & (2^30-1)``, ``(v >> 30) & (2^30-1)``,
  ``(v >> 60) & 15`` (arithmetic shift, two's complement);
* with ``P = 2^31 - 1`` and ``pow5(t) = t^5 mod P`` (a permutation of
  ``Z_P`` since ``gcd(5, P - 1) = 1``) and nine round keys ``K0..K8`` in
  ``[0, P)`` derived from the seed by SHA-256:

  ``a = pow5((K0 + K1 u0 + K2 u1 + K3 u2) mod P)`` (depends on the user only),
  ``b = pow5((a + K4 i0 + K5 i1 + K6 i2) mod P)``,
  ``key = pow5((b + K7 a + K8) mod P)``.

  Every intermediate product is below ``2^63``, so no engine overflows (Spark's
  ANSI mode would raise; DuckDB raises on overflow too).

For one user the item keys behave as independent uniform values, so the kept
subset is uniform among the ``l0``-subsets (checked by a chi-square test in
``tests/analytics``); the user term ``a`` makes different users' choices
independent.  Keys are 31 bits: ties (probability at most ``n^2 / 2^32`` for
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
Audience Engagements API" (arXiv:2002.05839); the round function is MiMC-style
(Albrecht et al., ASIACRYPT 2016) over the Mersenne prime ``2^31 - 1``.

Runtime
-------
Python reference: ``O(1)`` big-int operations per pair.  Engines: a handful of
vectorised integer operations per distinct pair.
"""

from __future__ import annotations

import hashlib
import numbers
from dataclasses import dataclass

__all__ = [
    "MODULUS",
    "LIMB_BITS",
    "LIMB_MASK",
    "TOP_LIMB_MASK",
    "SEED_BITS",
    "ContributionBounds",
    "SelectionKey",
    "check_bounds",
    "draw_seed",
    "integer_code",
    "text_code",
    "text_code_digits",
]

#: Mersenne prime 2^31 - 1: products of two residues stay below 2^62.
MODULUS = (1 << 31) - 1
LIMB_BITS = 30
LIMB_MASK = (1 << LIMB_BITS) - 1
#: The top 4 bits of a signed 64-bit code (after the arithmetic shift by 60).
TOP_LIMB_MASK = 15
#: Bits of a seed drawn from the secure source.
SEED_BITS = 128
#: Hex digits of md5(text) kept as the code of a non-integer value (60 bits).
text_code_digits = 15
_ROUND_KEYS = 9
_DOMAIN_TAG = b"privloss/analytics/l0-selection/v1"
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


def text_code(text: str) -> int:
    """Code of a non-integer value from its text: md5 hex prefix (60 bits)."""
    digest = hashlib.md5(text.encode("utf-8")).hexdigest()
    return int(digest[:text_code_digits], 16)


def _limbs(code: int) -> tuple[int, int, int]:
    return code & LIMB_MASK, (code >> LIMB_BITS) & LIMB_MASK, (code >> 2 * LIMB_BITS) & TOP_LIMB_MASK


def _pow5(t: int) -> int:
    square = t * t % MODULUS
    return square * square % MODULUS * t % MODULUS


@dataclass(frozen=True)
class SelectionKey:
    """The keyed hash of the module docstring, with round keys from a seed.

    Engines build the same arithmetic from :attr:`round_keys`; :meth:`key` is
    the Python definition the tests compare them with.
    """

    round_keys: tuple[int, ...]

    @classmethod
    def from_seed(cls, seed) -> "SelectionKey":
        """Derive the nine round keys from a non-negative integer ``seed`` (SHA-256)."""
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
            # 64 bits reduced mod P: bias below 2^-32, irrelevant for a mixer
            keys.append(int.from_bytes(digest[:8], "big") % MODULUS)
        return cls(tuple(keys))

    def user_term(self, user_code: int) -> int:
        """``a``: the per-user term (depends on the user only)."""
        k = self.round_keys
        u0, u1, u2 = _limbs(user_code)
        return _pow5((k[0] + k[1] * u0 + k[2] * u1 + k[3] * u2) % MODULUS)

    def key(self, user_code: int, item_code: int) -> int:
        """The selection key of a (user, item) pair, in ``[0, 2^31 - 1)``."""
        k = self.round_keys
        a = self.user_term(user_code)
        i0, i1, i2 = _limbs(item_code)
        b = _pow5((a + k[4] * i0 + k[5] * i1 + k[6] * i2) % MODULUS)
        return _pow5((b + k[7] * a + k[8]) % MODULUS)
