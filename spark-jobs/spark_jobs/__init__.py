"""PySpark jobs for asynchronous triggers: ``verify`` (check a flow's derived rows) and ``load_twitter``
(generate and load the Twitter follower graph). ``session`` builds a Spark session with the Cassandra connector."""
