"""How the report prints numbers and tables: the report's own style of significant digits, ``report / ours``
cells, markdown tables."""
from __future__ import annotations

import math
from typing import Any, Sequence

NA = "n/a"          # we have no such run
NONE = "–"          # the approach has no such component (the report's dash)


def fmt_sig(value: float | None, digits: int = 3) -> str:
    """``digits`` significant digits, never in exponent form and never fewer than the integer part (1297, 8.90,
    0.360, 49900): the way the report prints its numbers."""
    if value is None:
        return NA
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if decimals and len(text.lstrip("-").replace(".", "").lstrip("0")) > digits:  # 9.996 -> "10.00": one too many
        text = f"{value:.{decimals - 1}f}"
    return text


def fmt_rate(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}"


def fmt_ms(value: float | None) -> str:
    """Response times: two decimals below 100 ms (the report's 0.83, 20.66), one below 1 s, none above."""
    if value is None:
        return NA
    return f"{value:.2f}" if value < 100 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def cell(published: Any, ours: str) -> str:
    return f"{NONE if published is None else published} / {ours}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_first_left: bool = True) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"
    lines = [line(header), line(["---" if i == 0 and align_first_left else "---:" for i in range(len(header))])]
    return lines + [line(row) for row in rows]
