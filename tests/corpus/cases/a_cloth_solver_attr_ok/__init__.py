# corpus: expect= warp=ok
"""The cloth solver of `a_cloth_solver_attr_tid`, launching its 1-D kernel over all particles of all
environments at once (one flat dim): what the kernel's `wp.tid()` expects."""
