package org.asynctriggers;

/** Outcome of one attempt at a task; a failure carries its cause so a retry policy can decide. */
public final class ExecutionResult
{
    private static final ExecutionResult SUCCESS = new ExecutionResult(null);

    private final Throwable cause;

    private ExecutionResult(Throwable cause)
    {
        this.cause = cause;
    }

    public static ExecutionResult success()
    {
        return SUCCESS;
    }

    public static ExecutionResult failure(Throwable cause)
    {
        return new ExecutionResult(cause);
    }

    public boolean isSuccess()
    {
        return cause == null;
    }

    public Throwable cause()
    {
        return cause;
    }
}
