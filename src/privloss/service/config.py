"""The service's configuration file (TOML), checked before anything starts.

Definition
----------
.. code-block:: toml

    [service]
    ledger = "budget.sqlite"          # or "postgresql://user@host/db"
    tokens = "tokens.json"            # argon2id hashes (default: <config>.tokens.json)
    audit_log = "audit.jsonl"         # append-only JSON lines (default: <config>.audit.jsonl)
    max_body_bytes = 65536            # larger request bodies: 413
    rate = 10.0                       # requests per second per analyst (token bucket) ...
    burst = 20                        # ... and its depth; past it: 429
    state_dir = "state"               # snapshots of the data, dashboard sessions
                                      # (default: <config>.state)
    trusted_proxies = ["127.0.0.1"]   # peers whose X-Forwarded-For is believed (default: none)
    session_hours = 8.0               # dashboard sessions expire on the server
    public_tables = { regions = "regions.csv" }   # PUBLIC tables every dataset's SQL may JOIN

    [[dataset]]
    name = "retail"
    path = "orders.parquet"           # Parquet / CSV file or Parquet directory, or
    # sql = "SELECT ..."              # one SELECT over DuckDB written by the operator, or
    # spark_table = "db.orders"       # a Spark table (engine "spark")
    user_column = "customer_id"       # the privacy unit
    columns = ["item", "country"]     # what analysts may count
    epsilon = 1.0
    delta = 1e-6
    interaction = "fully-adaptive"    # or "adaptive" / "setwise" with plan = "plan.toml"
    mix = "pure"                      # optional: the releases it will see (mixed, pure, gaussian)
    window_days = 30                  # optional: a fresh budget every 30 days
    public_tables = { fx = "fx.parquet" }   # optional: public tables of this dataset's SQL

    [[analyst]]
    name = "alice"
    datasets = ["retail"]
    epsilon = 0.5                     # optional cap on alice's own releases per dataset
    delta = 5e-7

Relative paths are relative to the configuration file's directory.  A
public table (CSV or Parquet; a name -> path table, service-wide or per
dataset, the dataset's entry winning on a name clash) is data the operator
declares public: every analyst of the dataset may read all its columns in a
``JOIN`` of the ``/sql`` endpoint (docs/sql.md).

Privacy guarantee
-----------------
None by itself; the checks here make sure no analyst-facing name can reach
SQL (column names must be plain identifiers and the privacy-unit column is
never countable).

Runtime
-------
Reads one small file.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["ServiceConfig", "DatasetConfig", "AnalystConfig", "ConfigError", "load_config",
           "config_from_dict"]

#: column and analyst names: plain identifiers (never quoted into SQL by hand)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_SPARK_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62}){0,2}$")
#: dataset names appear in URLs and ledger names (``name@window``)
_DATASET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_INTERACTIONS = ("fully-adaptive", "adaptive", "setwise")


class ConfigError(ValueError):
    """The configuration is invalid (the message names the file, the entry and the field)."""


@dataclass(frozen=True)
class DatasetConfig:
    name: str
    user_column: str
    columns: tuple
    epsilon: float
    delta: float
    interaction: str = "fully-adaptive"
    path: Path | None = None
    sql: str | None = None
    spark_table: str | None = None
    tables: dict = field(default_factory=dict)
    plan: Path | None = None
    window_days: int | None = None
    version: str | None = None
    public_tables: dict = field(default_factory=dict)
    mix: str = "mixed"

    @property
    def engine(self) -> str:
        return "spark" if self.spark_table is not None else "duckdb"


@dataclass(frozen=True)
class AnalystConfig:
    name: str
    datasets: tuple
    epsilon: float | None = None
    delta: float | None = None

    def cap(self, dataset: DatasetConfig) -> tuple | None:
        """The analyst's (epsilon, delta) cap inside ``dataset`` (never above its budget)."""
        if self.epsilon is None:
            return None
        delta = dataset.delta if self.delta is None else self.delta
        return (min(self.epsilon, dataset.epsilon), min(delta, dataset.delta))


@dataclass(frozen=True)
class ServiceConfig:
    path: Path | None
    ledger: str
    tokens: Path
    audit_log: Path
    datasets: dict
    analysts: dict
    max_body_bytes: int = 65536
    rate: float = 10.0
    burst: int = 20
    state_dir: Path | None = None
    trusted_proxies: tuple = ()
    session_hours: float = 8.0


def _fail(where: str, message: str):
    raise ConfigError(f"{where}: {message}")


def _identifier(where: str, key: str, value) -> str:
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        _fail(where, f"{key} must be a plain identifier (letters, digits, _; at most 63), "
                     f"got {value!r}")
    return value


def _number(where: str, key: str, value, *, low: float, high: float, low_open: bool = False,
            high_open: bool = False) -> float:
    fits = not isinstance(value, bool) and isinstance(value, (int, float)) \
        and math.isfinite(value) and (low < value if low_open else low <= value) \
        and (value < high if high_open else value <= high)
    if not fits:
        _fail(where, f"{key} must be a number in {'(' if low_open else '['}{low:g}, {high:g}"
                     f"{')' if high_open else ']'}, got {value!r}")
    return float(value)


def _path(base: Path, value, where: str, key: str) -> Path:
    if not isinstance(value, str) or not value:
        _fail(where, f"{key} must be a non-empty path, got {value!r}")
    path = Path(value)
    return path if path.is_absolute() else base / path


def _dataset(entry, base: Path, number: int) -> DatasetConfig:
    where = f"[[dataset]] #{number}"
    if not isinstance(entry, dict):
        _fail(where, "must be a table")
    known = {"name", "path", "sql", "tables", "spark_table", "user_column", "columns", "epsilon",
             "delta", "interaction", "plan", "window_days", "version", "public_tables",
             "mix"}
    unknown = sorted(set(entry) - known)
    if unknown:
        _fail(where, f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(known))})")
    name = entry.get("name")
    if not isinstance(name, str) or not _DATASET.fullmatch(name):
        _fail(where, f"name must be 1-64 letters, digits, '_', '.', '-', got {name!r}")
    where = f"dataset {name!r}"
    sources = [key for key in ("path", "sql", "spark_table") if key in entry]
    if len(sources) != 1:
        _fail(where, "give exactly one source: path, sql or spark_table")
    user = _identifier(where, "user_column", entry.get("user_column"))
    columns = entry.get("columns")
    if not isinstance(columns, list) or not columns:
        _fail(where, "columns must be a non-empty list of column names analysts may count")
    columns = tuple(_identifier(where, "columns entry", column) for column in columns)
    repeated = sorted({column for column in columns if columns.count(column) > 1})
    if repeated:
        _fail(where, f"columns lists {', '.join(map(repr, repeated))} more than once")
    if user in columns:
        _fail(where, f"columns must not contain the privacy-unit column {user!r} (counting "
                     f"users by their own id would release ids)")
    epsilon = _number(where, "epsilon", entry.get("epsilon"), low=0.0, high=1e6,
                      low_open=True)
    delta = _number(where, "delta", entry.get("delta", 0.0), low=0.0, high=1.0,
                    high_open=True)
    interaction = entry.get("interaction", "fully-adaptive")
    if interaction not in _INTERACTIONS:
        _fail(where, f"interaction must be one of {', '.join(_INTERACTIONS)}, got {interaction!r}")
    plan = entry.get("plan")
    if (plan is None) != (interaction == "fully-adaptive"):
        _fail(where, "a plan file goes with interaction adaptive or setwise (and only then)")
    mix = entry.get("mix", "mixed")
    if mix not in ("mixed", "pure", "gaussian") or (mix != "mixed"
                                                    and interaction != "fully-adaptive"):
        _fail(where, f"mix must be mixed, pure or gaussian (a fully-adaptive budget's filter "
                     f"split), got {mix!r}")
    window = entry.get("window_days")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or not 1 <= window <= 3660):
        _fail(where, f"window_days must be an integer in [1, 3660], got {window!r}")
    tables = entry.get("tables", {})
    if not isinstance(tables, dict) or "sql" not in entry and tables:
        _fail(where, "tables is a table {view name = path} that goes with sql")
    tables = {_identifier(where, "tables name", key): _path(base, value, where, f"tables.{key}")
              for key, value in tables.items()}
    sql = entry.get("sql")
    if sql is not None and (not isinstance(sql, str) or not sql.strip()):
        _fail(where, f"sql must be one SELECT statement, got {sql!r}")
    spark = entry.get("spark_table")
    if spark is not None and (not isinstance(spark, str) or not _SPARK_TABLE.fullmatch(spark)):
        _fail(where, f"spark_table must be a table name such as db.orders, got {spark!r}")
    version = entry.get("version")
    if version is not None and not isinstance(version, str):
        _fail(where, f"version must be a string (a snapshot id of the data), got {version!r}")
    public = _public_tables(entry.get("public_tables", {}), base, where)
    if name in public:
        _fail(where, f"public_tables must not use the dataset's own name {name!r}")
    return DatasetConfig(
        public_tables=public, name=name, user_column=user, columns=columns, epsilon=epsilon, delta=delta,
        interaction=interaction,
        path=None if "path" not in entry else _path(base, entry["path"], where, "path"),
        sql=sql, spark_table=spark, tables=tables,
        plan=None if plan is None else _path(base, plan, where, "plan"),
        window_days=window, version=version, mix=mix)


def _public_tables(value, base: Path, where: str) -> dict:
    """``public_tables``: {name = path} of PUBLIC tables (CSV / Parquet) the
    dataset's SQL may join; names are plain identifiers."""
    if not isinstance(value, dict):
        _fail(where, f"public_tables must be a table {{name = path}}, got {value!r}")
    return {_identifier(where, "public_tables name", key):
            _path(base, path, where, f"public_tables.{key}") for key, path in value.items()}


def _analyst(entry, datasets: dict, number: int) -> AnalystConfig:
    where = f"[[analyst]] #{number}"
    if not isinstance(entry, dict):
        _fail(where, "must be a table")
    unknown = sorted(set(entry) - {"name", "datasets", "epsilon", "delta"})
    if unknown:
        _fail(where, f"unknown field(s) {', '.join(unknown)} (allowed: name, datasets, "
                     f"epsilon, delta)")
    name = _identifier(where, "name", entry.get("name"))
    where = f"analyst {name!r}"
    granted = entry.get("datasets")
    if not isinstance(granted, list) or not all(isinstance(item, str) for item in granted):
        _fail(where, "datasets must be a list of dataset names")
    missing = [item for item in granted if item not in datasets]
    if missing:
        _fail(where, f"datasets names unknown dataset(s) {', '.join(map(repr, missing))}")
    epsilon = entry.get("epsilon")
    delta = entry.get("delta")
    if epsilon is None and delta is not None:
        _fail(where, "a cap needs epsilon (delta alone is not a cap)")
    if epsilon is not None:
        epsilon = _number(where, "epsilon", epsilon, low=0.0, high=1e6, low_open=True)
    if delta is not None:
        delta = _number(where, "delta", delta, low=0.0, high=1.0, high_open=True)
    return AnalystConfig(name, tuple(granted), epsilon, delta)


def _proxies(value) -> tuple:
    """``trusted_proxies``: addresses or networks (``10.0.0.0/8``) of reverse
    proxies whose ``X-Forwarded-For`` is believed."""
    import ipaddress

    if not isinstance(value, list) or len(value) > 256:
        _fail("[service]", f"trusted_proxies must be a list of IP addresses or networks, "
                           f"got {value!r}")
    networks = []
    for entry in value:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except (TypeError, ValueError):
            _fail("[service]", f"trusted_proxies entry must be an IP address or network "
                               f"such as 127.0.0.1 or 10.0.0.0/8, got {entry!r}")
    return tuple(networks)


def config_from_dict(data: dict, base: Path, path: Path | None = None) -> ServiceConfig:
    """Check a parsed configuration (see the module docstring)."""
    service = data.get("service", {})
    unknown = sorted(set(data) - {"service", "dataset", "analyst"})
    if unknown:
        _fail("config", f"unknown section(s) {', '.join(unknown)} (allowed: service, "
                        f"[[dataset]], [[analyst]])")
    allowed = {"ledger", "tokens", "audit_log", "max_body_bytes", "rate", "burst", "state_dir",
               "trusted_proxies", "session_hours", "public_tables"}
    if not isinstance(service, dict) or set(service) - allowed:
        _fail("[service]", f"unknown field(s) {', '.join(sorted(set(service) - allowed))} "
                           f"(allowed: {', '.join(sorted(allowed))})")
    stem = path.stem if path is not None else "privloss"
    ledger = service.get("ledger")
    if not isinstance(ledger, str) or not ledger:
        _fail("[service]", f"ledger must be a file path or a postgresql:// URL, got {ledger!r}")
    if not ledger.startswith(("postgresql://", "postgres://")):
        ledger = str(_path(base, ledger, "[service]", "ledger"))
    tokens = _path(base, service.get("tokens", f"{stem}.tokens.json"), "[service]", "tokens")
    audit = _path(base, service.get("audit_log", f"{stem}.audit.jsonl"), "[service]",
                  "audit_log")
    body = service.get("max_body_bytes", 65536)
    if isinstance(body, bool) or not isinstance(body, int) or not 1024 <= body <= 1 << 24:
        _fail("[service]", f"max_body_bytes must be an integer in [1024, 16777216], got {body!r}")
    rate = _number("[service]", "rate", service.get("rate", 10.0), low=0.001, high=1e6)
    burst = service.get("burst", 20)
    if isinstance(burst, bool) or not isinstance(burst, int) or not 1 <= burst <= 1_000_000:
        _fail("[service]", f"burst must be an integer in [1, 1000000], got {burst!r}")
    state_dir = _path(base, service.get("state_dir", f"{stem}.state"), "[service]", "state_dir")
    proxies = _proxies(service.get("trusted_proxies", []))
    session_hours = _number("[service]", "session_hours", service.get("session_hours", 8.0),
                            low=0.01, high=24.0 * 30)
    shared_public = _public_tables(service.get("public_tables", {}), base, "[service]")
    entries = data.get("dataset", [])
    if not isinstance(entries, list) or not entries:
        _fail("config", "declare at least one [[dataset]]")
    datasets: dict = {}
    for number, entry in enumerate(entries, start=1):
        dataset = _dataset(entry, base, number)
        if dataset.name in datasets:
            _fail(f"dataset {dataset.name!r}", "declared twice")
        public = {**shared_public, **dataset.public_tables}
        if dataset.name in public:
            _fail(f"dataset {dataset.name!r}", "a service-wide public table has the dataset's "
                                               "own name")
        datasets[dataset.name] = replace(dataset, public_tables=public)
    analysts: dict = {}
    for number, entry in enumerate(data.get("analyst", []), start=1):
        analyst = _analyst(entry, datasets, number)
        if analyst.name in analysts:
            _fail(f"analyst {analyst.name!r}", "declared twice")
        analysts[analyst.name] = analyst
    return ServiceConfig(path=path, ledger=ledger, tokens=tokens, audit_log=audit,
                         datasets=datasets, analysts=analysts, max_body_bytes=body, rate=rate,
                         burst=burst, state_dir=state_dir, trusted_proxies=proxies,
                         session_hours=session_hours)


def load_config(path) -> ServiceConfig:
    """Read and check the TOML file at ``path`` (``ConfigError`` naming the
    entry and field; ``FileNotFoundError`` for a missing file)."""
    path = Path(os.path.abspath(path))
    with open(path, "rb") as handle:
        try:
            data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return config_from_dict(data, path.parent, path)
