"""The DuckDB side of a plan's joins (:mod:`privloss.query.joins`): every
table on one private connection, projected onto our own names, joined by
:func:`~privloss.query.engines._sql.joined_sql`.

Definition
----------
:func:`open_joined` opens the plan's source and every joined table (files
or frames; the connection can read exactly their files), checks that the
columns each table must supply exist, projects each onto fixed names
(``b0..`` for the source, ``j1_0..`` for the first join, ...) through the
relational API, registers them as views, runs the join SQL (hash joins; the
private tables truncated per unit first) and names the result's columns as
the plan does, again through the relational API.  The plan's filter, bounding
and statistics then run on this relation, as on a single table.

Privacy guarantee
-----------------
None by itself; see :mod:`privloss.query.joins` for the stability of each
join and why the cost is unchanged.  No caller text enters the SQL: only our
names and integers.

Citation
--------
DuckDB relational API; McSherry, SIGMOD 2009.

Runtime
-------
One scan per table and one hash join per join (the build side the public
table); a private join adds a partitioned sort per private table.
"""

from __future__ import annotations

from privloss.query.bounding import SelectionKey
from privloss.query.engines._sql import DUCKDB, JoinSql, joined_sql
from privloss.query.inputs import FileInput, FrameInput, describe_input, resolve_input

__all__ = ["open_joined", "joined_inputs", "internal_joins"]


def joined_inputs(plan, inp, spark: bool = False) -> list:
    """The resolved inputs of the source (``inp``) and of every join; each
    must be a file or a frame (a table privloss reads itself), on Spark also
    a Spark DataFrame or table."""
    from privloss.query.inputs import SparkFrameInput, SparkTable

    kinds = (FileInput, FrameInput) + ((SparkFrameInput, SparkTable) if spark else ())
    inputs = [inp] + [resolve_input(join.source) for join in plan.joins]
    for item, name in zip(inputs, ["the FROM table"] + [j.table for j in plan.joins]):
        if not isinstance(item, kinds):
            raise TypeError(f"a query with joins reads files or frames only; {name} is a "
                            f"{describe_input(item)}")
    return inputs


def _require(columns, needed, table: str) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(f"column {missing[0]!r} is not a column of table {table!r} "
                         f"(columns: {sorted(map(str, columns))[:20]})")


def internal_joins(plan, base_types: dict, join_columns: list, join_types: list) -> tuple:
    """``(base internal names, {plan name: internal name}, [JoinSql], view
    projections)``: the plan's joins in our names.  ``base_types``: source
    column -> type; ``join_columns[k]``, ``join_types[k]``: join k's columns
    and types.  Raises ``ValueError`` naming a missing column."""
    base = plan.base_columns
    _require(list(base_types), base, "the FROM table")
    internal = {c: f"b{i}" for i, c in enumerate(base)}
    types = {internal[c]: str(base_types[c]) for c in base}
    projections = [[(c, internal[c]) for c in base]]
    joins = []
    for k, (join, columns, kinds) in enumerate(zip(plan.joins, join_columns, join_types),
                                                start=1):
        needed = list(dict.fromkeys(list(join.right_keys) + [c for c, _ in join.columns] +
                                    ([] if join.public else [plan.privacy_unit])))
        _require(columns, needed, join.table)
        available = dict(zip(columns, map(str, kinds)))
        view = {c: f"j{k}_{i}" for i, c in enumerate(needed)}
        for c in needed:
            types[view[c]] = available[c]
        as_text = tuple(types[internal[left]] != types[view[right]]
                        for left, right in zip(join.left_keys, join.right_keys))
        joins.append(JoinSql(f"privloss_t{k}", tuple(view.values()), join.kind,
                             tuple(internal[left] for left in join.left_keys),
                             tuple(view[right] for right in join.right_keys),
                             tuple(view[c] for c, _ in join.columns), as_text,
                             None if join.public else view[plan.privacy_unit]))
        for column, name in join.columns:
            internal[name] = view[column]
        projections.append(list(view.items()))
    return [internal[c] for c in base], internal, joins, projections


def join_statement(plan, dialect, base_view: str, base_internal: list, internal: dict,
                   joins: list) -> str:
    from privloss.query.joins import TRUNCATION_SEED_OFFSET

    keys = [SelectionKey.from_seed(plan.seed + TRUNCATION_SEED_OFFSET + k)
            for k in range(len(joins) + 1)]
    return joined_sql(dialect, base_view, base_internal, joins,
                      unit=internal[plan.privacy_unit], truncation=plan.join_truncation,
                      keys=keys)


def output_names(plan) -> list:
    return list(plan.base_columns) + [name for join in plan.joins for _, name in join.columns]


def _reusable(inputs) -> bool:
    """Every input is a file set that its owner keeps unchanged while open
    (:class:`~privloss.query.inputs.LoadedTables`) and the FROM table's owner
    is one release's, not a service snapshot's (``prepare``: queried by
    concurrent requests, whose views would meet on one connection)."""
    return all(isinstance(item, FileInput) and item.tables is not None
               and not item.tables.prepare and not item.tables.closed for item in inputs)


class _SharedConnection:
    """A private locked connection (and its spill directory) that the plans of
    one release on the same files share: a :class:`LoadedTables` entry."""

    def __init__(self, connection, spill):
        self.connection = connection
        self._spill = spill

    @classmethod
    def open(cls, duckdb, allowed: tuple) -> "_SharedConnection":
        import tempfile

        from privloss.query.engines.duckdb_engine import _locked_connection, memory_settings

        directory = memory_settings()[1]
        spill = None if directory is not None else \
            tempfile.TemporaryDirectory(prefix="privloss-duckdb-")
        try:
            return cls(_locked_connection(duckdb, allowed, directory or spill.name), spill)
        except BaseException:
            if spill is not None:
                spill.cleanup()
            raise

    def close(self) -> None:
        self.connection.close()
        if self._spill is not None:
            self._spill.cleanup()
            self._spill = None


def open_joined(duckdb, inp, plan, source, scan: bool = False):
    """The joined relation of ``plan`` (columns named as the plan names them)
    on a private locked connection kept in ``source`` (closed by the caller)."""
    from privloss.query.engines.duckdb_engine import (_file_relation, _files_of,
                                                      _frame_relation, _locked_connection)

    inputs = joined_inputs(plan, inp)
    files = [_files_of(source, item) if isinstance(item, FileInput) else None
             for item in inputs]
    allowed = tuple(name for names in files if names for name in names)
    if _reusable(inputs):
        # files that do not change while their owner (one API call) holds them:
        # the check before the charge and the release after it share one
        # connection, kept with the FROM table's files and closed with them
        shared = inp.tables.get(("duckdb-joined", allowed),
                                lambda: _SharedConnection.open(duckdb, allowed))
        con = source.connection = shared.connection.cursor()
    else:
        con = source.connection = _locked_connection(duckdb, allowed, source.spill_directory())
    relations = [_file_relation(duckdb, con, item, names, scan)
                 if isinstance(item, FileInput) else _frame_relation(con, item)
                 for item, names in zip(inputs, files)]
    base_types = dict(zip(relations[0].columns, relations[0].types))
    base_internal, internal, joins, projections = internal_joins(
        plan, base_types, [list(r.columns) for r in relations[1:]],
        [list(r.types) for r in relations[1:]])
    for k, (relation, projection) in enumerate(zip(relations, projections)):
        relation.select(*[duckdb.ColumnExpression(column).alias(name)
                          for column, name in projection]).create_view(f"privloss_t{k}")
    joined = con.sql(join_statement(plan, DUCKDB, "privloss_t0", base_internal, internal,
                                    joins))
    return joined.select(*[duckdb.ColumnExpression(internal[name]).alias(name)
                           for name in output_names(plan)])
