"""Example pipeline: page-view events XADDed into a stream -> a Structured Streaming job counts
views per page per minute -> the counts go back to raxdb (one hash per window) and to Parquet.

    python -m raxdb.spark.examples            # produce events, run the job once (AvailableNow), show
    python -m raxdb.spark.examples.produce    # only produce events
    python -m raxdb.spark.examples.windowed_counts [--continuous]   # only the job

See pipeline/README.md ("The example, end to end").
"""
