"""The profile breakdown of benchmarks/async_triggers/benchmarks/harness/jfr_profile.py: which samples are the write path's, which of them
the plugin's capture (named by the hook Cassandra called and the innermost frame of ours), which its background work
(a worker's derived writes included), which its capture after the write (the capture stage)."""
from async_triggers.benchmarks.harness.jfr_profile import Breakdown

INDEXER = "org.asynctriggers.CaptureIndex$Indexer.insertRow"
EXTRACT = "org.asynctriggers.capture.TaskExtractor.extract"
APPLY = "org.apache.cassandra.db.Keyspace.applyInternal"
STATEMENT = "org.apache.cassandra.cql3.statements.ModificationStatement.executeWithoutCondition"


def test_should_count_the_plugins_share_of_the_write_path_by_hook_and_innermost_frame():
    b = Breakdown()
    b.add(["java.nio.ByteBuffer.get", EXTRACT, INDEXER, "org.apache.cassandra.index.SecondaryIndexManager.x", APPLY])
    b.add(["org.apache.cassandra.db.memtable.Trie.put", APPLY])
    b.add(["org.apache.cassandra.net.Message.serialize", "org.apache.cassandra.service.StorageProxy.mutate", STATEMENT])
    b.add(["org.asynctriggers.execute.FanoutPages.next", "org.asynctriggers.work.TaskProcessor.accept",
           "java.lang.Thread.run"])
    # a worker's derived write goes through Cassandra's statement too: the plugin's background work, not the path
    b.add(["org.apache.cassandra.db.Keyspace.applyInternal", STATEMENT, "org.asynctriggers.cql.QueryProcessorGateway.execute",
           "org.asynctriggers.work.WorkerPool.lambda$newWorker$0"])
    b.add(["java.lang.Thread.sleep"])
    # the capture stage's thread, once the write is done: the capture, off the write path
    b.add(["org.asynctriggers.backup.BackupTable.applyLocally", "org.asynctriggers.capture.WriteCapture$1.run",
           "org.asynctriggers.capture.CaptureStage.runForever", "java.lang.Thread.run"])
    assert (b.samples, b.write_path, b.plugin_in_write_path, b.plugin_background, b.capture_after_write) == (7, 3, 1, 2, 1)
    assert b.after_write_by_leaf == {"org.asynctriggers.backup.BackupTable.applyLocally": 1}
    assert b.by_hook == {INDEXER: 1} and b.by_leaf == {EXTRACT: 1}
    assert b.background_by_leaf == {"org.asynctriggers.execute.FanoutPages.next": 1,
                                    "org.asynctriggers.cql.QueryProcessorGateway.execute": 1}
    assert abs(b.share() - 1 / 3) < 1e-9
    assert "of which the plugin's: 1 (33.3%)" in b.text()
    assert "its capture after the write (the capture stage): 1" in b.text()
