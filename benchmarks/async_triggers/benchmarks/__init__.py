"""Benchmarks of the report's experiments: the report's published numbers (``reference``), the results
schema (``results``), the report generator (``report``), a private RabbitMQ node (``broker``) and the three
applications (``apps``). The open-loop load generator is a Spark job: ``async_triggers.spark_jobs.loadgen``."""
