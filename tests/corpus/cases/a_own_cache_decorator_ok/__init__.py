# corpus: expect= warp=ok
"""mujoco-warp's pattern: a project's own `cache_kernel` decorator (util.py) on factories of nested kernels
(smooth.py), launched from another module over (worlds, bodies) with a 2-D `wp.tid()`."""
