# corpus: expect=WH007 warp=silent
"""A cloth solver holding its kernel in an attribute; the kernel lives in another module and reads a 1-D
thread index, but the solver launches it over (environments, particles): every particle index is handed
to `num_envs` threads at once and the environments beyond the first are never integrated."""
