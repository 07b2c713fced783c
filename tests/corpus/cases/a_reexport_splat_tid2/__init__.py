# corpus: expect=WH007 warp=silent
"""A 2-D splatting kernel re-exported by a sub-package's `__init__.py` and launched from the renderer with
a flat pixel count: `j` from `wp.tid()` is always 0, so only the first column of the image is written."""
