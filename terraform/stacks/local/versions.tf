terraform {
  required_version = ">= 1.4"
  # The state path is given per (campaign, config) at init: -backend-config=path=.state/terraform/<campaign>/<config_id>/terraform.tfstate
  backend "local" {}
}
