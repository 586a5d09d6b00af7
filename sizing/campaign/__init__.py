"""The campaign model: the YAML a user writes, parsed into frozen dataclasses and validated up front.

`load_campaign(path)` either returns a fully valid `Campaign` or raises `SpecError` listing every
problem with its field path; nothing is provisioned before this succeeds. Field reference: README,
section "Campaign spec".

It stands on the criteria (fault and scenario kinds, the search spec), the record contract (the default group) and
the resources (catalogs, disks, versions, the scale model). One module per part; the model's, the parser's and the
files' public names are importable from `sizing.campaign`:

- `model`: the frozen dataclasses (Campaign, Scenario, Workload, ClusterShape, ...) and the constants checked
  against (queue types, deployments, fault kinds, rate modes, step dimensions, purposes).
- `parse`: `parse_campaign`, a mapping -> Campaign, every problem collected (sizing.documents.fields).
- `groups`: workload groups (issue 14): a scenario's `groups:` parsed and checked.
- `steps`: client-setting steps (seed 003), what may change live, `isolated_runs` for `isolate: true`.
- `families`: an isolated scenario's runs as the one scenario written (filters, verdicts, charts).
- `load`: campaign files, `extends:` resolved, then parsed.
- `schema`: the campaign JSON Schema, generated from what the parser reads (campaigns/campaign.schema.json).
- `versionrules`: what each RabbitMQ version refuses or ignores of a workload (`validate` prints the findings).
- `brokerconf`: a config's `broker_config` (rabbitmq.conf keys) and message sizes, checked as the broker checks them.
- `queueargs`: queue arguments (`x-...`) checked as the broker checks them, with their field path.
- `envelopes`: the campaign on the local scale model: each config's envelopes and limits, its peak demand on the
  machine, the campaign on this host's calibration (sizing.resources.scalemodel knows factors and catalogs only).
"""

from sizing.campaign.families import as_family_row, families, family_name, family_phases, scenario_names, selected
from sizing.campaign.load import load_campaign, read_campaign_yaml
from sizing.campaign.model import (
    COMPARE_BY,
    CONFIRM_MODE_LIVE,
    DEPLOYMENTS,
    FAULT_KINDS,
    LOOPBACK,
    NAMESPACE_FAULTS,
    NAMESPACES,
    NETWORK_FAULTS,
    NETWORKS,
    PARTITION,
    PARTITION_BOTH,
    PARTITION_DIRECTIONS,
    PARTITION_FROM_NODE,
    PARTITION_TO_NODE,
    PURPOSES,
    QUEUE_TYPES,
    RATE_MAX,
    RATE_MODES,
    RATE_SCHEDULED,
    STEP_DIMENSIONS,
    Budget,
    Campaign,
    ClusterShape,
    Comparison,
    ConsumerSpec,
    FaultSpec,
    MessageSpec,
    ProfileSegment,
    PublisherSpec,
    QueueSpec,
    Scenario,
    StepSetting,
    Target,
    Versus,
    Workload,
    WorkloadGroup,
    client_queue,
    partition_direction,
)
from sizing.campaign.parse import parse_campaign
from sizing.campaign.steps import DEFAULT_MAX_RATE_PER_PUBLISHER, isolated_runs, live_change_problems, step_label
from sizing.contract.records import DEFAULT_GROUP  # the one implicit group of a scenario without `groups:`
from sizing.criteria.rules import CLIENT_LATENCY, GENERATOR_FAULTS
from sizing.documents.fields import deep_merge

__all__ = [
    "CLIENT_LATENCY", "COMPARE_BY", "CONFIRM_MODE_LIVE", "DEFAULT_GROUP", "DEFAULT_MAX_RATE_PER_PUBLISHER",
    "DEPLOYMENTS", "FAULT_KINDS", "GENERATOR_FAULTS", "LOOPBACK", "NAMESPACES", "NAMESPACE_FAULTS", "NETWORKS",
    "NETWORK_FAULTS", "PARTITION", "PARTITION_BOTH", "PARTITION_DIRECTIONS", "PARTITION_FROM_NODE",
    "PARTITION_TO_NODE", "PURPOSES", "QUEUE_TYPES", "RATE_MAX", "RATE_MODES", "RATE_SCHEDULED", "STEP_DIMENSIONS",
    "Budget", "Campaign", "ClusterShape", "Comparison", "ConsumerSpec", "FaultSpec", "MessageSpec", "ProfileSegment",
    "PublisherSpec", "QueueSpec", "Scenario", "StepSetting", "Target", "Versus", "Workload", "WorkloadGroup",
    "as_family_row", "client_queue", "deep_merge", "families", "family_name", "family_phases", "isolated_runs",
    "live_change_problems", "load_campaign", "parse_campaign", "partition_direction", "read_campaign_yaml",
    "scenario_names", "selected", "step_label",
]
