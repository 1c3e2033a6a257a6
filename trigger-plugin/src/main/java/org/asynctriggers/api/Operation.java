package org.asynctriggers.api;

/** What the source write did to a row, as seen by each replica as it applies the write. */
public enum Operation
{
    /** The update carries a row marker (CQL {@code INSERT}). */
    INSERT,
    /** The update carries cells only (CQL {@code UPDATE}, or setting a cell to null). */
    UPDATE,
    /** A row, range or partition deletion. */
    DELETE;

    /** The spelling used in the flow specification's {@code events}. */
    public String eventName()
    {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The operation spelled {@code event} in a spec's {@code events}; null for none. */
    public static Operation fromEventName(String event)
    {
        for (Operation op : values())
            if (op.eventName().equals(event))
                return op;
        return null;
    }
}
