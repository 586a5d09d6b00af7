output "cluster" {
  description = "sizing.cluster.ClusterInfo.from_dict shape."
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
