"""Removing the plugin's schema from a cluster (`ctl plugin uninstall`): every flow dropped as `ctl trigger drop`
drops it (its capture index, the table's trigger, its backup map), then whatever of ours is left without a flow
(a capture index, a trigger or a backup map an interrupted deploy or drop left behind), then the async_triggers
keyspace (flows, status, lineage, dead letters, backfill progress). What lives on each node's disk (the jar, the
``-javaagent`` line, ``<data dir>/async_triggers_spill``) is the operator's to remove: trigger-plugin/dist/INSTALL.md,
"Removing it".

Flows that still hold tasks or dead letters are refused as `drop` refuses them, unless told to discard them.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from . import backup_map, capture_index, deploy, drop_guard, follows, keyspace, render
from .errors import FlowNotEmpty

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Leftovers:
    """Ours, found in the schema without a deployed flow: (keyspace, name) each."""
    indexes: tuple[tuple[str, str], ...] = ()
    triggers: tuple[tuple[str, str, str], ...] = ()   # (keyspace, table, trigger)
    backup_maps: tuple[tuple[str, str], ...] = ()


def leftovers(index_rows: Sequence, trigger_rows: Sequence, column_rows: Sequence) -> Leftovers:
    """From system_schema.indexes (keyspace_name, index_name, options), .triggers (keyspace_name, table_name,
    trigger_name, options) and .columns (keyspace_name, table_name, column_name) rows: our capture indexes, our
    triggers, and the tables named and shaped like a backup map (a user's table of that name but another shape is
    left alone)."""
    indexes = sorted((r.keyspace_name, r.index_name) for r in index_rows
                     if capture_index.is_capture_index(r.options or {}))
    triggers = sorted((r.keyspace_name, r.table_name, r.trigger_name) for r in trigger_rows
                      if (r.options or {}).get("class") == render.TRIGGER_CLASS)
    shapes: dict[tuple[str, str], set[str]] = {}
    for r in column_rows:
        if backup_map.is_backup_map(r.table_name) and r.keyspace_name != keyspace.KEYSPACE:
            shapes.setdefault((r.keyspace_name, r.table_name), set()).add(r.column_name)
    wanted = {name for name, _ in backup_map.VALUE_COLUMNS}
    maps = sorted(t for t, cols in shapes.items() if wanted <= cols and any(c.startswith("key_") for c in cols))
    return Leftovers(tuple(indexes), tuple(triggers), tuple(maps))


def read_leftovers(session) -> Leftovers:
    return leftovers(
        list(session.execute("SELECT keyspace_name, index_name, options FROM system_schema.indexes")),
        list(session.execute("SELECT keyspace_name, table_name, trigger_name, options FROM system_schema.triggers")),
        list(session.execute("SELECT keyspace_name, table_name, column_name FROM system_schema.columns")))


@dataclasses.dataclass(frozen=True)
class Removed:
    flows: tuple[str, ...]
    discarded: tuple[dict, ...]          # what each flow still held, when told to discard it
    indexes: tuple[str, ...]
    triggers: tuple[str, ...]
    backup_maps: tuple[str, ...]
    keyspace: bool

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def holdings(session) -> list[drop_guard.Holdings]:
    """What each deployed flow still holds (only the flows that hold something)."""
    held = [drop_guard.read_holdings(session, name) for name in sorted(deploy.read_deployed(session))]
    return [h for h in held if not h.empty]


def refusal(held: Sequence[drop_guard.Holdings]) -> FlowNotEmpty:
    what = "; ".join(f"'{h.flow}': {h.describe()}" for h in held)
    return FlowNotEmpty(f"flows still hold tasks or dead letters ({what}): uninstalling now throws them away. "
                        "Let them drain (`ctl trigger wait FLOW`), or pass --discard-pending")


def uninstall(session, held: Sequence[drop_guard.Holdings] = (), progress: Progress = lambda _: None) -> Removed:
    """Drop every flow, then our leftovers, then the keyspace. ``held``: what the caller agreed to discard."""
    deployed = deploy.read_deployed(session)
    flows = sorted(deployed)
    for name in flows:
        if follows.main_of(deployed[name]) not in deployed:   # a following fan-out's companion goes with its flow
            deploy.drop(session, name, progress=progress)
    left = read_leftovers(session)
    for ks, index in left.indexes:
        session.execute(f"DROP INDEX IF EXISTS {render.ident(ks)}.{render.ident(index)}")
        progress(f"dropped capture index {ks}.{index}")
    for ks, table, trigger in left.triggers:
        session.execute(f"DROP TRIGGER IF EXISTS {render.ident(trigger)} ON {render.ident(ks)}.{render.ident(table)}")
        progress(f"dropped trigger {trigger} on {ks}.{table}")
    for ks, table in left.backup_maps:
        session.execute(f"DROP TABLE IF EXISTS {render.ident(ks)}.{render.ident(table)}")
        progress(f"dropped backup map {ks}.{table}")
    had_keyspace = keyspace.KEYSPACE in session.cluster.metadata.keyspaces
    session.execute(f"DROP KEYSPACE IF EXISTS {render.ident(keyspace.KEYSPACE)}", timeout=120)
    if had_keyspace:
        progress(f"dropped keyspace {keyspace.KEYSPACE}")
    session.cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    return Removed(tuple(flows), tuple(h.as_dict() for h in held), tuple(f"{k}.{i}" for k, i in left.indexes),
                   tuple(f"{k}.{t}.{g}" for k, t, g in left.triggers), tuple(f"{k}.{t}" for k, t in left.backup_maps),
                   had_keyspace)
