//! Probing for the NVIDIA driver without calling into it: `dlopen` of
//! `libcuda` and look-ups of entry points. cudarc panics on a missing library
//! or entry point, so everything that may run on a machine without a driver
//! (or with a broken one) asks here first.

use cudarc::driver::sys;

/// `true` when `libcuda` can be loaded. Probed once per process: the probe
/// opens and closes the library (trying candidate names until one loads),
/// too slow for the checks that ask before each launch or tensor map.
pub fn driver_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: only tries to dlopen the library; no CUDA call is made.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// `true` when `libcuda` can be loaded and exports `name`. Never calls into
/// the driver, so it is safe on a machine without one or with a broken one
/// (cudarc itself panics on a missing entry point).
pub fn driver_symbol_present(name: &str) -> bool {
    if !driver_present() {
        return false;
    }
    // SAFETY: the library loads (checked above); `culib` only dlopens it,
    // and `get` only looks up the address of `name`, which is never called
    // through this pointer type.
    unsafe { sys::culib().get::<*const ()>(name.as_bytes()).is_ok() }
}

/// Driver entry points the runtime calls (through cudarc). A `libcuda`
/// without one of them is too old for this build, or not NVIDIA's.
pub const REQUIRED_DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuStreamCreate",
    "cuStreamSynchronize",
    "cuStreamDestroy_v2",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphUpload",
    "cuGraphLaunch",
];
