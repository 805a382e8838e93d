"""Randomness sources: the secure default, exactness of uniform draws, seeding."""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy import stats

from privloss.samplers import (InsecureSeededSource, RandomSource, SecureRandomSource,
                               default_source, discrete_gaussian)
from privloss.samplers.randomness import SECURE_BACKENDS, resolve_source
from tests.samplers._stats import ALPHA


class CountingSource(RandomSource):
    """Deterministic words 0, 1, 2, ... (to check how words are consumed)."""

    def __init__(self):
        super().__init__()
        self.next = 0

    def random_words(self, count):
        words = np.arange(self.next, self.next + count, dtype=np.uint64)
        self.next += count
        return words


def test_default_source_is_secure():
    source = default_source()
    assert isinstance(source, SecureRandomSource)
    assert source.secure is True
    assert source.backend in SECURE_BACKENDS
    assert resolve_source(None) is source
    assert default_source() is source  # one process-wide instance


def test_default_backend_prefers_randomgen_cipher():
    pytest.importorskip("randomgen")
    assert SecureRandomSource().backend in ("aes-ctr", "chacha20")


@pytest.mark.parametrize("backend", SECURE_BACKENDS)
def test_each_secure_backend_produces_distinct_uniform_words(backend):
    if backend != "os":
        pytest.importorskip("randomgen")
    first = SecureRandomSource(backend)
    second = SecureRandomSource(backend)
    words = first.random_words(4096)
    assert words.dtype == np.uint64 and words.shape == (4096,)
    # two independently keyed sources never agree; bits are balanced
    assert not np.array_equal(words[:8], second.random_words(8))
    ones = int(np.unpackbits(words.view(np.uint8)).sum())
    assert stats.binomtest(ones, 4096 * 64).pvalue > ALPHA


def test_insecure_source_is_reproducible_and_flagged():
    a, b = InsecureSeededSource(123), InsecureSeededSource(123)
    assert a.secure is False
    assert "Insecure" in type(a).__name__
    assert np.array_equal(discrete_gaussian(10, 1000, source=a),
                          discrete_gaussian(10, 1000, source=b))
    assert [a.uniform_below(1000) for _ in range(50)] == [b.uniform_below(1000) for _ in range(50)]
    c = InsecureSeededSource(124)
    assert not np.array_equal(discrete_gaussian(10, 1000, source=a),
                              discrete_gaussian(10, 1000, source=c))


def test_resolve_source_rejects_seeds_and_other_objects():
    with pytest.raises(TypeError, match="InsecureSeededSource"):
        resolve_source(42)
    with pytest.raises(TypeError):
        resolve_source(np.random.default_rng(0))
    with pytest.raises(ValueError):
        InsecureSeededSource(-1)
    with pytest.raises(TypeError):
        InsecureSeededSource(1.5)
    with pytest.raises(ValueError, match="backend"):
        SecureRandomSource("md5")


def test_secure_source_cannot_be_copied_or_pickled():
    import copy
    import pickle
    source = SecureRandomSource()
    for clone in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be pickled or copied"):
            clone(source)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_secure_source_is_rekeyed_in_a_forked_child():
    source = SecureRandomSource()
    source.uniform_below(10)  # fill the scalar pool before forking
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report its next words, then exit immediately
        os.close(read_end)
        words = source.random_words(4).tobytes() + source.uniform_below(2**64).to_bytes(8, "little")
        os.write(write_end, words)
        os._exit(0)
    os.close(write_end)
    child = b""
    while len(child) < 40:
        chunk = os.read(read_end, 40)
        if not chunk:
            break
        child += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    parent = source.random_words(4).tobytes() + source.uniform_below(2**64).to_bytes(8, "little")
    assert len(child) == 40
    assert child[:32] != parent[:32]
    assert child[32:] != parent[32:]


# -- exactness of uniform draws -------------------------------------------------

@pytest.mark.parametrize("m", [1, 2, 3, 7, 10, 1000, 2**31 - 1, 2**32, 2**32 + 1, 2**62 + 3,
                               2**63, 2**64 + 13, 10**40])
def test_uniform_below_scalar_range(m):
    source = InsecureSeededSource(m % 1000)
    draws = [source.uniform_below(m) for _ in range(300)]
    assert all(isinstance(v, int) and 0 <= v < m for v in draws)


@pytest.mark.parametrize("m", [3, 7, 12, 1000, 2**31 + 5, 2**33 - 1, 5 * 2**59, 2**63])
def test_uniform_below_array_is_uniform(m):
    # chi-square over 16 equal ranges of [0, m) (m >= 16) or every value
    source = InsecureSeededSource(m % 997)
    n = 160_000
    draws = source.uniform_below_array(m, n)
    assert draws.dtype == np.int64 and draws.shape == (n,)
    assert draws.min() >= 0 and int(draws.max()) < m
    bins = min(m, 16)
    counts = np.bincount(((draws.astype(object) * bins) // m).astype(np.int64), minlength=bins)
    expected = np.array([(((k + 1) * m + bins - 1) // bins - (k * m + bins - 1) // bins)
                         for k in range(bins)], dtype=float) * n / m
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_uniform_below_array_small_m_exact_frequencies():
    # every residue of m = 3 (Lemire path) equally likely, exact pmf 1/3
    draws = InsecureSeededSource(5).uniform_below_array(3, 300_000)
    assert stats.chisquare(np.bincount(draws, minlength=3)).pvalue > ALPHA


def test_uniform_below_array_huge_m_gives_python_ints():
    m = 10**30
    draws = InsecureSeededSource(1).uniform_below_array(m, 50)
    assert draws.dtype == object
    assert all(isinstance(v, int) and 0 <= v < m for v in draws)


def test_uniform_below_array_per_element_bounds():
    source = InsecureSeededSource(9)
    bounds = np.array([1, 2, 3, 5, 1000, 2**40 + 1] * 20_000, dtype=np.int64)
    draws = source.uniform_below_array(bounds, bounds.size)
    assert np.all((draws >= 0) & (draws < bounds))
    threes = draws[bounds == 3]
    assert stats.chisquare(np.bincount(threes, minlength=3)).pvalue > ALPHA
    with pytest.raises(ValueError):
        source.uniform_below_array(np.array([1, 0]), 2)


def test_uniform_below_rejects_bad_bounds():
    source = InsecureSeededSource(0)
    for bad in (0, -5):
        with pytest.raises(ValueError):
            source.uniform_below(bad)
        with pytest.raises(ValueError):
            source.uniform_below_array(bad, 3)
    with pytest.raises(TypeError):
        source.uniform_below(2.0)


def test_uniform_below_uses_top_bits_without_modulo():
    # with words 0, 1, 2, ... the top-bit extraction of m = 2**k gives 0 (no bias
    # from low bits); a modulo implementation would return 0, 1, 2, ...
    source = CountingSource()
    assert [source.uniform_below(8) for _ in range(5)] == [0] * 5
    assert list(CountingSource().uniform_below_array(8, 5)) == [0] * 5


def test_random_bits_balanced():
    bits = InsecureSeededSource(3).random_bits(100_001)
    assert bits.dtype == np.bool_ and bits.shape == (100_001,)
    assert stats.binomtest(int(bits.sum()), bits.size).pvalue > ALPHA
