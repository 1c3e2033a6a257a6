"""What a failed chaos run keeps besides the check: for every sampled wrong row, the source row, the target row and
the flow's lineage entries of that source row, each with its write timestamps, read at ALL; and a second check after
the cluster settled again, which tells a wrong row that stays from one that was only on its way out.

The lineage layout is the plugin's (FlowExecutor, KeyCodec): ``source_key`` and ``target_key`` are components, each a
4-byte length and its bytes; a target key starts with the target's index (an int), then its image.
"""
from __future__ import annotations

import struct
from typing import Iterable, Mapping

from . import workload


def encode_key(components: Iterable[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(c)) + c for c in components)


def decode_key(blob: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(blob):
        (size,) = struct.unpack_from(">i", blob, at)
        out.append(blob[at + 4:at + 4 + size])
        at += 4 + size
    return out


def _bigint(value: int) -> bytes:
    return struct.pack(">q", value)


def _image_text(components: list[bytes]) -> str:
    """The target's index, then each image value (an 8-byte value read as a bigint)."""
    if not components:
        return "?"
    index = struct.unpack(">i", components[0])[0] if len(components[0]) == 4 else components[0].hex()
    values = [str(struct.unpack(">q", c)[0]) if len(c) == 8 else c.hex() for c in components[1:]]
    return f"target {index} image [{', '.join(values)}]" if values else f"target {index} sentinel"


def _rows(session, cql: str, values: tuple) -> list[dict]:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    return [dict(r._asdict()) for r in session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.ALL), values)]


def explain_row(session, flow: str, table: str, row: Mapping) -> dict:
    """One sampled wrong row of ``table`` (a chaos table; every one but the counts holds ``tweet_id``) with what
    explains it."""
    ks = workload.KEYSPACE
    out: dict = {"flow": flow, "table": table, "row": dict(row)}
    if "tweet_id" not in row:   # an author's count: the row as it is now, and the author's tweets
        out["target"] = _rows(session, f"SELECT * FROM {table} WHERE author_id = %s", (row["author_id"],))
        out["source"] = _rows(session, f"SELECT tweet_id FROM {ks}.tweets WHERE author_id = %s ALLOW FILTERING",
                              (row["author_id"],))
        return out
    tweet_id = row["tweet_id"]
    source = workload.SOURCES.get(flow, "tweets")
    out["source"] = _rows(session, f"SELECT author_id, body, writetime(body) AS written FROM {ks}.{source} "
                                   "WHERE tweet_id = %s", (tweet_id,))
    name = table.split(".", 1)[-1]
    if name == "timeline" and "user_id" in row:
        out["target"] = _rows(session, f"SELECT author_id, body, writetime(body) AS written FROM {ks}.timeline "
                                       "WHERE user_id = %s AND tweet_id = %s", (row["user_id"], tweet_id))
    elif name == "by_author" and "author_id" in row:
        out["target"] = _rows(session, f"SELECT body, writetime(body) AS written FROM {ks}.by_author "
                                       "WHERE author_id = %s AND tweet_id = %s", (row["author_id"], tweet_id))
    else:
        out["target"] = _rows(session, f"SELECT author_id, body, writetime(body) AS written FROM {ks}.{name} "
                                       "WHERE tweet_id = %s", (tweet_id,))
    entries = _rows(session, 'SELECT target_key, ts, writetime(ts) AS written FROM async_triggers.lineage '
                             'WHERE flow = %s AND source_key = %s', (flow, encode_key([_bigint(tweet_id)])))
    out["lineage"] = [{"entry": _image_text(decode_key(e["target_key"])), "ts": e["ts"], "written": e["written"]}
                      for e in entries]
    return out


def explain(session, check: Mapping) -> list[dict]:
    """Every sampled missing, unexpected or wrong-value row of the check, explained (see the module); a row that
    cannot be read says why, and the others are still explained."""
    out = []
    for result in check.get("verified", ()):
        for kind in ("missing", "unexpected", "wrong_value"):
            for sample in result.get(f"{kind}_sample", ()):
                row = sample["key"] if kind == "wrong_value" else sample   # a wrong value: key, expected, found
                try:
                    out.append({"kind": kind, **explain_row(session, result["flow"], result["table"], row)})
                except Exception as e:  # noqa: BLE001 - evidence: one unreadable row must not hide the others
                    out.append({"kind": kind, "flow": result["flow"], "table": result["table"], "row": dict(row),
                                "error": repr(e)})
    return out
