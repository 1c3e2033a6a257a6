"""The report's Twitter flow (Figure 1 of "Building Data Flows Using Distributed Key-Value Stores"): a tweet goes to its author's timeline and, through a
fan-out over the author's followers, to every follower's timeline. Schema: schema.cql beside this file."""
from async_triggers.flows import FanOut, Flow, Queue, Write, row, source

TIMELINE_COLUMNS = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)

FLOWS = [
    Flow(
        name="twitter_timeline",
        source="twitter.tweets",
        events=("insert", "update", "delete"),
        steps=[
            Write("twitter.timeline", user_id=source.author_id, **TIMELINE_COLUMNS),
            FanOut("twitter.followers", match={"user_id": source.author_id})
            .write("twitter.timeline", user_id=row.follower_id, **TIMELINE_COLUMNS),
        ],
        queue=Queue(capacity=10_000, workers=2),
        page_size=1000,
    ),
]
