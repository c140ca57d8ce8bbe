"""The Spark data source for streams (raxdb.spark): its parts directly, and inside Spark jobs."""
