output "cluster" {
  description = "sizing.resources.cluster.ClusterInfo.from_dict shape."
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
