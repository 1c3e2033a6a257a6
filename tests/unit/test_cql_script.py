"""The CQL script splitter: a ``;`` or a ``?`` inside a string, a quoted name or a comment is not one."""
import re

import pytest

from async_triggers.cql_script import bind_markers, statements
from async_triggers.errors import ConfigError


def test_should_split_on_semicolons_and_drop_comments_of_every_kind():
    text = """-- a line comment; with a semicolon
CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};  // trailing; comment
/* a block comment;
   over lines ? */ CREATE TABLE k.t (id int PRIMARY KEY, v text);
"""
    assert statements(text) == [
        "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE k.t (id int PRIMARY KEY, v text)",
    ]


@pytest.mark.parametrize("literal", ["'a;b'", "'it''s; -- not a comment'", "$$x; /* y */ z$$", '"odd;name"'])
def test_should_keep_a_semicolon_or_comment_marker_inside_a_string_or_quoted_name(literal):
    assert statements(f"INSERT INTO k.t (id, v) VALUES (1, {literal}); SELECT * FROM k.t") == [
        f"INSERT INTO k.t (id, v) VALUES (1, {literal})", "SELECT * FROM k.t"]


def test_should_read_a_last_statement_without_its_semicolon():
    assert statements("SELECT 1 FROM system.local") == ["SELECT 1 FROM system.local"]


@pytest.mark.parametrize("text, culprit", [
    ("SELECT 1;\nINSERT INTO k.t (id, v) VALUES (1, 'open", "line 2: a ' quote is never closed"),
    ("SELECT 1;\n\n/* forever", "line 3: a /* comment is never closed"),
    ("INSERT INTO k.t (v) VALUES ($$x)", "line 1: a $$ quote is never closed"),
])
def test_should_name_the_line_of_an_unterminated_string_or_comment(text, culprit):
    with pytest.raises(ConfigError, match=re.escape(f"schema.cql: {culprit}")):
        statements(text, "schema.cql")


def test_should_count_only_the_bind_markers_outside_strings():
    assert bind_markers("INSERT INTO k.t (id, v, w) VALUES (?, 'why?', ?) IF v = $$?$$") == 2
    assert bind_markers('SELECT "what?" FROM k.t WHERE id = ?') == 1
