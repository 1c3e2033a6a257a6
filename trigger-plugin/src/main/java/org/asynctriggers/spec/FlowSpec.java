package org.asynctriggers.spec;

import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.db.ConsistencyLevel;
import org.asynctriggers.api.Operation;

/** One validated flow specification (see docs/design.md); immutable, built only by {@link FlowSpecParser}. */
public final class FlowSpec
{
    /** Cassandra's longest TTL ({@code Attributes.MAX_TTL}, 20 years): a derived TTL's and a recency bound's limit */
    public static final int MAX_TTL_SECONDS = 20 * 365 * 24 * 60 * 60;

    public enum Mode { DIRECT, LINEAGE }

    private static List<String> keyOf(List<String> partitionKey, List<String> clustering)
    {
        List<String> all = new java.util.ArrayList<>(partitionKey);
        all.addAll(clustering);
        return List.copyOf(all);
    }

    public static final class Source
    {
        public final String keyspace;
        public final String table;
        public final List<String> partitionKey;
        public final List<String> clustering;
        /** column name to CQL type, in spec order */
        public final Map<String, String> columns;
        private final List<String> primaryKey;

        Source(String keyspace, String table, List<String> partitionKey, List<String> clustering, Map<String, String> columns)
        {
            this.keyspace = keyspace;
            this.table = table;
            this.partitionKey = List.copyOf(partitionKey);
            this.clustering = List.copyOf(clustering);
            this.columns = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(columns));
            this.primaryKey = keyOf(this.partitionKey, this.clustering);
        }

        public int primaryKeySize()
        {
            return partitionKey.size() + clustering.size();
        }

        /** The partition key's columns, then the clustering's (unmodifiable: read on every task). */
        public List<String> primaryKey()
        {
            return primaryKey;
        }
    }

    public static final class Fanout
    {
        public final String keyspace;
        public final String table;
        /** fan-out table column to the expression it must equal */
        public final Map<String, Expression> match;
        public final List<String> columns;
        /** the fan-out follows its table (a row added or removed changes the target); null: it does not */
        public final Follow follow;

        Fanout(String keyspace, String table, Map<String, Expression> match, List<String> columns, Follow follow)
        {
            this.keyspace = keyspace;
            this.table = table;
            this.match = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(match));
            this.columns = List.copyOf(columns);
            this.follow = follow;
        }
    }

    /**
     * How a fan-out follows its table (docs/design.md, "A fan-out that follows its table"): the flow's join index (the
     * target at {@link #index}: one row per source row, partitioned by the match value) and the copy of the fan-out
     * table that its companion flow keeps ({@link #keyspace}.{@link #table}: each fan-out row with its change number
     * {@code async_n} and expiry {@code async_expires}); the fan-out reads the copy, not the table.
     */
    public static final class Follow
    {
        /**
         * A source row's versions are multiples of this in a flow that follows a fan-out table: a row derived through a
         * fan-out row is written at the version plus the fan-out row's change number (below this), every other row
         * at the version plus this minus one, so that a later version wins whatever the numbers, and a later change of
         * the fan-out row wins within one version.
         */
        public static final long SPACING = 1L << 20;
        /** the greatest change number of a fan-out row */
        public static final long MAX_CHANGE = SPACING - 2;

        public final int index;
        public final String keyspace;
        public final String table;
        /** the recency bound: the source's time key column (null: none), its CQL type, and the seconds a row stays */
        public final String recentColumn;
        public final String recentType;
        public final long recentSeconds;

        Follow(int index, String keyspace, String table)
        {
            this(index, keyspace, table, null, null, 0);
        }

        Follow(int index, String keyspace, String table, String recentColumn, String recentType, long recentSeconds)
        {
            this.index = index;
            this.keyspace = keyspace;
            this.table = table;
            this.recentColumn = recentColumn;
            this.recentType = recentType;
            this.recentSeconds = recentSeconds;
        }

        /**
         * When the rows of the source row with these values leave the target by the recency bound: its time (the
         * time key column's, whole seconds) plus the bound, a local expiration time in seconds; 0 without a bound.
         */
        public long recentExpiresAt(Map<String, java.nio.ByteBuffer> sourceValues)
        {
            if (recentColumn == null)
                return 0;
            java.nio.ByteBuffer value = sourceValues.get(recentColumn);
            if (value == null || !value.hasRemaining())
                return 0; // a key column always has a value; nothing to bound otherwise
            return Math.floorDiv(timeMillis(recentType, value), 1000) + recentSeconds;
        }

        /** The time a timeuuid or timestamp value stands for, in milliseconds since the epoch. */
        public static long timeMillis(String type, java.nio.ByteBuffer value)
        {
            if ("timestamp".equals(type))
                return value.getLong(value.position());
            long msb = value.getLong(value.position());
            long uuidTime = ((msb & 0x0FFFL) << 48) | (((msb >>> 16) & 0xFFFFL) << 32) | (msb >>> 32);
            return Math.floorDiv(uuidTime - UUID_EPOCH_OFFSET, 10_000);
        }

        /** 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch */
        static final long UUID_EPOCH_OFFSET = 0x01B21DD213814000L;

        /** The version a task takes: the least multiple of {@link #SPACING} that is at least {@code candidate}. */
        public static long versionAtLeast(long candidate)
        {
            return Math.floorDiv(candidate + SPACING - 1, SPACING) * SPACING;
        }
    }

    /**
     * A companion flow's task (docs/design.md, "A fan-out that follows its table"): its source is the fan-out table of
     * {@link #target}, a fan-out of flow {@link #flow} whose source is {@link #source}; a change of a fan-out row
     * writes or deletes the target rows of every source row its join index ({@link #index}) lists under the match.
     */
    public static final class Follows
    {
        public final String flow;
        public final Source source;
        public final Target index;
        public final Target target;

        Follows(String flow, Source source, Target index, Target target)
        {
            this.flow = flow;
            this.source = source;
            this.index = index;
            this.target = target;
        }
    }

    /**
     * A total kept from a lineage target's rows (docs/design.md, "Aggregates"): the target is the flow's
     * <i>members</i> table, one row per source row, partitioned by the group; each task that changes a group's members
     * recomputes the group's row of {@link #table} from the whole members partition, under a version of the group.
     */
    public static final class Aggregate
    {
        public final String keyspace;
        public final String table;
        /** the aggregate table's primary key columns, each to the members partition key column it equals */
        public final Map<String, String> group;
        public final List<String> partitionKey;
        public final List<String> clustering;
        /** the column counting the group's rows; null: none */
        public final String count;
        /** aggregate column to the members column it sums, takes the least of, the greatest of */
        public final Map<String, String> sum;
        public final Map<String, String> min;
        public final Map<String, String> max;

        Aggregate(String keyspace, String table, Map<String, String> group, List<String> partitionKey, List<String> clustering,
                  String count, Map<String, String> sum, Map<String, String> min, Map<String, String> max)
        {
            this.keyspace = keyspace;
            this.table = table;
            this.group = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(group));
            this.partitionKey = List.copyOf(partitionKey);
            this.clustering = List.copyOf(clustering);
            this.count = count;
            this.sum = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(sum));
            this.min = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(min));
            this.max = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(max));
        }

        public List<String> primaryKey()
        {
            List<String> all = new java.util.ArrayList<>(partitionKey);
            all.addAll(clustering);
            return all;
        }

        /** Every column of the aggregate table the flow writes, key first. */
        public List<String> columns()
        {
            List<String> all = primaryKey();
            if (count != null)
                all.add(count);
            all.addAll(sum.keySet());
            all.addAll(min.keySet());
            all.addAll(max.keySet());
            return all;
        }
    }

    public static final class Target
    {
        public final int index;
        public final String keyspace;
        public final String table;
        public final List<String> partitionKey;
        public final List<String> clustering;
        /** target column to expression, in spec order */
        public final Map<String, Expression> columns;
        public final Fanout fanout;
        public final Mode mode;
        /**
         * lineage mode: the non-key source columns the target's rows depend on (its key, or its fan-out's match);
         * their values at a write are the "image" a lineage entry records, from which the rows are recomputed
         */
        public final List<String> lineageColumns;
        /** the total this target's rows keep (it is then the aggregate's members table); null: none */
        public final Aggregate aggregate;
        /** the target is the join index of a fan-out that follows its table ({@link Follow}) */
        public final boolean joinIndex;
        private final List<String> primaryKey;

        Target(int index, String keyspace, String table, List<String> partitionKey, List<String> clustering,
               Map<String, Expression> columns, Fanout fanout, Mode mode, List<String> lineageColumns)
        {
            this(index, keyspace, table, partitionKey, clustering, columns, fanout, mode, lineageColumns, null, false);
        }

        Target(int index, String keyspace, String table, List<String> partitionKey, List<String> clustering,
               Map<String, Expression> columns, Fanout fanout, Mode mode, List<String> lineageColumns, Aggregate aggregate,
               boolean joinIndex)
        {
            this.aggregate = aggregate;
            this.joinIndex = joinIndex;
            this.lineageColumns = List.copyOf(lineageColumns);
            this.index = index;
            this.keyspace = keyspace;
            this.table = table;
            this.partitionKey = List.copyOf(partitionKey);
            this.clustering = List.copyOf(clustering);
            this.columns = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(columns));
            this.fanout = fanout;
            this.mode = mode;
            this.primaryKey = keyOf(this.partitionKey, this.clustering);
        }

        /** The partition key's columns, then the clustering's (unmodifiable: read for every derived row). */
        public List<String> primaryKey()
        {
            return primaryKey;
        }

        /**
         * An aggregate's members or a join index: rows other tasks read by a quorum, so written (and deleted) at the
         * lineage level, not the flow's.
         */
        public boolean isIndex()
        {
            return aggregate != null || joinIndex;
        }

        /** Whether every column of the target's primary key has a value, from the source row or the fan-out row. */
        public boolean keyKnownIn(Map<String, ByteBuffer> values, Map<String, ByteBuffer> fanoutRow)
        {
            for (String column : primaryKey())
                if (columns.get(column).valueIn(values, fanoutRow) == null)
                    return false;
            return true;
        }

        @Override
        public String toString()
        {
            return "target " + index + " (" + keyspace + '.' + table + ')';
        }
    }

    /** What augment does when the flow's queue is full (docs/design.md, "Full queues"). */
    public static final class Overflow
    {
        public enum Policy { BLOCK, SPILL, DISCARD, ELASTIC }

        public final Policy policy;
        public final long blockTimeoutMillis;
        /** elastic: the pool's upper bound; at least {@code queue.workers} */
        public final int maxWorkers;

        Overflow(Policy policy, long blockTimeoutMillis, int maxWorkers)
        {
            this.policy = policy;
            this.blockTimeoutMillis = blockTimeoutMillis;
            this.maxWorkers = maxWorkers;
        }
    }

    /** Replica backup maps (docs/design.md, "Replica backup maps") */
    public static final class Backup
    {
        public static final Backup DEFAULT = new Backup(true, 300_000);

        /** when false the flow's tasks live in their executor's memory only (a crash loses them) */
        public final boolean enabled;
        /** entries older than this are executed by their first live replica, whoever their master */
        public final long safetyNetMillis;

        Backup(boolean enabled, long safetyNetMillis)
        {
            this.enabled = enabled;
            this.safetyNetMillis = safetyNetMillis;
        }
    }

    public final String name;
    public final long version;
    public final Source source;
    public final Set<Operation> events;
    public final ConsistencyLevel readConsistency;
    public final ConsistencyLevel writeConsistency;
    public final int queueCapacity;
    public final int workers;
    public final int pageSize;
    /**
     * a task starts no sooner than this after its executor applied the write: the report's master queues tasks only
     * after the replicas acknowledged (Figure 4, M2 before M4); the delay lets the write finish on the other replicas
     * first instead of competing with its own fan-out
     */
    public final int startDelayMillis;
    /** how a failed task is retried before it becomes a dead letter */
    public final RetryPolicy retry;
    public final Overflow overflow;
    public final Backup backup;
    /** null for declarative flows */
    public final String handler;
    public final List<Target> targets;
    /** a companion flow's task (its targets are empty); null for every other flow */
    public final Follows follows;

    FlowSpec(String name, long version, Source source, Set<Operation> events, ConsistencyLevel readConsistency,
             ConsistencyLevel writeConsistency, int queueCapacity, int workers, int pageSize, int startDelayMillis,
             RetryPolicy retry, Overflow overflow, Backup backup, String handler, List<Target> targets, Follows follows)
    {
        this.follows = follows;
        this.backup = backup;
        this.overflow = overflow;
        this.startDelayMillis = startDelayMillis;
        this.retry = retry;
        this.name = name;
        this.version = version;
        this.source = source;
        this.events = java.util.Collections.unmodifiableSet(java.util.EnumSet.copyOf(events));
        this.readConsistency = readConsistency;
        this.writeConsistency = writeConsistency;
        this.queueCapacity = queueCapacity;
        this.workers = workers;
        this.pageSize = pageSize;
        this.handler = handler;
        this.targets = List.copyOf(targets);
    }

    /**
     * The non-key source columns this flow's tasks carry the values of: those its targets map, its fan-outs match on
     * and its lineage is computed from; null for a flow with a Java handler (every column). What ctl puts in the capture
     * index's options ({@code columns}). Worked out once: the coordinator's trigger asks on every write.
     */
    public Set<String> capturedColumns()
    {
        java.util.Optional<Set<String>> known = captured;
        if (known == null)
            captured = known = java.util.Optional.ofNullable(handler != null ? null : Collections.unmodifiableSet(columnsCaptured()));
        return known.orElse(null);
    }

    /** {@link #capturedColumns}, once worked out (a race works it out twice, alike) */
    private volatile java.util.Optional<Set<String>> captured;

    private Set<String> columnsCaptured()
    {
        Set<String> used = new java.util.HashSet<>();
        if (follows != null)
            used.addAll(follows.target.fanout.columns); // the fan-out table's columns the target copies
        for (Target target : targets)
        {
            for (Expression e : target.columns.values())
                if (e.scope == Expression.Scope.SOURCE)
                    used.add(e.column);
            if (target.fanout != null)
                for (Expression e : target.fanout.match.values())
                    used.add(e.column);
            used.addAll(target.lineageColumns);
        }
        used.removeAll(source.primaryKey());
        return used;
    }

    /** Whether a fan-out of this flow follows its table: its versions are then spaced ({@link Follow#SPACING}). */
    public boolean following()
    {
        for (Target target : targets)
            if (target.fanout != null && target.fanout.follow != null)
                return true;
        return false;
    }

    public boolean handles(Operation op)
    {
        return events.contains(op);
    }

    public boolean isOn(String keyspace, String table)
    {
        return source.keyspace.equals(keyspace) && source.table.equals(table);
    }
}
