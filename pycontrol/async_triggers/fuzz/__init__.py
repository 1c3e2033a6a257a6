"""Differential fuzzing of the flows (``ctl fuzz``), in the spirit of Jepsen's checkers and Hypothesis' stateful
tests: random histories against a model, the model being what each flow's spec derives from the current source.

- ``schema``: the keyspace and flows under test (direct copies, lineage indexes, a fan-out, a cascade; a table with
  a clustering and a static column), every partition key led by the run's id;
- ``generator``: seeded histories of every CQL write shape, with coordinators, consistency levels, explicit and
  equal timestamps, and a replica stopped in about a third of them (the same seed, the same history);
- ``runner``: one run of a history on the cluster, healed, read-repaired, drained and checked;
- ``oracle``: the check, by the verify job's API (0 missing, 0 unexpected, 0 wrong values per flow);
- ``shrinker``: delta debugging of a failing history down to the operations that still fail;
- ``campaign``: the seeds, one line each, the evidence of a failing one, a summary counting every shape.
"""
