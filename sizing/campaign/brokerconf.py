"""What a campaign may put into every node's rabbitmq.conf (`broker_config`), and the message-size bound.

Each `broker_config` entry becomes one `key = value` line of rabbitmq.conf (terraform/modules/*/main.tf), so
a value with a newline would add lines the spec never named, e.g. a listener on every interface. Keys must be
well-formed rabbitmq.conf (cuttlefish) keys and values single-line scalars. On the local target the nodes
promise loopback only: settings that choose listeners, their addresses or who may log in from elsewhere are
refused there (the module sets them).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sizing.documents.fields import Problem, is_number, number_problem

# RabbitMQ 3.10: rabbit.app's default `max_message_size` (128 MiB), and the schema's validator
# ("Max message size should be between 0 and 512MB", rabbit.schema; ?MAX_MSG_SIZE in rabbit.hrl).
DEFAULT_MAX_MESSAGE_SIZE = 134_217_728
MAX_MESSAGE_SIZE_LIMIT = 536_870_912
MAX_CONF_NUMBER = 2**63 - 1  # a number in rabbitmq.conf: finite, within a signed 64-bit integer

# cuttlefish keys: dot-separated segments of letters, digits, '_' and '-' (e.g. `loopback_users.guest`,
# `cluster_formation.classic_config.nodes.1`), starting with a letter.
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*")

# Local target: (key prefix, why it is refused). A key is refused when it equals the prefix or starts with it + ".".
LOCAL_REFUSED: tuple[tuple[str, str], ...] = (
    ("listeners", "chooses AMQP listeners and their addresses; local nodes listen on 127.0.0.1 only "
                  "(RABBITMQ_NODE_IP_ADDRESS) on the port block the plan assigns"),
    ("loopback_users", "lets users log in from other hosts; local nodes accept loopback connections only"),
    ("management.tcp", "the management listener's address and port are set by the local module (127.0.0.1, "
                       "the port block)"),
    ("management.ssl", "adds a management listener; local nodes listen on 127.0.0.1 only"),
    ("management.listener", "the management listener is set by the local module (127.0.0.1, the port block)"),
    ("prometheus.tcp", "the Prometheus listener's address and port are set by the local module"),
    ("prometheus.ssl", "adds a Prometheus listener; local nodes listen on 127.0.0.1 only"),
    ("mqtt.listeners", "adds a listener; local nodes listen on 127.0.0.1 only"),
    ("stomp.listeners", "adds a listener; local nodes listen on 127.0.0.1 only"),
    ("web_mqtt", "adds a listener; local nodes listen on 127.0.0.1 only"),
    ("web_stomp", "adds a listener; local nodes listen on 127.0.0.1 only"),
)


def _control_chars(text: str) -> list[str]:
    """C0 controls, DEL and the C1 controls of Latin-1: a line break would add a rabbitmq.conf line the spec never
    named, and none of them is visible in the file."""
    return sorted({repr(ch) for ch in text if ord(ch) < 32 or 127 <= ord(ch) <= 159})


def _beyond_latin1(text: str) -> list[str]:
    """Characters RabbitMQ 3.10 cannot read in rabbitmq.conf: it fails to start with
    `failed_to_parse_configuration_file` on any character beyond U+00FF (measured on 3.10.8; `é` boots, `ā`, `Ω`,
    CJK and emoji do not: tests/test_spec_broker_config.py starts a real node with each)."""
    return sorted({ch for ch in text if ord(ch) > 255})


def refused_on_local(key: str) -> str | None:
    """Why `key` may not be set on the local target, or None."""
    for prefix, reason in LOCAL_REFUSED:
        if key == prefix or key.startswith(prefix + "."):
            return reason
    return None


def check_broker_config(config: Mapping[Any, Any], deployment: str | None, path: str = "broker_config"
                        ) -> list[Problem]:
    """Every problem of a campaign's broker_config, each at `broker_config.<key>`."""
    problems: list[Problem] = []
    for key, value in config.items():
        where = f"{path}.{key}"
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            problems.append(Problem(where, f"{key!r} is not a rabbitmq.conf key (dot-separated letters, digits, "
                                           f"'_' and '-', starting with a letter)"))
            continue
        if not isinstance(value, str | int | float):  # bool is an int: true/false are rabbitmq.conf values
            problems.append(Problem(where, f"must be a scalar rabbitmq.conf value, got {value!r}"))
            continue
        if is_number(value) and (reason := number_problem(value, -MAX_CONF_NUMBER, MAX_CONF_NUMBER)):
            problems.append(Problem(where, f"{reason} (cuttlefish reads integers as 64-bit)"))
            continue
        if isinstance(value, str):
            bad = _control_chars(value)
            if bad:
                problems.append(Problem(where, f"must be one line without control characters (it becomes one "
                                               f"rabbitmq.conf line), got {', '.join(bad)} in {value!r}"))
                continue
            unreadable = _beyond_latin1(value)
            if unreadable:
                problems.append(Problem(where, f"has {', '.join(unreadable)}: RabbitMQ 3.10 reads rabbitmq.conf as "
                                               f"Latin-1 and fails to start on a character beyond U+00FF; use "
                                               f"printable ASCII (or Latin-1) only"))
                continue
            if not value.strip():
                problems.append(Problem(where, "must not be empty"))
                continue
        if deployment == "local" and (reason := refused_on_local(key)):
            problems.append(Problem(where, f"is refused on the local target: it {reason}"))
        if key == "max_message_size":
            size = value if isinstance(value, int) and not isinstance(value, bool) else None
            if size is None and isinstance(value, str) and value.strip().isdigit():
                size = int(value)
            if size is None or not 0 < size <= MAX_MESSAGE_SIZE_LIMIT:
                problems.append(Problem(where, f"must be an integer number of bytes in 1..{MAX_MESSAGE_SIZE_LIMIT} "
                                               f"(RabbitMQ 3.10's limit, 512 MiB), got {value!r}"))
    return problems


def max_message_size(config: Mapping[Any, Any]) -> int:
    """The broker's largest accepted message body: broker_config's `max_message_size` or RabbitMQ's default."""
    value = config.get("max_message_size")
    if isinstance(value, bool):
        return DEFAULT_MAX_MESSAGE_SIZE
    if isinstance(value, int) and 0 < value <= MAX_MESSAGE_SIZE_LIMIT:
        return value
    if isinstance(value, str) and value.strip().isdigit() and 0 < int(value) <= MAX_MESSAGE_SIZE_LIMIT:
        return int(value)
    return DEFAULT_MAX_MESSAGE_SIZE


def check_message_size(size_bytes: int, config: Mapping[Any, Any], path: str) -> list[Problem]:
    limit = max_message_size(config)
    if size_bytes > limit:
        source = ("broker_config.max_message_size" if "max_message_size" in config
                  else "RabbitMQ 3.10's default max_message_size")
        return [Problem(path, f"{size_bytes} bytes exceeds the broker's largest message, {limit} bytes ({source}); "
                              f"the broker would refuse every publish")]
    return []
