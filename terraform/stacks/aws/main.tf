locals {
  # On every resource (provider default_tags) and, passed explicitly, on the EBS volumes, which
  # default_tags do not reach when they are created inside an aws_instance.
  tags = merge(
    {
      Project  = "rabbit-sizing"
      Campaign = var.campaign
      Config   = var.config_id
      Repeat   = tostring(var.repeat)
    },
    var.expires_at == null ? {} : { ExpiresAt = var.expires_at },
  )
  # Repeats of a config may be up side by side: the suffix keeps their names apart, even when truncated.
  name = "${substr(replace("${var.campaign}-${var.config_id}", ".", "-"), 0, 42)}-r${var.repeat}"
}

resource "random_password" "cookie" {
  length  = 32
  special = false
}

resource "random_password" "broker" {
  length  = 24
  special = false
}

module "network" {
  source      = "../../modules/aws_network"
  name        = local.name
  vpc_cidr    = var.vpc_cidr
  subnet_cidr = var.subnet_cidr
}

module "cluster" {
  source = "../../modules/aws_rabbitmq_cluster"

  cluster_name              = local.name
  node_count                = var.node_count
  instance_type             = var.instance_type
  volumes                   = var.volumes
  filesystem                = var.filesystem
  vpc_id                    = module.network.vpc_id
  subnet_id                 = module.network.subnet_id
  subnet_cidr               = module.network.subnet_cidr
  client_security_group_ids = [module.network.loadgen_security_group_id]
  erlang_cookie             = random_password.cookie.result
  username                  = var.username
  password                  = var.password != "" ? var.password : random_password.broker.result
  broker_config             = var.broker_config
  rabbitmq_package          = var.rabbitmq_package
  erlang_series             = var.erlang_series
  volume_tags               = local.tags
}
