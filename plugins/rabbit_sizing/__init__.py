"""Airflow hooks and operators of rabbit-sizing. Thin wrappers over the core package `sizing`."""
