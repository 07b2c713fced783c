# corpus: expect= warp=ok
"""Constitutive models as classes of `@wp.func`s, as warp.fem's DofMapper: the base class declares the
interface with bodies that only raise `NotImplementedError` (or `...`), the subclasses override them, and
kernels call the subclasses'. Warp builds a function only when a kernel calls it, so the bases' `raise`
(which it would refuse) is never built."""

from typing import Any

import warp as wp


class Material:
    """Interface of a hyperelastic material evaluated per quadrature point."""

    @wp.func
    def energy(F: wp.mat33, mu: float, lam: float) -> float:
        """Strain energy density."""
        raise NotImplementedError

    @wp.func
    def stress(F: wp.mat33, mu: float, lam: float) -> wp.mat33:
        raise NotImplementedError("subclasses return the first Piola-Kirchhoff stress")

    @wp.func
    def project(value: Any): ...


class NeoHookean(Material):
    @wp.func
    def energy(F: wp.mat33, mu: float, lam: float) -> float:
        J = wp.determinant(F)
        Ic = wp.trace(wp.transpose(F) * F)
        return 0.5 * mu * (Ic - 3.0) - mu * wp.log(J) + 0.5 * lam * wp.log(J) * wp.log(J)

    @wp.func
    def stress(F: wp.mat33, mu: float, lam: float) -> wp.mat33:
        J = wp.determinant(F)
        F_inv_t = wp.transpose(wp.inverse(F))
        return mu * (F - F_inv_t) + lam * wp.log(J) * F_inv_t

    @wp.func
    def project(value: Any):
        return value


@wp.kernel
def material_energy(
    deformation: wp.array(dtype=wp.mat33),
    mu: float,
    lam: float,
    energy: wp.array(dtype=float),
    stress: wp.array(dtype=wp.mat33),
):
    q = wp.tid()
    F = deformation[q]
    energy[q] = NeoHookean.energy(F, mu, lam)
    stress[q] = NeoHookean.stress(F, mu, lam)


def evaluate(deformation, mu, lam, energy, stress):
    wp.launch(
        material_energy, dim=deformation.shape[0], inputs=[deformation, mu, lam], outputs=[energy, stress]
    )
