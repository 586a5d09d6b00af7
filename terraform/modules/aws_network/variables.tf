variable "name" {
  description = "Name prefix of every resource (campaign-config)."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the experiment VPC."
  type        = string
  default     = "10.42.0.0/16"
}

variable "subnet_cidr" {
  description = "CIDR of the one subnet brokers and load generators share (one AZ: no cross-AZ latency in the figures)."
  type        = string
  default     = "10.42.1.0/24"
}

variable "availability_zone" {
  description = "AZ of the subnet; null lets AWS pick."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags of every resource of the network (merged with a Name tag each)."
  type        = map(string)
  default     = {}
}
