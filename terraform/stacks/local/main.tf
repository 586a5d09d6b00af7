# One local cluster per (campaign, config, repeat): the Python side (sizing/terraform.py) keeps one state for each.
module "cluster" {
  source = "../../modules/local_cluster"

  cluster_name  = "${var.campaign}-${var.config_id}-r${var.repeat}"
  node_count    = var.node_count
  port_base     = var.port_base
  work_dir      = var.work_dir
  broker_config = var.broker_config
  username      = var.username
  password      = var.password
  vhost         = var.vhost
  wait_seconds  = var.wait_seconds
  volume_roles  = var.volume_roles
  envelope      = var.envelope
  python        = var.python
  runtime       = var.runtime
  rootfs        = var.rootfs
  network_slot  = var.network_slot
  network_mbit  = var.network_mbit
}
