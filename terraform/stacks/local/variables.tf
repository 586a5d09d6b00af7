variable "campaign" {
  description = "Campaign name (sizing.campaign.Campaign.name)."
  type        = string
}

variable "config_id" {
  description = "Cluster config id (sizing.campaign.ClusterShape.config_id), e.g. n3-c5.2xlarge-gp2."
  type        = string
}

variable "repeat" {
  description = "Which repeat of the config this cluster serves (1-based): every repeat gets a fresh cluster."
  type        = number
  default     = 1
  validation {
    condition     = var.repeat >= 1 && floor(var.repeat) == var.repeat
    error_message = "repeat must be a whole number >= 1."
  }
}

variable "node_count" {
  description = "Nodes in the cluster (1..10 locally: one port block)."
  type        = number
}

variable "port_base" {
  description = "First port of the config's 50-port block (sizing.planning.plan.ConfigPlan.local_port_base)."
  type        = number
}

variable "work_dir" {
  description = "Where the cluster's cookie home, data and logs live (absolute path)."
  type        = string
}

variable "broker_config" {
  description = "Extra rabbitmq.conf settings (the campaign's broker_config)."
  type        = map(string)
  default     = {}
}

variable "username" {
  description = "AMQP/management user; 'guest' keeps the default user (loopback only)."
  type        = string
  default     = "guest"
}

variable "password" {
  description = "Password of username (ignored for guest)."
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
  description = "Bound on each wait (node boot, cluster formation, graceful stop)."
  type        = number
  default     = 90
}

variable "volume_roles" {
  description = "Roles with a volume of their own (sizing.campaign.ClusterShape.volumes): a directory on every node, on the scale model a loop-device volume of its own."
  type        = list(string)
  default     = ["data"]
}

variable "envelope" {
  description = "The scale model's envelopes as JSON (adapters.terraform.local_stack_variables); empty: scale_model off."
  type        = string
  default     = ""
}

variable "python" {
  description = "The project's Python interpreter (runs adapters/envelope.py when there is an envelope)."
  type        = string
  default     = "python3"
}

variable "runtime" {
  description = "How the nodes run RabbitMQ: host (the machine's rabbitmq-server) or chroot (RabbitMQ 4.0 in rootfs)."
  type        = string
  default     = "host"
}

variable "rootfs" {
  description = "The chroot runtime's root filesystem (adapters/rootfs.py builds it on first use); empty on host."
  type        = string
  default     = ""
}

variable "network_slot" {
  description = "1-254: each node in its own network namespace at 198.18.<slot>.<n> (adapters/netns.py); 0: the loopback."
  type        = number
  default     = 0
}

variable "network_mbit" {
  description = "Each node's bandwidth envelope in Mbit/s with a network_slot; null: unlimited."
  type        = number
  default     = null
  nullable    = true
}
