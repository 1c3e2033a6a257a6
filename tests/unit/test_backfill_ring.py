"""The backfill's token ranges, key blobs and checkpoint decisions (no cluster, no Spark)."""
import datetime as dt
import struct
import uuid

import pytest

from async_triggers.errors import BackfillError
from async_triggers.flows import Flow, Write, source
from async_triggers.spark_jobs import checkpoints, ring

MIN, MAX = -(1 << 63), (1 << 63) - 1


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 1000])
def test_should_split_the_whole_ring_into_contiguous_ranges(n):
    ranges = ring.split_ring(n)
    assert len(ranges) == n
    assert ranges[0][0] == MIN and ranges[-1][1] == MAX
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(n - 1))
    assert all(start < end for start, end in ranges)
    widths = [end - start for start, end in ranges]
    assert max(widths) - min(widths) <= 1


def test_should_put_every_token_in_exactly_one_range():
    ranges = ring.split_ring(4)
    assert ranges[2][0] == -1    # (2^64 - 1) * 2 // 4 past the minimum
    assert [ring.range_of(t, ranges) for t in (MIN + 1, -1, 0, 1, (1 << 62), MAX)] == [0, 1, 2, 2, 3, 3]
    assert ring.range_of(ranges[1][1], ranges) == 1        # an end belongs to its range, the next starts after it
    with pytest.raises(ValueError):
        ring.range_of(MIN, ranges)                        # Murmur3 gives no key the minimum token


def test_should_refuse_fewer_than_one_range():
    with pytest.raises(BackfillError, match="at least 1"):
        ring.split_ring(0)


def test_should_hash_a_composite_partition_key_as_cassandra_composes_it():
    composed = ring.partition_key_bytes([1, "ab"], ["int", "text"])
    assert composed == b"\x00\x04\x00\x00\x00\x01\x00" + b"\x00\x02ab\x00"
    assert ring.partition_key_bytes([1], ["int"]) == b"\x00\x00\x00\x01"


def test_should_serialize_spark_values_as_cassandra_stores_them():
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert ring.serialize(str(u), "uuid") == u.bytes                  # the connector hands uuids over as strings
    assert ring.serialize(7, "bigint") == struct.pack(">q", 7)
    assert ring.serialize(dt.datetime(1970, 1, 1, 0, 0, 1), "timestamp") == struct.pack(">q", 1000)
    assert ring.deserialize(struct.pack(">q", 7), "bigint") == 7


def test_should_refuse_a_collection_key_by_its_type():
    with pytest.raises(BackfillError, match="list<int>"):
        ring.serialize([1], "list<int>")


def test_should_encode_lineage_keys_as_the_plugins_key_codec():
    assert ring.source_key([7], ["int"]) == b"\x00\x00\x00\x04" + b"\x00\x00\x00\x07"
    assert ring.lineage_key(1, ["ab"], ["text"]) == (b"\x00\x00\x00\x04\x00\x00\x00\x01" + b"\x00\x00\x00\x02ab")
    assert ring.lineage_key(0, [], []) == b"\x00\x00\x00\x04\x00\x00\x00\x00"   # a target's sentinel: 8 bytes
    assert ring.decode_key(ring.lineage_key(1, ["ab"], ["text"])) == [b"\x00\x00\x00\x01", b"ab"]
    with pytest.raises(ValueError, match="corrupt"):
        ring.decode_key(b"\x00\x00\x00\x09ab")


NOW = dt.datetime(2025, 1, 2, 3, 4, 5, 678901)
EARLIER = dt.datetime(2025, 1, 1)


def _rows(run, starts, ranges):
    return [{"run": run, "range_start": s, "ranges": ranges} for s in starts]


def test_should_start_a_new_run_when_nothing_is_recorded():
    run = checkpoints.plan_run("f", [], 8, restart=False, now=NOW)
    assert not run.resumed and run.started == dt.datetime(2025, 1, 2, 3, 4, 5, 678000)
    assert run.pending == ring.split_ring(8)


def test_should_resume_the_latest_run_with_its_own_ranges_skipping_the_done_ones():
    done = [s for s, _ in ring.split_ring(4)[:2]]
    recorded = _rows(EARLIER, done, 4) + _rows(EARLIER - dt.timedelta(days=1), [s for s, _ in ring.split_ring(2)], 2)
    run = checkpoints.plan_run("f", recorded, 16, restart=False, now=NOW)
    assert run.resumed and run.started == EARLIER
    assert len(run.ranges) == 4
    assert run.pending == ring.split_ring(4)[2:]


def test_should_start_a_new_run_after_a_complete_one_or_on_restart():
    recorded = _rows(EARLIER, [s for s, _ in ring.split_ring(4)], 4)
    for restart in (False, True):
        again = checkpoints.plan_run("f", recorded, 8, restart=restart, now=NOW)
        assert not again.resumed and again.started > EARLIER and len(again.pending) == 8


def test_should_not_resume_a_run_of_an_earlier_deploy():
    """A flow dropped and deployed again under its name (or with another specification): its earlier run's ranges
    were backfilled for the former deploy, and the source rows they held may since have been written without it."""
    done = [s for s, _ in ring.split_ring(4)[:2]]
    recorded = _rows(EARLIER, done, 4)
    fresh = checkpoints.plan_run("f", recorded, 8, restart=False, now=NOW, deployed=EARLIER + dt.timedelta(seconds=1))
    assert not fresh.resumed and len(fresh.pending) == 8
    resumed = checkpoints.plan_run("f", recorded, 8, restart=False, now=NOW, deployed=EARLIER - dt.timedelta(seconds=1))
    assert resumed.resumed and resumed.pending == ring.split_ring(4)[2:]


def test_should_refuse_a_run_whose_checkpoints_disagree_on_its_ranges():
    with pytest.raises(BackfillError, match="'f'.*--restart"):
        checkpoints.plan_run("f", _rows(EARLIER, [MIN], 4) + _rows(EARLIER, [0], 8), 4, restart=False, now=NOW)


def test_should_refuse_to_deploy_and_backfill_a_handler_flow_naming_it():
    from async_triggers.cli.backfill import refuse_handlers
    plain = Flow(name="copy", source="a.b", steps=[Write("a.c", id=source.id)])
    with pytest.raises(BackfillError, match="flow 'audit' runs the Java handler com.example.Audit"):
        refuse_handlers([plain, Flow(name="audit", source="a.b", handler="com.example.Audit")])
    refuse_handlers([plain])


def test_should_refuse_to_backfill_a_deployed_handler_flow_naming_it():
    from async_triggers.spark_jobs import backfill
    spec = {"name": "audit", "handler": "com.example.Audit", "targets": [],
            "source": {"keyspace": "a", "table": "b", "partition_key": ["id"], "clustering": [], "columns": {}}}
    with pytest.raises(BackfillError, match="flow 'audit' runs the Java handler com.example.Audit.*cannot be backfilled"):
        backfill.check_applicable(spec)


def test_should_date_a_row_by_the_non_key_columns_the_flow_reads():
    from async_triggers.spark_jobs import backfill
    spec = {"name": "f", "source": {"keyspace": "a", "table": "b", "partition_key": ["id"], "clustering": [],
                                    "columns": {"id": "int", "name": "text", "email": "text", "age": "int"}},
            "targets": [{"keyspace": "a", "table": "c", "partition_key": ["name"], "clustering": ["id"],
                         "columns": {"name": "source.name", "id": "source.id"}, "fanout": None}]}
    assert backfill.timestamp_columns(spec) == ["name"]
    spec["targets"][0]["columns"] = {"id": "source.id"}        # only the key: any non-key cell dates the row
    assert backfill.timestamp_columns(spec) == ["name", "email", "age"]
