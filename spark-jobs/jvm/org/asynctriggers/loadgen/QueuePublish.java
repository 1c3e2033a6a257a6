package org.asynctriggers.loadgen;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;

import com.datastax.oss.driver.api.core.cql.Statement;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;

/**
 * The external-queue application's request, sent from the JVM as the Python one is ({@code apps/external_queue.py}):
 * the tweet written to Cassandra while it is published to a durable queue as a persistent message (its JSON, as
 * {@code tweets.encode} makes it, which the Python workers read), answered when the write is acknowledged and the
 * broker confirmed the message (publisher confirms). A message the broker returns (no such queue) or refuses (nack)
 * fails its request, as does a connection that breaks; publishes are not retried, as in Python. One connection and
 * one channel per task, its confirms matched to their requests by sequence number.
 */
final class QueuePublish implements AutoCloseable
{
    private final Retrying retrying;
    private final String queue;
    private final Connection connection;
    private final Channel channel;
    /** the requests awaiting their confirm, by the channel's publish sequence number */
    private final ConcurrentNavigableMap<Long, CompletableFuture<Void>> unconfirmed = new ConcurrentSkipListMap<>();
    private static final String SEQ = "x-loadgen-seq";

    QueuePublish(Retrying retrying, String url, String queue) throws Exception
    {
        this.retrying = retrying;
        this.queue = queue;
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(url);
        this.connection = factory.newConnection("async-triggers-loadgen");
        this.channel = connection.createChannel();
        channel.queueDeclare(queue, true, false, false, null);   // durable, as the Python publisher declares it
        channel.confirmSelect();
        channel.addConfirmListener((tag, multiple) -> settle(tag, multiple, null),
                                   (tag, multiple) -> settle(tag, multiple, "the broker refused (nacked) the message"));
        channel.addReturnListener(returned -> {
            Object seq = returned.getProperties().getHeaders() == null ? null : returned.getProperties().getHeaders().get(SEQ);
            CompletableFuture<Void> request = seq instanceof Number ? unconfirmed.remove(((Number) seq).longValue()) : null;
            if (request != null)
                request.completeExceptionally(new IOException("the broker returned the message: no queue '" + queue + "'"));
        });
        channel.addShutdownListener(cause -> failAll("the broker's connection closed: " + cause.getMessage()));
    }

    /** The tweet {@code tweet} (bound with {@code values}: tweet id, author, body, time) written and published. */
    CompletableFuture<Void> start(Statement<?> tweet, Object[] values, long createdAtMs)
    {
        CompletableFuture<?> written = retrying.execute(tweet);
        CompletableFuture<Void> published = new CompletableFuture<>();
        byte[] body = message((UUID) values[0], ((Number) values[1]).longValue(), (String) values[2], createdAtMs);
        synchronized (channel)   // a channel's publishes are numbered in the order they are sent
        {
            long seq = channel.getNextPublishSeqNo();
            unconfirmed.put(seq, published);
            AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .deliveryMode(2).contentType("application/json").headers(Map.of(SEQ, seq)).build();
            try
            {
                channel.basicPublish("", queue, true, props, body);
            }
            catch (IOException | RuntimeException e)
            {
                unconfirmed.remove(seq);
                published.completeExceptionally(e);
            }
        }
        return CompletableFuture.allOf(written, published);
    }

    private void settle(long tag, boolean multiple, String refused)
    {
        ConcurrentNavigableMap<Long, CompletableFuture<Void>> settled = multiple ? unconfirmed.headMap(tag, true)
                                                                                 : unconfirmed.subMap(tag, true, tag, true);
        for (Long seq : settled.keySet())
        {
            CompletableFuture<Void> request = unconfirmed.remove(seq);
            if (request == null)
                continue;
            if (refused == null)
                request.complete(null);
            else
                request.completeExceptionally(new IOException(refused));
        }
    }

    private void failAll(String why)
    {
        for (Long seq : unconfirmed.keySet())
        {
            CompletableFuture<Void> request = unconfirmed.remove(seq);
            if (request != null)
                request.completeExceptionally(new IOException(why));
        }
    }

    /** The queue message of a tweet: compact JSON with the keys of the Python {@code tweets.encode}. */
    static byte[] message(UUID tweetId, long author, String body, long createdAtMs)
    {
        return ("{\"tweet_id\":\"" + tweetId + "\",\"author_id\":" + author + ",\"body\":" + jsonString(body)
                + ",\"created_at_ms\":" + createdAtMs + "}").getBytes(StandardCharsets.UTF_8);
    }

    static String jsonString(String text)
    {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++)
        {
            char c = text.charAt(i);
            if (c == '"' || c == '\\')
                out.append('\\').append(c);
            else if (c < 0x20)
                out.append(String.format("\\u%04x", (int) c));
            else
                out.append(c);
        }
        return out.append('"').toString();
    }

    @Override
    public void close()
    {
        try
        {
            connection.close();
        }
        catch (IOException | RuntimeException e)
        {
            // the run is over: a connection that cannot close cleanly changes no record
        }
    }
}
