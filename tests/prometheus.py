"""What the metrics tests read: the Prometheus names the JMX exporter config produces, the names the Grafana
dashboard queries, and a node's scrape in the text exposition format."""
from __future__ import annotations

import json
import math
import re
import urllib.request
from pathlib import Path

import yaml

METRICS_DIR = Path(__file__).resolve().parent.parent / "trigger-plugin" / "dist" / "metrics"
EXPORTER_CONFIG = METRICS_DIR / "prometheus-jmx.yaml"
DASHBOARD = METRICS_DIR / "grafana-dashboard.json"
ALERTS = METRICS_DIR / "alerts.yaml"

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
                    "unless"}
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


# Cassandra's ThreadPoolMetrics names (org.apache.cassandra.metrics.ThreadPoolMetrics, 5.0): what the config's
# generic thread-pool rule (name: cassandra_threadpools_$3, lowercased) turns into names
CASSANDRA_THREAD_POOL_METRICS = ("ActiveTasks", "PendingTasks", "CompletedTasks", "CurrentlyBlockedTasks",
                                 "TotalBlockedTasks", "MaxPoolSize", "MaxTasksQueued", "OldestTaskQueueTime")


def exporter_names() -> set[str]:
    """The metric names the exporter config's rules produce, as scraped (a COUNTER rule's name ends in _total
    already); the thread-pool rule's ``$3`` expanded to Cassandra's thread-pool metrics."""
    names = set()
    for rule in yaml.safe_load(EXPORTER_CONFIG.read_text())["rules"]:
        name = rule["name"]
        if "$" in name:
            names |= {name.replace("$3", metric).lower() for metric in CASSANDRA_THREAD_POOL_METRICS}
        else:
            names.add(name)
    return names


def flow_names() -> set[str]:
    """The per-flow names: what a scrape shows for every flow (labelled flow=...)."""
    return {name for name in exporter_names() if name.startswith("async_triggers_")}


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the dashboard's panels (rows' panels too)."""
    dashboard = json.loads(DASHBOARD.read_text())
    panels = list(dashboard["panels"])
    for panel in list(panels):
        panels.extend(panel.get("panels", []))
    return [target["expr"] for panel in panels for target in panel.get("targets", []) if target.get("expr")]


def alert_rules() -> list[dict]:
    """The alerting rules of alerts.yaml, every group's."""
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


def query_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers outside label matchers, ranges, strings and
    by/without lists that are not functions, aggregations or keywords."""
    bare = re.sub(r"\{[^}]*\}", " ", expr)                              # label matchers
    bare = re.sub(r"\[[^\]]*\]", " ", bare)                             # ranges: [5m], [$__rate_interval]
    bare = re.sub(r'"[^"]*"', " ", bare)
    bare = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", bare)  # grouping labels
    names = set()
    for m in _IDENT.finditer(bare):
        word, rest = m.group(0), bare[m.end():].lstrip()
        preceded = bare[:m.start()]
        if rest.startswith("(") or word in _PROMQL_KEYWORDS or preceded[-1:] in ("$", ".") or preceded[-1:].isdigit():
            continue
        names.add(word)
    return names


def scrape(url: str, timeout: float = 10) -> list[tuple[str, dict[str, str], float]]:
    """A node's metrics: (name, labels, value) per sample line."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text = response.read().decode()
    return parse(text)


def parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            samples.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return samples


def values(samples, name: str, **labels: str) -> list[float]:
    return [v for n, ls, v in samples if n == name and all(ls.get(k) == want for k, want in labels.items())]


def finite_positive(v: float) -> bool:
    return v > 0 and math.isfinite(v)
