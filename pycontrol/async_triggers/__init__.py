"""Control plane for asynchronous triggers on Apache Cassandra 5.0 (the `ctl` command)."""
