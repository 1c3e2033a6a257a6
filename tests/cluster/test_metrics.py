"""Metrics where operators look, on a real cluster: each node runs the Prometheus JMX exporter (started by ctl when
the plugin's build has it), and a scrape of every node shows a flow's completed tasks and its propagation-lag
histogram, counted once per task written, beside Cassandra's thread pools."""
import time

import pytest

from helpers import drain, run_ctl
from prometheus import finite_positive, flow_names, scrape, values

FLOW = "metrics_copy"
ROWS = 60
SCHEMA = """
CREATE KEYSPACE IF NOT EXISTS metrics_ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};
CREATE TABLE IF NOT EXISTS metrics_ks.src (id int PRIMARY KEY, v text);
CREATE TABLE IF NOT EXISTS metrics_ks.dst (id int PRIMARY KEY, v text);
"""
FLOW_FILE = f"""
from async_triggers.flows import Flow, Write, source
FLOWS = [Flow(name="{FLOW}", source="metrics_ks.src", steps=[Write("metrics_ks.dst", id=source.id, v=source.v)])]
"""


@pytest.fixture(scope="module")
def metrics_urls(cluster):
    urls = [n.metrics_url for n in cluster.nodes]
    assert all(urls), f"every node starts with the exporter once the plugin is built with it: {urls}"
    return urls


@pytest.fixture(scope="module")
def written(cluster_settings, tmp_path_factory):
    """The flow deployed and ROWS rows written (timestamps from the coordinator's clock), propagated."""
    from helpers import create_schema, deploy_flow_text
    from async_triggers.cql import connect
    create_schema(cluster_settings, SCHEMA)
    deploy_flow_text(cluster_settings, tmp_path_factory.mktemp("metrics_flow"), FLOW_FILE)
    with connect(cluster_settings) as session:
        for i in range(ROWS):
            session.execute("INSERT INTO metrics_ks.src (id, v) VALUES (%s, %s)", (i, f"v{i}"))
        drain(session, FLOW)
        assert session.execute("SELECT count(*) FROM metrics_ks.dst").one()[0] == ROWS
    return ROWS


def _scrape_all(urls):
    return [sample for url in urls for sample in scrape(url)]


def _wait_for_totals(urls, want: int, timeout: float = 30):
    """Scrapes until the flow's completed total over every node reaches ``want`` (the last task's completion is
    counted right after its entry is removed, which the drain may see first)."""
    deadline = time.monotonic() + timeout
    while True:
        samples = _scrape_all(urls)
        if sum(values(samples, "async_triggers_completed_total", flow=FLOW)) >= want or time.monotonic() > deadline:
            return samples
        time.sleep(0.5)


def test_should_count_every_written_row_once_in_completed_and_in_the_lag_histogram(metrics_urls, written):
    samples = _wait_for_totals(metrics_urls, written)
    assert sum(values(samples, "async_triggers_completed_total", flow=FLOW)) == written
    assert sum(values(samples, "async_triggers_propagation_lag_ms_count", flow=FLOW)) == written
    assert sum(values(samples, "async_triggers_failed_total", flow=FLOW)) == 0
    assert sum(values(samples, "async_triggers_pending", flow=FLOW)) == 0


def test_should_report_positive_finite_lag_quantiles_on_the_nodes_that_ran_tasks(metrics_urls, written):
    _wait_for_totals(metrics_urls, written)
    ran = [url for url in metrics_urls
           if sum(values(scrape(url), "async_triggers_propagation_lag_ms_count", flow=FLOW)) > 0]
    assert ran, "some node ran the flow's tasks"
    for url in ran:
        node = scrape(url)
        for quantile in ("0.5", "0.99"):
            lag = values(node, "async_triggers_propagation_lag_ms", flow=FLOW, quantile=quantile)
            assert len(lag) == 1 and finite_positive(lag[0]), (url, quantile, lag)
        # lag is the source write to completion: at least the flow's start delay (20 ms), far below a minute here
        assert 20 <= values(node, "async_triggers_propagation_lag_ms", flow=FLOW, quantile="0.5")[0] < 60_000


def test_should_export_every_name_of_the_config_and_cassandras_thread_pools(metrics_urls, written):
    samples = _wait_for_totals(metrics_urls, written)
    scraped = {name for name, labels, _ in samples if labels.get("flow") == FLOW}
    assert flow_names() <= scraped, f"named in the config, missing from the scrape: {flow_names() - scraped}"
    assert values(samples, "cassandra_threadpools_pendingtasks", path="request", pool="MutationStage")


def test_should_show_each_nodes_scrape_url_in_cluster_status(cluster_settings, metrics_urls):
    result = run_ctl(cluster_settings, "cluster", "status")
    assert result.returncode == 0, result.stderr
    for url in metrics_urls:
        assert url in result.stdout
