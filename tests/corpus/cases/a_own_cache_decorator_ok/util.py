import functools

_KERNEL_CACHE = {}


def cache_kernel(func):
    @functools.wraps(func)
    def wrapper(*args):
        key = (func.__module__, func.__name__, *args)
        if key not in _KERNEL_CACHE:
            _KERNEL_CACHE[key] = func(*args)
        return _KERNEL_CACHE[key]

    return wrapper
