terraform {
  required_version = ">= 1.4"
  # The state path is given per cluster at init: -backend-config=path=.state/terraform/<campaign>/<cluster_key>/terraform.tfstate
  backend "local" {}
}
