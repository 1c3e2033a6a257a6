"""A fault campaign in Jepsen's shape (``ctl chaos``): load + nemesis + checker, many short seeded runs.

- ``workload``: the schema and flows under test (a direct write, a fan-out that follows a power-law follower graph
  with a celebrity of 10,000+ followers, a cascade, an aggregate), the seeded inputs of a run (tweets, follows and
  unfollows), and the clients that write them, open loop, retrying a failed write with a new timestamp as real
  drivers do;
- ``nemesis``: the faults (kill -9, graceful stop, a quick kill and restart before conviction, a node down for
  60 s, two faults in a row, every node restarted) and a run's seeded schedule of them;
- ``campaign``: the runs: a fault-free reference first, then faulty runs, each healed, drained and checked by
  Spark (``async_triggers.spark_jobs.chaos_check``: missing and unexpected rows per flow, equality with the reference run);
  one line per run, a summary, the evidence of a failing run kept in its folder.
"""
