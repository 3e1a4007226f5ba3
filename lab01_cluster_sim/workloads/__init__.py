"""Workloads: loaders for the Alibaba openb trace and a seeded synthetic generator."""
