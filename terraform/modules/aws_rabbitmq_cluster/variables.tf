variable "cluster_name" {
  description = "RabbitMQ cluster_name and the prefix of every resource's name (the stack's campaign-config-repeat)."
  type        = string
}

variable "node_count" {
  description = "Number of EC2 nodes (1..50)."
  type        = number
  validation {
    condition     = var.node_count >= 1 && var.node_count <= 50
    error_message = "node_count must be between 1 and 50."
  }
}

variable "instance_type" {
  description = "EC2 instance type, e.g. c5.4xlarge."
  type        = string
}

variable "volumes" {
  description = "Every node's EBS volumes, one per role (sizing/resources/disks.py: data, logs, wal, segments; data always). device_name and mount_point come from sizing.resources.disks; iops for io1/io2/gp3 and throughput_mbps for gp3 only (null otherwise)."
  type = list(object({
    role            = string
    type            = string
    size_gb         = number
    iops            = optional(number)
    throughput_mbps = optional(number)
    device_name     = string
    mount_point     = string
  }))
  validation {
    condition = (
      contains([for v in var.volumes : v.role], "data")
      && length(distinct([for v in var.volumes : v.role])) == length(var.volumes)
      && alltrue([for v in var.volumes : contains(["data", "logs", "wal", "segments"], v.role)])
    )
    error_message = "volumes must hold a `data` volume and otherwise only logs, wal, segments, each role once."
  }
  validation {
    condition     = alltrue([for v in var.volumes : contains(["gp2", "gp3", "io1", "io2", "st1", "sc1"], v.type)])
    error_message = "every volume type must be one of gp2, gp3, io1, io2, st1, sc1."
  }
}

variable "filesystem" {
  description = "What cloud-init formats every volume with (sizing.resources.disks.FILESYSTEMS)."
  type        = string
  default     = "ext4"
  validation {
    condition     = contains(["ext4", "xfs"], var.filesystem)
    error_message = "filesystem must be ext4 or xfs."
  }
}

variable "subnet_id" {
  description = "Subnet the nodes are launched in (aws_network's)."
  type        = string
}

variable "subnet_cidr" {
  description = "The subnet's CIDR: node n gets the fixed private IP cidrhost(subnet_cidr, 10 + n), so every node knows its peers at boot."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the nodes' security group (aws_network's)."
  type        = string
}

variable "client_security_group_ids" {
  description = "Security groups allowed to reach AMQP, management and prometheus (the load generator's)."
  type        = list(string)
}

variable "erlang_cookie" {
  description = "Erlang cookie every node shares (the stack generates it)."
  type        = string
  sensitive   = true
}

variable "username" {
  description = "The broker user cloud-init creates on node 1 (administrator tag)."
  type        = string
}

variable "password" {
  description = "Password of username (single quotes are not supported: it is written into the user data)."
  type        = string
  sensitive   = true
}

variable "broker_config" {
  description = "Extra rabbitmq.conf settings, key = value."
  type        = map(string)
  default     = {}
}

variable "rabbitmq_package" {
  description = "rabbitmq-server package version from Team RabbitMQ's apt repository (3.12.13-1 or 3.12.*); null: Debian 12's own (3.10)."
  type        = string
  default     = null
  validation {
    condition     = var.rabbitmq_package == null || can(regex("^[0-9]+\\.[0-9]+(\\.[0-9]+-1|\\.\\*)$", var.rabbitmq_package))
    error_message = "rabbitmq_package must be like 3.12.13-1 or 3.12.* (sizing.resources.versions.apt_version)."
  }
}

variable "erlang_series" {
  description = "Erlang/OTP major version pinned for rabbitmq_package (sizing.resources.versions.ERLANG_SERIES), e.g. 26."
  type        = string
  default     = null
  validation {
    condition     = var.erlang_series == null || can(regex("^[0-9]{2}$", var.erlang_series))
    error_message = "erlang_series must be an Erlang/OTP major version such as 26."
  }
}

variable "ami_id" {
  description = "AMI; null picks the newest official Debian 12 (whose rabbitmq-server is 3.10, as locally)."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags of the security group, IAM role and instances (the volumes take volume_tags)."
  type        = map(string)
  default     = {}
}

variable "volume_tags" {
  description = "Tags of the root and data EBS volumes (the provider's default_tags do not reach volumes created inside an instance); the stack passes its own, expiry included."
  type        = map(string)
  default     = {}
}
