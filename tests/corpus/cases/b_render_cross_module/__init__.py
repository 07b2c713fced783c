# corpus: expect=WH007,WH011 warp=silent
"""A renderer whose kernels live in their own module: the tone-mapping pass (one thread per row) is
launched over the framebuffer's 2-D shape, and the exposure pass over one pixel too many, both from
functions that receive the buffers as parameters."""
