"""Subcommands of the Lab 01 command line, one module each (see lab01_cluster_sim.cli)."""
