#!/bin/sh
# Installs the Async Triggers plugin on THIS node (run it on every node, as the user that owns Cassandra's files).
#   install-on-node.sh JVM_OPTIONS_FILE [PREFIX]
# JVM_OPTIONS_FILE: the node's jvm-server.options (tarball: $CASSANDRA_HOME/conf/jvm-server.options;
#                   Debian/RPM packages: /etc/cassandra/jvm-server.options)
# PREFIX:           where the jar goes (default /opt/async-triggers); the same path on every node
# ASYNC_TRIGGERS_METRICS_PORT=7070 (optional) also installs the Prometheus JMX exporter from metrics/ with our
# configuration, serving http://<node>:7070/metrics (ASYNC_TRIGGERS_METRICS_ADDRESS binds one address only).
# Idempotent: copies the jar (replacing an older one) and adds the -javaagent line once (an older line for another
# path is replaced). The node loads the plugin when it restarts: restart the nodes one at a time.
set -eu
options=${1:?usage: install-on-node.sh JVM_OPTIONS_FILE [PREFIX]}
prefix=${2:-/opt/async-triggers}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$options" ] || { echo "error: $options does not exist (give the node's jvm-server.options)" >&2; exit 2; }
[ -f "$here/async-triggers-plugin.jar" ] || { echo "error: $here/async-triggers-plugin.jar is missing" >&2; exit 2; }
case "$prefix" in *" "*) echo "error: $prefix contains a space: the JVM options line cannot carry it" >&2; exit 2;; esac
mkdir -p "$prefix"
cp "$here/async-triggers-plugin.jar" "$prefix/.async-triggers-plugin.jar.tmp"
mv "$prefix/.async-triggers-plugin.jar.tmp" "$prefix/async-triggers-plugin.jar"
line="-javaagent:$prefix/async-triggers-plugin.jar"
tmp="$options.async-triggers.tmp"
grep -v -e '-javaagent:.*async-triggers-plugin\.jar' "$options" > "$tmp" || true
printf '%s\n%s\n' '# Async Triggers for Cassandra: the plugin on the class path (see its INSTALL.md)' "$line" \
  | grep -v -x -F -f "$tmp" >> "$tmp" || true
if [ -n "${ASYNC_TRIGGERS_METRICS_PORT:-}" ]; then
  [ -f "$here/metrics/jmx_prometheus_javaagent.jar" ] || { echo "error: $here/metrics/jmx_prometheus_javaagent.jar is missing" >&2; rm -f "$tmp"; exit 2; }
  cp "$here/metrics/jmx_prometheus_javaagent.jar" "$here/metrics/prometheus-jmx.yaml" "$prefix/"
  bind="${ASYNC_TRIGGERS_METRICS_ADDRESS:+$ASYNC_TRIGGERS_METRICS_ADDRESS:}$ASYNC_TRIGGERS_METRICS_PORT"
  grep -v -e '-javaagent:.*jmx_prometheus_javaagent\.jar' "$tmp" > "$tmp.2" || true
  echo "-javaagent:$prefix/jmx_prometheus_javaagent.jar=$bind:$prefix/prometheus-jmx.yaml" >> "$tmp.2"
  mv "$tmp.2" "$tmp"
  echo "metrics: http://${ASYNC_TRIGGERS_METRICS_ADDRESS:-<node>}:$ASYNC_TRIGGERS_METRICS_PORT/metrics"
fi
cat "$tmp" > "$options" && rm -f "$tmp"
echo "installed $prefix/async-triggers-plugin.jar; $options has: $line"
echo "restart this node (nodetool drain, stop, start), wait until nodetool status shows it UN, then the next node"
