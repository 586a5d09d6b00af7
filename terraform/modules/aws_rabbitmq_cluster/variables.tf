variable "cluster_name" {
  type = string
}

variable "node_count" {
  type = number
  validation {
    condition     = var.node_count >= 1 && var.node_count <= 50
    error_message = "node_count must be between 1 and 50."
  }
}

variable "instance_type" {
  description = "EC2 instance type, e.g. c5.4xlarge."
  type        = string
}

variable "volume_type" {
  description = "EBS type of each node's data volume (mounted at /var/lib/rabbitmq): gp2, gp3, io1, io2, st1, sc1."
  type        = string
  validation {
    condition     = contains(["gp2", "gp3", "io1", "io2", "st1", "sc1"], var.volume_type)
    error_message = "volume_type must be one of gp2, gp3, io1, io2, st1, sc1."
  }
}

variable "volume_size_gb" {
  type = number
}

variable "volume_iops" {
  description = "Provisioned IOPS (io1/io2/gp3 only; null otherwise)."
  type        = number
  default     = null
}

variable "volume_throughput_mbps" {
  description = "Provisioned throughput (gp3 only; null otherwise)."
  type        = number
  default     = null
}

variable "subnet_id" {
  type = string
}

variable "subnet_cidr" {
  description = "The subnet's CIDR: node n gets the fixed private IP cidrhost(subnet_cidr, 10 + n), so every node knows its peers at boot."
  type        = string
}

variable "vpc_id" {
  type = string
}

variable "client_security_group_ids" {
  description = "Security groups allowed to reach AMQP, management and prometheus (the load generator's)."
  type        = list(string)
}

variable "erlang_cookie" {
  type      = string
  sensitive = true
}

variable "username" {
  type = string
}

variable "password" {
  type      = string
  sensitive = true
}

variable "broker_config" {
  description = "Extra rabbitmq.conf settings, key = value."
  type        = map(string)
  default     = {}
}

variable "ami_id" {
  description = "AMI; null picks the newest official Debian 12 (whose rabbitmq-server is 3.10, as locally)."
  type        = string
  default     = null
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "volume_tags" {
  description = "Tags of the root and data EBS volumes (the provider's default_tags do not reach volumes created inside an instance); the stack passes its own, expiry included."
  type        = map(string)
  default     = {}
}
