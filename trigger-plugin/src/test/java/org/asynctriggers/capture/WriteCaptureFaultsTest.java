package org.asynctriggers.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.apache.cassandra.db.rows.Row;
import org.asynctriggers.task.SourceChange;
import org.asynctriggers.task.Task;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * A replica's capture when a write comes twice (a contended memtable partition, a hint beside the original), when two
 * writes of a row tie on their timestamp, and when something fails: the write itself never does.
 */
class WriteCaptureFaultsTest extends WriteCaptureFixture
{
    @Test
    void shouldGiveTwoWritesOfOneRowWithOneTimestampTwoIds()
    {
        WriteCapture first = capture(events, F);
        first.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a")));
        first.finish();
        WriteCapture second = capture(events, F);
        Row there = row(2, 10, SourceChange.NONE, cell("v", 10, "a"));
        second.updateRow(there, row(2, 10, SourceChange.NONE, cell("v", 10, "b"))); // another client, same timestamp
        second.finish();
        List<Task> tasks = sink.tasks();
        assertEquals(2, tasks.size());
        assertEquals(tasks.get(0).timestamp(), tasks.get(1).timestamp());
        assertNotEquals(tasks.get(0).id(), tasks.get(1).id(), "both must run: Cassandra keeps whichever wins the tie");
    }

    @Test
    void shouldGiveTheSameWriteOneIdOnEveryReplica()
    {
        for (int replica = 0; replica < 3; replica++)
        {
            WriteCapture write = capture(events, F);
            write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a"), cell("w", 11, "b")));
            write.finish();
        }
        List<Task> tasks = sink.tasks();
        assertEquals(3, tasks.size());
        assertEquals(tasks.get(0).id(), tasks.get(1).id());
        assertEquals(tasks.get(0).id(), tasks.get(2).id());
    }

    @Test
    void shouldMakeOneTaskOfAnUpdateSeenTwice()
    {
        WriteCapture write = capture(events, F);
        Row old = row(2, 5, SourceChange.NONE, cell("v", 5, "a"));
        Row changed = row(2, 5, SourceChange.NONE, cell("v", 12, "b"));
        // a contended memtable partition: the update is applied again, and the index hears it again
        write.updateRow(old, changed);
        write.updateRow(old, changed);
        write.finish();
        Task task = sink.only("f");
        assertEquals(t("b"), task.values().get("v"));

        WriteCapture once = capture(events, F);
        once.updateRow(old, changed);
        once.finish();
        assertEquals(task.id(), sink.tasks().get(1).id(), "and it is the task a replica that heard it once made");
    }

    /** What the capture logs (its errors' logger is off in the tests) while it runs. */
    private static List<ILoggingEvent> logged(Runnable run)
    {
        ch.qos.logback.classic.Logger logger = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("org.asynctriggers.CaptureIndex");
        Level level = logger.getLevel();
        boolean additive = logger.isAdditive();
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        logger.setLevel(Level.ERROR);
        logger.setAdditive(false); // expected errors: kept off the console
        try
        {
            run.run();
            return appender.list;
        }
        finally
        {
            logger.detachAppender(appender);
            logger.setLevel(level);
            logger.setAdditive(additive);
        }
    }

    @Test
    void shouldHandTheTasksOverWithNoEntryWhenTheBackupTableIsMissing()
    {
        // no companion table in this schema: the entries cannot be written, the tasks still go to the node
        WriteCapture write = capture(events, "{\"kept\": {\"events\": [\"insert\"]}, \"unkept\": {\"events\": [\"insert\"], \"backup\": false}}");
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a")));
        List<ILoggingEvent> log = logged(() -> assertDoesNotThrow(write::finish));
        assertEquals(List.of(0), sink.entries);
        assertEquals(List.of("kept", "unkept"), sink.calls.get(0).stream().map(Task::flow).collect(Collectors.toList()));
        assertEquals(1, log.size(), "logged: " + log);
        assertEquals("Async trigger capture: table app.async_backup_events is missing: tasks of app.events have no backup entries "
                     + "(redeploy its flows)", log.get(0).getFormattedMessage());
    }

    @Test
    void shouldNeverFailTheWriteForAnErrorOfItsSink()
    {
        List<Task> offered = new ArrayList<>();
        WriteCapture write = capture(events, "{\"f\": {\"events\": [\"insert\"], \"backup\": false}}", (keyspace, token, tasks, entries) -> {
            offered.addAll(tasks);
            throw new IllegalStateException("the intake failed");
        });
        write.insertRow(row(2, 10, SourceChange.NONE, cell("v", 10, "a")));
        List<ILoggingEvent> log = logged(() -> assertDoesNotThrow(write::finish));
        assertEquals(1, offered.size());
        assertEquals(1, log.size(), "logged: " + log);
        assertEquals(Level.ERROR, log.get(0).getLevel());
        assertEquals("Async trigger capture: could not capture a write of app.events on this replica", log.get(0).getFormattedMessage());
        assertEquals("the intake failed", log.get(0).getThrowableProxy().getMessage());
    }

    @Test
    void shouldNeverFailTheWriteForARowItCannotRead()
    {
        WriteCapture write = capture(events, F);
        assertDoesNotThrow(() -> write.updateRow(null, row(2, 5, SourceChange.NONE, cell("v", 12, "b"))));
        write.insertRow(row(3, 10, SourceChange.NONE, cell("v", 10, "a")));
        assertDoesNotThrow(write::finish);
        assertEquals(List.of(List.of(i(1), i(3))), sink.tasks().stream().map(Task::key).collect(Collectors.toList()),
                     "the events that could be read are still captured");
    }
}
