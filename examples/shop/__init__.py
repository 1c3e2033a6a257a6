"""Order totals per customer and status: an aggregate flow (schema.cql, flows.py)."""
