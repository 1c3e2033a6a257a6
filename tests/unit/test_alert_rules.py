"""The Prometheus alerting rules shipped in trigger-plugin/dist/metrics/alerts.yaml: valid for Prometheus, each
alert raised by the series that should raise it and by no other (`promtool test rules`, with the cases in
prometheus-alerts-test.yaml), reading only names the exporter config produces. promtool comes from Debian's
prometheus package (`make promtool`)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from prometheus import ALERTS, alert_rules, exporter_names, query_metric_names

CASES = Path(__file__).with_name("prometheus-alerts-test.yaml")


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    assert tool, "promtool is missing: `make promtool` installs it (Debian's prometheus package)"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_should_pass_promtool_check_of_the_alert_rules():
    done = promtool("check", "rules", str(ALERTS))
    assert done.returncode == 0 and "SUCCESS: 6 rules found" in done.stdout, done.stdout + done.stderr


def test_should_fire_each_alert_on_what_should_raise_it_and_on_nothing_else():
    done = promtool("test", "rules", str(CASES))
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


def test_should_have_cases_for_every_alert_and_read_only_exported_metric_names():
    cases = yaml.safe_load(CASES.read_text())["tests"]
    tested = {t["alertname"] for case in cases for t in case.get("alert_rule_test", [])}
    names = {rule["alert"] for rule in alert_rules()}
    assert names == tested == {"AsyncTriggersLagging", "AsyncTriggersPropagationSlow", "AsyncTriggersDeadLetters",
                               "AsyncTriggersPausedLong", "AsyncTriggersSpilling", "AsyncTriggersNodeNotReporting"}
    for rule in alert_rules():
        read = query_metric_names(rule["expr"])
        assert read and read <= exporter_names(), f"{rule['alert']} reads {read - exporter_names()}"


@pytest.mark.parametrize("change", [
    ("> 60000", "> 600000"),                       # a lag threshold nobody reaches
    ("unless on (flow, instance) async_triggers_paused == 1", ""),   # a paused flow's lag raising an alert
    ("max_over_time(async_triggers_pending[1h])", "async_triggers_pending"),   # a silent node never noticed
    ("and on (flow) (count by (flow) (async_triggers_pending) > 0)", ""),       # a dropped flow raising it
])
def test_should_fail_the_alert_cases_when_a_rule_is_wrong(tmp_path, change):
    old, new = change
    text = ALERTS.read_text()
    assert old in text
    rules = tmp_path / "trigger-plugin" / "dist" / "metrics"
    rules.mkdir(parents=True)
    (rules / "alerts.yaml").write_text(text.replace(old, new))
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    shutil.copy(CASES, tmp_path / "tests" / "unit" / CASES.name)
    done = promtool("test", "rules", str(tmp_path / "tests" / "unit" / CASES.name))
    assert done.returncode != 0 and "FAILED" in done.stdout + done.stderr, done.stdout + done.stderr
