"""The blog's users-by-name index: the schema (schema.cql) and the flow (flows.py)."""
