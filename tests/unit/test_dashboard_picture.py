"""The dashboard drawn without Grafana (async_triggers.dashboard_picture) and the local Prometheus it reads
(async_triggers.cluster.prometheus): the variables substituted, the panels laid out in the grid's order, a panel
without data drawn as "no data" and named, never invented; and once for real, Debian's /usr/bin/prometheus
scraping itself and a small dashboard drawn from it."""
from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from async_triggers import cli, dashboard_picture as picture
from async_triggers.cluster import prometheus as local
from async_triggers.errors import ClusterError, ConfigError
from prometheus import dashboard_queries

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
cli._register()


def panel(title, y, x=0, w=12, h=8, exprs=(), legend=None, unit=None, **extra):
    return {"type": "timeseries", "title": title, "gridPos": {"x": x, "y": y, "w": w, "h": h},
            "targets": [{"expr": e, "legendFormat": legend} for e in exprs],
            "fieldConfig": {"defaults": {"unit": unit} if unit else {}}, **extra}


def row(title, y, panels=()):
    return {"type": "row", "title": title, "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": list(panels)}


def assert_png(path):
    from PIL import Image
    assert path.read_bytes()[:8] == PNG_MAGIC
    with Image.open(path) as image:
        image.verify()
        assert image.size[0] > 500 and image.size[1] > 100


def test_should_substitute_the_dashboard_variables_and_leave_others_alone():
    values = picture.variables(flow="twitter_.*", node="127.0.0.1:7070", rate_interval="30s")
    expr = 'sum(rate(x{flow=~"$flow", instance=~"${node}"}[$__rate_interval])) + $nodes + ${other}'
    assert picture.substitute(expr, values) == \
        'sum(rate(x{flow=~"twitter_.*", instance=~"127.0.0.1:7070"}[30s])) + $nodes + ${other}'
    assert picture.substitute('x{flow=~"$flow"}', picture.variables()) == 'x{flow=~".*"}'


def test_should_leave_no_variable_in_any_query_of_the_shipped_dashboard():
    queries = dashboard_queries()
    assert len(queries) >= 10
    assert [q for q in queries if "$" in picture.substitute(q, picture.variables())] == []


def test_should_lay_out_the_shipped_dashboard_in_grid_order_with_rows_as_sections_and_no_overlap():
    places = picture.layout(picture.load_dashboard())
    titles = [p.panel["title"] for p in places]
    assert titles[:3] == ["Queues", "Pending tasks", "Oldest pending task age"]
    assert [p.panel["title"] for p in places if p.is_row] == ["Queues", "Propagation", "Failures", "Cassandra"]
    assert titles.index("Propagation") < titles.index("Completed tasks / s") < titles.index("Failures")
    cells = set()
    for p in places:
        mine = {(p.x + i, p.y + j) for i in range(p.w) for j in range(p.h)}
        assert not mine & cells, f"{p.panel['title']} overlaps another panel"
        assert 0 <= p.x and p.x + p.w <= picture.GRID_COLUMNS
        cells |= mine


def test_should_place_a_collapsed_row_panels_under_it_and_the_next_row_after_them():
    board = {"panels": [row("B", 20), panel("top", 0, w=24, h=4),
                        row("A", 4, [panel("inside-right", 5, x=12), panel("inside-left", 5)])]}
    places = picture.layout(board)
    assert [(p.panel["title"], p.x, p.y, p.h) for p in places] == [
        ("top", 0, 0, 4), ("A", 0, 4, 1), ("inside-left", 0, 5, 8), ("inside-right", 12, 5, 8), ("B", 0, 13, 1)]


def test_should_name_a_series_by_its_legend_format_or_by_its_labels():
    labels = {"__name__": "m", "flow": "f", "instance": "127.0.0.1:7070", "quantile": "0.99", "job": "j"}
    assert picture.legend("p99 {{flow}} @ {{ instance }}", labels) == "p99 f @ 127.0.0.1:7070"
    assert picture.legend(None, labels) == "flow=f instance=127.0.0.1:7070 quantile=0.99"
    assert picture.legend("", {"__name__": "up"}) == "up"


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("10m", 600), ("1.5h", 5400), ("30", 30), ("2d", 172800)])
def test_should_read_durations(text, seconds):
    assert picture.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "-5m", "0s", "5w"])
def test_should_refuse_a_bad_duration(text):
    with pytest.raises(ConfigError, match="invalid duration"):
        picture.parse_duration(text)


def test_should_draw_no_data_for_a_failed_or_empty_query_and_name_those_panels(tmp_path):
    board = tmp_path / "board.json"
    board.write_text(json.dumps({"title": "t", "panels": [
        row("R", 0), panel("has data", 1, exprs=["good"], legend="{{flow}}", unit="ms"),
        panel("fails", 1, x=12, exprs=["bad"]), panel("empty", 9, exprs=["none"])]}))
    asked = []

    def query(url, expr, window):
        asked.append(expr)
        if expr == "bad":
            raise picture.QueryFailed("bad_data: parse error")
        return [{"metric": {"flow": "f"}, "values": [[window.start, "1"], [window.end, "2"]]}] if expr == "good" else []

    window = picture.Window.ending(1_700_000_000, 300)
    summary = picture.render("http://prom", tmp_path / "out" / "d.png", window, dashboard=board, query=query)
    assert asked == ["good", "bad", "none"]
    assert summary.no_data == ["fails", "empty"]
    found = {p["title"]: p for p in summary.as_dict()["panels"]}
    assert found["has data"]["series"] == 1 and found["has data"]["data"]
    assert found["fails"] == {"title": "fails", "series": 0, "data": False, "errors": ["bad: bad_data: parse error"]}
    assert found["empty"]["errors"] == ["none: no series"]
    assert_png(summary.out)


def test_should_draw_every_panel_as_no_data_when_prometheus_cannot_be_reached(tmp_path):
    url = f"http://127.0.0.1:{local.free_port()}"
    result = CliRunner().invoke(cli.app, ["trigger", "dashboard", "--out", str(tmp_path / "d.png"), "--prometheus", url,
                                          "--since", "5m", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["no_data"] == [p["title"] for p in summary["panels"]] and len(summary["panels"]) == 10
    assert all(f"cannot query {url}" in e for p in summary["panels"] for e in p["errors"])
    assert summary["window"]["end"] - summary["window"]["start"] == pytest.approx(300)
    assert_png(tmp_path / "d.png")


def test_should_require_a_prometheus_or_a_local_cluster_name(tmp_path):
    result = CliRunner().invoke(cli.app, ["trigger", "dashboard", "--out", str(tmp_path / "d.png"), "--json"])
    assert result.exit_code == 2
    assert "give --prometheus URL" in json.loads(result.stderr)["error"]
    result = CliRunner().invoke(cli.app, ["trigger", "dashboard", "--out", str(tmp_path / "d.png"), "--name", "nope"],
                                env={"ASYNC_TRIGGERS_HOME": str(tmp_path)})
    assert result.exit_code == 1 and "ctl cluster prometheus up --name nope" in result.stderr
    result = CliRunner().invoke(cli.app, ["cluster", "prometheus", "down", "--name", "nope", "--json"],
                                env={"ASYNC_TRIGGERS_HOME": str(tmp_path)})
    assert result.exit_code == 0 and json.loads(result.stdout) == {"cluster": "nope", "stopped": False}


def test_should_write_a_scrape_config_for_every_exporter_url():
    config = local.scrape_config(["http://127.0.0.1:7070/metrics", "http://127.0.0.2:7070/metrics"])
    assert config["global"]["scrape_interval"] == "2s"
    assert config["scrape_configs"] == [{"job_name": "async-triggers", "scheme": "http", "metrics_path": "/metrics",
                                         "static_configs": [{"targets": ["127.0.0.1:7070", "127.0.0.2:7070"]}]}]
    with pytest.raises(ClusterError, match="not a scrape URL"):
        local.scrape_config(["127.0.0.1:7070"])


def test_should_say_how_to_install_prometheus_when_it_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    monkeypatch.setattr(local, "BINARY", str(tmp_path / "absent" / "prometheus"))
    with pytest.raises(ClusterError, match="`make promtool` installs Debian's prometheus package"):
        local.start(tmp_path, ["http://127.0.0.1:1/metrics"])


def test_should_draw_a_panel_from_a_real_prometheus_scraping_itself(tmp_path):
    port = local.free_port()
    server = local.start(tmp_path / "prom", [f"http://127.0.0.1:{port}/metrics"], port=port)
    try:
        assert local.running(tmp_path / "prom") == server and server.url == f"http://127.0.0.1:{port}"
        rate = 'sum by (instance) (rate(prometheus_http_requests_total{instance=~"$node"}[$__rate_interval]))'
        board = tmp_path / "board.json"
        board.write_text(json.dumps({"title": "self", "panels": [
            row("Prometheus", 0), panel("Requests / s", 1, exprs=[rate], legend="{{instance}}", unit="reqps"),
            panel("Broken", 1, x=12, exprs=["sum(("])]}))
        deadline = time.monotonic() + 20
        while not picture.query_range(server.url, picture.substitute(rate, picture.variables()),
                                      picture.Window.ending(time.time(), 30)):
            assert time.monotonic() < deadline, "Prometheus scraped itself too few times in 20 s"
            time.sleep(1)
        summary = picture.render(server.url, tmp_path / "d.png", picture.Window.ending(time.time(), 30),
                                 dashboard=board, node=f"127.0.0.1:{port}")
    finally:
        assert local.stop(tmp_path / "prom")
    assert local.running(tmp_path / "prom") is None
    got = {p.title: p for p in summary.panels}
    assert got["Requests / s"].has_data and got["Requests / s"].series[0][0] == f"127.0.0.1:{port}"
    assert summary.no_data == ["Broken"] and "bad_data" in got["Broken"].errors[0]
    assert_png(tmp_path / "d.png")
