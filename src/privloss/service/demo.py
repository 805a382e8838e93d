"""``privloss serve --demo``: a synthetic dataset, a temporary ledger, one analyst.

Definition
----------
:func:`make_demo` writes, into a fresh temporary directory, a Parquet file of
synthetic page views (``user_id``, ``article``, ``country``, ``industry``;
Zipf-popular articles, a few views per user), a configuration with one dataset
``engagements`` (budget epsilon 2, delta 1e-5, fully adaptive), one analyst
``demo`` (cap epsilon 1, delta 5e-6), a token for the analyst, and returns the
config path and the token.  Nothing in it is real data.

Privacy guarantee
-----------------
As any configuration; the demo's token is printed once.

Runtime
-------
Generates ``rows`` rows (default 200,000) in well under a second.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["make_demo", "write_demo_data"]

_COUNTRIES = ("US", "IN", "BR", "GB", "DE", "FR", "NG", "JP", "CA", "MX")
_INDUSTRIES = ("software", "finance", "health", "education", "retail", "media", "energy")


def write_demo_data(path, rows: int = 200_000, seed: int = 2026) -> None:
    """Synthetic page views (public test data; the seed is not a privacy parameter)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    generator = np.random.default_rng(seed)
    users = generator.integers(0, max(1, rows // 4), size=rows)
    articles = generator.zipf(1.3, size=rows)
    too_far = articles > 5000          # truncated Zipf: redraw the tail uniformly
    articles[too_far] = generator.integers(1, 5001, size=int(too_far.sum()))
    table = pa.table({
        "user_id": users.astype(np.int64),
        "article": [f"article-{number:04d}" for number in articles],
        "country": np.array(_COUNTRIES)[users % len(_COUNTRIES)],
        "industry": np.array(_INDUSTRIES)[(users // 7) % len(_INDUSTRIES)],
    })
    pq.write_table(table, path)


def make_demo(directory=None, rows: int = 200_000) -> tuple[Path, str]:
    """Write the demo's data, config and token file; return (config path, token)."""
    from privloss.service.auth import add_analyst

    directory = Path(directory or tempfile.mkdtemp(prefix="privloss-serve-demo-"))
    write_demo_data(directory / "engagements.parquet", rows)
    config = directory / "service.toml"
    config.write_text(
        "# privloss serve --demo: synthetic data, temporary ledger\n"
        "[service]\n"
        'ledger = "budget.sqlite"\n'
        "rate = 20.0\n"
        "burst = 40\n\n"
        "[[dataset]]\n"
        'name = "engagements"\n'
        'path = "engagements.parquet"\n'
        'user_column = "user_id"\n'
        'columns = ["article", "country", "industry"]\n'
        "epsilon = 2.0\n"
        "delta = 1e-5\n\n"
        "[[analyst]]\n"
        'name = "demo"\n'
        'datasets = ["engagements"]\n'
        "epsilon = 1.0\n"
        "delta = 5e-6\n", encoding="utf-8")
    from privloss.service.config import load_config
    token = add_analyst(load_config(config).tokens, "demo")
    return config, token
