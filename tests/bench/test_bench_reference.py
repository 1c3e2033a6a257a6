"""async_triggers.benchmarks.report.reference against the seed's own text: every table cell as printed, every quoted sentence verbatim."""
from __future__ import annotations

import os
import re
from decimal import Decimal
from pathlib import Path

import pytest

from async_triggers.benchmarks.report import reference

ROOT = Path(__file__).resolve().parents[2]
LABEL_TO_ID = {v: k for labels in (reference.LABELS, reference.RESOURCE_LABELS) for k, v in labels.items()}


def seed_text() -> str:
    """The report's text from shared/seeds beside the repository (or $ASYNC_TRIGGERS_SEEDS)."""
    folder = Path(os.environ.get("ASYNC_TRIGGERS_SEEDS", ROOT.parent / "shared" / "seeds"))
    found = sorted(folder.glob("000_*.txt"))
    if not found:
        pytest.skip(f"the report is not in {folder}: the transcription cannot be compared with it")
    return found[0].read_text()


def table_blocks(text: str) -> dict[str, list[list[str]]]:
    """The rows of each table as printed (tab-separated cells), keyed by the caption that follows them."""
    blocks, rows = {}, []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("\t")]
        if cells[0] in LABEL_TO_ID:
            rows.append(cells)
        elif m := re.match(r"^(Table [1-4]: .*)$", line.strip()):
            blocks[m.group(1)] = rows
            rows = []
    return blocks


def flat(row: dict) -> list[str]:
    """A reference row's cells in the report's column order, "–" for None."""
    cells = []
    for value in row.values():
        cells.extend(flat(value) if isinstance(value, dict) else ["–" if value is None else str(value)])
    return cells


@pytest.mark.parametrize("table_id", ["table1", "table2", "table3", "table4"])
def test_should_transcribe_every_reference_table_cell_as_printed(table_id):
    table = reference.TABLES[table_id]
    printed = table_blocks(seed_text())[table["title"]]
    assert [r[0] for r in printed] == [table["labels"][a] for a in reference.APPROACHES]
    for cells in printed:
        assert flat(table["rows"][LABEL_TO_ID[cells[0]]]) == cells[1:], cells[0]


def test_should_keep_reference_numbers_as_exact_decimals():
    assert str(reference.TABLE_2["rows"]["integrated"]["median_ms"]) == "0.80"
    assert reference.TABLE_3["rows"]["integrated"]["cpu_pct"]["app"] == Decimal("2.3")
    assert reference.TABLE_4["rows"]["external_queue"]["nodes"] == {"app": 3, "db": 16, "queue": 2, "total": 21}
    assert reference.TABLE_3["rows"]["synchronous"]["network_mb_s"]["queue"] is None


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("section", [reference.SATURATING, reference.EIGHTY_PERCENT, reference.FIGURE_6,
                                     reference.FIGURE_7, reference.FIGURE_8, reference.RESOURCES],
                         ids=lambda s: s.get("id", s["section"]))
def test_should_quote_the_observations_verbatim(section):
    text = normalise(seed_text())
    for sentence in section["observations"]:
        assert normalise(sentence) in text, sentence


def test_should_hold_the_headline_values_the_text_states():
    assert reference.SATURATING["values"]["saturation_msg_s"] == 1300
    assert reference.FIGURE_6["values"]["burst_rate_msg_s"] == 2600
    assert reference.FIGURE_6["values"]["async_burst_write_rate_msg_s"] == 2600
    assert reference.EIGHTY_PERCENT["values"]["sync_max_response_s"] == Decimal("13.8")
    # Table 2's synchronous max (ms) is the 13.8 s the text quotes
    assert reference.TABLE_2["rows"]["synchronous"]["max_ms"] == 1000 * reference.EIGHTY_PERCENT["values"][
        "sync_max_response_s"]
    # 26.2 MB/s saved at 16 nodes: Table 4's network sums (16.0 + 54.0 + 4.06) - (2.34 + 45.6) = 26.12
    t4 = reference.TABLE_4["rows"]
    saved = sum(v for v in t4["external_queue"]["network_mb_s"].values()) - sum(
        v for v in t4["integrated"]["network_mb_s"].values() if v is not None)
    assert abs(saved - reference.RESOURCES["values"]["network_saved_mb_s_16_nodes"]) < Decimal("0.1")
    for n in (3, 4):
        for row in reference.TABLES[f"table{n}"]["rows"].values():
            nodes = row["nodes"]
            assert nodes["total"] == sum(v for k, v in nodes.items() if k != "total" and v is not None)
