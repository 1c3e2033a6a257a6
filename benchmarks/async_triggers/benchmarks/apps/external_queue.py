"""The external-queue application (the report's baseline, Kestrel there, RabbitMQ here).

The request path writes the tweet to Cassandra and, in parallel, publishes it to a durable queue as a persistent
message with publisher confirms; it acknowledges when both are confirmed. Separate worker processes consume with
manual acknowledgements and a prefetch window, fan each tweet out to its author's and followers' timelines, then
acknowledge it: a worker that dies before acknowledging leaves the message to be redelivered (at least once; the
timeline writes are idempotent).

    python -m async_triggers.benchmarks.apps.external_queue worker --url amqp://guest:guest@127.0.0.1:35672/%2F \\
        --writer MODULE:FACTORY [--writer-arg key=value ...] [--prefetch 50] [--record done.csv]

Cassandra is reached only through a :class:`~async_triggers.benchmarks.apps.tweets.TweetStore` (request path) and a
:class:`~async_triggers.benchmarks.apps.tweets.FanOutWriter` (workers), made by factories named on the command line or passed in.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

from async_triggers.benchmarks.apps.tweets import TWEET_BYTES, FanOutWriter, MessageError, Tweet, TweetSource, TweetStore, decode, \
    encode  # noqa: E402
from async_triggers.benchmarks.errors import BenchError, BrokerError  # noqa: E402

DEFAULT_QUEUE = "tweets"
DEFAULT_PREFETCH = 50
HEARTBEAT_S = 600   # a celebrity's fan-out holds the worker's only thread for seconds: no heartbeat is missed


class PublishError(BrokerError):
    """The broker did not confirm a message (returned as unroutable, or nacked)."""


def _pika():
    try:
        import pika
    except ImportError:
        raise BenchError("the external-queue application needs pika: make bench-deps "
                         "(pip install -e '.[bench]')") from None
    return pika


def _shown(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{parts.username + '@' if parts.username else ''}{host}:{parts.port or 5672}{parts.path}"


def connect(url: str):
    """A blocking connection, or :class:`BrokerError` saying which broker could not be reached."""
    pika = _pika()
    params = pika.URLParameters(url)
    params.heartbeat = HEARTBEAT_S
    params.blocked_connection_timeout = 60
    params.connection_attempts = 1
    try:
        return pika.BlockingConnection(params)
    except pika.exceptions.AMQPError as e:
        raise BrokerError(f"cannot connect to the broker at {_shown(url)}: {type(e).__name__}: {e}") from e


def declare(channel, queue: str):
    """The queue, durable (it survives a broker restart with its persistent messages)."""
    return channel.queue_declare(queue=queue, durable=True)


def queue_depth(url: str, queue: str = DEFAULT_QUEUE) -> int:
    """Messages ready in ``queue`` (not counting those delivered and not yet acknowledged)."""
    conn = connect(url)
    try:
        return declare(conn.channel(), queue).method.message_count
    finally:
        conn.close()


def purge(url: str, queue: str = DEFAULT_QUEUE) -> int:
    conn = connect(url)
    try:
        ch = conn.channel()
        declare(ch, queue)
        return ch.queue_purge(queue).method.message_count
    finally:
        conn.close()


class Publisher:
    """Publishes persistent messages to a durable queue; :meth:`publish` returns only once the broker confirmed
    the message (publisher confirms), and raises :class:`PublishError` when it did not. One per thread: a pika
    connection is not thread-safe."""

    def __init__(self, url: str, queue: str = DEFAULT_QUEUE):
        self.url, self.queue = url, queue
        self._pika = _pika()
        self._conn = connect(url)
        self._channel = self._conn.channel()
        self._channel.confirm_delivery()
        declare(self._channel, queue)
        self._props = self._pika.BasicProperties(delivery_mode=self._pika.DeliveryMode.Persistent,
                                                 content_type="application/json")

    def publish(self, message: Tweet | bytes) -> None:
        body = encode(message) if isinstance(message, Tweet) else message
        exc = self._pika.exceptions
        try:
            self._channel.basic_publish(exchange="", routing_key=self.queue, body=body, properties=self._props,
                                        mandatory=True)
        except exc.UnroutableError as e:
            raise PublishError(f"the broker at {_shown(self.url)} returned the message: no queue {self.queue!r}") from e
        except exc.NackError as e:
            raise PublishError(f"the broker at {_shown(self.url)} refused (nacked) the message") from e
        except exc.AMQPError as e:
            raise BrokerError(f"publishing to {_shown(self.url)} failed: {type(e).__name__}: {e}") from e

    def close(self) -> None:
        try:
            if self._conn.is_open:
                self._conn.close()
        except Exception:
            pass


class ExternalQueueSender:
    """The request path of one load generator sender: tweet to Cassandra and to the queue in parallel,
    acknowledged when both confirmed."""

    def __init__(self, store: TweetStore, publisher: Publisher, source: TweetSource):
        self.store, self.publisher, self.source = store, publisher, source

    def send(self, request) -> None:
        self.submit(self.source.tweet(request.seq, request.scheduled))

    def submit(self, tweet) -> None:
        pending = self.store.write_tweet_async(tweet)   # in flight while the broker confirms
        self.publisher.publish(tweet)
        pending.result()

    def close(self) -> None:
        self.publisher.close()
        close = getattr(self.store, "close", None)
        if callable(close):
            close()


@dataclasses.dataclass(frozen=True)
class ExternalQueueApp:
    """A sender factory for ``async_triggers.spark_jobs.loadgen`` (picklable: it travels to the Spark tasks).
    ``jvm``: the load generator sends the same requests through the Java driver and RabbitMQ's Java client
    (``spark_jobs/jvm_sender.py``, kind PUBLISH: the tweet written while its message is published and confirmed),
    one request per sender thread as here, when the store is Cassandra's; the lag probe still sends through Python."""
    url: str
    store_factory: Callable[[Any], TweetStore]       # called with the loadgen Slot
    n_users: int
    queue: str = DEFAULT_QUEUE
    body_bytes: int = TWEET_BYTES
    jvm: bool = False

    def __call__(self, slot) -> ExternalQueueSender:
        return ExternalQueueSender(self.store_factory(slot), Publisher(self.url, self.queue),
                                   TweetSource(self.n_users, slot.seed, slot.task, self.body_bytes))

    def jvm_requests(self):
        from async_triggers.benchmarks.apps.cassandra import StoreFactory
        from async_triggers.benchmarks.apps.integrated import tweet_requests
        from async_triggers.spark_jobs.jvm_sender import PUBLISH
        if not self.jvm or not isinstance(self.store_factory, StoreFactory):
            return None
        return tweet_requests(PUBLISH, self.store_factory.target, self.n_users, self.body_bytes,
                              options=(("url", self.url), ("queue", self.queue)), blocking=True)


@dataclasses.dataclass
class WorkerStats:
    delivered: int = 0      # messages received
    acked: int = 0          # fanned out and acknowledged
    redelivered: int = 0    # of the delivered, how many the broker had delivered before (to a worker that died)
    failed: int = 0         # fan-outs that raised: negatively acknowledged, requeued
    rejected: int = 0       # messages that are not tweets: rejected without requeue
    rows: int = 0           # timeline rows written
    last_error: str | None = None


class Worker:
    """Consumes tweets with manual acknowledgements and a prefetch window, fans each out through ``writer``,
    then acknowledges it. ``on_done(tweet, rows, epoch_s)`` is called after each acknowledgement."""

    def __init__(self, url: str, writer: FanOutWriter, queue: str = DEFAULT_QUEUE, prefetch: int = DEFAULT_PREFETCH,
                 on_done: Callable[[Tweet, int, float], None] | None = None):
        if prefetch < 1:
            raise BenchError(f"'prefetch' must be strictly positive, found: {prefetch}")
        self.url, self.writer, self.queue, self.prefetch, self.on_done = url, writer, queue, prefetch, on_done
        self.stats = WorkerStats()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask :meth:`run` to return after the message at hand (from any thread or a signal handler)."""
        self._stop.set()

    def run(self, max_messages: int | None = None, idle_timeout_s: float | None = None) -> WorkerStats:
        """Consume until :meth:`stop`, ``max_messages`` acknowledged, or ``idle_timeout_s`` without a message.
        Messages prefetched but not handled go back to the queue."""
        conn = connect(self.url)
        try:
            ch = conn.channel()
            declare(ch, self.queue)
            ch.basic_qos(prefetch_count=self.prefetch)
            idle_since = time.monotonic()
            failures = 0
            for method, props, body in ch.consume(self.queue, auto_ack=False, inactivity_timeout=0.2):
                if self._stop.is_set() or (max_messages is not None and self.stats.acked >= max_messages):
                    break
                if method is None:
                    if idle_timeout_s is not None and time.monotonic() - idle_since > idle_timeout_s:
                        break
                    continue
                idle_since = time.monotonic()
                self.stats.delivered += 1
                self.stats.redelivered += bool(method.redelivered)
                try:
                    tweet = decode(body)
                except MessageError as e:
                    ch.basic_reject(method.delivery_tag, requeue=False)
                    self.stats.rejected += 1
                    self.stats.last_error = str(e)
                    continue
                try:
                    rows = self.writer.fan_out(tweet)
                except Exception as e:  # the fan-out failed: the message goes back for another try
                    ch.basic_nack(method.delivery_tag, requeue=True)
                    self.stats.failed += 1
                    self.stats.last_error = f"{type(e).__name__}: {e}"
                    failures += 1
                    self._stop.wait(min(1.0, 0.05 * failures))  # do not spin on a failing writer
                    continue
                failures = 0
                ch.basic_ack(method.delivery_tag)
                self.stats.acked += 1
                self.stats.rows += rows
                if self.on_done is not None:
                    self.on_done(tweet, rows, time.time())
                if max_messages is not None and self.stats.acked >= max_messages:
                    break
            ch.cancel()   # prefetched, unhandled messages are requeued
        except _pika().exceptions.AMQPError as e:
            raise BrokerError(f"worker on {_shown(self.url)} lost the broker: {type(e).__name__}: {e}") from e
        finally:
            try:
                if conn.is_open:
                    conn.close()
            except Exception:
                pass
        return self.stats


def null_writer() -> FanOutWriter:
    """A writer that writes nothing: measures the queue and the worker alone (calibration)."""
    class _Null:
        def fan_out(self, tweet: Tweet) -> int:
            return 0
    return _Null()


def _resolve(path: str) -> Callable:
    """``module:factory`` to the writer factory, the way the load generator resolves its senders."""
    from async_triggers.spark_jobs.errors import LoadGenError
    from async_triggers.spark_jobs.loadgen import resolve
    try:
        return resolve(path)
    except LoadGenError as e:
        raise BenchError(str(e).replace("sender", "writer")) from e


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m async_triggers.benchmarks.apps.external_queue",
                                description="A worker of the external-queue application.")
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="consume tweets, fan them out, acknowledge them")
    w.add_argument("--url", required=True, help="AMQP URL of the broker")
    w.add_argument("--queue", default=DEFAULT_QUEUE)
    w.add_argument("--writer", default="async_triggers.benchmarks.apps.external_queue:null_writer", help="module:factory")
    w.add_argument("--writer-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument of the writer factory (repeatable)")
    w.add_argument("--prefetch", type=int, default=DEFAULT_PREFETCH)
    w.add_argument("--max-messages", type=int, default=None)
    w.add_argument("--idle-timeout", type=float, default=None, help="seconds without a message, then exit")
    w.add_argument("--record", type=Path, default=None,
                   help="append tweet_id,done_at,rows per acknowledged tweet (propagation lag)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        kwargs = {}
        for item in args.writer_arg:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise BenchError(f"--writer-arg must be KEY=VALUE, found: {item!r}")
            kwargs[key] = value
        writer = _resolve(args.writer)(**kwargs)
        record = open(args.record, "a", buffering=1) if args.record else None
        on_done = (lambda t, rows, at: record.write(f"{t.tweet_id},{at:.6f},{rows}\n")) if record else None
        worker = Worker(args.url, writer, args.queue, args.prefetch, on_done)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: worker.stop())
        stats = worker.run(args.max_messages, args.idle_timeout)
        if record:
            record.close()
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(dataclasses.asdict(stats)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
