package org.asynctriggers;

import java.nio.ByteBuffer;

/**
 * What the workers of one flow do with the backup entries of their tasks (docs/design.md, "Replica backup maps"):
 * check that the source write was stored, record fan-out resume positions, and complete entries.
 */
interface Backups
{
    /**
     * The entry is there, read at ONE ({@code everywhere} false) or at ALL (true: an absent entry then means the
     * source write is on no replica). Throws when the read fails (e.g. a replica down for ALL).
     */
    boolean isStored(Task task, boolean everywhere);

    void recordResume(Task task, int target, ByteBuffer paging);

    /** done or a dead letter: the entry goes */
    void completed(Task task);

    /** the source write was never stored: nothing to delete, only to forget */
    void abandoned(Task task);

    /** For flows without backup maps and for tests: every task counts as stored. */
    Backups NONE = new Backups()
    {
        @Override
        public boolean isStored(Task task, boolean everywhere)
        {
            return true;
        }

        @Override
        public void recordResume(Task task, int target, ByteBuffer paging)
        {
        }

        @Override
        public void completed(Task task)
        {
        }

        @Override
        public void abandoned(Task task)
        {
        }
    };
}
