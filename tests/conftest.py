"""Shared fixtures live in tests/fixtures/; each module is a pytest plugin."""

pytest_plugins = ["tests.fixtures.s3", "tests.fixtures.cluster", "tests.fixtures.spark", "tests.fixtures.airflow",
                  "tests.fixtures.sparkcluster", "tests.fixtures.tools", "tests.fixtures.lanes"]
