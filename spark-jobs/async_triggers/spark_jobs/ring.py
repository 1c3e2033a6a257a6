"""The token ring and Cassandra's byte forms of the values a backfill handles, computed in Python (on Spark's
workers, in UDFs) exactly as Cassandra and the plugin compute them:

- the Murmur3 token of a source row's partition key, so the backfill splits the ring into token ranges and records
  each completed range (the same ranges ``SELECT ... WHERE token(k) > ? AND token(k) <= ?`` names);
- the plugin's ``KeyCodec`` blobs (4-byte length, then the bytes, per component) of ``async_triggers.lineage``:
  ``source_key`` (the source primary key) and ``target_key`` (the target's index, then its image).

Values come as Spark hands them over from the connector (a uuid is a string, a timestamp a datetime) and are
serialized with the Python driver's own types.
"""
from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from typing import Any, Sequence

from .errors import BackfillError

MIN_TOKEN = -(1 << 63)
MAX_TOKEN = (1 << 63) - 1
PROTOCOL_VERSION = 4

# the types a key or a lineage column of a backfilled flow may have; collections and UDTs are refused by name
SIMPLE_TYPES = ("ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "float", "inet", "int",
                "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid", "varchar", "varint")


def split_ring(n: int) -> list[tuple[int, int]]:
    """The Murmur3 ring as ``n`` contiguous ranges ``(start, end]`` of (about) equal width, in token order: the first
    starts at the minimum token (which no key has), the last ends at the maximum, each starts where the previous ended."""
    if n < 1:
        raise BackfillError(f"the number of token ranges must be at least 1, found: {n}")
    width = MAX_TOKEN - MIN_TOKEN
    bounds = [MIN_TOKEN + (width * i) // n for i in range(n)] + [MAX_TOKEN]
    return [(bounds[i], bounds[i + 1]) for i in range(n)]


def range_of(token: int, ranges: Sequence[tuple[int, int]]) -> int:
    """The index of the range ``(start, end]`` holding ``token``."""
    for i, (start, end) in enumerate(ranges):
        if start < token <= end:
            return i
    raise ValueError(f"token {token} is in no range")


def _driver_type(cql_type: str):
    from cassandra import cqltypes
    name = cql_type.strip().lower()
    if name not in SIMPLE_TYPES:
        raise BackfillError(f"a backfill cannot serialize a key or lineage value of type {cql_type!r} "
                            f"(supported: {', '.join(SIMPLE_TYPES)})")
    return cqltypes._cqltypes[name]   # the driver's table of CQL type names; no public lookup by CQL name


def serialize(value: Any, cql_type: str) -> bytes:
    """``value`` (as Spark gives it) in Cassandra's binary form for ``cql_type``."""
    name = cql_type.strip().lower()
    if name in ("uuid", "timeuuid") and not isinstance(value, uuid.UUID):
        value = uuid.UUID(str(value))
    elif name == "timestamp" and isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)   # the session's time zone is UTC (session.spark_options)
    elif name == "blob":
        return bytes(value)
    elif name == "varint" and isinstance(value, decimal.Decimal):
        value = int(value)
    return _driver_type(name).serialize(value, PROTOCOL_VERSION)


def deserialize(data: bytes, cql_type: str) -> Any:
    """The driver's Python value of Cassandra's binary form (what a prepared statement binds)."""
    return _driver_type(cql_type).deserialize(bytes(data), PROTOCOL_VERSION)


def partition_key_bytes(values: Sequence[Any], types: Sequence[str]) -> bytes:
    """The partition key as Cassandra hashes it: one component as is, several as a composite (2-byte length, the
    bytes, a 0 end-of-component byte each)."""
    parts = [serialize(v, t) for v, t in zip(values, types)]
    if len(parts) == 1:
        return parts[0]
    return b"".join(struct.pack(">H", len(p)) + p + b"\x00" for p in parts)


def token(values: Sequence[Any], types: Sequence[str]) -> int:
    """The Murmur3Partitioner token of a partition key."""
    from cassandra.metadata import Murmur3Token
    return Murmur3Token.hash_fn(partition_key_bytes(values, types))


def encode_key(components: Sequence[bytes]) -> bytes:
    """The plugin's KeyCodec.encode."""
    return b"".join(struct.pack(">i", len(c)) + bytes(c) for c in components)


def decode_key(blob: bytes) -> list[bytes]:
    """The plugin's KeyCodec.decode."""
    blob, out, pos = bytes(blob), [], 0
    while pos < len(blob):
        (length,) = struct.unpack_from(">i", blob, pos)
        pos += 4
        if length < 0 or pos + length > len(blob):
            raise ValueError(f"corrupt key blob: component length {length} with {len(blob) - pos} bytes left")
        out.append(blob[pos:pos + length])
        pos += length
    return out


def source_key(values: Sequence[Any], types: Sequence[str]) -> bytes:
    """``async_triggers.lineage.source_key`` of a source row: its primary key (partition key, then clustering)."""
    return encode_key([serialize(v, t) for v, t in zip(values, types)])


def lineage_key(index: int, image: Sequence[Any], types: Sequence[str]) -> bytes:
    """``async_triggers.lineage.target_key``: the target's index in the spec, then the values of its lineage columns."""
    return encode_key([struct.pack(">i", index)] + [serialize(v, t) for v, t in zip(image, types)])
