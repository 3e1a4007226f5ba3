"""Figures of Lab 01 (matplotlib). Each module returns a Figure and never calls plt.show()."""
