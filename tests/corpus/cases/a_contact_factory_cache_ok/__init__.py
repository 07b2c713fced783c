# corpus: expect= warp=ok
"""The collision driver of `a_contact_factory_cache_args` passing every argument of the cached factory's
kernel, through a local `kernel = factory(...)`."""
