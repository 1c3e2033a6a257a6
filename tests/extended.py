"""The extended suite (`make test-extended`, marker ``extended``): cluster tests that try again, harder or in another
shape, a guarantee the default suite (`make test`) already checks, moved out so that `make test` stays near 30 minutes
on a 2-core machine. Each entry says which default test keeps its guarantee in `make test`. Nothing here is a known
failure: the extended suite must pass as the default one does (tests/unit/test_extended_suite.py checks that every
name below exists, so that a renamed test cannot drop out of both suites unnoticed)."""
from __future__ import annotations

CHAOS = "test_chaos.py's short campaign (every node restarted, a JVM paused, a node cut off, a kill -9)"
FUZZ = "test_fuzz.py's short differential run (every write shape, a replica stopped)"

EXTENDED: dict[str, str] = {
    # whole modules that make a cluster of their own: ctl cluster's commands are used by every cluster test
    "test_cluster_integration.py::*": "every cluster test starts its cluster with ctl cluster; kill and restart: " + CHAOS,
    "test_own_cluster.py::*": "also `make test-own-cluster` (2+2 nodes); the bundle's contents: tests/unit",
    "test_spark_cluster.py::*": "the same jobs on local Spark: tests/spark and every `ctl verify` of the default suite",
    # faults: the short campaign draws the same faults under load and checks every row
    "test_faults.py::test_should_take_over_the_tasks_of_an_executor_killed_after_the_acks": CHAOS,
    "test_faults.py::test_should_resume_a_fan_out_from_its_recorded_position_when_its_master_dies": CHAOS,
    "test_faults.py::test_should_lose_nothing_when_a_replica_stops_during_writes_and_drain_the_backup_maps": CHAOS,
    "test_faults.py::test_should_lose_no_pending_task_when_every_node_restarts": CHAOS,
    "test_cascades_and_races.py::test_should_carry_a_cascade_through_a_kill_9_of_an_executor":
        CHAOS + "; test_should_carry_every_write_through_a_cascade",
    # write shapes and convergence: the differential run draws them at random
    "test_cascades_and_races.py::test_should_converge_on_the_last_write_of_tweets_written_four_times_in_shuffled_order":
        FUZZ + "; test_index_flow.py's out-of-order tests",
    "test_index_flow.py::test_should_converge_when_tasks_are_re_executed": FUZZ + " (a task re-run: " + CHAOS + ")",
    "test_write_shapes.py::test_should_index_the_current_name_when_the_email_changes_on_a_replica_that_missed_the_rename":
        FUZZ,
    # schema changes: the refusals and the columns no flow uses stay; dead letters and repair have their own tests
    "test_schema_changes.py::test_should_dead_letter_what_a_dropped_target_column_refuses_and_repair_it_once_added_back":
        "test_dead_letters.py; test_index_flow.py's verify and repair",
    "test_schema_changes.py::test_should_repair_what_a_truncate_of_a_target_or_of_the_source_leaves":
        "test_index_flow.py's verify and repair",
    "test_schema_changes.py::test_should_dead_letter_the_tasks_of_a_dropped_target_and_retry_them_into_its_new_table":
        "test_dead_letters.py (a letter retried on a live node)",
    "test_schema_changes.py::test_should_let_the_flows_of_a_dropped_source_be_dropped_and_refuse_their_redeploy":
        "test_deploy_cluster.py (an invalid flow refused, the cluster unchanged); test_pause.py (drop)",
    # backfill: the fan-out backfill stays
    "test_aggregates.py::test_should_backfill_again_after_the_flow_is_dropped_and_deployed_again":
        "test_aggregates.py::test_should_backfill_an_aggregate_deployed_over_existing_rows; tests/unit/"
        "test_backfill_ring.py (a run of an earlier deploy is not resumed)",
    "test_backfill.py::test_should_resume_a_crashed_backfill_and_converge_with_racing_live_updates":
        "test_backfill.py::test_should_deploy_and_backfill_a_fan_out_flow",
}


def is_extended(file_name: str, test_name: str) -> bool:
    """Whether the test ``test_name`` (parameters left out) of ``file_name`` belongs to the extended suite."""
    return f"{file_name}::*" in EXTENDED or f"{file_name}::{test_name}" in EXTENDED
