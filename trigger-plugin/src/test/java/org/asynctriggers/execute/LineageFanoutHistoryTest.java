package org.asynctriggers.execute;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.task.Task;
import org.asynctriggers.testing.FakeGateway;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.execute.LineageConvergenceTest.FOLLOWERS;
import static org.asynctriggers.execute.LineageConvergenceTest.TWEET;
import static org.asynctriggers.testing.Fixtures.bigint;
import static org.asynctriggers.testing.Fixtures.longOf;
import static org.asynctriggers.testing.Fixtures.row;
import static org.asynctriggers.testing.Fixtures.string;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The Twitter shape with lineage on the author (the author's own timeline row, the followers' rows through a fan-out
 * of two rows a page, and tweets by author) against random histories of one tweet: inserts, partial updates of the
 * author and of the body, the body or the author deleted, the tweet deleted, each task run at a random later moment
 * (some twice). Followers of the authors overlap, so their timeline rows are shared between images; those targets'
 * cells are raised to their image's timestamp (docs/design.md, "Lineage"). The oracle is the tweet itself.
 */
class LineageFanoutHistoryTest
{
    private static final FlowSpec SPEC = LineageConvergenceTest.spec(3);
    private static final long[] AUTHORS = { 100, 200, 300 };
    private static final String[] BODIES = { "b1", "b2", "b3" };
    static final int SWEEP = 20_000;

    static final Histories.Shape TWEETS = new Histories.Shape()
    {
        public FlowSpec spec() { return SPEC; }

        public FakeGateway cluster() { return LineageConvergenceTest.gateway(); }

        public Task draw(Random random, long ts)
        {
            long author = AUTHORS[random.nextInt(AUTHORS.length)];
            String body = BODIES[random.nextInt(BODIES.length)];
            switch (random.nextInt(6))
            {
                case 0: return task(Operation.INSERT, ts, row("tweet_id", TWEET, "author_id", author, "body", body));
                case 1: return task(Operation.UPDATE, ts, row("tweet_id", TWEET, "author_id", author));
                case 2: return task(Operation.UPDATE, ts, row("tweet_id", TWEET, "body", body));
                case 3: return task(Operation.UPDATE, ts, row("tweet_id", TWEET, "body", null));
                case 4: return task(Operation.UPDATE, ts, row("tweet_id", TWEET, "author_id", null));
                default: return task(Operation.DELETE, ts, row("tweet_id", TWEET));
            }
        }

        public Set<String> expected(FakeGateway cluster)
        {
            Set<String> rows = new TreeSet<>();
            for (Map<String, java.nio.ByteBuffer> tweet : cluster.rows("tw", "tweets"))
            {
                if (tweet.get("author_id") == null)
                    continue; // no image: nothing derives from it
                long author = longOf(tweet.get("author_id"));
                String body = string(tweet.get("body"));
                List<Long> users = new ArrayList<>(List.of(author));
                users.addAll(FOLLOWERS.get(author));
                for (long user : users)
                    rows.add("timeline " + user + "/" + TWEET + " by " + author + ": " + body);
                rows.add("by_author " + author + "/" + TWEET + " by " + author + ": " + body);
            }
            return rows;
        }

        public Set<String> actual(FakeGateway cluster)
        {
            Set<String> rows = new TreeSet<>();
            for (String table : List.of("timeline", "by_author"))
                for (Map<String, java.nio.ByteBuffer> r : cluster.rows("tw", table))
                    rows.add(table + " " + longOf(r.get("user_id")) + "/" + longOf(r.get("tweet_id")) + " by "
                             + (r.get("author_id") == null ? "null" : longOf(r.get("author_id"))) + ": " + string(r.get("body")));
            return rows;
        }

        public String describe(Task task)
        {
            StringBuilder out = new StringBuilder(task.operation() + "@" + task.timestamp());
            if (task.values().containsKey("author_id"))
                out.append(" author=").append(task.values().get("author_id") == null ? "null" : longOf(task.values().get("author_id")));
            if (task.values().containsKey("body"))
                out.append(" body=").append(string(task.values().get("body")));
            return out.toString();
        }

        public String sourceKeyspace() { return "tw"; }

        public String sourceTable() { return "tweets"; }
    };

    private static Task task(Operation op, long ts, Map<String, java.nio.ByteBuffer> values)
    {
        return Fixtures.task(SPEC, op, ts, List.of(bigint(TWEET)), values);
    }

    /** One clock per row: none may differ. */
    @Test
    void shouldDeriveWhatTheTweetSaysInEverySeededHistoryWithOneClock()
    {
        for (long seed = 0; seed < SWEEP; seed++)
        {
            String differs = Histories.run(TWEETS, seed, 2 + (int) (seed % 11), true);
            assertEquals("", differs, "seed " + seed + ":\n" + differs);
        }
    }

    /**
     * Timestamps drawn from eight values: ties, and writes older than ones applied before them (an author changed,
     * then the body edited by a client whose clock is behind). None may differ: 594 of these did while each derived
     * cell was written at its source cell's timestamp, raised to its image's.
     */
    @Test
    void shouldDeriveWhatTheSourceSaysInEverySeededHistoryWithOutOfOrderTimestamps()
    {
        Histories.assertNoneDiffer(TWEETS, SWEEP);
    }
}
