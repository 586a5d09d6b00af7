"""Hooks wrap clients: each one builds on an edge module of the core (adapters.terraform, ...)."""
