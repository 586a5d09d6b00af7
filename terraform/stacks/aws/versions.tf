terraform {
  # 1.10: the S3 backend's own lock file (use_lockfile), no DynamoDB table.
  required_version = ">= 1.10"
  required_providers {
    aws    = { source = "hashicorp/aws", version = ">= 5.0" }
    random = { source = "hashicorp/random", version = ">= 3.5" }
  }
  # Partial config: adapters/terraform.py passes bucket, key (<prefix>/<campaign>/<cluster_key>/terraform.tfstate)
  # and region at init, so each cluster (campaign, config, repeat) has its own state, in S3: an apply and its
  # destroy may run on different Airflow workers. The lock file (<key>.tflock) keeps two of them (a retried
  # apply, a destroy) from writing the same state at once.
  backend "s3" {
    use_lockfile = true
  }
}

provider "aws" {
  region = var.aws_region
  default_tags {
    tags = local.tags
  }
}
