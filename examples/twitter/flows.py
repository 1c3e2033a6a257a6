"""The report's Twitter flow (Figure 1 of "Building Data Flows Using Distributed Key-Value Stores"): a tweet goes to its
author's timeline and, through a fan-out over the author's followers, to every follower's timeline. The fan-out
follows its table: a follow brings the followee's tweets into the follower's timeline and an unfollow takes them out,
so a timeline is always the join of the tweets and the follows as they are. A second flow keeps each user's tweet
count. Schema: schema.cql beside this file."""
from async_triggers.flows import Aggregate, FanOut, Flow, Queue, Write, row, source

TIMELINE_COLUMNS = dict(tweet_id=source.tweet_id, author_id=source.author_id, body=source.body)

FLOWS = [
    Flow(
        name="twitter_timeline",
        source="twitter.tweets",
        events=("insert", "update", "delete"),
        steps=[
            Write("twitter.timeline", user_id=source.author_id, **TIMELINE_COLUMNS),
            FanOut("twitter.followers", match={"user_id": source.author_id}, follow=True)
            .write("twitter.timeline", user_id=row.follower_id, **TIMELINE_COLUMNS),
        ],
        queue=Queue(capacity=10_000, workers=2),
        page_size=1000,
    ),
    Flow(
        name="twitter_tweet_counts",
        source="twitter.tweets",
        steps=[Aggregate("twitter.tweet_counts", group_by={"user_id": source.author_id}, count="tweets",
                         max={"last_tweet_at": source.created_at})],
    ),
]
