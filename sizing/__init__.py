"""rabbit-sizing core: the pure domain (campaign spec, timelines, cost model, storage layout, record schemas).

Imports no Airflow, pika or pyspark; the DAGs, the load generator and the Spark jobs all build on it.
"""
