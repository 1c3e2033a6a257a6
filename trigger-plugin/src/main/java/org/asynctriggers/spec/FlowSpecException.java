package org.asynctriggers.spec;

/** A flow specification that cannot be applied; the message names the flow and the offending option. */
public class FlowSpecException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    public FlowSpecException(String message)
    {
        super(message);
    }
}
