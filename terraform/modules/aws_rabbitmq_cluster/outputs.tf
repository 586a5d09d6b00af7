# `cluster` has exactly the shape of sizing.resources.cluster.ClusterInfo.from_dict (target "aws"). No local process
# control here: faults go through SSM Run Command against instance_id.
output "cluster" {
  description = "The cluster in sizing.resources.cluster.ClusterInfo.from_dict's shape (target \"aws\"; faults go through SSM against instance_id)."
  sensitive   = true
  value = {
    target       = "aws"
    cluster_name = var.cluster_name
    username     = var.username
    password     = var.password
    vhost        = "/"
    ctl_env      = {}
    cluster_dir  = null # local target only
    envelope     = null # the local scale model only
    network      = null # the local target's namespaces only
    nodes = [
      for i, node in local.nodes : {
        number            = node.number
        name              = "rabbit@${node.hostname}"
        host              = aws_instance.node[i].private_ip
        amqp_port         = local.ports.amqp
        management_port   = local.ports.management
        prometheus_port   = local.ports.prometheus
        dist_port         = local.ports.dist
        pid_file          = null
        data_dir          = "/var/lib/rabbitmq"
        start_cmd         = null
        stop_cmd          = null
        ctl_cmd           = null
        instance_id       = aws_instance.node[i].id
        management_scheme = "http"
      }
    ]
  }
}

output "instance_ids" {
  description = "EC2 instance id of each node, in node order."
  value       = aws_instance.node[*].id
}

output "security_group_id" {
  description = "The nodes' security group."
  value       = aws_security_group.rabbitmq.id
}

output "node_names" {
  description = "Erlang node name of each node (rabbit@rabbitN), in node order."
  value       = [for node in local.nodes : "rabbit@${node.hostname}"]
}

output "management_urls" {
  description = "Management API URL of each node, in node order."
  value       = [for instance in aws_instance.node : "http://${instance.private_ip}:${local.ports.management}"]
}

output "amqp_uris" {
  description = "AMQP URI of each node, credentials included, in node order."
  sensitive   = true
  value       = [for instance in aws_instance.node : "amqp://${urlencode(var.username)}:${urlencode(var.password)}@${instance.private_ip}:${local.ports.amqp}/%2F"]
}
