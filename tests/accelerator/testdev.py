"""Loads the test accelerator (testdev.cpp) into torch and names its device.

    import testdev
    device = testdev.load(path_of_libacc_testdev_so)   # "testdev" or "privateuseone"
    testdev.counters()                                  # dict of the library's counters

Torch 2.x renames PrivateUse1 to "testdev" and registers a small device
module (torch.testdev) that torch's own code looks up; torch 1.13 has the
PrivateUse1 key but no renaming API, so the device is "privateuseone" there.
"""
import ctypes
import types

import torch

_lib = None
NAME = "testdev"


# The library's counters (testdev.cpp), each read by testdev_{name}().
COUNTERS = ("blocking_copies", "scalar_reads", "synchronizations", "events_recorded", "event_queries", "kernels",
            "kernel_ns", "memory_now", "memory_peak")


def load(path):
    global _lib
    if _lib is not None:
        return device_name()
    torch.ops.load_library(path)
    _lib = ctypes.CDLL(path)
    for fn in COUNTERS:
        getattr(_lib, "testdev_" + fn).restype = ctypes.c_uint64
    if hasattr(torch.utils, "rename_privateuse1_backend"):
        torch.utils.rename_privateuse1_backend(NAME)
        module = types.ModuleType("torch." + NAME)
        module.is_available = lambda: True
        module.is_initialized = lambda: True
        module.device_count = lambda: 1
        module.current_device = lambda: 0
        module._is_in_bad_fork = lambda: False
        module.manual_seed = lambda seed: None
        module.manual_seed_all = lambda seed: None
        module.synchronize = lambda device=None: None
        torch._register_device_module(NAME, module)
    return device_name()


def device_name():
    return NAME if hasattr(torch.utils, "rename_privateuse1_backend") else "privateuseone"


def counters():
    return {fn: int(getattr(_lib, "testdev_" + fn)()) for fn in COUNTERS}


def kernel_seconds():
    """Seconds the device's kernels have run on the calling threads so far,
    after their launch cost (testdev_kernel_ns)."""
    return _lib.testdev_kernel_ns() / 1e9
