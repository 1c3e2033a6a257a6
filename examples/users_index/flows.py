"""The index of the blog post "async triggers": users by name. When a user's name changes, the entry under the old name is
removed; two changes of one user converge to the later name's entry alone, whatever order their tasks run in.
Schema: schema.cql beside this file."""
from async_triggers.flows import Flow, Write, source

FLOWS = [
    Flow(
        name="users_by_name",
        source="app.users",
        steps=[Write("app.users_by_name", name=source.name, user_id=source.user_id, email=source.email)],
    ),
]
