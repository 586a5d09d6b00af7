output "vpc_id" {
  description = "The experiment VPC's id (the cluster module's security group lives in it)."
  value       = aws_vpc.this.id
}

output "subnet_id" {
  description = "The one subnet's id: brokers and load generators run in it."
  value       = aws_subnet.this.id
}

output "subnet_cidr" {
  description = "The subnet's CIDR, from which the cluster module derives each node's fixed private IP."
  value       = aws_subnet.this.cidr_block
}

output "loadgen_security_group_id" {
  description = "The load generator's security group: the only one the broker group admits to AMQP, management and Prometheus."
  value       = aws_security_group.loadgen.id
}
