# real-bug: class=extents warp=trap
# source: https://github.com/google-deepmind/mujoco_warp/commit/68ca85ac4c65e77f688fee7fa8a1b3f0598f5192
# why: the kernel runs one thread per sensor, but the launch takes its dim from the length of the sensor data (`nsensordata`, the sum of every sensor's dimension) instead of the sensor count: the per-sensor arrays are read past their end
import numpy as np
import warp as wp

TACTILE = wp.constant(7)


@wp.kernel
def _sensor_tactile_zero(
    sensor_type: wp.array(dtype=int),
    sensor_dim: wp.array(dtype=int),
    sensor_adr: wp.array(dtype=int),
    sensordata_out: wp.array2d(dtype=float),
):
    worldid, sensorid = wp.tid()
    if sensor_type[sensorid] != TACTILE:
        return
    for i in range(sensor_dim[sensorid]):
        sensordata_out[worldid, sensor_adr[sensorid] + i] = 0.0


def run() -> np.ndarray:
    nworld = 2
    # two sensors: a 3-D accelerometer (type 1) at 0..2 and a 2-D tactile sensor at 3..4
    sensor_type = wp.array(np.array([1, 7], dtype=np.int32), dtype=int, device="cpu")
    sensor_dim = wp.array(np.array([3, 2], dtype=np.int32), dtype=int, device="cpu")
    sensor_adr = wp.array(np.array([0, 3], dtype=np.int32), dtype=int, device="cpu")
    nsensor, nsensordata = 2, 5
    sensordata = wp.array(np.ones((nworld, nsensordata), dtype=np.float32), dtype=float, device="cpu")
    wp.launch(
        _sensor_tactile_zero,
        dim=(nworld, nsensordata),
        inputs=[sensor_type, sensor_dim, sensor_adr],
        outputs=[sensordata],
        device="cpu",
    )
    return sensordata.numpy()


def reference() -> np.ndarray:
    return np.array([[1.0, 1.0, 1.0, 0.0, 0.0]] * 2)
