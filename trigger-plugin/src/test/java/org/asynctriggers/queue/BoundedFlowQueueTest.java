package org.asynctriggers.queue;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class BoundedFlowQueueTest extends FlowQueueContractTest
{
    @Override
    FlowQueue create(int capacity)
    {
        return new BoundedFlowQueue(capacity);
    }

    @Test
    void shouldRejectNonPositiveCapacity()
    {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new BoundedFlowQueue(0));
        assertEquals("capacity must be strictly positive, found: 0", e.getMessage());
    }
}
