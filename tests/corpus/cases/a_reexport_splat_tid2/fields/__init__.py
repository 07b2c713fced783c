from .splat import splat_density

__all__ = ["splat_density"]
