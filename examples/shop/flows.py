"""Totals per customer and status, as `SELECT count(*), sum(amount), min(placed), max(placed) FROM shop.orders GROUP BY
customer_id, status` says them, kept as orders are placed, paid, moved, cancelled (deleted) or expire. An order that
changes status leaves the first status's totals; a task that runs twice counts once. Schema: schema.cql beside this
file."""
from async_triggers.flows import Aggregate, Flow, source

FLOWS = [
    Flow(
        name="shop_customer_totals",
        source="shop.orders",
        steps=[Aggregate("shop.customer_totals", group_by={"customer_id": source.customer_id, "status": source.status},
                         count="orders", sum={"amount": source.amount},
                         min={"first_placed": source.placed}, max={"last_placed": source.placed})],
    ),
]
