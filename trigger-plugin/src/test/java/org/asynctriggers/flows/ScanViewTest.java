package org.asynctriggers.flows;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

import org.asynctriggers.spec.FlowSpec;
import org.asynctriggers.spec.FlowSpecParser;
import org.asynctriggers.testing.Fixtures;
import org.asynctriggers.testing.TrackingThreadFactory;
import org.asynctriggers.work.DeadLetters;
import org.asynctriggers.work.RetryScheduler;
import org.asynctriggers.work.TaskProcessor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The pause's hold on adoption: only after a resume, never for a flow that was never paused. */
class ScanViewTest
{
    @TempDir
    Path spillRoot;

    private final AtomicLong now = new AtomicLong();
    private final ScanView view = new ScanView(null, null, null, task -> true, now::get);

    private Flow flow()
    {
        FlowSpec spec = FlowSpecParser.parse(Fixtures.USERS_BY_NAME, null, 1);
        FlowWorkers workers = new FlowWorkers(new TrackingThreadFactory(), System::nanoTime,
                                              RetryScheduler.onThreads(new TrackingThreadFactory()), (min, max) -> max,
                                              millis -> {}, new DeadLetters(Fixtures.usersGateway(), () -> "127.0.0.1", () -> 1_000L));
        TaskProcessor.Executor executor = task -> { throw new AssertionError("not run"); };
        return new Flow(spec, executor, spillRoot.resolve("f"), workers);
    }

    @Test
    void shouldNotHoldAdoptionOfAFlowThatWasNeverPausedAtAnyClock()
    {
        Flow flow = flow();
        for (long t : new long[]{ 0, 1, 14_999, 1_700_000_000_000L, Long.MAX_VALUE })
        {
            now.set(t);
            assertFalse(view.resumedRecently(flow), "clock " + t);
        }
    }

    @Test
    void shouldHoldAdoptionForFifteenSecondsAfterAResume()
    {
        Flow flow = flow();
        flow.pause();
        flow.resume(1_700_000_000_000L);
        now.set(1_700_000_000_000L + 1_000);
        assertTrue(view.resumedRecently(flow));
        now.set(1_700_000_000_000L + ScanView.NO_ADOPTION_AFTER_RESUME_MILLIS);
        assertFalse(view.resumedRecently(flow));
    }
}
