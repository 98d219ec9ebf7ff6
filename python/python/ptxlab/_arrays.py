"""Arrays in and out: NumPy for every backend, torch and CuPy on the GPU.

Host-side inputs are checked here (dtype, shape, finite values) so that a
bad array gets a ``TypeError`` or ``ValueError`` naming it before any work
starts; the lab checks them again with its own messages.
"""

from __future__ import annotations

import numpy as np

BACKENDS = ("gpu", "sim", "cpu")
PRECISIONS = ("f64", "f32")


def kind(x) -> str:
    """``"torch"``, ``"cupy"`` or ``"numpy"`` (anything else NumPy can read)."""
    mod = type(x).__module__ or ""
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    return "numpy"


def device_of(x):
    """The CUDA device ordinal of a torch or CuPy GPU array, else ``None``."""
    k = kind(x)
    if k == "torch":
        return x.device.index if x.device.type == "cuda" else None
    if k == "cupy":
        return int(x.device.id)
    return None


def check_choice(name: str, value, allowed) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {', '.join(map(repr, allowed))}; got {value!r}")
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(map(repr, allowed))}")
    return value


def to_host(x):
    """A NumPy view or copy of ``x`` (a GPU array is copied to the host)."""
    k = kind(x)
    if k == "torch":
        return x.detach().cpu().numpy()
    if k == "cupy":
        return x.get()
    if hasattr(x, "unit") and hasattr(x, "value"):
        raise TypeError(
            "astropy Quantity inputs are not supported; pass plain arrays (q.value) in "
            "consistent units (frequency in cycles per unit of t)"
        )
    return x


def real_1d(name: str, x, allow_scalar: bool = False, check_finite: bool = True) -> np.ndarray:
    """``x`` as a contiguous float64 vector of finite values (with
    ``check_finite=False`` the caller checks finiteness itself)."""
    a = np.asarray(to_host(x))
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise TypeError(f"{name} has dtype {a.dtype}; give real numbers (a float or integer array)")
    if a.ndim == 0 and allow_scalar:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError(f"{name} has shape {a.shape}; give a 1-D array")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not check_finite:
        return a
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] = {a[i]} is not finite; every value must be a finite number")
    return a


def real_2d(name: str, x) -> np.ndarray:
    """``x`` as a C-contiguous float64 matrix of finite values."""
    a = np.asarray(to_host(x))
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise TypeError(f"{name} has dtype {a.dtype}; give real numbers (a float or integer array)")
    if a.ndim != 2:
        raise ValueError(f"{name} has shape {a.shape}; give a 2-D array (ny, nx)")
    a = np.ascontiguousarray(a, dtype=np.float64)
    bad = ~np.isfinite(a)
    if bad.any():
        r, c = np.unravel_index(int(np.argmax(bad)), a.shape)
        raise ValueError(f"{name}[{r}, {c}] = {a[r, c]} is not finite; every value must be a finite number")
    return a


def gpu_ordinal(backend: str, device, *arrays) -> int:
    """The GPU to run on: ``device`` when given, else the device of the GPU
    arrays among ``arrays`` (all on one device), else 0. A GPU array on a
    device other than ``device``, or GPU arrays on several devices, are a
    ``ValueError``."""
    devs = {d for d in (device_of(a) for a in arrays if a is not None) if d is not None}
    if len(devs) > 1:
        raise ValueError(f"the GPU arrays are on devices {sorted(devs)}; put them on one device")
    if device is not None:
        if not isinstance(device, (int, np.integer)) or isinstance(device, bool) or device < 0:
            raise TypeError(f"device must be a GPU ordinal (an int >= 0); got {device!r}")
        if devs and devs != {int(device)}:
            raise ValueError(
                f"the GPU arrays are on device {devs.pop()} but device={device} was asked for; "
                "move them or leave device out"
            )
        return int(device)
    if devs and backend != "gpu":
        # GPU arrays with the sim or cpu backend: staged through the host.
        return 0
    return devs.pop() if devs else 0


def like(template, a: np.ndarray):
    """``a`` as the kind of array ``template`` is (a torch or CuPy array on
    the template's device; else NumPy)."""
    k = kind(template)
    if k == "torch":
        import torch

        return torch.from_numpy(np.ascontiguousarray(a)).to(template.device)
    if k == "cupy":
        import cupy

        with cupy.cuda.Device(template.device.id):
            return cupy.asarray(a)
    return a
