# N EC2 nodes, each with its own EBS volumes (one per role of the disk layout: sizing/resources/disks.py), clustered through classic_config peer discovery
# (fixed private IPs, so the peer list is known at boot), reachable by SSM only (no SSH, no inbound internet).

locals {
  # node_exporter: prometheus-node-exporter (cloud-init), scraped by the load generator's node sampler
  ports = { amqp = 5672, management = 15672, prometheus = 15692, node_exporter = 9100, dist = 25672, epmd = 4369 }
  nodes = [
    for i in range(var.node_count) : {
      number   = i + 1
      hostname = "rabbit${i + 1}"
      ip       = cidrhost(var.subnet_cidr, 11 + i)
    }
  ]
  iops_types = ["io1", "io2", "gp3"]
  # What RabbitMQ uses on each role's volume (rabbitmq-env.conf and advanced.config in the cloud-init template).
  role_dirs = { data = ["mnesia", "log"], logs = ["."], wal = ["wal"], segments = ["quorum"] }
}

data "aws_ami" "debian12" {
  count       = var.ami_id == null ? 1 : 0
  most_recent = true
  owners      = ["136693071363"] # Debian
  filter {
    name   = "name"
    values = ["debian-12-amd64-*"]
  }
}

resource "aws_security_group" "rabbitmq" {
  name        = "${var.cluster_name}-rabbitmq"
  description = "RabbitMQ nodes: AMQP/management/prometheus from the load generator only; clustering among themselves."
  vpc_id      = var.vpc_id
  tags        = merge(var.tags, { Name = "${var.cluster_name}-rabbitmq" })

  dynamic "ingress" {
    for_each = {
      amqp          = local.ports.amqp
      management    = local.ports.management
      prometheus    = local.ports.prometheus
      node_exporter = local.ports.node_exporter
    }
    content {
      description     = ingress.key
      from_port       = ingress.value
      to_port         = ingress.value
      protocol        = "tcp"
      security_groups = var.client_security_group_ids
    }
  }

  ingress {
    description = "epmd, Erlang distribution, CLI tools"
    from_port   = local.ports.epmd
    to_port     = local.ports.epmd
    protocol    = "tcp"
    self        = true
  }

  ingress {
    description = "Erlang distribution and CLI tool ports (25672, 35672-35682)"
    from_port   = local.ports.dist
    to_port     = local.ports.dist + 10010
    protocol    = "tcp"
    self        = true
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

data "aws_iam_policy_document" "assume_ec2" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "node" {
  name               = "${var.cluster_name}-rabbitmq-node"
  assume_role_policy = data.aws_iam_policy_document.assume_ec2.json
  tags               = var.tags
}

# SSM Run Command is how the fault injector kills/restarts brokers and raises alarms on AWS.
resource "aws_iam_role_policy_attachment" "ssm" {
  role       = aws_iam_role.node.name
  policy_arn = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

resource "aws_iam_instance_profile" "node" {
  name = "${var.cluster_name}-rabbitmq-node"
  role = aws_iam_role.node.name
}

resource "aws_instance" "node" {
  count                  = var.node_count
  ami                    = var.ami_id != null ? var.ami_id : data.aws_ami.debian12[0].id
  instance_type          = var.instance_type
  subnet_id              = var.subnet_id
  private_ip             = local.nodes[count.index].ip
  vpc_security_group_ids = [aws_security_group.rabbitmq.id]
  iam_instance_profile   = aws_iam_instance_profile.node.name

  metadata_options {
    http_tokens = "required"
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = 16
  }

  # The volumes under test, one per role: attached at launch, so cloud-init can mount them before RabbitMQ installs.
  dynamic "ebs_block_device" {
    for_each = var.volumes
    content {
      device_name           = ebs_block_device.value.device_name
      volume_type           = ebs_block_device.value.type
      volume_size           = ebs_block_device.value.size_gb
      iops                  = contains(local.iops_types, ebs_block_device.value.type) ? ebs_block_device.value.iops : null
      throughput            = ebs_block_device.value.type == "gp3" ? ebs_block_device.value.throughput_mbps : null
      delete_on_termination = true
    }
  }

  user_data = templatefile("${path.module}/templates/cloud-init.yaml.tftpl", {
    hostname      = local.nodes[count.index].hostname
    node_number   = count.index + 1
    node_count    = var.node_count
    nodes         = local.nodes
    cluster_name  = var.cluster_name
    erlang_cookie = var.erlang_cookie
    username      = var.username
    password      = var.password
    extra_conf    = [for key in sort(keys(var.broker_config)) : "${key} = ${var.broker_config[key]}"]
    volumes       = var.volumes
    filesystem    = var.filesystem
    role_dirs     = local.role_dirs
    rmq_package   = var.rabbitmq_package != null ? var.rabbitmq_package : ""
    erlang_series = var.erlang_series != null ? var.erlang_series : ""
  })
  user_data_replace_on_change = true

  tags        = merge(var.tags, { Name = "${var.cluster_name}-${local.nodes[count.index].hostname}" })
  volume_tags = merge(var.volume_tags, var.tags, { Name = "${var.cluster_name}-${local.nodes[count.index].hostname}" })
}
