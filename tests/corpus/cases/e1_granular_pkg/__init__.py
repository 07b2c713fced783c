# corpus: expect=WH021 warp=rejects
"""A granular-material solver split over modules: the kernels live in `kernels.py`, the state class in
`solver.py` allocates the grain radii with `wp.full(..., dtype=wp.float64)`, which the float32 radius
parameter of the contact kernel refuses at launch."""
