package org.asynctriggers.loadgen;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.type.DataTypes;

/**
 * The synchronous application's request, sent from the JVM as the Python one is ({@code apps/synchronous.py}): the
 * tweet written while its author's followers are read and the tweet is written to the author's and every follower's
 * timeline, {@code concurrency} rows in flight; answered when all of them are. Each write and the read are made again
 * while they fail transiently ({@link Retrying}), so the first error that outlasts its retries fails the request.
 */
final class SyncFanout
{
    static final int FOLLOWERS_PAGE = 5000;   // as the Python fan-out's fetch size

    private final CqlSession session;
    private final Retrying retrying;
    private final PreparedStatement followers;
    private final PreparedStatement timeline;
    private final ConsistencyLevel readLevel;
    private final ConsistencyLevel writeLevel;
    private final int concurrency;
    /** whether the statements take a user id as int (else bigint): looked up once, not for every row */
    private final boolean followersByInt, timelineUserInt, timelineAuthorInt;

    SyncFanout(CqlSession session, Retrying retrying, String followersCql, String timelineCql, ConsistencyLevel readLevel,
               ConsistencyLevel writeLevel, int concurrency)
    {
        if (concurrency < 1)
            throw new IllegalArgumentException("a fan-out's concurrency must be at least 1, found: " + concurrency);
        this.session = session;
        this.retrying = retrying;
        this.followers = session.prepare(followersCql);
        this.timeline = session.prepare(timelineCql);
        this.readLevel = readLevel;
        this.writeLevel = writeLevel;
        this.concurrency = concurrency;
        this.followersByInt = isInt(followers, 0);
        this.timelineUserInt = isInt(timeline, 0);
        this.timelineAuthorInt = isInt(timeline, 2);
    }

    /**
     * The tweet {@code tweet} (bound with {@code values}: tweet id, author, body, time) and its fan-out; completes when
     * every row is written.
     */
    CompletableFuture<Void> start(Statement<?> tweet, Object[] values)
    {
        CompletableFuture<?> written = retrying.execute(tweet);
        Object tweetId = values[0], body = values[2], created = values[3];
        long author = ((Number) values[1]).longValue();
        CompletableFuture<Void> fannedOut = readFollowers(author).thenCompose(users -> {
            users.add(0, author);   // the author's own timeline first, as the Python fan-out writes it
            return writeRows(users, tweetId, author, body, created);
        });
        return CompletableFuture.allOf(written, fannedOut);
    }

    /** Every follower of {@code author}, page by page; the whole read made again when a page fails transiently. */
    private CompletableFuture<List<Long>> readFollowers(long author)
    {
        return retrying.call(() -> {
            Statement<?> first = followers.bind(typed(followersByInt, author)).setConsistencyLevel(readLevel)
                                          .setPageSize(FOLLOWERS_PAGE);
            List<Long> users = new ArrayList<>();
            return session.executeAsync(first).thenCompose(page -> collect(page, users));
        });
    }

    private static java.util.concurrent.CompletionStage<List<Long>> collect(AsyncResultSet page, List<Long> users)
    {
        for (Row row : page.currentPage())
            users.add(((Number) row.getObject(0)).longValue());
        if (!page.hasMorePages())
            return CompletableFuture.completedFuture(users);
        return page.fetchNextPage().thenCompose(next -> collect(next, users));
    }

    /** The rows written, {@link #concurrency} at a time; completes when all are, or with the first lasting error. */
    private CompletableFuture<Void> writeRows(List<Long> users, Object tweetId, long author, Object body, Object created)
    {
        CompletableFuture<Void> done = new CompletableFuture<>();
        AtomicInteger next = new AtomicInteger();
        AtomicInteger left = new AtomicInteger(users.size());
        Runnable[] writeNext = new Runnable[1];
        writeNext[0] = () -> {
            int i = next.getAndIncrement();
            if (i >= users.size() || done.isDone())
                return;
            Statement<?> row = timeline.bind(typed(timelineUserInt, users.get(i)), tweetId, typed(timelineAuthorInt, author), body, created)
                                       .setConsistencyLevel(writeLevel);
            retrying.execute(row).whenComplete((rows, error) -> {
                if (error != null)
                    done.completeExceptionally(error);
                else if (left.decrementAndGet() == 0)
                    done.complete(null);
                else
                    writeNext[0].run();
            });
        };
        for (int k = 0; k < Math.min(concurrency, users.size()); k++)
            writeNext[0].run();
        return done;
    }

    private static boolean isInt(PreparedStatement statement, int index)
    {
        return statement.getVariableDefinitions().get(index).getType().equals(DataTypes.INT);
    }

    /** A user id as the statement declares its variable: int or bigint. */
    private static Object typed(boolean asInt, long user)
    {
        return asInt ? (Object) (int) user : (Object) user;
    }
}
