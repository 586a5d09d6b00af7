"""Admission of a campaign (and of a run's params) on one machine, as policy: every problem that refuses it, every
warning and note it is accepted with, and the campaign as admitted (this host's calibration applied).

Pure: the machine is described by `MachineFacts`, which adapters.planning.machine_facts reads (the only place
admission touches the machine). The CLI's validate and trigger, the DAG's validate_spec and the demo all admit
through `admit` and print its `remarks`, so they cannot disagree on what a campaign is told.
"""

from __future__ import annotations

from dataclasses import dataclass

from sizing.campaign import Campaign
from sizing.campaign.envelopes import campaign_demand, config_envelopes, with_host_speed
from sizing.documents.fields import Problem, SpecError
from sizing.judgement.findings import steps_too_short_for_one_run
from sizing.planning.plan import budget_problems
from sizing.planning.runparams import RunParams
from sizing.planning.runplan import campaign_run, run_problems
from sizing.resources.scalemodel import Machine, fit_problems
from sizing.resources.versions import LOCAL_CHROOT_SERIES, local_runtime, satisfies


@dataclass(frozen=True)
class MachineFacts:
    """What admission needs to know of the machine. None where it was not read (the campaign does not need it)."""

    installed: str | None = None  # the rabbitmq-server release installed here (None: none)
    chroot_version: str | None = None  # the 4.0 root's release, once built
    chroot_missing: str | None = None  # what this machine lacks to build and run the 4.0 root (None: nothing)
    machine: Machine | None = None  # its cores and memory (read for a scale model only)
    support: str | None = None  # one line: what of the scale model this machine enforces
    host_speed: float | None = None  # this host's calibration (sizing.resources.calibration), if the caller gave one
    network_missing: str | None = None  # `network: namespaces`: what this machine lacks to build them (None: nothing)


@dataclass(frozen=True)
class Admission:
    """The verdict on a campaign (and a run's params) on one machine."""

    campaign: Campaign  # as admitted: this host's calibration in its scale model
    problems: tuple[Problem, ...]  # each refuses it
    warnings: tuple[Problem, ...]  # accepted, and ignored by the broker version a config runs
    notes: tuple[Problem, ...]  # accepted, but its findings may say less than the user expects
    scale: tuple[str, ...]  # what its envelopes hold at their peak and what this machine enforces of them

    def refusal(self, source: str) -> SpecError | None:
        """The SpecError naming every problem (None: admitted)."""
        return SpecError(list(self.problems), source) if self.problems else None

    def remarks(self) -> list[str]:
        """The warnings and notes, one line each: the words every caller prints (one home for them)."""
        return [f"warning: {w}" for w in self.warnings] + [f"note: {n}" for n in self.notes]


def calibrates(campaign: Campaign) -> bool:
    """Whether this host's calibration means anything to the campaign: its scale model's envelopes, locally."""
    return campaign.deployment == "local" and campaign.scale_model is not None


def on_host(campaign: Campaign, host_speed: float | None) -> Campaign:
    """The campaign with this host's calibration in its scale model: its envelopes in reference cores (unchanged
    when the host has none to give or the campaign has no envelopes)."""
    if host_speed is None or not calibrates(campaign):
        return campaign
    return with_host_speed(campaign, round(host_speed, 4))


def admit(campaign: Campaign, facts: MachineFacts, params: RunParams | None = None) -> Admission:
    """Admit a parsed campaign on the machine `facts` describe; with `params`, a run of it too (their own problems,
    against the campaign, and the envelopes the run puts up at once). Every problem at once."""
    campaign = on_host(campaign, facts.host_speed)
    problems = budget_problems(campaign)
    problems += local_version_problems(campaign, facts.installed, facts.chroot_version, facts.chroot_missing)
    problems += envelope_problems(campaign, facts.machine)
    if facts.network_missing is not None:
        problems.append(Problem("network", f"{facts.network_missing}; use `network: loopback` (without the faults "
                                           f"that need namespaces) or run as root with iproute2 and nftables"))
    if params is not None:
        problems += run_problems(params, campaign)
        if not problems:  # the run's max_parallel_configs may put more envelopes up at once than the budget's
            run = campaign_run(params, campaign, "")  # only the configs this run selects are ever up at once
            problems += envelope_problems(campaign, facts.machine, run.max_parallel_configs,
                                          "params.max_parallel_configs", run.configs)
    return Admission(campaign, tuple(problems), tuple(campaign.warnings),
                     tuple(steps_too_short_for_one_run(campaign)), scale_lines(campaign, facts))


def envelope_problems(campaign: Campaign, machine: Machine | None, parallelism: int | None = None,
                      field: str = "scale_model", configs: tuple[str, ...] = ()) -> list[Problem]:
    """Why the campaign's envelopes (of `configs` only, if given), `parallelism` configs up at once (default: its
    budget's), do not fit `machine` (empty: they fit, no scale model, or the machine was not read)."""
    demand = campaign_demand(campaign, parallelism, configs)
    if demand is None or machine is None:
        return []
    return [Problem(field, reason) for reason in fit_problems(demand, machine)]


def scale_lines(campaign: Campaign, facts: MachineFacts) -> tuple[str, ...]:
    if campaign.scale_model is None:
        return ()
    demand = campaign_demand(campaign)
    lines = [f"{campaign.scale_model.describe()}; at its peak {demand.describe() if demand else 'nothing'}"]
    lines += floored_lines(campaign)
    return (*lines, facts.support) if facts.support else tuple(lines)


def floored_lines(campaign: Campaign) -> list[str]:
    """A config whose nodes' share of this host's cores is below the kernel's smallest quota runs at that quota: more
    CPU than the model gives it, so its figures are high by up to that ratio (sizing.resources.scalemodel.MIN_CORES)."""
    lines = []
    for shape in campaign.clusters:
        envelopes = config_envelopes(campaign, shape)
        if envelopes is not None and envelopes.node.cpu_floored:
            node = envelopes.node
            lines.append(f"config {shape.config_id}: a {node.instance_type} node's share of this host is "
                         f"{node.cpu_share:.3f} cores, below the kernel's smallest quota: it runs at "
                         f"{node.cpu_cores:g} ({node.cpu_cores / node.cpu_share:.2f}x its share), so its figures may "
                         f"be high by up to that")
    return lines


def local_version_problems(campaign: Campaign, installed: str | None, chroot_version: str | None = None,
                           chroot_missing: str | None = None) -> list[Problem]:
    """On the local target, a config asking for a RabbitMQ version the local runtimes do not run is refused: the
    nodes can only run the installed package (host runtime) or the 4.0 root (chroot runtime; `chroot_version` is
    its release once built, `chroot_missing` what this machine lacks to build and run it), and a run labelled with
    another version would lie about it."""
    if campaign.deployment != "local":
        return []
    problems = []
    listed = "list" in (campaign.raw.get("clusters") or {})
    for i, shape in enumerate(campaign.clusters):
        wanted = shape.rabbitmq_version
        where = f"clusters.list[{i}].rabbitmq_version" if listed else "clusters.matrix.rabbitmq_versions"
        if wanted is None:
            continue
        if local_runtime(wanted) == "chroot":
            if chroot_missing:
                problems.append(Problem(where, f"config {shape.config_id} asks for RabbitMQ {wanted}: "
                                               f"{chroot_missing}"))
            elif wanted != LOCAL_CHROOT_SERIES and not (chroot_version and satisfies(chroot_version, wanted)):
                problems.append(Problem(
                    where, f"config {shape.config_id} asks for RabbitMQ {wanted}, but the local 4.0 runtime runs "
                           f"Debian 13's release ({chroot_version or 'not built yet'}); ask for "
                           f"'{LOCAL_CHROOT_SERIES}', or use deployment: aws"))
        elif installed is None:
            problems.append(Problem(where, f"config {shape.config_id} asks for RabbitMQ {wanted}, but no "
                                           f"rabbitmq-server is installed here"))
        elif not satisfies(installed, wanted):
            problems.append(Problem(
                where,
                f"config {shape.config_id} asks for RabbitMQ {wanted}, but the local target runs the installed "
                f"{installed} or {LOCAL_CHROOT_SERIES} in a root filesystem (it cannot install another); remove "
                f"rabbitmq_version or ask for {installed} or {LOCAL_CHROOT_SERIES}, or use deployment: aws, where "
                f"cloud-init installs the version asked for"))
    return problems


def needs_versions(campaign: Campaign) -> bool:
    """Whether admission asks which RabbitMQ versions this machine runs: a local config that names one."""
    return campaign.deployment == "local" and any(s.rabbitmq_version is not None for s in campaign.clusters)
