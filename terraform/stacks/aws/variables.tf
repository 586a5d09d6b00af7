variable "campaign" {
  type = string
}

variable "config_id" {
  type = string
}

variable "node_count" {
  type = number
}

variable "instance_type" {
  type = string
}

variable "volume_type" {
  type = string
}

variable "volume_size_gb" {
  type = number
}

variable "volume_iops" {
  type    = number
  default = null
}

variable "volume_throughput_mbps" {
  type    = number
  default = null
}

variable "broker_config" {
  type    = map(string)
  default = {}
}

variable "username" {
  type    = string
  default = "sizing"
}

variable "password" {
  description = "Broker password; empty generates one (read it from the `cluster` output)."
  type        = string
  default     = ""
  sensitive   = true
}

variable "aws_region" {
  type    = string
  default = "us-east-1"
}

variable "vpc_cidr" {
  type    = string
  default = "10.42.0.0/16"
}

variable "subnet_cidr" {
  type    = string
  default = "10.42.1.0/24"
}
