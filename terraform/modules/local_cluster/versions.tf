terraform {
  # Only the builtin terraform_data resource: nothing to download, so `terraform init` works offline.
  required_version = ">= 1.4"
}
