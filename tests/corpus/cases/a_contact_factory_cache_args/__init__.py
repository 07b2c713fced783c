# corpus: expect=WH006 warp=rejects
"""A mujoco-warp style kernel factory behind `functools.cache` in one module, launched from the collision
driver in another; the launch forgets the margin argument. Warp raises at the launch: "passed 4 arguments
but kernel requires 5"."""
