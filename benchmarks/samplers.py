"""Throughput of exact discrete Gaussian / Laplace samplers, in one run.

Compares on the same work (i.i.d. draws at the same scale):

* privloss batched (``discrete_gaussian(sigma^2, size=n)``) with the secure
  default source (and optionally the other backends);
* privloss scalar (``size=None`` in a Python loop);
* a pure-Python CKS reference: a minimal re-implementation, in this file, of
  Algorithms 1-3 of Canonne, Kamath, Steinke (arXiv:2004.00010) with
  ``fractions.Fraction`` and ``random.SystemRandom``, following the structure
  of the authors' ``discretegauss.py``;
* OpenDP (``opendp.measurements.make_gaussian`` / ``make_laplace`` on an
  ``i64`` vector domain; Rust exact samplers; the timing includes converting
  the Python input list and the output list), if ``opendp`` is installed.

Run:  python benchmarks/samplers.py [--n 1000000] [--json out.json]
Targets: discrete Gaussian >= 1e6 samples/s, discrete Laplace >= 2e6 samples/s
(privloss batched, one process).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from fractions import Fraction

import numpy as np

from privloss.samplers import (SecureRandomSource, default_source, discrete_gaussian,
                               discrete_laplace)

GAUSSIAN_TARGET = 1_000_000
LAPLACE_TARGET = 2_000_000


# ---------------------------------------------------------------------------
# pure-Python CKS reference (Fractions, SystemRandom), for comparison only
# ---------------------------------------------------------------------------

class CKSReference:
    """Algorithms 1-3 of [CKS], written plainly with Fractions."""

    def __init__(self, rng=None):
        self.rng = rng or random.SystemRandom()

    def uniform(self, m: int) -> int:
        return self.rng.randrange(m)

    def bernoulli(self, p: Fraction) -> int:
        return 1 if self.uniform(p.denominator) < p.numerator else 0

    def bernoulli_exp1(self, x: Fraction) -> int:  # x in [0, 1]
        k = 1
        while self.bernoulli(x / k) == 1:
            k += 1
        return k % 2

    def bernoulli_exp(self, x: Fraction) -> int:  # x >= 0
        while x > 1:
            if self.bernoulli_exp1(Fraction(1)) == 1:
                x -= 1
            else:
                return 0
        return self.bernoulli_exp1(x)

    def geometric_exp_slow(self, x: Fraction) -> int:
        k = 0
        while self.bernoulli_exp(x) == 1:
            k += 1
        return k

    def geometric_exp_fast(self, x: Fraction) -> int:  # x = s/t > 0
        t = x.denominator
        while True:
            u = self.uniform(t)
            if self.bernoulli_exp(Fraction(u, t)) == 1:
                break
        v = self.geometric_exp_slow(Fraction(1))
        return (v * t + u) // x.numerator

    def dlaplace(self, scale) -> int:
        scale = Fraction(scale)
        while True:
            sign = self.bernoulli(Fraction(1, 2))
            magnitude = self.geometric_exp_fast(1 / scale)
            if sign == 1 and magnitude == 0:
                continue
            return magnitude * (1 - 2 * sign)

    @staticmethod
    def floorsqrt(x: Fraction) -> int:
        low, high = 0, 1
        while high * high <= x:
            high *= 2
        while low + 1 < high:
            mid = (low + high) // 2
            if mid * mid <= x:
                low = mid
            else:
                high = mid
        return low

    def dgauss(self, sigma2) -> int:
        sigma2 = Fraction(sigma2)
        t = self.floorsqrt(sigma2) + 1
        while True:
            candidate = self.dlaplace(t)
            bias = (abs(candidate) - sigma2 / t) ** 2 / (2 * sigma2)
            if self.bernoulli_exp(bias) == 1:
                return candidate


# ---------------------------------------------------------------------------
# timing helpers
# ---------------------------------------------------------------------------

def _rate(function, count: int, repeats: int) -> float:
    """Best samples/s over ``repeats`` runs of ``function()`` drawing ``count``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return count / best


def _opendp():
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    return dp


def _opendp_measurement(dp, kind: str, scale: float):
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    if kind == "gaussian":
        return dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=scale)
    return dp.m.make_laplace(domain, dp.l1_distance(T="i64"), scale=scale)


def bench_case(kind: str, scale: int, args, dp) -> dict:
    """All implementations on one (kind, scale) case."""
    if kind == "gaussian":
        parameter = scale * scale  # sigma^2, exact int
        batched = lambda n, src: discrete_gaussian(parameter, n, source=src)  # noqa: E731
        scalar = lambda src: discrete_gaussian(parameter, source=src)  # noqa: E731
        reference = lambda ref: ref.dgauss(parameter)  # noqa: E731
    else:
        batched = lambda n, src: discrete_laplace(scale, n, source=src)  # noqa: E731
        scalar = lambda src: discrete_laplace(scale, source=src)  # noqa: E731
        reference = lambda ref: ref.dlaplace(scale)  # noqa: E731
    source = default_source()
    row = {"kind": kind, "scale": scale}
    row["privloss_batched"] = _rate(lambda: batched(args.n, source), args.n, args.repeats)
    for backend in args.backends:
        other = SecureRandomSource(backend)
        row[f"privloss_batched_{backend}"] = _rate(lambda: batched(args.n, other), args.n,
                                                   args.repeats)
    row["privloss_scalar"] = _rate(lambda: [scalar(source) for _ in range(args.scalar_n)],
                                   args.scalar_n, 1)
    ref = CKSReference()
    row["cks_reference"] = _rate(lambda: [reference(ref) for _ in range(args.reference_n)],
                                 args.reference_n, 1)
    if dp is not None:
        measurement = _opendp_measurement(dp, kind, float(scale))
        zeros = [0] * args.opendp_n
        row["opendp"] = _rate(lambda: measurement(zeros), args.opendp_n, args.repeats)
    row["ratio_vs_reference"] = row["privloss_batched"] / row["cks_reference"]
    if "opendp" in row:
        row["ratio_vs_opendp"] = row["privloss_batched"] / row["opendp"]
    target = GAUSSIAN_TARGET if kind == "gaussian" else LAPLACE_TARGET
    row["target"] = target
    row["target_met"] = row["privloss_batched"] >= target
    return row


def _format(rows, dp_version) -> str:
    header = (f"{'case':<22}{'privloss':>12}{'scalar':>10}{'CKS ref':>10}"
              f"{'OpenDP':>10}{'x ref':>9}{'x OpenDP':>10}  target")
    lines = [header, "-" * len(header)]
    for row in rows:
        name = f"{row['kind']} {'sigma' if row['kind'] == 'gaussian' else 't'}={row['scale']:g}"
        opendp = f"{row['opendp']:>10.3g}" if "opendp" in row else f"{'n/a':>10}"
        ratio_opendp = f"{row['ratio_vs_opendp']:>10.1f}" if "opendp" in row else f"{'':>10}"
        status = "met" if row["target_met"] else "MISSED"
        lines.append(f"{name:<22}{row['privloss_batched']:>12.3g}{row['privloss_scalar']:>10.3g}"
                     f"{row['cks_reference']:>10.3g}{opendp}{row['ratio_vs_reference']:>9.0f}"
                     f"{ratio_opendp}  {status} (>= {row['target']:.0e}/s)")
        for key, value in row.items():
            if key.startswith("privloss_batched_"):
                lines.append(f"{'':<4}{key[len('privloss_batched_'):]:<18}{value:>12.3g}")
    lines.append("(samples per second, best of repeats; OpenDP " + (dp_version or "not installed")
                 + ")")
    return "\n".join(lines)


def memory_per_sample(kind: str, scale: int, sizes=(100_000, 1_000_000)) -> list[tuple[int, float]]:
    """Peak traced bytes per sample of one batched call, for each batch size:
    roughly constant means memory proportional to the batch."""
    import tracemalloc
    from fractions import Fraction

    from privloss.samplers import discrete_gaussian, discrete_laplace

    out = []
    for size in sizes:
        tracemalloc.start()
        if kind == "gaussian":
            discrete_gaussian(Fraction(scale) ** 2, size=size)
        else:
            discrete_laplace(scale, size=size)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.append((size, peak / size))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="batch size for privloss")
    parser.add_argument("--scalar-n", type=int, default=5_000)
    parser.add_argument("--reference-n", type=int, default=2_000)
    parser.add_argument("--opendp-n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sigmas", default="1,10,1000,1000000")
    parser.add_argument("--laplace-scales", default="1,10,1000,1000000")
    parser.add_argument("--backends", default="",
                        help="extra secure backends to time, e.g. chacha20,os")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    dp = _opendp()
    dp_version = None
    if dp is not None:
        from importlib.metadata import version
        dp_version = version("opendp")
    rows = []
    for sigma in (int(float(s)) for s in args.sigmas.split(",")):
        rows.append(bench_case("gaussian", sigma, args, dp))
    for scale in (int(float(s)) for s in args.laplace_scales.split(",")):
        rows.append(bench_case("laplace", scale, args, dp))
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"default source {default_source()!r}, batch n={args.n}")
    print(_format(rows, dp_version))
    print("\npeak memory per sample of one batched call (bytes):")
    for kind, scale in (("gaussian", 1000), ("laplace", 1000)):
        cells = ", ".join(f"n={size}: {per:.0f}" for size, per in memory_per_sample(kind, scale))
        print(f"  {kind} scale {scale}: {cells}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"rows": rows, "opendp": dp_version, "n": args.n}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
