"""The async_triggers keyspace's replication: parsed, rendered, mirrored from the sources' keyspaces."""
from types import SimpleNamespace as NS

import pytest

from async_triggers import replication
from async_triggers.errors import ConfigError
from cassandra.metadata import NetworkTopologyStrategy, SimpleStrategy


def test_should_parse_a_factor_for_every_dc_or_per_dc_pairs():
    assert replication.parse("3") == {"replication_factor": 3}
    assert replication.parse(" dc1:3, dc2:2 ") == {"dc1": 3, "dc2": 2}


@pytest.mark.parametrize("text, culprit", [("", "empty"), ("dc1", "'dc1' is not dc:rf"), ("dc1:0", "'dc1:0'"),
                                           ("dc1:x", "'dc1:x'"), (":3", "':3' is not dc:rf"),
                                           ("dc1:1,dc1:2", "'dc1' twice")])
def test_should_refuse_bad_replication_naming_the_culprit(text, culprit):
    with pytest.raises(ConfigError, match=culprit):
        replication.parse(text)


def test_should_render_network_topology_strategy_always():
    assert replication.cql_map(2) == "{'class': 'NetworkTopologyStrategy', 'replication_factor': 2}"
    assert replication.cql_map({"dc2": 1, "dc1": 3}) == "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 1}"
    assert replication.cql_map({"it's": 1}) == "{'class': 'NetworkTopologyStrategy', 'it''s': 1}"


def _metadata(hosts, keyspaces):
    return NS(all_hosts=lambda: [NS(datacenter=dc) for dc in hosts],
              keyspaces={name: NS(replication_strategy=s) for name, s in keyspaces.items()})


def test_should_mirror_the_source_keyspaces_per_dc_taking_the_largest_and_at_most_the_dcs_nodes():
    meta = _metadata(["dc1", "dc1", "dc1", "dc2", "dc2"],
                     {"a": NetworkTopologyStrategy({"dc1": "3", "dc2": "1"}),
                      "b": NetworkTopologyStrategy({"dc2": "3"})})
    assert replication.mirror(meta, ["a", "b"]) == {"dc1": 3, "dc2": 2}


def test_should_mirror_simple_strategy_into_every_dc():
    meta = _metadata(["dc1", "dc1", "dc2"], {"a": SimpleStrategy({"replication_factor": "2"})})
    assert replication.mirror(meta, ["a"]) == {"dc1": 2, "dc2": 1}


def test_should_default_to_three_per_dc_when_no_source_keyspace_says():
    meta = _metadata(["dc1"] * 4 + ["dc2"], {})
    assert replication.mirror(meta, ["absent"]) == {"dc1": 3, "dc2": 1}


def test_should_refuse_a_data_center_the_cluster_lacks():
    meta = _metadata(["dc1"], {})
    replication.check_dcs(meta, {"dc1": 1, "replication_factor": 2})
    with pytest.raises(ConfigError, match="dc9.*it has dc1"):
        replication.check_dcs(meta, {"dc9": 1})
