# Everything the project needs is installed by these targets: a virtualenv with `ctl` (PyPI), the plugin jar
# and Cassandra's jars (Maven), the Spark Cassandra Connector's jars (Maven). Caches live in ~/.cache/async-triggers.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
CTL   := $(VENV)/bin/ctl
PLUGIN_JAR := trigger-plugin/target/async-triggers-plugin.jar
METRICS_EXPORTER_JAR := trigger-plugin/target/dist-lib/jmx_prometheus_javaagent.jar
PYTEST_ARGS ?=

.PHONY: all install venv plugin dist wheel cassandra spark-jars demo dashboard-picture test test-unit test-cluster test-extended test-own-cluster test-spark test-java test-bench-smoke test-membership bench-ack bench-backfill bench-backup bench-joins bench-work bench-lag bench bench-smoke chaos fuzz clean distclean

all: install

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip 'setuptools<82' wheel
	$(VENV)/bin/pip install -q -e '.[spark,cluster,test,bench]'
	touch $@

venv: $(VENV)/.installed

plugin: $(PLUGIN_JAR) $(METRICS_EXPORTER_JAR)

# the Prometheus JMX exporter agent, copied by the plugin's build (maven-dependency-plugin) into target/dist-lib/:
# ctl starts local nodes with it when it is there (trigger-plugin/dist/metrics/prometheus-jmx.yaml)
# (the same `mvn package` as the plugin's: run again only when the copy is missing)
$(METRICS_EXPORTER_JAR): $(PLUGIN_JAR)
	@test -f $@ || mvn -q -B -f trigger-plugin/pom.xml package -DskipTests
	@touch $@   # Maven keeps the repository file's date, older than the plugin jar
	@ls -l $@

# the plugin: one jar on every node's class path (ctl starts nodes with -javaagent:<jar>; or copy it into lib/)
$(PLUGIN_JAR): $(shell find trigger-plugin/src -type f 2>/dev/null) trigger-plugin/pom.xml
	mvn -q -B -f trigger-plugin/pom.xml package -DskipTests
	@ls -l $(PLUGIN_JAR)

# the bundle an operator installs on an existing cluster (dist/async-triggers-<version>/ and its .tar.gz)
dist: venv plugin wheel
	$(CTL) plugin bundle --out dist

# ctl as a library: the wheel alone installs `ctl` for an existing cluster; extras [spark], [cluster], [bench]
wheel: venv
	$(VENV)/bin/pip wheel -q --no-deps -w dist .

cassandra: venv
	$(CTL) cluster install

spark-jars: venv
	$(PY) -c "from async_triggers.spark_jobs.session import connector_jars; print(len(connector_jars()), 'connector jars')"

install: venv plugin cassandra spark-jars

# The main job: a 2-node cluster, the Twitter flow deployed, a follower graph, 1,000 tweets, a Spark check.
demo: install
	$(CTL) demo

# docs/img/dashboard.png, the README's picture of the Grafana dashboard drawn without Grafana. On the running local
# cluster CLUSTER (default demo: the one `make demo` leaves up; node count read from it): a Prometheus scraping its
# nodes every 2 s (`ctl cluster prometheus up`), the demo again with DASHBOARD_TWEETS tweets (a few minutes of
# writes and fan-out: pending, lag, completions/s), every panel drawn from what it scraped (`ctl trigger dashboard`),
# and Prometheus stopped, also when a step fails. Its data stays in the cluster's dir until `ctl cluster down`.
CLUSTER ?= demo
DASHBOARD_TWEETS ?= 20000
dashboard-picture: venv promtool
	@set -euo pipefail; \
	nodes=$$($(CTL) cluster status --name $(CLUSTER) --json | $(PY) -c 'import json, sys; print(len(json.load(sys.stdin)))'); \
	$(CTL) cluster prometheus up --name $(CLUSTER); \
	trap '$(CTL) cluster prometheus down --name $(CLUSTER)' EXIT; \
	started=$$(date +%s); \
	$(CTL) demo --name $(CLUSTER) --nodes $$nodes --tweets $(DASHBOARD_TWEETS); \
	sleep 20; \
	$(CTL) trigger dashboard --name $(CLUSTER) --since $$(( $$(date +%s) - started + 30 ))s --rate-interval 20s \
	  --out docs/img/dashboard.png

test-java:
	mvn -q -B -f trigger-plugin/pom.xml test

# one target per tier of tests/ (the folder is the tier)
test-unit: venv promtool
	$(PY) -m pytest -q tests/unit $(PYTEST_ARGS)

test-cluster: install
	$(PY) -m pytest -q -rs tests/cluster $(PYTEST_ARGS)

# docs/own-cluster.md on 2+2 nodes (the default suite runs it on 1+1)
test-own-cluster: install
	ASYNC_TRIGGERS_OWN_CLUSTER_DCS=2,2 $(PY) -m pytest -q -rs tests/cluster/test_own_cluster.py $(PYTEST_ARGS)

test-spark: install
	$(PY) -m pytest -q -rs tests/spark $(PYTEST_ARGS)

# The whole default suite: Java unit tests, Python unit tests, Spark jobs, integration against real clusters, the
# benchmarks' parts (a private RabbitMQ node: `broker`). Every guarantee the project claims has a test here. Heavier
# suites have their own targets: test-extended (the cluster tests of tests/extended.py, each a harder try of a
# guarantee this suite checks), test-bench-smoke and test-membership (marker own_target).
test: install broker netfilter promtool test-java
	$(PY) -m pytest -q -rs --durations=15 -m "not own_target and not extended" $(PYTEST_ARGS)

# tests/extended.py: the cluster tests moved out of `make test` to keep it near 30 min (each names the default test
# that keeps its guarantee)
test-extended: install netfilter
	$(PY) -m pytest -q -rs --durations=15 -m "extended and not own_target" $(PYTEST_ARGS)

# The benchmarks' smoke run on the session's 3-node cluster (every experiment, three applications; ~10 min)
test-bench-smoke: install broker
	$(PY) -m pytest -q -rs -m own_target tests/bench/test_bench_smoke.py $(PYTEST_ARGS)

# nodes added, decommissioned and replaced under a writing client (about 7 min; its own cluster)
test-membership: install
	$(PY) -m pytest -q -rs -s -m own_target tests/cluster/test_membership.py $(PYTEST_ARGS)

# The report's experiments, each 3 times, replacing benchmarks/results and its report.md (`ctl bench plan`: ~2.4 h, each approach warmed up 60 s before its first search on a cluster)
bench: install broker
	$(CTL) bench all --replace --search-warmup-s 60

# a few seconds per phase: proves the machinery and the three applications (`make test` runs it too)
bench-smoke: install broker
	$(CTL) bench all --smoke --out /tmp/async-triggers-bench-smoke

# the fault campaign (pycontrol/async_triggers/chaos): a fault-free reference run, then 30 seeded faulty runs on its own 3-node
# cluster, each checked by Spark; one line per run and a summary (72 min here). CHAOS_ARGS adds options.
CHAOS_ARGS ?=
chaos: install netfilter
	$(CTL) chaos run --runs 30 --out /tmp/async-triggers-chaos $(CHAOS_ARGS)

# differential fuzzing (pycontrol/async_triggers/fuzz): 50 seeded random histories of every CQL write shape, over five drawn designs
# (tables, column types, flows), from concurrent clients with skewed clocks, on its own 3-node
# cluster (a third with a replica stopped), each drained and checked by the verify job; one line per seed, a failing
# seed's operations shrunk and its evidence kept, then a summary with the count of every write shape. FUZZ_ARGS adds
# options (--seed S, --ops N, --replay SEED, --shrink-runs N, --no-faults).
FUZZ_ARGS ?=
fuzz: install
	$(CTL) fuzz run --seeds 50 --seed 0 --out /tmp/async-triggers-fuzz $(FUZZ_ARGS)

bench-ack: install
	$(PY) -m async_triggers.benchmarks.experiments.ack_latency --out benchmarks/results/ack --profile /tmp/async-triggers-ack-jfr

# a backfill's rate against the bulk writer's on an idle cluster, each result verified
bench-backfill: install
	$(PY) -m async_triggers.benchmarks.experiments.backfill_rate

# the replica backup map under 10 minutes of steady load: bounded, no tombstone warnings
bench-backup: install
	$(PY) -m async_triggers.benchmarks.experiments.backup_size --minutes 10

# a follow, an unfollow and an aggregate update with the Twitter example: time to the last row, by the author's tweets
bench-joins: install
	$(PY) -m async_triggers.benchmarks.experiments.join_cost

# CPU seconds per 1,000 follower rows at 2, 3 and 4 nodes (a cluster each, one after the other) and a projection to 12
bench-work: install
	$(PY) -m async_triggers.benchmarks.experiments.work_per_row --out benchmarks/results/work

# The time to the last follower by fan-out size (1 to 10,000 followers) at 80 % of the integrated approach's own rate
# (about 10 min; its own 2-node cluster)
bench-lag: install bench-deps
	$(PY) -m async_triggers.benchmarks.experiments.lag_by_fanout --out benchmarks/results/lag

clean:
	rm -rf $(VENV) trigger-plugin/target dist

# also the caches (Cassandra's install, local clusters and their data, Spark's jars, the private RabbitMQ node's
# files): refused while a node or a Spark cluster of ours runs from them
CACHE_HOME := $(or $(ASYNC_TRIGGERS_HOME),$(HOME)/.cache/async-triggers)
distclean: clean
	@if ps -eo comm=,args= | awk '$$1 == "java"' | grep -qF "$(CACHE_HOME)"; then \
	  echo "processes run from $(CACHE_HOME) (ctl cluster down --name NAME; ctl spark down): not removed" >&2; exit 1; \
	fi
	rm -rf "$(CACHE_HOME)"

# ---- the benchmarks' building blocks ----
# `broker`: RabbitMQ from Debian's packages for the external-queue baseline, installed only when missing.
# RUNLEVEL=1 keeps invoke-rc.d from starting Debian's own node: benchmarks/async_triggers/benchmarks/broker.py runs a private one.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: broker netfilter promtool bench-deps test-bench

broker:
	@if dpkg-query -W -f='$${Status}' rabbitmq-server 2>/dev/null | grep -q 'install ok installed'; then \
	  echo "rabbitmq-server $$(dpkg-query -W -f='$${Version}' rabbitmq-server) is installed"; \
	else \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -q --no-install-recommends \
	    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold rabbitmq-server; \
	fi

# `netfilter`: iptables from Debian's packages, for the fault campaign's network partitions (cluster/async_triggers/cluster/network.py)
netfilter:
	@if command -v iptables >/dev/null; then \
	  echo "$$(iptables -V) is installed"; \
	else \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iptables; \
	fi

# `promtool`: Prometheus' rule checker, from Debian's prometheus package (tests/unit/test_alert_rules.py runs
# `promtool test rules` on trigger-plugin/dist/metrics/alerts.yaml). RUNLEVEL=1: Debian's own server is not started.
promtool:
	@if command -v promtool >/dev/null; then \
	  echo "promtool $$(promtool --version 2>&1 | head -1 | cut -d' ' -f3) is installed"; \
	else \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -q --no-install-recommends \
	    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold prometheus; \
	fi

# the benchmarks' Python extras (pika, matplotlib): the virtualenv installs them (pyproject's `bench` extra)
bench-deps: venv

# the benchmarks' building blocks: unit tests, the Spark load generator, a private RabbitMQ node (no Cassandra)
test-bench: bench-deps broker
	$(PY) -m pytest -q -rs -m "not cluster" tests/bench $(PYTEST_ARGS)
