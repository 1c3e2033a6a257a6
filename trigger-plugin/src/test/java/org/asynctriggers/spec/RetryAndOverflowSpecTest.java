package org.asynctriggers.spec;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.asynctriggers.testing.Fixtures;
import org.junit.jupiter.api.Test;

import static org.asynctriggers.spec.FlowSpecParserTest.assertRejected;
import static org.asynctriggers.spec.FlowSpecParserTest.parsed;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The options {@code retry} and {@code overflow} of a flow spec: defaults, values and exact rejection messages. */
class RetryAndOverflowSpecTest
{
    private static ObjectNode retry(ObjectNode spec)
    {
        return spec.putObject("retry");
    }

    @Test
    void shouldDefaultTheRetryOption()
    {
        RetryPolicy retry = FlowSpecParser.parse(Fixtures.TIMELINE, "twitter_timeline", 1).retry;
        assertEquals(5, retry.maxAttempts);
        assertEquals(100, retry.initialBackoffMillis);
        assertEquals(10_000, retry.maxBackoffMillis);
        assertEquals(600_000, retry.maxAgeMillis);
    }

    @Test
    void shouldParseTheRetryOption()
    {
        RetryPolicy retry = parsed(s -> retry(s).put("max_attempts", 2).put("initial_backoff_ms", 0)
                                                .put("max_backoff_ms", 30).put("max_age_ms", 1_000)).retry;
        assertEquals(2, retry.maxAttempts);
        assertEquals(0, retry.initialBackoffMillis);
        assertEquals(30, retry.maxBackoffMillis);
        assertEquals(1_000, retry.maxAgeMillis);
        // a large initial backoff alone raises the default cap instead of failing against it
        assertEquals(20_000, parsed(s -> retry(s).put("initial_backoff_ms", 20_000)).retry.maxBackoffMillis);
    }

    @Test
    void shouldRejectANonObjectRetry()
    {
        assertRejected("flow 'twitter_timeline': 'retry' must be an object, found: 3", s -> s.put("retry", 3));
    }

    @Test
    void shouldRejectZeroRetryMaxAttempts()
    {
        assertRejected("flow 'twitter_timeline': 'retry.max_attempts' must be strictly positive, found: 0",
                       s -> retry(s).put("max_attempts", 0));
    }

    @Test
    void shouldRejectNonIntegerRetryMaxAttempts()
    {
        assertRejected("flow 'twitter_timeline': 'retry.max_attempts' must be an integer, found: \"many\"",
                       s -> retry(s).put("max_attempts", "many"));
    }

    @Test
    void shouldRejectNegativeRetryInitialBackoff()
    {
        assertRejected("flow 'twitter_timeline': 'retry.initial_backoff_ms' must be a non-negative integer, found: -1",
                       s -> retry(s).put("initial_backoff_ms", -1));
    }

    @Test
    void shouldRejectNonIntegerRetryInitialBackoff()
    {
        assertRejected("flow 'twitter_timeline': 'retry.initial_backoff_ms' must be an integer, found: 1.5",
                       s -> retry(s).put("initial_backoff_ms", 1.5));
    }

    @Test
    void shouldRejectARetryMaxBackoffBelowTheInitialBackoff()
    {
        assertRejected("flow 'twitter_timeline': 'retry.max_backoff_ms' must be at least 'retry.initial_backoff_ms' (100), found: 50",
                       s -> retry(s).put("max_backoff_ms", 50));
    }

    @Test
    void shouldRejectNonIntegerRetryMaxBackoff()
    {
        assertRejected("flow 'twitter_timeline': 'retry.max_backoff_ms' must be an integer, found: \"10s\"",
                       s -> retry(s).put("max_backoff_ms", "10s"));
    }

    @Test
    void shouldRejectZeroRetryMaxAge()
    {
        assertRejected("flow 'twitter_timeline': 'retry.max_age_ms' must be strictly positive, found: 0",
                       s -> retry(s).put("max_age_ms", 0));
    }

    @Test
    void shouldRejectNonIntegerRetryMaxAge()
    {
        assertRejected("flow 'twitter_timeline': 'retry.max_age_ms' must be an integer, found: 1.0E12",
                       s -> retry(s).put("max_age_ms", 1e12));
    }

    private static ObjectNode overflow(ObjectNode spec)
    {
        return spec.putObject("overflow");
    }

    @Test
    void shouldDefaultTheOverflowOptionToSpill()
    {
        FlowSpec.Overflow overflow = FlowSpecParser.parse(Fixtures.TIMELINE, "twitter_timeline", 1).overflow;
        assertEquals(FlowSpec.Overflow.Policy.SPILL, overflow.policy);
        assertEquals(2_000, overflow.blockTimeoutMillis);
        assertEquals(FlowSpecParser.DEFAULT_WORKERS, overflow.maxWorkers);
        assertEquals(5, parsed(s -> s.putObject("queue").put("workers", 5)).overflow.maxWorkers);
    }

    @Test
    void shouldParseTheOverflowOption()
    {
        FlowSpec.Overflow overflow = parsed(s -> overflow(s).put("policy", "elastic").put("block_timeout_ms", 0)
                                                            .put("max_workers", 8)).overflow;
        assertEquals(FlowSpec.Overflow.Policy.ELASTIC, overflow.policy);
        assertEquals(0, overflow.blockTimeoutMillis);
        assertEquals(8, overflow.maxWorkers);
        assertEquals(FlowSpec.Overflow.Policy.BLOCK, parsed(s -> overflow(s).put("policy", "block")).overflow.policy);
        assertEquals(FlowSpec.Overflow.Policy.DISCARD, parsed(s -> overflow(s).put("policy", "discard")).overflow.policy);
        assertEquals(FlowSpec.Overflow.Policy.SPILL, parsed(s -> overflow(s).put("block_timeout_ms", 10)).overflow.policy);
    }

    @Test
    void shouldRejectANonObjectOverflow()
    {
        assertRejected("flow 'twitter_timeline': 'overflow' must be an object, found: \"spill\"", s -> s.put("overflow", "spill"));
    }

    @Test
    void shouldRejectAnUnknownOverflowPolicy()
    {
        assertRejected("flow 'twitter_timeline': 'overflow.policy' must be one of block, spill, discard, elastic, found: \"drop\"",
                       s -> overflow(s).put("policy", "drop"));
    }

    @Test
    void shouldRejectANegativeOverflowBlockTimeout()
    {
        assertRejected("flow 'twitter_timeline': 'overflow.block_timeout_ms' must be a non-negative integer, found: -1",
                       s -> overflow(s).put("block_timeout_ms", -1));
    }

    @Test
    void shouldRejectANonIntegerOverflowBlockTimeout()
    {
        assertRejected("flow 'twitter_timeline': 'overflow.block_timeout_ms' must be an integer, found: \"2s\"",
                       s -> overflow(s).put("block_timeout_ms", "2s"));
    }

    @Test
    void shouldRejectOverflowMaxWorkersBelowTheQueueWorkers()
    {
        assertRejected("flow 'twitter_timeline': 'overflow.max_workers' must be at least 'queue.workers' (2), found: 1",
                       s -> overflow(s).put("max_workers", 1));
    }

    @Test
    void shouldRejectNonIntegerOverflowMaxWorkers()
    {
        assertRejected("flow 'twitter_timeline': 'overflow.max_workers' must be an integer, found: 2.5",
                       s -> overflow(s).put("max_workers", 2.5));
    }
}
