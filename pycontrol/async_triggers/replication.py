"""The replication of the async_triggers keyspace: NetworkTopologyStrategy, always.

SimpleStrategy ignores data centers (replicas land wherever the ring puts them) and clusters often refuse it
(the guardrail ``simplestrategy_enabled: false``). Ours is NetworkTopologyStrategy with a replication factor per
data center; by default it mirrors the flows' source keyspaces (the per-DC maximum over them), so our tables live
in every DC the data does, as many times. Offline (``ctl trigger render``), where no DC is known, it is
``{'class': 'NetworkTopologyStrategy', 'replication_factor': N}``: N in every DC (Cassandra 4.0+).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .errors import ConfigError

ALL_DCS = "replication_factor"   # NetworkTopologyStrategy's key for "this many in every data center"
MAX_DEFAULT = 3


def parse(text: str) -> dict[str, int]:
    """'3' (every DC) or 'dc1:3,dc2:2'. Raises ConfigError naming the bad part."""
    text = (text or "").strip()
    if not text:
        raise ConfigError("--replication is empty: give a number (every data center) or dc:rf pairs, e.g. dc1:3,dc2:3")
    if text.isdigit():
        return {ALL_DCS: _factor(text, text)}
    out: dict[str, int] = {}
    for part in text.split(","):
        dc, sep, rf = part.strip().partition(":")
        if not sep or not dc.strip():
            raise ConfigError(f"--replication: '{part.strip()}' is not dc:rf (e.g. dc1:3)")
        if dc.strip() in out:
            raise ConfigError(f"--replication names data center '{dc.strip()}' twice")
        out[dc.strip()] = _factor(rf.strip(), part.strip())
    return out


def _factor(text: str, culprit: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"--replication: the replication factor in '{culprit}' must be a whole number >= 1")
    return int(text)


def cql_map(replication: Mapping[str, int] | int) -> str:
    """The CQL map literal of the keyspace's replication."""
    if isinstance(replication, int):
        replication = {ALL_DCS: replication}
    entries = ", ".join(f"'{_quote(dc)}': {rf}" for dc, rf in sorted(replication.items()))
    return "{'class': 'NetworkTopologyStrategy', " + entries + "}"


def _quote(text: str) -> str:
    return text.replace("'", "''")


def nodes_by_dc(hosts: Iterable) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in hosts:
        out[h.datacenter or "datacenter1"] = out.get(h.datacenter or "datacenter1", 0) + 1
    return out


def of_keyspace(ks_meta, dcs: Iterable[str]) -> dict[str, int]:
    """The per-DC replication of a keyspace as the driver sees it: NetworkTopologyStrategy's factors (full
    replicas), SimpleStrategy's factor in every DC, nothing for the others (LocalStrategy, EverywhereStrategy...)."""
    strategy = ks_meta.replication_strategy
    factors = getattr(strategy, "dc_replication_factors", None)
    if factors is not None:
        return {dc: int(rf) for dc, rf in factors.items()}
    rf = getattr(strategy, "replication_factor", None)
    return {dc: int(rf) for dc in dcs} if rf is not None else {}


def mirror(metadata, keyspaces: Iterable[str]) -> dict[str, int]:
    """The default: per DC, the largest factor any of these source keyspaces has there, at most the DC's node count
    (and at most 3 for a DC none of them names, when they all use LocalStrategy-like ones: every DC of the cluster)."""
    dcs = nodes_by_dc(metadata.all_hosts())
    out: dict[str, int] = {}
    for name in keyspaces:
        ks = metadata.keyspaces.get(name)
        if ks is None:
            continue
        for dc, rf in of_keyspace(ks, dcs).items():
            out[dc] = max(out.get(dc, 0), rf)
    if not out:
        out = {dc: min(MAX_DEFAULT, n) for dc, n in dcs.items()}
    return {dc: max(1, min(rf, dcs.get(dc, rf))) for dc, rf in out.items() if rf > 0}


def check_dcs(metadata, replication: Mapping[str, int]) -> None:
    """Every named DC exists: a typo would leave our tables with no replica in the DC meant."""
    dcs = nodes_by_dc(metadata.all_hosts())
    unknown = sorted(dc for dc in replication if dc != ALL_DCS and dc not in dcs)
    if unknown:
        raise ConfigError(f"--replication names data center(s) {', '.join(unknown)} that the cluster does not have "
                          f"(it has {', '.join(sorted(dcs)) or 'none'})")
