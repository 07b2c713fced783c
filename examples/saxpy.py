"""y = a * x + y: a clean, memory-bound kernel. warp-harness reports nothing here."""

import numpy as np
import warp as wp


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[0] += x[i]  # `+=` on an array element is an atomic add in Warp


def main() -> None:
    n = 1 << 16
    x = wp.array(np.arange(n, dtype=np.float32))
    y = wp.ones(n, dtype=float)
    s = wp.zeros(1, dtype=float)
    wp.launch(saxpy, dim=n, inputs=[2.0, x, y])
    wp.launch(total, dim=n, inputs=[y], outputs=[s])
    print("sum:", s.numpy()[0])


if __name__ == "__main__":
    main()
