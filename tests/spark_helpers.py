"""Comparing Spark DataFrames ignoring row order (what chispa's assert_df_equality does)."""
from __future__ import annotations


def rows_of(df, columns=None) -> list[tuple]:
    """The rows of ``df`` as sorted tuples (``None`` sorts first): comparison ignoring row order."""
    cols = list(columns) if columns is not None else df.columns
    return sorted((tuple(r) for r in df.select(*cols).collect()),
                  key=lambda t: tuple((v is not None, v) for v in t))


def assert_same_rows(actual_df, expected: list[tuple], columns=None) -> None:
    """Like chispa's ``assert_df_equality(..., ignore_row_order=True)`` for a DataFrame against literal rows,
    with the first differences in the message."""
    cols = list(columns) if columns is not None else actual_df.columns
    got = rows_of(actual_df, cols)
    want = sorted(expected, key=lambda t: tuple((v is not None, v) for v in t))
    if got != want:
        extra = [r for r in got if r not in want][:10]
        lacking = [r for r in want if r not in got][:10]
        raise AssertionError(f"rows differ on {cols}: {len(got)} rows, {len(want)} expected; "
                             f"unexpected {extra}; missing {lacking}")
