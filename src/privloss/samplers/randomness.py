"""Sources of randomness for the exact samplers.

All randomness used by :mod:`privloss.samplers` flows through one small
interface, :class:`RandomSource`:

* :meth:`RandomSource.uniform_below` ``(m) -> int`` – one exact uniform draw
  from ``{0, ..., m-1}`` for any Python int ``m >= 1``;
* :meth:`RandomSource.uniform_below_array` ``(m, size) -> ndarray`` – the
  batched version (``m`` a scalar or an array of per-element bounds);
* :meth:`RandomSource.random_bits` ``(count)`` – ``uniform_below_array(2, count)``
  as booleans, drawn 64 per word.

Subclasses implement only :meth:`RandomSource.random_words` (uniform 64-bit
words); everything else is derived from it by exact rejection (never
``word % m``, never ``floor(m * float)``).

Sources provided:

* :class:`SecureRandomSource` (the default, see :func:`default_source`): a
  cryptographically secure generator keyed from ``os.urandom``.  With the
  `randomgen <https://pypi.org/project/randomgen/>`_ package installed it is
  AES-128 in counter mode (hardware AES) or ChaCha20, whose keystream is produced
  in large blocks; without it, raw ``os.urandom`` bytes.  The key is renewed in a
  child process after ``fork`` so parent and child never share a stream.
* :class:`InsecureSeededSource` (``seed``): NumPy PCG64, reproducible, **not**
  secure, for tests and reproducible experiments only.
"""

from __future__ import annotations

import abc
import os
import threading
import weakref

import numpy as np

from privloss.samplers._params import integer

__all__ = [
    "RandomSource",
    "SecureRandomSource",
    "InsecureSeededSource",
    "default_source",
    "resolve_source",
    "SECURE_BACKENDS",
]

_WORD_BITS = 64
_HALF = 1 << 32
_INT64_LIMIT = 1 << 63
#: Words fetched at a time for the scalar (pure Python) draws.
_SCALAR_POOL_WORDS = 4096


class RandomSource(abc.ABC):
    """Exact uniform integers built on a stream of uniform 64-bit words."""

    #: True only for sources whose output is suitable for privacy use.
    secure: bool = False

    def __init__(self) -> None:
        self._pool: list[int] = []
        self._pool_lock = threading.Lock()

    # -- the one primitive a subclass provides ------------------------------

    @abc.abstractmethod
    def random_words(self, count: int) -> np.ndarray:
        """Return a new array of ``count`` independent uniform ``uint64`` words."""

    # -- scalar draws (Python ints) ------------------------------------------

    def _next_word(self) -> int:
        with self._pool_lock:
            if not self._pool:
                self._pool = self.random_words(_SCALAR_POOL_WORDS).tolist()
            return self._pool.pop()

    def _discard_pool(self) -> None:
        with self._pool_lock:
            self._pool = []

    def random_int_bits(self, bits: int) -> int:
        """A uniform integer in ``[0, 2**bits)`` (Python int, any ``bits >= 0``)."""
        value = 0
        whole, rest = divmod(bits, _WORD_BITS)
        for _ in range(whole):
            value = (value << _WORD_BITS) | self._next_word()
        if rest:
            value = (value << rest) | (self._next_word() >> (_WORD_BITS - rest))
        return value

    def uniform_below(self, m) -> int:
        """Exact uniform draw from ``{0, ..., m-1}`` (rejection on random bits)."""
        m = integer("m", m)
        if m < 1:
            raise ValueError(f"m must be an integer >= 1, got {m}")
        if m == 1:
            return 0
        bits = (m - 1).bit_length()
        if bits <= _WORD_BITS:
            shift = _WORD_BITS - bits
            while True:  # acceptance probability m / 2**bits > 1/2
                value = self._next_word() >> shift
                if value < m:
                    return value
        while True:
            value = self.random_int_bits(bits)
            if value < m:
                return value

    # -- batched draws (NumPy) -----------------------------------------------

    def random_bits(self, count: int) -> np.ndarray:
        """``count`` independent fair bits as a boolean array (64 bits per word)."""
        words = self.random_words(-(-count // _WORD_BITS))
        return np.unpackbits(words.view(np.uint8), count=count).view(np.bool_)

    def uniform_below_array(self, m, size: int) -> np.ndarray:
        """``size`` exact uniform draws from ``{0, ..., m-1}``.

        ``m`` is a Python/NumPy integer or an integer array of shape ``(size,)``
        (per-element bounds).  The result is an ``int64`` array when every bound
        is at most ``2**63``, otherwise an object array of Python ints.
        """
        size = int(size)
        if isinstance(m, np.ndarray):
            return self._uniform_below_per_element(m, size)
        m = integer("m", m)
        if m < 1:
            raise ValueError(f"m must be an integer >= 1, got {m}")
        if m == 1:
            return np.zeros(size, dtype=np.int64)
        if m > _INT64_LIMIT:
            out = np.empty(size, dtype=object)
            for i in range(size):
                out[i] = self.uniform_below(m)
            return out
        bits = (m - 1).bit_length()
        if m == 1 << bits:  # power of two: top bits of a word, no rejection
            if bits <= 32:
                halves = self.random_words(-(-size // 2)).view(np.uint32)[:size]
                return (halves >> np.uint32(32 - bits)).astype(np.int64)
            # values < 2**63, so reinterpreting the unsigned words is exact
            return (self.random_words(size) >> np.uint64(_WORD_BITS - bits)).view(np.int64)
        if m <= _HALF:
            return self._lemire32(m, size)
        return self._masked64(m, bits, size)

    def _lemire32(self, m: int, size: int) -> np.ndarray:
        """Lemire's multiply-shift on 32-bit halves: exact, rejects < m/2**32."""
        # x*m maps [0, 2**32) onto [0, m) by the high 32 bits; rejecting the
        # low part below 2**32 mod m leaves exactly floor(2**32/m) preimages each.
        threshold = _HALF % m
        m64 = np.uint64(m)
        out = None
        positions = None  # positions of out still to redraw
        count = size
        while count:
            halves = self.random_words(-(-count // 2)).view(np.uint32)[:count]
            product = np.multiply(halves, m64, dtype=np.uint64)
            value = (product >> np.uint64(32)).view(np.int64)  # < 2**32
            if out is None:
                out = value
            else:
                out[positions] = value
            if threshold == 0:
                break
            rejected = np.flatnonzero(product.astype(np.uint32) < np.uint32(threshold))
            positions = rejected if positions is None else positions[rejected]
            count = positions.size
        return out if out is not None else np.empty(0, dtype=np.int64)

    def _masked64(self, m: int, bits: int, size: int) -> np.ndarray:
        """Top ``bits`` bits of a word, rejected when >= m (acceptance > 1/2)."""
        shift = np.uint64(_WORD_BITS - bits)
        limit = np.int64(m)
        out = (self.random_words(size) >> shift).view(np.int64)
        positions = np.flatnonzero(out >= limit)
        while positions.size:
            value = (self.random_words(positions.size) >> shift).view(np.int64)
            out[positions] = value
            positions = positions[np.flatnonzero(value >= limit)]
        return out

    def _uniform_below_per_element(self, m: np.ndarray, size: int) -> np.ndarray:
        if m.shape != (size,):
            raise ValueError(f"an array m must have shape ({size},), got {m.shape}")
        if m.dtype == object or not np.issubdtype(m.dtype, np.integer):
            out = np.empty(size, dtype=object)
            for i in range(size):
                out[i] = self.uniform_below(int(m[i]))
            return out
        m = m.astype(np.int64)
        if size and m.min() < 1:
            raise ValueError("every bound in m must be >= 1")
        # mask = 2**bit_length(m-1) - 1 per element, by smearing the top bit down
        mask = (m - 1).astype(np.uint64)
        for shift in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(shift)
        out = np.empty(size, dtype=np.int64)
        todo = np.arange(size)
        while todo.size:
            value = (self.random_words(todo.size) & mask[todo]).astype(np.int64)
            ok = value < m[todo]
            out[todo[ok]] = value[ok]
            todo = todo[~ok]
        return out


# ---------------------------------------------------------------------------
# secure default
# ---------------------------------------------------------------------------

#: Keystream generators :class:`SecureRandomSource` can use.
SECURE_BACKENDS = ("aes-ctr", "chacha20", "os")

_LIVE_SECURE_SOURCES: "weakref.WeakSet[SecureRandomSource]" = weakref.WeakSet()


def _rekey_after_fork() -> None:
    for source in list(_LIVE_SECURE_SOURCES):
        source._rekey()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rekey_after_fork)


def _randomgen():
    try:
        import randomgen
    except ImportError:
        return None
    return randomgen


def _auto_backend() -> str:
    randomgen = _randomgen()
    if randomgen is None:
        return "os"
    probe = randomgen.AESCounter(key=0)
    return "aes-ctr" if getattr(probe, "use_aesni", False) else "chacha20"


class SecureRandomSource(RandomSource):
    """Cryptographically secure source (the library default).

    ``backend``:

    * ``"aes-ctr"``: AES-128 in counter mode (``randomgen.AESCounter``), 128-bit
      key from ``os.urandom``;
    * ``"chacha20"``: ChaCha with 20 rounds (``randomgen.ChaCha``), 256-bit key
      from ``os.urandom``;
    * ``"os"``: ``os.urandom`` bytes directly (the kernel CSPRNG);
    * ``None`` (default): ``"aes-ctr"`` when randomgen is installed and the CPU
      has AES instructions, else ``"chacha20"`` when randomgen is installed,
      else ``"os"``.

    The key is drawn from ``os.urandom`` (never from a seed) and renewed in the
    child after ``os.fork``; the source refuses to be pickled or copied, so no
    two objects or processes can replay the same stream.
    """

    secure = True

    def __init__(self, backend: str | None = None) -> None:
        super().__init__()
        if backend is None:
            backend = _auto_backend()
        if backend not in SECURE_BACKENDS:
            raise ValueError(f"backend must be one of {SECURE_BACKENDS} or None, got {backend!r}")
        if backend != "os" and _randomgen() is None:
            raise ValueError(f"backend {backend!r} needs the 'randomgen' package "
                             f"(pip install randomgen); use backend='os' instead")
        self.backend = backend
        self._lock = threading.Lock()
        self._bit_generator = None
        self._rekey()
        _LIVE_SECURE_SOURCES.add(self)

    def _rekey(self) -> None:
        randomgen = _randomgen()
        if self.backend == "aes-ctr":
            key = int.from_bytes(os.urandom(16), "little")
            self._bit_generator = randomgen.AESCounter(key=key)
        elif self.backend == "chacha20":
            key = int.from_bytes(os.urandom(32), "little")
            self._bit_generator = randomgen.ChaCha(key=key, rounds=20)
        self._discard_pool()

    def random_words(self, count: int) -> np.ndarray:
        count = int(count)
        if self.backend == "os":
            return np.frombuffer(os.urandom(8 * count), dtype=np.uint64).copy()
        with self._lock:
            return self._bit_generator.random_raw(count)

    def __reduce__(self):
        # a pickled or deep-copied cipher state would replay the same keystream
        # in another process or object; each one must key its own source
        raise TypeError("SecureRandomSource cannot be pickled or copied (it would repeat its "
                        "random stream); create a new one, or call default_source(), instead")

    def __repr__(self) -> str:
        return f"SecureRandomSource(backend={self.backend!r})"


class InsecureSeededSource(RandomSource):
    """Reproducible **insecure** source (NumPy PCG64) for tests and experiments.

    Never use it to protect real data: anyone who knows or guesses the seed can
    reproduce the noise and subtract it.
    """

    secure = False

    def __init__(self, seed) -> None:
        super().__init__()
        seed = integer("seed", seed)
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        self.seed = seed
        self._bit_generator = np.random.PCG64(seed)
        self._lock = threading.Lock()

    def random_words(self, count: int) -> np.ndarray:
        with self._lock:
            return self._bit_generator.random_raw(int(count))

    def __repr__(self) -> str:
        return f"InsecureSeededSource(seed={self.seed})"


_DEFAULT: SecureRandomSource | None = None
_DEFAULT_LOCK = threading.Lock()


def default_source() -> SecureRandomSource:
    """The process-wide :class:`SecureRandomSource` used when ``source=None``."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = SecureRandomSource()
        return _DEFAULT


def resolve_source(source) -> RandomSource:
    """``None`` -> :func:`default_source`; a :class:`RandomSource` -> itself."""
    if source is None:
        return default_source()
    if isinstance(source, RandomSource):
        return source
    raise TypeError(
        f"source must be a RandomSource or None (secure default), got {source!r}; "
        f"for reproducible insecure draws use InsecureSeededSource(seed)")
