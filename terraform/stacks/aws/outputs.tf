output "cluster" {
  description = "sizing.cluster.ClusterInfo.from_dict shape (target \"aws\")."
  value       = module.cluster.cluster
  sensitive   = true
}

output "amqp_uris" {
  value     = module.cluster.amqp_uris
  sensitive = true
}

output "management_urls" {
  value = module.cluster.management_urls
}

output "node_names" {
  value = module.cluster.node_names
}

output "loadgen_security_group_id" {
  description = "Run the load generator (ECS task / pod) in this group: only it may reach AMQP/management."
  value       = module.network.loadgen_security_group_id
}

output "subnet_id" {
  value = module.network.subnet_id
}
