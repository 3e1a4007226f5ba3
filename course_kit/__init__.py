"""What both labs share, kept once: the command-line shell and widgets that work without a kernel.

* :mod:`course_kit.cli`: :class:`~course_kit.cli.CommandLine`, the subcommand discovery,
  one-line usage errors and exit statuses of ``python -m lab01_cluster_sim`` and
  ``python -m lab02_device_plugin``;
* :mod:`course_kit.widgets`: :func:`~course_kit.widgets.precomputed_slider`, a slider whose
  states are rendered ahead of time so the static book responds without a kernel.

It imports neither lab (each lab imports it), so the labs stay independent of each other.
Nothing is imported here: the device plugin's image needs the shell without matplotlib.
"""
