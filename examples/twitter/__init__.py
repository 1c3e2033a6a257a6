"""The report's Twitter example: the schema (schema.cql), the timeline flow (flows.py), the client that writes tweets
(workload.py) and `ctl demo` end to end (demo.py)."""
