output "cluster" {
  description = "sizing.resources.cluster.ClusterInfo.from_dict shape (target \"aws\")."
  value       = module.cluster.cluster
  sensitive   = true
}

output "amqp_uris" {
  description = "AMQP URI of each node, credentials included, in node order."
  value       = module.cluster.amqp_uris
  sensitive   = true
}

output "management_urls" {
  description = "Management API URL of each node, in node order."
  value       = module.cluster.management_urls
}

output "node_names" {
  description = "Erlang node name of each node, in node order."
  value       = module.cluster.node_names
}

output "loadgen_security_group_id" {
  description = "Run the load generator (ECS task / pod) in this group: only it may reach AMQP/management."
  value       = module.network.loadgen_security_group_id
}

output "subnet_id" {
  description = "The subnet the load generator must run in to reach the nodes."
  value       = module.network.subnet_id
}
