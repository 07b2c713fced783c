"""warp-harness: a harness around writing NVIDIA Warp kernels (see README.md and DESIGN.md)."""

__version__ = "0.1.0"
