"""The book's models: time-slicing and MPS contention, the sharing decision, MIG partitions.

Teaching models with no upstream counterpart; they never open a socket and never import
the gRPC layer.
"""
