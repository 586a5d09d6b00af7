"""Queue arguments (`workload.queues.arguments`) checked as RabbitMQ 3.10 checks them at queue.declare.

The broker must never be the first to refuse a spec: a value it refuses fails the run's queue declaration after a
cluster was provisioned. One table, from RabbitMQ 3.10.8's source: `rabbit_amqqueue:declare_args/0` (each known
argument's validator) and each queue type's `capabilities()` (`queue_arguments`: the names that type accepts; a
name another type knows is refused with "invalid arg ... of queue type ..."). `x-delivery-limit` and
`x-queue-master-locator` have no validator there: only their queue type is checked.

Names RabbitMQ 3.10 does not define, starting with `x-`, are passed through unchecked (plugins and later versions
define more; the broker ignores the rest), and every refusal says so. A name without the `x-` prefix is refused:
it is not a queue argument, and the broker would ignore it silently.

Values arrive from YAML as the load generator sends them with pika: int -> a signed integer field, str -> longstr,
bool -> bool; a float cannot be encoded by pika at all. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from sizing.documents.fields import Problem

MAX_EXPIRY_MS = 315_360_000_000  # rabbit_misc:check_expiry/1: ten years in milliseconds
MAX_SIGNED_LONG = 2**63 - 1  # pika encodes an int argument as a signed 64-bit field
MAX_PRIORITY = 255  # ?MAX_SUPPORTED_PRIORITY
MAX_AGE = re.compile(r"0*[1-9][0-9]*[YMDhms]")  # check_max_age/1: a positive integer and one unit
OVERFLOW_MODES = ("drop-head", "reject-publish", "reject-publish-dlx")
QUEUE_MODES = ("default", "lazy")
DLX_STRATEGIES = ("at-most-once", "at-least-once")
LEADER_LOCATORS = ("client-local", "balanced", "random", "least-leaders")  # rabbit_queue_location
QUEUE_TYPES = ("classic", "quorum", "stream")

# Each queue type's queue_arguments (capabilities/0 of rabbit_classic_queue, rabbit_quorum_queue, rabbit_stream_queue).
ARGUMENTS_BY_TYPE: dict[str, frozenset[str]] = {
    "classic": frozenset({"x-expires", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
                          "x-max-length", "x-max-length-bytes", "x-max-priority", "x-overflow", "x-queue-mode",
                          "x-queue-version", "x-single-active-consumer", "x-queue-type", "x-queue-master-locator"}),
    "quorum": frozenset({"x-dead-letter-exchange", "x-dead-letter-routing-key", "x-dead-letter-strategy",
                         "x-expires", "x-max-length", "x-max-length-bytes", "x-max-in-memory-length",
                         "x-max-in-memory-bytes", "x-overflow", "x-single-active-consumer", "x-queue-type",
                         "x-quorum-initial-group-size", "x-delivery-limit", "x-message-ttl",
                         "x-queue-leader-locator"}),
    "stream": frozenset({"x-max-length-bytes", "x-queue-type", "x-max-age", "x-stream-max-segment-size-bytes",
                         "x-initial-cluster-size", "x-queue-leader-locator"}),
}
KNOWN_ARGUMENTS = frozenset().union(*ARGUMENTS_BY_TYPE.values())
PASS_THROUGH = "other x- names are passed through unchecked"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(low: int | None = None, high: int | None = None, zero: bool = True) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not _is_int(value):
            return f"must be an integer, got {_describe(value)}"
        if not zero and value == 0:
            return "must not be 0"
        if low is not None and value < low:
            return f"must be >= {low}, got {value}"
        limit = high if high is not None else MAX_SIGNED_LONG
        if value > limit:
            return f"must be <= {limit:,}, got {value:,}".replace(",", "_")
        return None
    return check


def _string(choices: tuple[str, ...] = (), pattern: re.Pattern[str] | None = None, what: str = ""
            ) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"must be a string{f' ({what})' if what else ''}, got {_describe(value)}"
        if choices and value not in choices:
            return f"must be one of {', '.join(choices)}, got {value!r}"
        if pattern is not None and not pattern.fullmatch(value):
            return f"must be {what}, got {value!r}"
        return None
    return check


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {_describe(value)}"


def _anything(value: Any) -> str | None:
    return None


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if value is not None else "null"


# rabbit_amqqueue:declare_args/0, one validator per name (the broker's check_*_arg functions).
VALIDATORS: dict[str, Callable[[Any], str | None]] = {
    "x-expires": _integer(1, MAX_EXPIRY_MS),
    "x-message-ttl": _integer(0, MAX_EXPIRY_MS),
    "x-dead-letter-exchange": _string(what="an exchange name"),
    "x-dead-letter-routing-key": _string(what="a routing key"),
    "x-dead-letter-strategy": _string(DLX_STRATEGIES),
    "x-max-length": _integer(0),
    "x-max-length-bytes": _integer(0),
    "x-max-in-memory-length": _integer(0),
    "x-max-in-memory-bytes": _integer(0),
    "x-max-priority": _integer(0, MAX_PRIORITY),
    "x-overflow": _string(OVERFLOW_MODES),
    "x-queue-mode": _string(QUEUE_MODES),
    "x-queue-version": _integer(1, 2),
    "x-single-active-consumer": _boolean,
    "x-queue-type": _string(QUEUE_TYPES),
    "x-quorum-initial-group-size": _integer(1),
    "x-max-age": _string(pattern=MAX_AGE, what="a positive integer and a unit, Y M D h m or s (e.g. 7D)"),
    "x-stream-max-segment-size-bytes": _integer(0),
    "x-initial-cluster-size": _integer(1),
    "x-queue-leader-locator": _string(LEADER_LOCATORS),
    "x-delivery-limit": _anything,  # no validator in 3.10: the broker accepts any value
    "x-queue-master-locator": _anything,
}


def broker_queue_type(spec_type: str | None) -> str | None:
    """The queue type the broker sees: a mirrored queue is a classic queue with a policy."""
    return "classic" if spec_type == "mirrored" else spec_type


def check_queue_arguments(arguments: Mapping[Any, Any], spec_type: str | None, path: str) -> list[Problem]:
    """Every problem of a workload's queue arguments, each at `<path>.<name>`."""
    problems: list[Problem] = []
    qtype = broker_queue_type(spec_type)
    for name, value in arguments.items():
        where = f"{path}.{name}"
        if not isinstance(name, str) or not name.startswith("x-"):
            problems.append(Problem(where, f"is not a queue argument: RabbitMQ's start with x- and it would ignore "
                                           f"{name!r} ({PASS_THROUGH})"))
            continue
        if name not in KNOWN_ARGUMENTS:
            continue  # passed through: a plugin's or a later version's argument
        if isinstance(value, float):
            problems.append(Problem(where, f"must not be a number with a fraction ({value!r}): AMQP clients cannot "
                                           f"send it as a queue argument ({PASS_THROUGH})"))
            continue
        if qtype in ARGUMENTS_BY_TYPE and name not in ARGUMENTS_BY_TYPE[qtype]:
            takes = sorted(t for t, names in ARGUMENTS_BY_TYPE.items() if name in names)
            problems.append(Problem(where, f"applies to {' and '.join(takes)} queues only, not {spec_type}: RabbitMQ "
                                           f"3.10 refuses it (inherited through `extends` or the campaign workload? "
                                           f"`arguments: {{}}` clears inherited arguments; {PASS_THROUGH})"))
            continue
        reason = VALIDATORS[name](value)
        if reason is None and name == "x-queue-type" and qtype and value != qtype:
            reason = (f"contradicts workload.queues.type ({spec_type}, declared as x-queue-type {qtype}); set the "
                      f"type there")
        if reason is None and name == "x-dead-letter-routing-key" and "x-dead-letter-exchange" not in arguments:
            reason = "needs x-dead-letter-exchange too: RabbitMQ 3.10 refuses a dead-letter routing key without one"
        if reason:
            problems.append(Problem(where, f"{reason} (RabbitMQ 3.10's rule; {PASS_THROUGH})"))
    return problems
