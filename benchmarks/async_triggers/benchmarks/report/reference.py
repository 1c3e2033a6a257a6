"""The report's published numbers ("Building Data Flows Using Distributed Key-Value Stores", §6), for the
report generator to print beside ours.

Transcribed exactly: every number is a ``Decimal`` made from the text as printed (``Decimal("0.80")`` keeps its
trailing zero, ``str()`` gives it back as published); ``None`` is the report's "–" (no such component). Figures 6–8
are plots without a data table: what the text says about them is kept as numbers (``values``) and as the
sentences that state them (``observations``, verbatim). tests/bench/test_bench_reference.py checks both against the
seed's text.
"""
from __future__ import annotations

from decimal import Decimal as D

SOURCE = "Building Data Flows Using Distributed Key-Value Stores, section 6"
APPROACHES = ("synchronous", "external_queue", "integrated")
LABELS = {"synchronous": "Synchronous", "external_queue": "Ext. Queue", "integrated": "Integrated"}  # Tables 1-2
RESOURCE_LABELS = {**LABELS, "external_queue": "External Queue"}                                  # Tables 3-4
COMPONENTS = ("app", "db", "queue")

# the report's setup (§6, second and third paragraphs)
SETUP = {
    "replication_factor": 2,
    "write_consistency": "ALL",
    "read_consistency": "ONE",
    "queue": "Kestrel",
    "implementation": "Java 1.6 on top of Cassandra",
    "machines": "AMD Opteron 2.4 GHz processor and 6 GB RAM running Ubuntu Server 10",
    "machines_in_setup": 4,          # application, Kestrel, two Cassandra nodes
    "machines_max": 21,              # the scalability experiment
    "run_minutes": 30,
    "tweet_bytes": 200,              # "about 200 bytes"
    "sample_s": 3,                   # burst and fault experiments: sampled every three seconds
    "shown_minutes": 3,
    "follower_distribution": "Kwak et al., WWW 2010 [7]",
    "cpu": "average CPU load",
    "memory": "sum of main memory used",
    "network": "sum of incoming and outgoing network traffic (including traffic within the distributed database)",
}

def _response_table(number: int, title: str, section: str, experiment: str, rows: dict) -> dict:
    """Tables 1–2: throughput and response times, ``rows`` by approach as (throughput, median, stddev, max)."""
    columns = ("throughput_msg_s", "median_ms", "stddev_ms", "max_ms")
    return {"labels": LABELS, "id": f"table{number}", "title": f"Table {number}: {title}", "section": section,
            "experiment": experiment, "db_nodes": 2, "columns": columns,
            "rows": {app: dict(zip(columns, map(D, cells))) for app, cells in rows.items()}}


def _resources(cpu, mem, net, nodes):
    """One row of Tables 3–4: (app, db, queue) triples; nodes adds the total."""
    def triple(values, cast):
        return {c: (None if v is None else cast(v)) for c, v in zip(COMPONENTS, values)}
    return {"cpu_pct": triple(cpu, D), "memory_gb": triple(mem, D), "network_mb_s": triple(net, D),
            "nodes": {**triple(nodes[:3], int), "total": int(nodes[3])}}


def _resource_table(number: int, db_nodes: int, rows: dict) -> dict:
    """Tables 3–4: resources measured during the saturating runs (§6.5)."""
    return {"labels": RESOURCE_LABELS, "id": f"table{number}",
            "title": f"Table {number}: Resource Utilization, Saturating Workload, {db_nodes} Database Nodes.",
            "section": "6.5", "experiment": "saturating", "db_nodes": db_nodes,
            "rows": {app: _resources(*cells) for app, cells in rows.items()}}


TABLE_1 = _response_table(1, "Saturating Workload, 2 Database Nodes.", "6.1", "saturating", {
    "synchronous": ("1297", "20.66", "286.8", "49900"),
    "external_queue": ("1291", "0.83", "3.46", "413"),
    "integrated": ("1289", "1.26", "5.17", "445"),
})

TABLE_2 = _response_table(2, "80% Workload, 2 Database Nodes.", "6.2", "80pct", {
    "synchronous": ("1000", "5.35", "89.21", "13800"),
    "external_queue": ("1000", "0.84", "3.26", "141"),
    "integrated": ("1000", "0.80", "3.31", "171"),
})

# each row: CPU %, memory GB, network MB/s as (app, db, queue); nodes as (app, db, queue, total)
TABLE_3 = _resource_table(3, 2, {
    "synchronous": (("11.0", "39.6", None), ("1.76", "2.98", None), ("2.06", "8.90", None), (1, 2, None, 3)),
    "external_queue": (("21.6", "36.4", "16.6"), ("1.98", "3.94", "0.83"), ("2.87", "8.83", "0.68"), (1, 2, 1, 4)),
    "integrated": (("2.30", "40.9", None), ("1.72", "3.85", None), ("0.36", "7.41", None), (1, 2, None, 3)),
})

TABLE_4 = _resource_table(4, 16, {
    "synchronous": (("22.1", "41.9", None), ("8.64", "24.1", None), ("13.6", "57.7", None), (3, 16, None, 19)),
    "external_queue": (("38.8", "41.9", "33.2"), ("7.03", "23.7", "1.73"), ("16.0", "54.0", "4.06"), (3, 16, 2, 21)),
    "integrated": (("6.17", "41.1", None), ("4.77", "25.9", None), ("2.34", "45.6", None), (2, 16, None, 18)),
})

TABLES = {t["id"]: t for t in (TABLE_1, TABLE_2, TABLE_3, TABLE_4)}

# what §6.1 and §6.2 say beyond the tables
SATURATING = {
    "section": "6.1",
    "values": {"saturation_msg_s": D("1300")},
    "observations": (
        "All approaches peak at a the same maximum throughput of about 1300 messages per second.",
        "The limiting factor is the write capacity of the database.",
    ),
}

EIGHTY_PERCENT = {
    "section": "6.2",
    "values": {"rate_msg_s": D("1000"), "sync_median_factor": D("7"), "sync_max_response_s": D("13.8"),
               "async_max_response_below_s": D("0.2")},
    "observations": (
        "The application issues 1000 tweets per second.",
        "The median response time of the synchronous approach is about 7 times higher than that of the other "
        "approaches.",
        "we observe a high standard deviation and a maximum response time of 13.8 seconds, which is unacceptable.",
        "Both asynchronous approaches have a guaranteed maximum response time below 0.2 seconds.",
    ),
}

FIGURE_6 = {
    "id": "figure6",
    "title": "Figure 6: Performance over Time, 30 sec Burst.",
    "section": "6.3",
    "experiment": "burst",
    "panels": ("(a) Handled Requests", "(b) Response Time [ms]"),
    "values": {
        "base_rate_msg_s": D("600"),          # 50 % of the saturating capacity
        "burst_rate_msg_s": D("2600"),        # 200 %
        "burst_start_s": D("60"),
        "burst_length_s": D("30"),
        "async_burst_write_rate_msg_s": D("2600"),
        "sync_max_handled_msg_s": D("1300"),
        "sync_response_before_ms": D("6"),    # "about 6ms"
        "sync_response_during_ms": D("25"),
        "async_dropped": D("0"),
    },
    "observations": (
        "First, the application issues tweets at a rate of about 50% of the saturating capacity (600 messages "
        "per second).",
        "After 60 seconds the request rate jumps to 200% of the saturating capacity (2600 messages per second).",
        "This burst lasts for 30 seconds and afterwards the request rate drops back to 50%.",
        "User tweets can be written at a rate of 2600 messages per second while subsequent writes to forward the "
        "tweets to the followers are buffered.",
        "The synchronous approach is only able to handle requests at the rate of the maximum capacity of 1300 "
        "message per second only.",
        "It has to drop requests in case of bursts.",
        "The asynchronous approaches did not drop messages in this experiment.",
        "For the asynchronous approaches the response time remains constant.",
        "For the synchronous approach, the response time jumps from about 6ms to 25ms",
    ),
}

FIGURE_7 = {
    "id": "figure7",
    "title": "Figure 7: Performance over Time, 30 sec Failure.",
    "section": "6.4",
    "experiment": "fault",
    "panels": ("(a) Handled Requests", "(b) Response Time [ms]"),
    "values": {
        "db_nodes": D("4"),
        "rate_msg_s": D("1000"),
        "kill_at_s": D("60"),
        "restart_after_s": D("30"),
        "unresponsive_s": D("5"),             # "For about 5 seconds after the node has faulted"
        "degraded_msg_s": D("350"),           # "stabilizes at around 350 messages per second"
        "stable_after_fault_s": D("20"),
        "recovery_after_restart_s": (D("20"), D("30")),
    },
    "observations": (
        "In this experiment, we run a database consisting of 4 nodes.",
        "The application issues a load of 1000 messages per second.",
        "60 seconds into the experiment, we stop 1 database node by manually killing the database process on this "
        "machine.",
        "30 seconds later, we restart the process.",
        "For about 5 seconds after the node has faulted, all nodes of the database do not respond.",
        "The throughput drops to 0 and requests are stalled until the system responds again.",
        "Throughput stabilizes at around 350 messages per second 20 seconds after the fault.",
        "Once we restart the faulted process, it takes the database another 20 to 30 seconds to get back to stable "
        "handling of the issued load.",
        "Response time of the asynchronous approaches fluctuate less than that of the synchronous approach.",
        "In all cases we manually checked that all successfully inserted tweets were also propagated to the "
        "respective followers.",
    ),
}

FIGURE_8 = {
    "id": "figure8",
    "title": "Figure 8: Scalability, Vary Database Nodes.",
    "section": "6.5",
    "experiments": ("saturating", "80pct"),   # the same experiments at 1..N database nodes
    "panels": ("(a) Throughput [msg/s], Saturating Workload", "(b) Response Time [ms], 80% Workload"),
    "values": {
        "max_machines": D("21"),
        "max_db_nodes": D("16"),
        "eighty_pct_of": "the throughput in Figure 8(a)",
    },
    "observations": (
        "All approaches scale equally well as the number of nodes are increased.",
        "The load was set to 80% of the throughput in Figure 8(a).",
        "We observe that the response time remains constant as the size of the database is increased.",
    ),
}

# what §6.5 says beside Tables 3 and 4
RESOURCES = {
    "section": "6.5",
    "values": {
        "network_saved_mb_s_16_nodes": D("26.2"),   # integrated vs external queue
        "network_reduction_pct": D("35"),
        "nodes_integrated_16": D("18"),
        "nodes_external_queue_16": D("21"),
        "cost_reduction_pct": D("15"),              # "about 15%"
    },
    "observations": (
        "For 16 database nodes, the synchronous approach needed 3 application nodes to completely saturate the "
        "database.",
        "The external queue approach needed 3 application nodes (1 load generator and 2 queue workers) and also 2 "
        "queue nodes.",
        "The integrated approach needed only 2 application nodes.",
        "when scaling the database to 16 nodes the integrated approach saves 26.2MB/s in network traffic compared "
        "to the external queue approach, which is a reduction of 35%; and requires only a total of 18 nodes "
        "instead of 21 nodes, which translates to a cost reduction of about 15%.",
    ),
}

FIGURES = {f["id"]: f for f in (FIGURE_6, FIGURE_7, FIGURE_8)}
