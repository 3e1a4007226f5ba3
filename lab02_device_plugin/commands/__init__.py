"""Subcommands of the Lab 02 command line, one module each (see lab02_device_plugin.cli)."""
