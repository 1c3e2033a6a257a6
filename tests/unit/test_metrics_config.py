"""The metrics files shipped in trigger-plugin/dist/metrics/: the Grafana dashboard queries only names the
Prometheus JMX exporter config produces, the config covers every metric the plugin registers in Cassandra's
registry, and the dashboard imports into any Grafana (a data source variable, no hard-wired data source)."""
import json
import re
from pathlib import Path

import yaml

from prometheus import (DASHBOARD, EXPORTER_CONFIG, dashboard_queries, exporter_names, flow_names,
                        query_metric_names)

JAVA_METRICS = (Path(__file__).resolve().parents[2] / "trigger-plugin" / "src" / "main" / "java" / "org"
                / "asynctriggers" / "metrics" / "CassandraMetrics.java")


def test_should_produce_every_metric_the_dashboard_queries_in_the_exporter_config():
    queries = dashboard_queries()
    assert len(queries) >= 10
    for expr in queries:
        names = query_metric_names(expr)
        assert names, f"no metric name found in {expr!r}"
        assert names <= exporter_names(), f"{expr!r} reads {names - exporter_names()}, which the config does not produce"


def test_should_catch_a_metric_name_the_exporter_config_does_not_produce():
    names = query_metric_names('sum by (flow) (rate(async_triggers_completed_tasks_total{flow=~"$flow"}[5m])) / 1e3')
    assert names == {"async_triggers_completed_tasks_total"}
    assert not names <= exporter_names()


def test_should_chart_pending_age_lag_retries_and_dead_letters_per_flow_and_node():
    used = set().union(*(query_metric_names(q) for q in dashboard_queries()))
    assert {"async_triggers_pending", "async_triggers_oldest_pending_age_ms", "async_triggers_propagation_lag_ms",
            "async_triggers_retried_total", "async_triggers_dead_lettered_total"} <= used
    lag = [q for q in dashboard_queries() if "async_triggers_propagation_lag_ms{" in q]
    assert {re.search(r'quantile="([^"]+)"', q).group(1) for q in lag} == {"0.5", "0.99"}
    flow_queries = [q for q in dashboard_queries() if "async_triggers_" in q]
    assert all('flow=~"$flow"' in q and 'instance=~"$node"' in q for q in flow_queries)


def test_should_make_the_dashboard_importable_with_a_data_source_variable():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert {"flow", "node"} <= set(variables)
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert all(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in panels)
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    assert dashboard["uid"] and dashboard["schemaVersion"] >= 36


def test_should_have_an_exporter_rule_for_every_metric_the_plugin_registers():
    registered = set(re.findall(r'public static final String \w+ = "(\w+)";', JAVA_METRICS.read_text())) - {"AsyncTriggers"}
    assert len(registered) == 15
    rules = yaml.safe_load(EXPORTER_CONFIG.read_text())["rules"]
    covered = {m.group(1) for rule in rules if (m := re.search(r"type=AsyncTriggers, scope=\(\[\^,\]\+\), name=(\w+)>",
                                                                rule["pattern"]))}
    assert covered == registered
    assert all(name.startswith("async_triggers_") for name in flow_names())
