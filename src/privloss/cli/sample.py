"""``privloss sample``: draw exact discrete Gaussian or discrete Laplace noise.

    privloss sample discrete-gaussian --scale 10/3 -n 100000 -o noise.npy
    privloss sample discrete-laplace --scale 4 -n 1000            # prints a summary

``--scale`` is sigma for the Gaussian (the sampler gets sigma^2 = scale^2
exactly) and the Laplace scale t (P[x] proportional to exp(-|x|/t)).  Rationals
such as ``10/3`` and exact decimals such as ``2.5`` are accepted.  Randomness is
the library's secure default; ``--seed`` switches to a reproducible but
*insecure* generator (a warning is printed).
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np

from privloss.cli._common import CommandError, print_json, warn
from privloss.samplers import (InsecureSeededSource, default_source, discrete_gaussian,
                               discrete_gaussian_variance, discrete_laplace,
                               discrete_laplace_variance)
from privloss.samplers._params import positive_rational

DISTRIBUTIONS = ("discrete-gaussian", "discrete-laplace")
#: Largest -n accepted (the samples are held in memory, 8 bytes each).
MAX_COUNT = 10**8
OUTPUT_FORMATS = (".npy", ".csv")


def register(subparsers) -> None:
    """Add the ``sample`` subcommand."""
    parser = subparsers.add_parser(
        "sample",
        help="draw exact discrete Gaussian / discrete Laplace noise",
        description=("Draw exact samples (integer arithmetic only, secure randomness by "
                     "default). Without -o, print a summary: sample mean and variance "
                     "against the exact values."))
    parser.add_argument("distribution", choices=DISTRIBUTIONS,
                        help="discrete-gaussian (scale = sigma) or discrete-laplace (scale = t)")
    parser.add_argument("--scale", required=True,
                        help="sigma for the Gaussian, t for the Laplace; a positive rational "
                             "such as 3, 10/3 or 2.5")
    parser.add_argument("-n", dest="count", required=True,
                        help=f"number of samples (1 to {MAX_COUNT})")
    parser.add_argument("-o", "--output", default=None,
                        help="write the samples to a .npy or .csv file instead of a summary")
    parser.add_argument("--seed", default=None,
                        help="INSECURE reproducible generator with this seed (testing only)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    """Handler of ``privloss sample``."""
    scale = _scale(args.scale)
    count = _count(args.count)
    output = _output_path(args.output)
    source, source_name = _source(args.seed)
    if args.distribution == "discrete-gaussian":
        samples = discrete_gaussian(scale * scale, count, source=source)
    else:
        samples = discrete_laplace(scale, count, source=source)
    if output is not None:
        _write(samples, output)
        return 0
    print_json(_summary(args.distribution, scale, samples, source_name))
    return 0


# -- argument checks (one-line errors) -----------------------------------------

def _scale(text: str):
    try:
        return positive_rational("--scale", text)
    except (TypeError, ValueError) as error:
        raise CommandError(str(error)) from None


def _count(text: str) -> int:
    try:
        value = Fraction(text.strip())  # also accepts 1e6
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value.denominator != 1:
        raise CommandError(f"-n must be an integer between 1 and {MAX_COUNT}, got {text!r}")
    count = value.numerator
    if not 1 <= count <= MAX_COUNT:
        raise CommandError(f"-n must be an integer between 1 and {MAX_COUNT}, got {count}")
    return count


def _source(seed_text):
    if seed_text is None:
        source = default_source()
        return source, f"secure ({source.backend})"
    try:
        seed = int(seed_text)
    except ValueError:
        raise CommandError(f"--seed must be a non-negative integer, got {seed_text!r}") from None
    if seed < 0:
        raise CommandError(f"--seed must be a non-negative integer, got {seed}")
    warn("privloss sample: warning: --seed uses an INSECURE reproducible generator; "
         "do not use these samples to protect real data")
    return InsecureSeededSource(seed), f"insecure seeded (seed={seed})"


def _output_path(path):
    if path is None:
        return None
    extension = os.path.splitext(path)[1].lower()
    if extension not in OUTPUT_FORMATS:
        raise CommandError(f"-o must end in .npy or .csv, got {path!r}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CommandError(f"-o: directory {directory!r} does not exist")
    return path


def _write(samples: np.ndarray, path: str) -> None:
    try:
        if path.lower().endswith(".npy"):
            if samples.dtype == object:
                raise CommandError("samples exceed the int64 range; write them to a .csv file")
            np.save(path, samples, allow_pickle=False)
        else:
            with open(path, "w", encoding="ascii") as handle:
                handle.write("value\n")
                handle.write("\n".join(str(int(v)) for v in samples.tolist()))
                handle.write("\n")
    except OSError as error:
        raise CommandError(f"cannot write {path!r}: {error.strerror or error}") from None


# -- summary --------------------------------------------------------------------

def _summary(distribution: str, scale, samples: np.ndarray, source_name: str) -> dict:
    count = samples.size
    mean, variance = _moments(samples)
    if distribution == "discrete-gaussian":
        exact_variance = float(discrete_gaussian_variance(scale * scale))
        parameters = {"sigma": str(scale), "sigma_squared": str(scale * scale)}
    else:
        exact_variance = float(discrete_laplace_variance(scale))
        parameters = {"scale": str(scale)}
    return {
        "distribution": distribution,
        **parameters,
        "n": count,
        "source": source_name,
        "sample_mean": mean,
        "exact_mean": 0.0,
        "mean_standard_error": math.sqrt(exact_variance / count),
        "sample_variance": variance,
        "exact_variance": exact_variance,
        "variance_ratio": variance / exact_variance if exact_variance > 0 else float("nan"),
        "min": int(samples.min()),
        "max": int(samples.max()),
    }


def _moments(samples: np.ndarray) -> tuple[float, float]:
    """Sample mean and unbiased sample variance (reporting only, not sampling)."""
    count = samples.size
    if samples.dtype == object:  # Python ints beyond int64: exact rational arithmetic
        total = sum(samples.tolist())
        squares = sum(v * v for v in samples.tolist())
        mean = Fraction(total, count)
        variance = (Fraction(squares) - count * mean * mean) / (count - 1) if count > 1 else None
        return float(mean), float(variance) if variance is not None else float("nan")
    values = samples.astype(np.float64)
    mean = float(values.mean())
    variance = float(values.var(ddof=1)) if count > 1 else float("nan")
    return mean, variance
