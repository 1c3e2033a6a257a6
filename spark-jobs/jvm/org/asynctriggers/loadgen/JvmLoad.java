package org.asynctriggers.loadgen;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.ColumnDefinitions;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.spark.connector.cql.CassandraConnector;
import com.datastax.spark.connector.cql.CassandraConnector$;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import scala.collection.Iterator;
import scala.collection.JavaConverters;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * The load generator's JVM sender (started from PySpark, {@code spark_jobs/jvm_sender.py}): the same open-loop
 * schedule as the Python tasks, sent through the Java driver the Spark Cassandra Connector ships, because the Python
 * driver in one Spark task per core could not offer three times the highest rate an experiment asks for on this
 * machine. Python computes every request (its time in the schedule and its values) and the connection settings; the
 * tasks run as one barrier stage, open a session through the connector, agree on a common start
 * ({@code allGather}), send with {@link Dispatcher} and hand back their records, encoded for Python to decode.
 * <p>
 * A plan is big-endian: the request count, then per request its offset from the start (seconds, double) and, for
 * {@link #TWEET}, {@link #FANOUT} and {@link #PUBLISH}, the author (int), the time UUID's node (long) and clock sequence (int), the body (int length, UTF-8).
 * A task's records: the count, then per request seq (int), scheduled, sent, acked (doubles, NaN: none), status, late,
 * waited (bytes) and the error (int length, UTF-8).
 */
public final class JvmLoad
{
    /** {@code INSERT ... (tweet_id, author_id, body, created_at)}: a time UUID of the scheduled time, the author, body, time */
    public static final int TWEET = 1;
    /** a statement without values ({@code SELECT release_version FROM system.local}) */
    public static final int QUERY = 2;
    /** a {@link #TWEET} and its fan-out, answered when every timeline row is written: the synchronous application */
    public static final int FANOUT = 3;
    /** a {@link #TWEET} and its message to a queue, answered when the broker confirmed it: the external-queue application */
    public static final int PUBLISH = 4;

    private JvmLoad()
    {
    }

    /**
     * Runs one task per plan, all at once, and returns each task's encoded records, in task order.
     * @param cassandra the connector's settings ({@code spark.cassandra.*}) over the context's own: where to connect
     * @param dropAfterS negative: no request is dropped
     * @param options for {@link #FANOUT}: {@code followers} (the query of an author's followers), {@code timeline}
     *                (the insert of a timeline row: user, tweet id, author, body), {@code read_consistency} and
     *                {@code concurrency} (rows in flight per tweet); for {@link #PUBLISH}: {@code url} (the broker's
     *                AMQP URL) and {@code queue}; ignored otherwise
     */
    public static List<byte[]> run(JavaSparkContext jsc, Map<String, String> cassandra, List<byte[]> plans, int kind,
                                   String cql, String consistency, int inFlight, double lateAfterS, double dropAfterS,
                                   double retryS, double startDelayS, Map<String, String> options)
    {
        if (kind < TWEET || kind > PUBLISH)
            throw new IllegalArgumentException("unknown request kind " + kind);
        DefaultConsistencyLevel.valueOf(consistency);   // a bad level fails here, not in every task
        Map<String, String> checked = RequestOptions.check(kind, options);
        SparkConf conf = jsc.getConf().clone();
        cassandra.forEach(conf::set);
        CassandraConnector connector = CassandraConnector$.MODULE$.apply(conf);
        List<Integer> tasks = new ArrayList<>();
        for (int i = 0; i < plans.size(); i++)
            tasks.add(i);
        Task task = new Task(connector, plans.toArray(new byte[0][]), kind, cql, consistency, inFlight, lateAfterS,
                             dropAfterS, retryS, startDelayS, new java.util.HashMap<>(checked));
        RDD<Integer> rdd = jsc.parallelize(tasks, plans.size()).rdd();
        return rdd.barrier().mapPartitions(task, false, ClassTag$.MODULE$.<byte[]>apply(byte[].class)).toJavaRDD().collect();
    }

    /** One barrier task: its plan sent through a session of the connector. */
    static final class Task extends AbstractFunction1<Iterator<Integer>, Iterator<byte[]>> implements Serializable
    {
        private static final long serialVersionUID = 1L;
        private final CassandraConnector connector;
        private final byte[][] plans;
        private final int kind;
        private final String cql;
        private final String consistency;
        private final int inFlight;
        private final double lateAfterS, dropAfterS, retryS, startDelayS;
        private final java.util.HashMap<String, String> options;

        Task(CassandraConnector connector, byte[][] plans, int kind, String cql, String consistency, int inFlight,
             double lateAfterS, double dropAfterS, double retryS, double startDelayS, java.util.HashMap<String, String> options)
        {
            this.options = options;
            this.connector = connector;
            this.plans = plans;
            this.kind = kind;
            this.cql = cql;
            this.consistency = consistency;
            this.inFlight = inFlight;
            this.lateAfterS = lateAfterS;
            this.dropAfterS = dropAfterS;
            this.retryS = retryS;
            this.startDelayS = startDelayS;
        }

        @Override
        public Iterator<byte[]> apply(Iterator<Integer> ignored)
        {
            BarrierTaskContext ctx = BarrierTaskContext.get();
            Plan plan = Plan.decode(plans[ctx.partitionId()], kind);
            try (CqlSession session = connector.openSession(); Retrying retrying = new Retrying(session, retryS);
                 QueuePublish queue = kind != PUBLISH ? null : new QueuePublish(retrying, options.get("url"), options.get("queue")))
            {
                PreparedStatement prepared = session.prepare(cql);
                DefaultConsistencyLevel level = DefaultConsistencyLevel.valueOf(consistency);
                SyncFanout fanOut = kind != FANOUT ? null : new SyncFanout(
                    session, retrying, options.get("followers"), options.get("timeline"),
                    DefaultConsistencyLevel.valueOf(options.get("read_consistency")), level,
                    Integer.parseInt(options.get("concurrency")));
                Dispatcher dispatcher = new Dispatcher(inFlight, lateAfterS, dropAfterS);
                warmUp(session);
                double startAt = Double.NEGATIVE_INFINITY;
                for (String ready : ctx.allGather(Double.toString(dispatcher.now())))
                    startAt = Math.max(startAt, Double.parseDouble(ready));
                double[] due = new double[plan.offsets.length];
                for (int i = 0; i < due.length; i++)
                    due[i] = startAt + startDelayS + plan.offsets[i];
                Dispatcher.Record[] records = dispatcher.send(due, i -> {
                    Object[] values = plan.values(prepared, i, due[i]);
                    Statement<?> statement = prepared.bind(values).setConsistencyLevel(level);
                    if (fanOut != null)
                        return fanOut.start(statement, values);
                    if (queue != null)
                        return queue.start(statement, values, (long) Math.floor(due[i] * 1000));
                    return retrying.execute(statement);
                });
                return JavaConverters.asScalaIterator(Collections.singletonList(encode(records)).iterator());
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("the load generator's task was interrupted", e);
            }
            catch (Exception e)   // the broker could not be reached: the run cannot start
            {
                throw new IllegalStateException("the load generator's task could not start: " + e, e);
            }
        }
    }

    /**
     * Before the schedule starts: {@link #WARM_UP} queries that change nothing, {@link #WARM_UP_IN_FLIGHT} at a time, so
     * that the driver's request path is loaded and compiled. A fresh JVM sent its first 2,000 requests/s up to 1.9 s
     * late (measured here: class loading and the interpreter), and at that rate on time from its second run on.
     */
    static void warmUp(CqlSession session) throws InterruptedException
    {
        java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(WARM_UP_IN_FLIGHT);
        com.datastax.oss.driver.api.core.cql.SimpleStatement query =
            com.datastax.oss.driver.api.core.cql.SimpleStatement.newInstance("SELECT release_version FROM system.local");
        PreparedStatement prepared = session.prepare(query);
        for (int i = 0; i < WARM_UP; i++)
        {
            slots.acquire();
            session.executeAsync(prepared.bind()).whenComplete((rows, error) -> slots.release());
        }
        slots.acquire(WARM_UP_IN_FLIGHT);
    }

    static final int WARM_UP = 5_000;
    static final int WARM_UP_IN_FLIGHT = 64;

    /** A task's requests: when each goes out, and for tweets what it writes. */
    static final class Plan
    {
        final double[] offsets;
        final int[] authors;
        final long[] nodes;
        final int[] clockSeqs;
        final String[] bodies;

        private Plan(int n, boolean tweets)
        {
            offsets = new double[n];
            authors = tweets ? new int[n] : null;
            nodes = tweets ? new long[n] : null;
            clockSeqs = tweets ? new int[n] : null;
            bodies = tweets ? new String[n] : null;
        }

        static Plan decode(byte[] bytes, int kind)
        {
            try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes)))
            {
                int n = in.readInt();
                Plan plan = new Plan(n, kind != QUERY);
                for (int i = 0; i < n; i++)
                {
                    plan.offsets[i] = in.readDouble();
                    if (kind == QUERY)
                        continue;
                    plan.authors[i] = in.readInt();
                    plan.nodes[i] = in.readLong();
                    plan.clockSeqs[i] = in.readInt();
                    byte[] body = new byte[in.readInt()];
                    in.readFully(body);
                    plan.bodies[i] = new String(body, StandardCharsets.UTF_8);
                }
                return plan;
            }
            catch (IOException e)
            {
                throw new UncheckedIOException("a load generator plan is truncated or corrupt", e);
            }
        }

        /**
         * Request {@code i}'s values (none for a query), each as the statement declares its column: an author as int
         * or bigint, a time as timestamp or bigint.
         */
        Object[] values(PreparedStatement prepared, int i, double due)
        {
            if (authors == null)
                return new Object[0];
            ColumnDefinitions columns = prepared.getVariableDefinitions();
            long millis = (long) Math.floor(due * 1000);
            Object author = columns.get(1).getType().equals(DataTypes.INT) ? (Object) authors[i] : (Object) (long) authors[i];
            Object created = columns.get(3).getType().equals(DataTypes.BIGINT) ? (Object) millis : Instant.ofEpochMilli(millis);
            return new Object[] {timeUuid(due, nodes[i], clockSeqs[i]), author, bodies[i], created};
        }
    }

    /** The version 1 UUID of epoch seconds {@code at} (100 ns steps since 1582-10-15), with this node and clock sequence. */
    static UUID timeUuid(double at, long node, int clockSeq)
    {
        long t = (long) Math.floor(at * 1e7) + 0x01B21DD213814000L;
        long msb = (t << 32) | ((t >>> 16) & 0xFFFF0000L) | 0x1000L | ((t >>> 48) & 0x0FFFL);
        long lsb = ((0x8000L | (clockSeq & 0x3FFFL)) << 48) | (node & 0xFFFFFFFFFFFFL);
        return new UUID(msb, lsb);
    }

    static byte[] encode(Dispatcher.Record[] records)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(records.length * 40 + 4);
        try (DataOutputStream out = new DataOutputStream(bytes))
        {
            out.writeInt(records.length);
            for (Dispatcher.Record r : records)
            {
                out.writeInt(r.seq);
                out.writeDouble(r.scheduled);
                out.writeDouble(r.status == Dispatcher.DROPPED ? Double.NaN : r.sent);
                out.writeDouble(r.acked);
                out.writeByte(r.status);
                out.writeByte(r.late ? 1 : 0);
                out.writeByte(r.waited ? 1 : 0);
                byte[] error = r.errorBytes();
                out.writeInt(error.length);
                out.write(error);
            }
        }
        catch (IOException e)
        {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}
