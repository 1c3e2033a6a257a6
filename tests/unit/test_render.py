"""Rendering: golden files for the example flows, bound statements that match the human-readable script."""
import os
from pathlib import Path

import pytest

from async_triggers import render, validate
from async_triggers.cql_schema import parse_cql_file, schema_file_of
from async_triggers.errors import ConfigError
from async_triggers.flow_file import load_flow_file

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
EXAMPLES = ["twitter", "users_index", "shop"]


def specs_of(example: str) -> list[dict]:
    flow_file = ROOT / "examples" / example / "flows.py"
    return validate.compile_all(load_flow_file(flow_file), parse_cql_file(schema_file_of(flow_file)))


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.read_text() == text, f"{name} differs from the golden file (UPDATE_GOLDEN=1 to accept)"


@pytest.mark.parametrize("example", EXAMPLES)
def test_should_render_the_example_specs_as_the_golden_files(example):
    for spec in specs_of(example):
        check_golden(f"{spec['name']}.json", render.spec_json(spec) + "\n")


@pytest.mark.parametrize("example", EXAMPLES)
def test_should_render_the_deploy_script_as_the_golden_file(example):
    check_golden(f"{example}.deploy.cql", render.deploy_script(specs_of(example), 2, version=1700000000000))


def test_should_bind_every_value_of_the_deploy_statements():
    specs = specs_of("twitter")
    statements = render.deploy_statements(specs, 2, version=42)
    insert = [s for s in statements if s.cql.startswith('INSERT INTO "async_triggers"."flows"')]
    assert [s.values[0] for s in insert] == [spec["name"] for spec in specs] == \
        ["twitter_timeline", "twitter_timeline_follows", "twitter_tweet_counts"]   # the follow's companion among them
    name, ks, table, spec_text, version = insert[0].values
    assert (name, ks, table, version) == ("twitter_timeline", "twitter", "tweets", 42)
    assert spec_text == render.spec_json(specs[0])
    assert not any(spec["name"] in s.cql for s in insert for spec in specs)  # values are bound, never formatted into CQL
    trigger = [s for s in statements if s.cql.startswith("CREATE TRIGGER")]
    assert trigger[0].cql == ('CREATE TRIGGER IF NOT EXISTS "async_triggers" ON "twitter"."tweets"\n'
                              "  USING 'org.asynctriggers.AsyncTrigger'")
    assert all(s.values == () for s in statements if s not in insert)


def test_should_quote_identifiers_and_escape_literals():
    assert render.ident('we"ird') == '"we""ird"'
    assert render.literal("it's") == "'it''s'"


def test_should_refuse_statements_whose_markers_do_not_match_the_values():
    with pytest.raises(ConfigError, match="2 bind markers for 3 values"):
        render.split_statements("INSERT INTO t (a, b) VALUES (?, ?);\n", [1, 2, 3])


def test_should_parse_a_cql_schema_file(tmp_path):
    cql = tmp_path / "s.cql"
    cql.write_text("""
        CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
        -- a comment
        CREATE TABLE IF NOT EXISTS k.t (a int, b text, "C" map<text, frozen<list<int>>>, d int,
          PRIMARY KEY ((a, b), "C", d)) WITH CLUSTERING ORDER BY ("C" DESC, d ASC);
        CREATE TABLE k.u (id uuid PRIMARY KEY, v text);
    """)
    s = parse_cql_file(cql)
    t = s.table("k", "t")
    assert t.partition_key == ("a", "b") and t.clustering == ("C", "d")
    assert t.columns["C"] == "map<text,frozen<list<int>>>"
    assert s.table("k", "u").partition_key == ("id",)


def test_should_name_the_missing_schema_file(tmp_path):
    with pytest.raises(ConfigError, match="no schema file .*nope.cql beside the flow file"):
        parse_cql_file(tmp_path / "nope.cql")


def test_should_find_the_schema_of_a_flow_file_beside_it_or_in_its_example_folder(tmp_path):
    (tmp_path / "mine.py").write_text("")
    (tmp_path / "schema.cql").write_text("")
    assert schema_file_of(tmp_path / "mine.py") == tmp_path / "schema.cql"
    (tmp_path / "mine.cql").write_text("")
    assert schema_file_of(tmp_path / "mine.py") == tmp_path / "mine.cql"
