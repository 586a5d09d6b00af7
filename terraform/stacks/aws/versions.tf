terraform {
  required_version = ">= 1.4"
  required_providers {
    aws    = { source = "hashicorp/aws", version = ">= 5.0" }
    random = { source = "hashicorp/random", version = ">= 3.5" }
  }
  # Partial config: sizing/terraform.py passes bucket, key (<prefix>/<campaign>/<cluster_key>/terraform.tfstate)
  # and region at init, so each cluster (campaign, config, repeat) has its own state.
  backend "s3" {}
}

provider "aws" {
  region = var.aws_region
  default_tags {
    tags = local.tags
  }
}
