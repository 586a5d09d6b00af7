# The README's two commands are `make demo` and `make test`; everything else is for developers.
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup demo stop test test-fast lint fmt lock clean

setup:            ## install system packages and the pinned virtualenv (idempotent)
	scripts/bootstrap.sh

demo: setup       ## run the local-quick campaign end to end and print the leaderboard
	$(PY) -m app.cli demo

stop:             ## stop everything `make demo` started; stored results stay (`make clean` deletes them)
	$(PY) -m app.cli demo --stop

# Two passes: the tests that start no broker two at a time (pytest-xdist, one worker per core, each module on one
# worker); then the `cluster` tests two at a time too, but an `alone` test (it measures a rate or a CPU share) with
# nothing beside it: a lock shared by both workers sees to that (tests/fixtures/lanes.py). Before each pass, with
# nothing else running, this host's calibration (a measurement too) if it has no fresh one: a test that admits a
# campaign would otherwise take it beside the other worker's test.
test: setup       ## the whole suite, as CI runs it (tests/README.md)
	$(PY) -m app.cli calibrate --if-stale || echo "no calibration now: the runs that need one measure it"; \
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=30 -m "not cluster and not alone"; side_by_side=$$?; \
	$(PY) -m app.cli calibrate --if-stale || echo "no calibration now: the runs that need one measure it"; \
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=50 -m "cluster or alone"; alone=$$?; \
	test $$side_by_side -eq 0 -a $$alone -eq 0

test-fast:        ## pure unit tests only: no RabbitMQ, Spark, Airflow, browser, nor outside tool or server (tests/README.md)
	$(PY) -m pytest -m "not cluster and not spark and not airflow and not browser and not tools"

lint:            ## ruff, import contracts (pyproject.toml [tool.importlinter]), terraform fmt
	$(VENV)/bin/ruff check .
	PYTHONPATH=.:plugins $(VENV)/bin/lint-imports
	terraform fmt -check -recursive terraform

fmt:
	$(VENV)/bin/ruff check --fix .
	terraform fmt -recursive terraform

lock:             ## re-pin requirements/lock.txt from requirements/base.in
	uv pip compile requirements/base.in -o requirements/lock.txt --python-version 3.11

clean:           ## stop the demo, then delete its state: stored results (the local S3 store), Airflow DB, logs
	@if [ -x $(PY) ]; then $(PY) -m app.cli demo --clean; \
	else echo "deleting .state (stored results, Airflow DB, logs)"; rm -rf .state; fi
	rm -rf build artifacts
