"""The comparison at the heart of ``verify``: the rows a flow should have written (``derive``) against the rows a
target table holds, key by key. Pure functions of DataFrames; nothing here talks to Cassandra.

A target row is named by its primary key. Every key of the expected rows or of the table is one of:

- ``present``: the table holds the key with the expected values in every compared column (null equals null: a
  null cell and an absent cell are the same in Cassandra);
- ``missing``: an expected key the table does not hold;
- ``unexpected``: a key the table holds that no expected row has;
- ``wrong_value``: a key in both, with a different value in some compared column. It counts once, as a wrong
  value only (not also as missing and unexpected).

Several expected rows may name one key with different values (two source rows deriving the same target key): the
key is present when the table holds any of them (which one a table keeps depends on the order of the writes); the
*best* candidate, the one a sample shows and a repair writes, is the one of the newest source row when the rows
carry their write time (``newest``), else any one of them.

Columns are addressed by position, never resolved by name inside Spark (see ``derive``), so a key column named like
the classification's own columns, a target column named like a source column, names with dots, spaces or differing
only in case all work. Map columns cannot be compared (Spark cannot compare maps).
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from .derive import comparable, renamed
from .errors import VerifyError

SAMPLE_SIZE = 10
KINDS = ("present", "missing", "unexpected", "wrong_value")


@dataclasses.dataclass(frozen=True)
class Result:
    """The comparison of one target table, counted in distinct primary keys:

    - ``expected``: keys the flow should have produced, ``expected == present + missing + wrong_value``;
    - ``present``: expected keys found with the expected values;
    - ``missing``: expected keys absent from the table;
    - ``unexpected``: keys of the table that should not be there;
    - ``wrong_value``: keys in both whose values differ.

    Samples (the first keys in key order, up to the sample size): ``missing_sample`` holds the expected rows,
    ``unexpected_sample`` the rows found, ``wrong_value_sample`` one ``{"key", "expected", "found", "columns"}``
    per key (``columns``: the compared columns that differ). ``ok``: no difference of any kind.
    """
    table: str
    key_columns: tuple[str, ...]
    expected: int
    present: int
    missing: int
    unexpected: int
    wrong_value: int = 0
    missing_sample: tuple[dict, ...] = ()
    unexpected_sample: tuple[dict, ...] = ()
    wrong_value_sample: tuple[dict, ...] = ()

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.unexpected == 0 and self.wrong_value == 0

    @property
    def differences(self) -> int:
        return self.missing + self.unexpected + self.wrong_value

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "ok": self.ok}


@dataclasses.dataclass(frozen=True)
class Layout:
    """The original names of the positional columns of a classified DataFrame: ``k<i>`` (keys), ``e<j>`` (expected
    values of the best candidate, null when unexpected), ``f<j>`` (values found, null when missing), ``x<i>`` (the
    best candidate's carried columns), ``y<i>`` (the found row's extra columns), and ``kind``."""
    keys: tuple[str, ...]
    values: tuple[str, ...]
    carry: tuple[str, ...] = ()
    found: tuple[str, ...] = ()

    def key_of(self, row) -> dict:
        return {k: row[f"k{i}"] for i, k in enumerate(self.keys)}

    def expected_of(self, row) -> dict:
        return {v: row[f"e{j}"] for j, v in enumerate(self.values)}

    def found_of(self, row) -> dict:
        return {v: row[f"f{j}"] for j, v in enumerate(self.values)}


def classify(expected_df, actual_df, key_columns: Sequence[str], carry: Sequence[str] = (),
             found: Sequence[str] = (), newest: str | None = None, table: str = "", join: str = "full_outer"):
    """Every key of ``expected_df`` (the compared columns, then the ``carry`` columns) and of ``actual_df`` (at least
    the compared columns and the ``found`` columns; others are ignored) with its ``kind``. Returns the classified
    DataFrame (positional columns, see :class:`Layout`) and its layout. ``newest``: a carry column whose highest
    value names the best candidate of a key. ``join``: ``full_outer`` (every key), ``left_outer`` (the expected keys
    only: no unexpected row) or ``right_outer`` (the table's keys only: no missing row)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    carry, found = tuple(carry), tuple(found)
    n = len(expected_df.columns) - len(carry)
    columns = list(expected_df.columns[:n])
    if tuple(expected_df.columns[n:]) != carry:
        raise VerifyError(f"the expected rows of {table or '?'} end with {expected_df.columns[n:]}, not {carry}")
    keys = list(key_columns)
    unknown = [k for k in keys if k not in columns]
    if unknown:
        raise VerifyError(f"the expected rows of {table or '?'} have no key column(s) {', '.join(unknown)}")
    values = [c for c in columns if c not in keys]
    absent = [c for c in columns + list(found) if c not in actual_df.columns]
    if absent:
        raise VerifyError(f"table {table or '?'} has no column(s) {', '.join(absent)}")

    exp_pos = {c: i for i, c in reversed(list(enumerate(columns)))}
    act_pos = {c: i for i, c in reversed(list(enumerate(actual_df.columns)))}
    types = expected_df.schema.fields

    def actual(column):   # the found column, of the expected column's type
        col = F.col(f"_{act_pos[column]}")
        want = types[exp_pos[column]].dataType
        return col if actual_df.schema.fields[act_pos[column]].dataType == want else col.cast(want)

    exp = renamed(expected_df, "_").select(
        *[F.col(f"_{exp_pos[k]}").alias(f"k{i}") for i, k in enumerate(keys)],
        *[F.col(f"_{exp_pos[v]}").alias(f"e{j}") for j, v in enumerate(values)],
        *[F.col(f"_{n + i}").alias(f"x{i}") for i in range(len(carry))])
    act = renamed(actual_df, "_").select(
        *[actual(k).alias(f"a{i}") for i, k in enumerate(keys)],
        *[actual(v).alias(f"f{j}") for j, v in enumerate(values)],
        *[F.col(f"_{act_pos[c]}").alias(f"y{i}") for i, c in enumerate(found)],
        F.lit(True).alias("in_actual"))     # a table's keys are unique: no distinct (a shuffle) needed

    maps = {j for j, v in enumerate(values) if isinstance(types[exp_pos[v]].dataType, MapType)}

    def values_of(prefix: str):   # a leading constant: a table without value columns still compares structs
        return F.struct(F.lit(0).alias("_"), *[(comparable(F.col(f"{prefix}{j}")) if j in maps else F.col(f"{prefix}{j}"))
                                               .alias(f"v{j}") for j in range(len(values))])

    best = F.struct(*[F.col(f"e{j}") for j in range(len(values))], *[F.col(f"x{i}") for i in range(len(carry))])
    if newest is not None:
        best = F.max_by(best, F.col(f"x{carry.index(newest)}"))
    else:
        best = F.first(best)
    grouped = exp.groupBy(*[f"k{i}" for i in range(len(keys))]).agg(
        F.collect_list(values_of("e")).alias("candidates"), best.alias("best"))
    joined = grouped.join(act, on=[F.col(f"k{i}").eqNullSafe(F.col(f"a{i}")) for i in range(len(keys))],
                          how=join)
    found_values = values_of("f")
    matched = F.exists(F.col("candidates"), lambda c: c.eqNullSafe(found_values))
    kind = (F.when(F.col("in_actual").isNull(), "missing").when(F.col("candidates").isNull(), "unexpected")
            .when(matched, "present").otherwise("wrong_value"))
    out = joined.select(
        kind.alias("kind"),
        *[F.coalesce(F.col(f"k{i}"), F.col(f"a{i}")).alias(f"k{i}") for i in range(len(keys))],
        *[F.col("best").getField(f"e{j}").alias(f"e{j}") for j in range(len(values))],
        *[F.col("best").getField(f"x{i}").alias(f"x{i}") for i in range(len(carry))],
        *[F.col(f"f{j}") for j in range(len(values))],
        *[F.col(f"y{i}") for i in range(len(found))])
    return out, Layout(tuple(keys), tuple(values), carry, found)


def summarize(classified, layout: Layout, table: str = "", sample_size: int = SAMPLE_SIZE,
              kinds: Iterable[str] = KINDS) -> Result:
    """The counts and samples of a classified DataFrame (cache it first: it is read twice). ``kinds``: the kinds
    counted (the others count 0)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kinds = tuple(kinds)
    counted = classified.where(F.col("kind").isin(*kinds))
    counts = {r["kind"]: r["count"] for r in counted.groupBy("kind").count().collect()}
    samples: dict[str, list] = {k: [] for k in KINDS}
    if sample_size > 0 and any(counts.get(k) for k in kinds if k != "present"):
        order = Window.partitionBy("kind").orderBy(*[F.col(f"k{i}").asc_nulls_first() for i in range(len(layout.keys))])
        rows = (counted.where(F.col("kind") != "present").withColumn("n", F.row_number().over(order))
                .where(F.col("n") <= sample_size).collect())
        for r in sorted(rows, key=lambda r: r["n"]):
            samples[r["kind"]].append(sample(r, layout))
    n = {k: counts.get(k, 0) for k in KINDS}
    return Result(table=table, key_columns=layout.keys, expected=n["present"] + n["missing"] + n["wrong_value"],
                  present=n["present"], missing=n["missing"], unexpected=n["unexpected"], wrong_value=n["wrong_value"],
                  missing_sample=tuple(samples["missing"]), unexpected_sample=tuple(samples["unexpected"]),
                  wrong_value_sample=tuple(samples["wrong_value"]))


def sample(row, layout: Layout) -> dict:
    """A classified row as a report shows it: the expected row (missing), the row found (unexpected), or the key,
    both values and the columns that differ (wrong value)."""
    key = layout.key_of(row)
    if row["kind"] == "missing":
        return {**key, **layout.expected_of(row)}
    if row["kind"] == "unexpected":
        return {**key, **layout.found_of(row)}
    expected, got = layout.expected_of(row), layout.found_of(row)
    differ = [c for c in layout.values if expected[c] != got[c]]
    return {"key": key, "expected": expected, "found": got, "columns": differ}


def compare(expected_df, actual_df, key_columns: Sequence[str], table: str = "",
            sample_size: int = SAMPLE_SIZE) -> Result:
    """:func:`classify` then :func:`summarize`: the comparison of one table's expected rows (all columns of
    ``expected_df``) with its actual rows (``actual_df``, extra columns ignored)."""
    classified, layout = classify(expected_df, actual_df, key_columns, table=table)
    classified = classified.cache()
    try:
        return summarize(classified, layout, table, sample_size)
    finally:
        classified.unpersist()


def merge(results: Sequence[Result], sample_size: int = SAMPLE_SIZE) -> Result:
    """The results of one table over several token ranges as one: counts summed, samples the first ones."""
    first = results[0]

    def total(field: str) -> int:
        return sum(getattr(r, field) for r in results)

    def samples(field: str) -> tuple:
        return tuple(s for r in results for s in getattr(r, field))[:sample_size]

    return Result(table=first.table, key_columns=first.key_columns, expected=total("expected"),
                  present=total("present"), missing=total("missing"), unexpected=total("unexpected"),
                  wrong_value=total("wrong_value"), missing_sample=samples("missing_sample"),
                  unexpected_sample=samples("unexpected_sample"), wrong_value_sample=samples("wrong_value_sample"))


def result_from_dict(d: Mapping) -> Result:
    """A Result read back from its :meth:`Result.as_dict` (a checkpoint's JSON)."""
    fields = {f.name for f in dataclasses.fields(Result)}
    values = {k: v for k, v in d.items() if k in fields}
    values["key_columns"] = tuple(values.get("key_columns") or ())
    for f in ("missing_sample", "unexpected_sample", "wrong_value_sample"):
        values[f] = tuple(values.get(f) or ())
    return Result(**values)
