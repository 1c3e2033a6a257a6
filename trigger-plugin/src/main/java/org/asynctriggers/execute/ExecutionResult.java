package org.asynctriggers.execute;

import java.nio.ByteBuffer;

/**
 * Outcome of one attempt at a task: done, failed (with its cause, for the retry policy), or one chunk of a fan-out
 * done with the position to go on from.
 */
public final class ExecutionResult
{
    private static final ExecutionResult SUCCESS = new ExecutionResult(null, -1, null, 0);

    private final Throwable cause;
    private final int resumeTarget;
    private final ByteBuffer resumePaging;
    private final long fanoutRows;

    private ExecutionResult(Throwable cause, int resumeTarget, ByteBuffer resumePaging, long fanoutRows)
    {
        this.cause = cause;
        this.resumeTarget = resumeTarget;
        this.resumePaging = resumePaging;
        this.fanoutRows = fanoutRows;
    }

    public static ExecutionResult success()
    {
        return SUCCESS;
    }

    static ExecutionResult success(long fanoutRows)
    {
        return fanoutRows == 0 ? SUCCESS : new ExecutionResult(null, -1, null, fanoutRows);
    }

    /** One chunk done: the task goes on at target {@code target}, from {@code paging} within it. */
    static ExecutionResult more(int target, ByteBuffer paging, long fanoutRows)
    {
        return new ExecutionResult(null, target, paging, fanoutRows);
    }

    public static ExecutionResult failure(Throwable cause)
    {
        return new ExecutionResult(cause, -1, null, 0);
    }

    public boolean isSuccess()
    {
        return cause == null;
    }

    /** A chunk of the task is done and the rest remains. */
    public boolean hasMore()
    {
        return resumeTarget >= 0;
    }

    public int resumeTarget()
    {
        return resumeTarget;
    }

    public ByteBuffer resumePaging()
    {
        return resumePaging;
    }

    /** fan-out rows written (or deleted) by this attempt */
    public long fanoutRows()
    {
        return fanoutRows;
    }

    public Throwable cause()
    {
        return cause;
    }
}
