"""What users run: the `sizing` CLI (cli), the one-machine demo stack (`demo`, a package; `stackstate`) and the HTML
report (report). Built on the core and the adapters; no Airflow imports (the demo talks to Airflow over REST,
through adapters.airflowapi) and no raw HTTP (import contract apps-no-raw-http)."""
