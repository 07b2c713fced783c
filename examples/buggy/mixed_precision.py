"""Half-precision scaling written the way one would in numpy: Warp refuses both lines."""

import warp as wp


@wp.kernel
def scale_half(x: wp.array(dtype=wp.float16), counts: wp.array(dtype=wp.int32)):
    i = wp.tid()
    x[i] = x[i] * 0.5  # float16 * float32: no overload
    counts[i] = 1.0  # a float stored into an int32 array
    r = wp.sqroot(float(x[i]))  # no such builtin
