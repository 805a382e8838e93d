"""``privloss sample``: draw exact discrete Gaussian or discrete Laplace noise.

    privloss sample discrete-gaussian --sigma 10/3 -n 1e5 -o noise.npy
    privloss sample discrete-gaussian --sigma-squared 2 --count 1000
    privloss sample discrete-laplace --scale 4 -n 1000            # prints a summary

The Gaussian takes ``--sigma`` (the sampler gets sigma^2 exactly) or
``--sigma-squared`` (the parameter itself; the old ``--scale`` still means sigma,
with a deprecation warning); the Laplace takes ``--scale`` t (P[x] proportional
to exp(-|x|/t)).  Counts accept ``1e6``.  Rationals
such as ``10/3`` and exact decimals such as ``2.5`` are accepted.  Randomness is
the library's secure default; ``--seed`` switches to a reproducible but
*insecure* generator (a warning is printed).

Ranges (checked before any sampling): ``--scale`` in [1e-30, 1e30]; ``-n`` from 1
to 10^7 where the exact samplers are fast (discrete Gaussian sigma in [0.01, 1e8],
discrete Laplace t in [1e-6, 1e16]: millions of samples per second), and to 10^4
outside (the exact fallbacks draw about 30,000 samples per second).
NumPy and the samplers are imported when the command runs.
"""

from __future__ import annotations

import math
import os
import re
from fractions import Fraction

from privloss.cli._common import CommandError, print_json, warn

DISTRIBUTIONS = ("discrete-gaussian", "discrete-laplace")
#: Largest -n accepted (the samples are held in memory, 8 bytes each).
MAX_COUNT = 10**7
#: Largest -n outside the fast scales below.
MAX_SLOW_COUNT = 10**4
#: --scale range: beyond it the exact variances of the summary lose all digits.
SCALE_RANGE = (Fraction(1, 10**30), Fraction(10**30))
#: scales at which the exact samplers run at millions of samples per second
FAST_SCALES = {"discrete-gaussian": (Fraction(1, 100), Fraction(10**8)),
               "discrete-laplace": (Fraction(1, 10**6), Fraction(10**16))}
OUTPUT_FORMATS = (".npy", ".csv")
#: a decimal or rational number with a short exponent (``1e999999999`` would make
#: ``Fraction`` build a billion-digit integer)
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,4})?\s*")


def register(subparsers) -> None:
    """Add the ``sample`` subcommand."""
    parser = subparsers.add_parser(
        "sample",
        help="draw exact discrete Gaussian / discrete Laplace noise",
        description=("Draw exact samples (integer arithmetic only, secure randomness by "
                     "default). Without -o, print a summary: sample mean and variance "
                     "against the exact values."))
    parser.add_argument("distribution", choices=DISTRIBUTIONS,
                        help="discrete-gaussian (--sigma or --sigma-squared) or discrete-laplace "
                             "(--scale)")
    noise = parser.add_mutually_exclusive_group(required=True)     # exactly one parameter
    noise.add_argument("--sigma", default=None,
                       help="discrete Gaussian: sigma, a positive rational such as 3, 10/3 or "
                            "2.5 (the sampler gets sigma^2 exactly)")
    noise.add_argument("--sigma-squared", default=None,
                       help="discrete Gaussian: the parameter sigma^2, a positive rational")
    noise.add_argument("--scale", default=None,
                       help="discrete Laplace: the scale t, a positive rational such as 3, 10/3 "
                            "or 2.5 (for the Gaussian: deprecated spelling of --sigma)")
    parser.add_argument("-n", "--count", dest="count", required=True,
                        help=f"number of samples (1 to {MAX_COUNT}; 1e6 is accepted)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object (the default output)")
    parser.add_argument("-o", "--output", default=None,
                        help="write the samples to a .npy or .csv file instead of a summary")
    parser.add_argument("--seed", default=None,
                        help="INSECURE reproducible generator with this seed (testing only)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    """Handler of ``privloss sample``."""
    scale, flag, text = _parameter(args)
    count = _count(args.count)
    low, high = FAST_SCALES[args.distribution]
    if flag == "--sigma-squared":
        low, high = low * low, high * high
    if not low <= scale <= high and count > MAX_SLOW_COUNT:
        raise CommandError(f"-n must be at most {MAX_SLOW_COUNT} for {args.distribution} at "
                           f"{flag} {text} (fast values: {float(low):g} to "
                           f"{float(high):g}), got {count}")
    output = _output_path(args.output)
    source, source_name = _source(args.seed)
    from privloss.samplers import discrete_gaussian, discrete_laplace

    if args.distribution == "discrete-gaussian":
        sigma_squared = scale if flag == "--sigma-squared" else scale * scale
        samples = discrete_gaussian(sigma_squared, count, source=source)
    else:
        samples = discrete_laplace(scale, count, source=source)
    if output is not None:
        _write(samples, output)
        return 0
    if flag == "--sigma-squared":
        print_json(_summary(args.distribution, None, samples, source_name, sigma_squared=scale))
    else:
        print_json(_summary(args.distribution, scale, samples, source_name))
    return 0


def _parameter(args) -> tuple[Fraction, str, str]:
    """(value, flag, text): sigma or sigma^2 of the Gaussian, t of the Laplace."""
    if args.distribution == "discrete-laplace":
        for flag, text in (("--sigma", args.sigma), ("--sigma-squared", args.sigma_squared)):
            if text is not None:
                raise CommandError(f"{flag} is for discrete-gaussian; discrete-laplace takes "
                                   f"--scale")
        if args.scale is None:
            raise CommandError("--scale is required by discrete-laplace")
        return _scale(args.scale), "--scale", args.scale
    given = [(flag, text) for flag, text in (("--sigma", args.sigma),
                                             ("--sigma-squared", args.sigma_squared),
                                             ("--scale", args.scale)) if text is not None]
    if len(given) != 1:
        raise CommandError("discrete-gaussian takes exactly one of --sigma or --sigma-squared, "
                           f"got {len(given)}")
    flag, text = given[0]
    if flag == "--scale":
        from privloss.cli._vocabulary import deprecation_warning
        deprecation_warning("--scale", "--sigma", "sample discrete-gaussian")
    if flag == "--sigma-squared":
        low, high = SCALE_RANGE
        return _scale(text, flag, (low * low, high * high)), flag, text
    return _scale(text, flag), flag, text


# -- argument checks (one-line errors) -----------------------------------------

def _fraction(text: str) -> Fraction | None:
    """``text`` as an exact rational (``3``, ``2.5``, ``1e-3``, ``10/3``), or None."""
    parts = text.split("/")
    if len(parts) > 2 or not all(_NUMBER.fullmatch(part) for part in parts):
        return None
    try:
        return Fraction(parts[0].strip()) / (Fraction(parts[1].strip()) if len(parts) == 2 else 1)
    except (ValueError, ZeroDivisionError):
        return None


def _scale(text: str, flag: str = "--scale", limits=SCALE_RANGE) -> Fraction:
    value = _fraction(text)
    shown = text if len(text) <= 40 else text[:40] + "..."
    if value is None:
        raise CommandError(f"{flag} must be a rational number such as 3, 10/3 or 2.5, "
                           f"got {shown!r}")
    low, high = limits
    if not low <= value <= high:
        raise CommandError(f"{flag} must be a positive rational in [{float(low):g}, "
                           f"{float(high):g}], got {shown!r}")
    return value


def _count(text: str) -> int:
    value = _fraction(text)  # also accepts 1e6
    if value is None or value.denominator != 1 or not 1 <= value <= MAX_COUNT:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise CommandError(f"-n must be an integer between 1 and {MAX_COUNT}, got {shown!r} "
                           f"(-n/--count; 1e6 is accepted)")
    return value.numerator


def _source(seed_text):
    from privloss.samplers import InsecureSeededSource, default_source

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


def _write(samples, path: str) -> None:
    import numpy as np

    try:
        if path.lower().endswith(".npy"):
            if samples.dtype == object:
                raise CommandError("-o: samples exceed the int64 range; write them to a "
                                   ".csv file")
            np.save(path, samples, allow_pickle=False)
        else:
            with open(path, "w", encoding="ascii") as handle:
                handle.write("value\n")
                handle.write("\n".join(map(str, samples.tolist())))
                handle.write("\n")
    except OSError as error:
        raise CommandError(f"cannot write {path!r}: {error.strerror or error}") from None


# -- summary --------------------------------------------------------------------

def _summary(distribution: str, scale, samples, source_name: str, *,
             sigma_squared=None) -> dict:
    from privloss.samplers import discrete_gaussian_variance, discrete_laplace_variance

    count = samples.size
    mean, variance = _moments(samples)
    if distribution == "discrete-gaussian":
        if sigma_squared is None:
            sigma_squared = scale * scale
        exact_variance = float(discrete_gaussian_variance(sigma_squared))
        # sigma is exact when given; from --sigma-squared only its float square root
        sigma = str(scale) if scale is not None else repr(math.sqrt(sigma_squared))
        parameters = {"sigma": sigma, "sigma_squared": str(sigma_squared)}
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


def _moments(samples) -> tuple[float, float]:
    """Sample mean and unbiased sample variance (reporting only, not sampling)."""
    count = samples.size
    if samples.dtype == object:  # Python ints beyond int64: exact rational arithmetic
        total = sum(samples.tolist())
        squares = sum(v * v for v in samples.tolist())
        mean = Fraction(total, count)
        variance = (Fraction(squares) - count * mean * mean) / (count - 1) if count > 1 else None
        return float(mean), float(variance) if variance is not None else float("nan")
    values = samples.astype(float)
    mean = float(values.mean())
    variance = float(values.var(ddof=1)) if count > 1 else float("nan")
    return mean, variance
