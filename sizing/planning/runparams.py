"""The params of one `sizing_campaign` run, declared once: the DAG's `Param`s (their JSON schemas), the core's checks
(`RunParams.problems`, which `sizing.planning.runplan.run_problems` extends with the campaign's), the CLI's `trigger`
and `backfill` options and the conf they send are all built from the fields of `RunParams`.

A field's metadata says what kind of value it is; its JSON schema (what Airflow validates when a run is triggered)
and its check (what the task and the CLI report, with every problem and its field path) are both derived from that
kind, and tests/test_run_params.py holds the two to the same verdicts.

Standard library only: the DAG file imports this at parse time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from sizing.documents.fields import NAME, Problem, _got, number_problem

MAX_PARALLEL_CONFIGS = 100  # clusters up at once; the same bound as a budget's parallelism

# The kinds of param value: each has one JSON schema and one check.
SPEC = "spec"  # a spec path or inline YAML: a non-empty string
NAMES = "names"  # a list of names (config ids, scenarios); empty = all
LABEL = "label"  # a run label: it names S3 partitions (sizing.documents.fields.NAME)
CLUSTERS = "clusters"  # clusters up at once: an integer in 1..MAX_PARALLEL_CONFIGS


def _param(default: Any, kind: str, flag: str, description: str, nullable: bool = False) -> Any:
    return field(default=default, metadata={"kind": kind, "flag": flag, "description": description,
                                            "nullable": nullable})


@dataclass(frozen=True)
class RunParams:
    """What a `sizing_campaign` run is asked to do (its conf). Values are kept as given: `problems` says what is
    wrong with them, so that a user sees every problem at once."""

    campaign: str = _param("campaigns/local-quick.yaml", SPEC, "--campaign",
                           "Campaign spec: a path (relative to the repo) or inline YAML.")
    configs: tuple[str, ...] = _param((), NAMES, "--config",
                                      "Only these config ids (e.g. n3-c5.2xlarge-gp2); empty = all. "
                                      "One id = backfill that config.")
    scenarios: tuple[str, ...] = _param((), NAMES, "--scenario", "Only these scenarios; empty = all.")
    run_label: str = _param("r1", LABEL, "--run-label",
                            "Names the run partitions; the same label replaces, a new one adds.")
    max_parallel_configs: int | None = _param(None, CLUSTERS, "--max-parallel-configs",
                                              "Clusters up at once (default: the campaign budget's "
                                              "parallelism, else 1 local, 4 aws, 1 existing).", nullable=True)
    baseline_run: str | None = _param(None, LABEL, "--baseline-run",
                                      "A stored run label to compare this run with: the report opens with the "
                                      "comparison (sizing compare).", nullable=True)

    def to_dict(self) -> dict[str, Any]:
        """The run's conf, as JSON (lists, not tuples): what the CLI sends and the DAG's params hold."""
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunParams:
        """The params in `data` (a run's conf or the DAG's params; a missing or null list is empty, a missing
        value its default). Other keys are ignored: Airflow's params may carry more than this contract."""
        values = {}
        for param in RUN_PARAMS:
            value = data.get(param.name, param.default)
            if param.kind == NAMES:
                value = () if value is None else tuple(value) if isinstance(value, list | tuple) else value
            values[param.name] = value
        return cls(**values)

    def problems(self) -> list[Problem]:
        """Every problem of the params on their own (the campaign's: sizing.planning.runplan.run_problems)."""
        found = [Problem(f"params.{p.name}", reason) for p in RUN_PARAMS
                 if (reason := p.problem(getattr(self, p.name))) is not None]
        if self.baseline_run is not None and self.baseline_run == self.run_label:
            found.append(Problem("params.baseline_run", f"is the run label itself ({self.run_label!r}): a run is "
                                                        "compared with another run"))
        return found


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class RunParam:
    """One field of `RunParams`, as the DAG and the CLI read it."""

    name: str
    kind: str
    flag: str  # the CLI's option (repeatable for NAMES)
    description: str
    default: Any  # as JSON
    nullable: bool

    def schema(self) -> dict[str, Any]:
        """The JSON schema Airflow's `Param` validates the value with."""
        schema: dict[str, Any] = {
            SPEC: {"type": "string", "minLength": 1},
            NAMES: {"type": "array", "items": {"type": "string"}},
            LABEL: {"type": "string", "pattern": f"^{NAME.pattern}$"},
            CLUSTERS: {"type": "integer", "minimum": 1, "maximum": MAX_PARALLEL_CONFIGS},
        }[self.kind]
        if self.nullable:
            schema["type"] = ["null", schema["type"]]
        return schema

    def problem(self, value: Any) -> str | None:
        """Why `value` is not one of this param's (None: it is); the same verdicts as `schema`."""
        if value is None and self.nullable:
            return None
        if self.kind == SPEC:
            ok = isinstance(value, str) and value != ""
            return None if ok else f"must be a spec path or inline YAML, got {_got(value)}"
        if self.kind == NAMES:
            ok = isinstance(value, list | tuple) and all(isinstance(name, str) for name in value)
            return None if ok else f"must be a list of names, got {_got(value)}"
        if self.kind == LABEL:
            ok = isinstance(value, str) and NAME.fullmatch(value) is not None
            return None if ok else (f"must be 1-64 ASCII letters, digits, '-' or '_' (it names S3 partitions), "
                                    f"got {_got(value)}")
        return number_problem(value, 1, MAX_PARALLEL_CONFIGS, integer=True)


def _declared() -> tuple[RunParam, ...]:
    declared = []
    for f in fields(RunParams):
        if f.default is MISSING:  # a param without a default could not be left out of a conf
            raise TypeError(f"run param {f.name} has no default")
        declared.append(RunParam(f.name, f.metadata["kind"], f.metadata["flag"], f.metadata["description"],
                                 _json(f.default), f.metadata["nullable"]))
    return tuple(declared)


RUN_PARAMS: tuple[RunParam, ...] = _declared()
