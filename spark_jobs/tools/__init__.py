"""Developer tools on the Spark library: `synthetic` (raw records in the loadgen layout, for tests and
benchmarks) and `classarchive` (the driver JVM's class-data-sharing archive that setup builds)."""
