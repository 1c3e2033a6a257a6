"""The CPU-by-approach breakdown: a sample goes to the first category one of its frames belongs to, the plugin's
before Cassandra's, and is counted per 1,000 tweets."""
from async_triggers.benchmarks.experiments import cpu_by_approach as cpu

WORKER_WRITE = ["org.apache.cassandra.service.StorageProxy.mutate", "org.asynctriggers.execute.DerivedRow.write",
                "org.asynctriggers.work.WorkerPool.runWorker"]
CLIENT_WRITE = ["org.apache.cassandra.db.Keyspace.apply", "org.apache.cassandra.service.StorageProxy.mutate",
                "org.apache.cassandra.cql3.statements.ModificationStatement.execute"]
CAPTURE = ["org.asynctriggers.backup.BackupTable.applyLocally", "org.asynctriggers.capture.WriteCapture.finish",
           "org.apache.cassandra.db.Keyspace.apply"]


def test_should_count_a_workers_derived_write_as_the_plugins_and_a_clients_as_cassandras():
    assert cpu.category(WORKER_WRITE) == "the plugin's fan-out and rows"
    assert cpu.category(CLIENT_WRITE) == "a write's apply"
    assert cpu.category(CAPTURE) == "the plugin's capture"
    assert cpu.category(["java.lang.Thread.run"]) == cpu.OTHER


def test_should_count_each_category_per_thousand_tweets():
    total, shares = cpu.per_thousand([WORKER_WRITE, WORKER_WRITE, CLIENT_WRITE, CAPTURE], tweets=2000)
    assert total == 4
    assert shares["the plugin's fan-out and rows"] == 1.0 and shares["a write's apply"] == 0.5
    assert shares["the plugin's capture"] == 0.5 and shares[cpu.OTHER] == 0.0
    assert list(shares)[-1] == cpu.OTHER and len(shares) == len(cpu.CATEGORIES) + 1
    text = cpu.lines("integrated", 600, 30, 2000, 0.99, total, shares)
    assert text[0].startswith("integrated at 600 msg/s for 30 s: 2000 tweets, 0.99 of them propagated")


def test_should_say_when_the_nodes_used_the_whole_machine():
    # 7 Dec 2026: 260.5 CPU-s over a 130 s run on 2 cores, the same for either build
    caveat = cpu.saturation(260.5, 130.0, 2)
    assert caveat is not None and "100% of the machine's 2 cores" in caveat and "not the work a tweet takes" in caveat
    assert cpu.saturation(100.0, 130.0, 2) is None, "38 % of the cores: the figure is the work"
