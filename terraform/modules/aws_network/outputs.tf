output "vpc_id" {
  value = aws_vpc.this.id
}

output "subnet_id" {
  value = aws_subnet.this.id
}

output "subnet_cidr" {
  value = aws_subnet.this.cidr_block
}

output "loadgen_security_group_id" {
  value = aws_security_group.loadgen.id
}
