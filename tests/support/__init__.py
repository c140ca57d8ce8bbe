"""The harness the tests (and bench/, tools/) import: servers, the differential diff and AOF diff, the fuzz generator, the pipeline fixtures."""
