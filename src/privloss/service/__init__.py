"""``privloss serve``: a privacy query service (issue #14).

Definition
----------
Analysts send top-k and histogram *parameters* over HTTP (never SQL, never a
column the operator did not declare); the service builds every query from the
operator's configuration, charges the dataset's budget in the ledger before it
reads any data, and answers with the noisy release and a receipt.  The
pieces: :mod:`~privloss.service.config` (TOML), :mod:`~privloss.service.snapshots`
(every dataset bound and read once at start-up), :mod:`~privloss.service.auth`
(argon2id token hashes), :mod:`~privloss.service.queries` (the release path),
:mod:`~privloss.service.app` (the FastAPI application),
:mod:`~privloss.service.web` (problem+json errors, security headers, client
addresses), the dashboard and its :mod:`~privloss.service.sessions`, the rate
limiter and the append-only audit log.

Privacy guarantee
-----------------
Every answer is a release already charged to the ledger (fully adaptive by
default, or a preregistered plan): each dataset (each budget window, see
:mod:`~privloss.service.queries`) is (epsilon, delta)-DP overall, and every
analyst's own releases fit their cap.  What leaves the service: DP outputs,
public parameters, the caller's own spending and the dataset's totals.

Citation
--------
Rogers et al., "LinkedIn's Audience Engagements API", arXiv:2002.05839.

Runtime
-------
A plan is one calibration and one read-only ledger check; a release adds one
engine aggregation and two short ledger transactions.

Needs the ``service`` extra: ``pip install '.[service]'``.
"""

__all__ = ["load_config", "create_app"]


def load_config(path):
    """:func:`privloss.service.config.load_config` (imported lazily)."""
    from privloss.service.config import load_config as load
    return load(path)


def create_app(config, **options):
    """:func:`privloss.service.app.create_app` (imported lazily: FastAPI)."""
    from privloss.service.app import create_app as create
    return create(config, **options)
