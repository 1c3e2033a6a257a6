"""The project's example flows, each in its own package with its schema (schema.cql) and flow file (flows.py)."""
