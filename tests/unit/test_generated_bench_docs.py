"""docs/benchmarks.md's block that stands for the committed run is generated, not written by hand: it is what the
report code renders from benchmarks/results (so it cannot go stale), the same Targets table as report.md, and
rewriting it touches nothing outside its markers."""
from __future__ import annotations

import re

import pytest

from async_triggers.benchmarks.errors import DocsError
from async_triggers.benchmarks.report import generated_docs
from async_triggers.benchmarks.report.generated_docs import BEGIN, END
from async_triggers.benchmarks.results import load_runs


@pytest.fixture(scope="module")
def committed_block() -> str:
    return generated_docs.render(load_runs(generated_docs.COMMITTED_RESULTS))


def test_should_hold_in_docs_the_block_rendered_from_the_committed_results(committed_block):
    assert generated_docs.generated_block(generated_docs.DOCS) == committed_block, (
        "docs/benchmarks.md's generated block is stale: run `ctl bench report` to rewrite it from benchmarks/results")


def test_should_render_the_same_targets_table_as_the_committed_report(committed_block):
    report = (generated_docs.COMMITTED_RESULTS / "report.md").read_text()
    section = report.split("## Targets\n\n", 1)[1].split("\n\n", 1)[0]
    table = committed_block.split("\n\n", 1)[1]
    assert table == section


def test_should_say_which_run_from_the_results():
    runs = load_runs(generated_docs.COMMITTED_RESULTS)
    line = generated_docs.which_run(runs)
    assert line.startswith(f"Run: {len(runs)} runs")
    commits = {str(r["commit"]) for r in runs}
    assert ("from one commit" if len(commits) == 1 else f"from {len(commits)} commits") in line
    assert not any(c in line for c in commits)   # the docs speak to a reader: the hash stays in the run files


def test_should_replace_only_what_lies_between_the_markers(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\n\nbefore\n\n{BEGIN}\nold table\nold line\n{END}\n\nafter\n")
    assert generated_docs.update_generated_block(doc, "new table\n") is True
    assert doc.read_text() == f"# Title\n\nbefore\n\n{BEGIN}\nnew table\n{END}\n\nafter\n"
    assert generated_docs.generated_block(doc) == "new table"
    assert generated_docs.update_generated_block(doc, "new table") is False   # unchanged: not rewritten


@pytest.mark.parametrize("text", ["# no markers\n", f"only the start\n{BEGIN}\ntable\n", f"{END}\nreversed\n{BEGIN}\n",
                                  f"{BEGIN}\none\n{END}\n{BEGIN}\ntwo\n{END}\n"])
def test_should_refuse_a_file_without_its_markers_naming_the_file(tmp_path, text):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(text)
    with pytest.raises(DocsError, match=re.escape(str(doc))):
        generated_docs.update_generated_block(doc, "table")
    assert doc.read_text() == text


def test_should_refuse_a_missing_file_naming_it(tmp_path):
    with pytest.raises(DocsError, match=re.escape(str(tmp_path / "absent.md"))):
        generated_docs.update_generated_block(tmp_path / "absent.md", "table")


def test_should_rewrite_the_docs_only_for_the_committed_report(tmp_path):
    assert generated_docs.is_committed_report(generated_docs.COMMITTED_RESULTS / "report.md")
    assert not generated_docs.is_committed_report(tmp_path / "report.md")


def _run(started_at: float, duration_s: float = 60.0, **extra) -> dict:
    return {"started_at": started_at, "duration_s": duration_s, **extra}


def test_should_give_one_span_for_runs_made_by_one_command():
    start = 1_764_281_760.0   # 27 Nov 2025, 22:16 UTC
    runs = [_run(start), _run(start + 600), _run(start + 600 + generated_docs.PART_GAP_S, 120),
            _run(start + 9 * 3600, projected=True)]   # a projection was not made then: it is no part
    assert generated_docs.parts(runs) == [(start, start + 600 + generated_docs.PART_GAP_S + 120)]
    assert generated_docs.when_measured(runs) == ("27 Nov 2025, 22:16–22:48 UTC "
                                                  "(the first run's start to the last one's end)")


def test_should_name_each_part_when_the_runs_were_made_by_separate_commands():
    start = 1_764_281_760.0   # 27 Nov 2025, 22:16 UTC; the second part crosses midnight
    runs = [_run(start + 900), _run(start), _run(start + 25 * 3600), _run(start + 25 * 3600 + 600, 3000)]
    assert generated_docs.parts(runs) == [(start, start + 960), (start + 25 * 3600, start + 26 * 3600)]
    assert generated_docs.when_measured(runs) == (
        "in 2 parts made by separate commands, 27 Nov 2025, 22:16–22:32 UTC and 28 Nov 2025 23:16 – 29 Nov 2025 00:16 UTC "
        "(each part's first run's start to its last one's end)")
