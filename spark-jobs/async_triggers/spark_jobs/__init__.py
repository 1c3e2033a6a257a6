"""PySpark jobs for asynchronous triggers: ``verify`` (the oracle: compare a flow's target tables with what its
sources imply, and repair them: ``derive``, ``compare``, ``verify_run``, ``verify_progress``, ``repair``,
``verify_report``), ``backfill`` (apply a flow to existing rows) and ``load_twitter`` (generate and load the Twitter
follower graph). ``session`` builds a Spark session with the Cassandra connector."""
