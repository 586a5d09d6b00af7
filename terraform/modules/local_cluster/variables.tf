variable "cluster_name" {
  description = "RabbitMQ cluster_name and the name of the cluster's directory under work_dir."
  type        = string
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._-]*$", var.cluster_name))
    error_message = "cluster_name must be path-safe: letters, digits, '.', '_' and '-'."
  }
}

variable "node_count" {
  description = "Number of nodes (a 50-port block holds at most 10: sizing.resources.localports.LOCAL_MAX_NODES)."
  type        = number
  validation {
    condition     = var.node_count >= 1 && var.node_count <= 10 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number from 1 to 10 (the port block layout holds 10 nodes)."
  }
}

variable "port_base" {
  description = "First port of the cluster's 50-port block (sizing.planning.plan: 21000 + 50 * slot). Layout in README."
  type        = number
  validation {
    condition     = var.port_base >= 1024 && var.port_base <= 65485 && floor(var.port_base) == var.port_base
    error_message = "port_base must be a whole number from 1024 to 65485 (the block spans port_base..port_base+49)."
  }
}

variable "work_dir" {
  description = "Directory holding the cluster's directory (cookie home, per-node data and logs)."
  type        = string
}

variable "broker_config" {
  description = "Extra rabbitmq.conf settings for every node (the campaign's broker_config), key = value."
  type        = map(string)
  default     = {}
}

variable "username" {
  description = "AMQP/management user. 'guest' keeps the default user (allowed over loopback only)."
  type        = string
  default     = "guest"
}

variable "password" {
  description = "Password of username (ignored for guest, whose password stays 'guest')."
  type        = string
  default     = "guest"
  sensitive   = true
}

variable "vhost" {
  description = "Virtual host the load runs in (created when not '/')."
  type        = string
  default     = "/"
}

variable "wait_seconds" {
  description = "Bound on each wait: one node's boot, the cluster reaching node_count running nodes, a graceful stop."
  type        = number
  default     = 90
}

variable "rabbitmq_bin" {
  description = "Directory of the unwrapped RabbitMQ scripts (Debian's /usr/sbin wrappers su to rabbitmq and drop our environment)."
  type        = string
  default     = "/usr/lib/rabbitmq/bin"
}

variable "runtime" {
  description = "How the nodes run RabbitMQ (scripts/runtime.sh): `host` = the machine's rabbitmq-server (Debian 12: 3.10), `chroot` = the one in root filesystem `rootfs` (scripts/rootfs.sh: Debian 13, 4.0)."
  type        = string
  default     = "host"
  validation {
    condition     = contains(["host", "chroot"], var.runtime)
    error_message = "runtime must be host or chroot."
  }
}

variable "rootfs" {
  description = "The root filesystem the chroot runtime's nodes run in (scripts/rootfs.sh prints it); unused on host."
  type        = string
  default     = ""
  validation {
    condition     = var.rootfs == "" || startswith(var.rootfs, "/")
    error_message = "rootfs must be an absolute path (or empty on the host runtime)."
  }
}

variable "volume_roles" {
  description = "Roles with a volume of their own on every node (sizing/resources/disks.py): a directory each, on the scale model the mount point of the role's own loop-device volume. `data` always; logs, wal, segments optional. Roles without one stay under the data directory (RabbitMQ's defaults)."
  type        = list(string)
  default     = ["data"]
  validation {
    condition = (
      contains(var.volume_roles, "data")
      && length(distinct(var.volume_roles)) == length(var.volume_roles)
      && alltrue([for role in var.volume_roles : contains(["data", "logs", "wal", "segments"], role)])
    )
    error_message = "volume_roles must name `data` and otherwise only logs, wal, segments, each once."
  }
}

variable "envelope" {
  description = "The scale model's envelopes as JSON (sizing.resources.scalemodel via adapters.terraform.local_stack_variables): `node` (every node's CPU, memory and volumes), `generator` (the load generator's) and `cgroup` (the cluster's cgroup, relative to each hierarchy). Empty: no scale model, every node shares the machine (scale_model: off)."
  type        = string
  default     = ""
}

variable "python" {
  description = "The Python interpreter that runs adapters/envelope.py (the project's virtualenv); used only with an envelope."
  type        = string
  default     = "python3"
}

variable "network_slot" {
  description = "The nodes' private network (adapters/netns.py): 1-254 puts node n in its own network namespace at 198.18.<slot>.<n> on the project bridge, with an epmd of its own, reached only through its address; 0: every node on the machine's loopback, 127.0.0.1."
  type        = number
  default     = 0
  validation {
    condition     = var.network_slot == floor(var.network_slot) && var.network_slot >= 0 && var.network_slot <= 254
    error_message = "network_slot must be a whole number 0-254."
  }
}

variable "network_mbit" {
  description = "Each node's bandwidth envelope in Mbit/s, both directions (tbf on its link; the scale model's network figure); null: unlimited. Only with a network_slot."
  type        = number
  default     = null
  nullable    = true
  validation {
    condition     = var.network_mbit == null ? true : var.network_mbit > 0
    error_message = "network_mbit must be positive (or null: no envelope)."
  }
}
