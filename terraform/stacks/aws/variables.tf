variable "campaign" {
  description = "Campaign name (sizing.campaign.Campaign.name): names and tags the cluster's resources."
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
  description = "Nodes in the cluster."
  type        = number
}

variable "instance_type" {
  description = "EC2 instance type of every node, e.g. c5.4xlarge."
  type        = string
}

variable "volumes" {
  description = "Every node's EBS volumes, one per role (adapters.terraform.aws_stack_variables, from sizing.resources.disks)."
  type = list(object({
    role            = string
    type            = string
    size_gb         = number
    iops            = optional(number)
    throughput_mbps = optional(number)
    device_name     = string
    mount_point     = string
  }))
}

variable "filesystem" {
  description = "What every volume is formatted with: ext4 or xfs (sizing.resources.disks.FILESYSTEMS)."
  type        = string
  default     = "ext4"
}

variable "broker_config" {
  description = "Extra rabbitmq.conf settings (the campaign's broker_config), key = value."
  type        = map(string)
  default     = {}
}

variable "rabbitmq_package" {
  description = "The rabbitmq-server package version to install from Team RabbitMQ's apt repository (3.12.13-1, or 3.12.* for a series' newest; sizing.resources.versions.apt_version); null installs Debian 12's (3.10)."
  type        = string
  default     = null
}

variable "erlang_series" {
  description = "The Erlang/OTP major version pinned with rabbitmq_package (sizing.resources.versions.ERLANG_SERIES)."
  type        = string
  default     = null
}

variable "username" {
  description = "The broker user created on node 1."
  type        = string
  default     = "sizing"
}

variable "password" {
  description = "Broker password; empty generates one (read it from the `cluster` output)."
  type        = string
  default     = ""
  sensitive   = true
}

variable "aws_region" {
  description = "AWS region of every resource."
  type        = string
  default     = "us-east-1"
}

variable "vpc_cidr" {
  description = "CIDR of the experiment VPC."
  type        = string
  default     = "10.42.0.0/16"
}

variable "subnet_cidr" {
  description = "CIDR of the one subnet brokers and load generators share."
  type        = string
  default     = "10.42.1.0/24"
}

variable "expires_at" {
  description = "RFC 3339 UTC time after which a janitor may delete every resource of this cluster (the ExpiresAt tag): apply time + the trial's planned lifetime with a margin (sizing.planning.plan.expiry_tag). The destroy teardown still runs on failure; the tag catches what it misses. Null: no tag."
  type        = string
  default     = null
  validation {
    condition     = var.expires_at == null || can(regex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", var.expires_at))
    error_message = "The expires_at value must be an RFC 3339 UTC time such as 2026-01-31T18:00:00Z."
  }
}
