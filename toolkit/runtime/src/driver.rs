//! Is the driver new enough? Its CUDA version against the PTX ISA of the
//! modules to load, and the entry points the runtime calls.

use crate::error::{Error, Result};
use crate::probe::{REQUIRED_DRIVER_SYMBOLS, driver_present, driver_symbol_present};
use cudarc::driver::sys;

/// The PTX ISA that `ptxlab-builder` writes by default (`.version 7.8`): the
/// floor a driver must accept for [`crate::Device::gpu`] to open it.
pub const MIN_PTX_ISA: (u32, u32) = (7, 8);

/// The PTX ISA version of a PTX module (`.version 7.8` -> (7, 8)).
pub fn ptx_isa_version(ptx: &str) -> Option<(u32, u32)> {
    let line = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".version"))?;
    let (major, minor) = line.trim().split_once('.')?;
    Some((major.trim().parse().ok()?, minor.trim().parse().ok()?))
}

/// The oldest driver CUDA version whose JIT accepts PTX ISA `isa`
/// (ISA 7.x shipped with CUDA 11.x, 8.0-8.5 with 12.0-12.5, 8.6-8.8 with
/// 12.7-12.9, 9.x with 13.x); `None` for an ISA this table does not know.
pub fn cuda_for_ptx_isa(isa: (u32, u32)) -> Option<(u32, u32)> {
    match isa {
        (7, m) => Some((11, m)),
        (8, m) if m <= 5 => Some((12, m)),
        (8, m) if m <= 8 => Some((12, m + 1)),
        (9, m) => Some((13, m)),
        _ => None,
    }
}

/// The driver's CUDA version as (major, minor), calling nothing but
/// `cuDriverGetVersion` (which needs no `cuInit`).
pub fn driver_cuda_version() -> Result<(u32, u32)> {
    if !driver_present() {
        return Err(Error::NoDriver {
            detail: "libcuda.so / libcuda.so.1 could not be loaded".into(),
        });
    }
    if !driver_symbol_present("cuDriverGetVersion") {
        return Err(Error::NoDriver {
            detail: "a libcuda was loaded but it does not export cuDriverGetVersion, so it is \
                     not a working NVIDIA driver (check LD_LIBRARY_PATH)"
                .into(),
        });
    }
    let mut v: std::ffi::c_int = 0;
    // SAFETY: `v` is a valid out-pointer; cuDriverGetVersion needs no cuInit
    // and the symbol is present (checked above).
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::driver(
            "cuDriverGetVersion",
            cudarc::driver::DriverError(r),
        ));
    }
    Ok(((v / 1000) as u32, ((v % 1000) / 10) as u32))
}

/// Refuses a driver older than PTX ISA `isa` needs, naming both versions.
pub fn check_ptx_isa(driver: (u32, u32), isa: (u32, u32)) -> Result<()> {
    if let Some(need) = cuda_for_ptx_isa(isa)
        && driver < need
    {
        return Err(Error::DriverTooOld {
            detail: format!(
                "it supports CUDA {}.{}, but the kernels are PTX ISA {}.{}, which needs a driver \
                 for CUDA {}.{} or newer",
                driver.0, driver.1, isa.0, isa.1, need.0, need.1
            ),
        });
    }
    Ok(())
}

/// Checks that a loaded `libcuda` can run this build: new enough for PTX ISA
/// [`MIN_PTX_ISA`] and exporting every entry point the runtime calls.
/// Returns the driver's CUDA version as "major.minor".
pub fn check_driver() -> Result<String> {
    let (major, minor) = driver_cuda_version()?;
    let found = format!("{major}.{minor}");
    check_ptx_isa((major, minor), MIN_PTX_ISA)?;
    if let Some(missing) = REQUIRED_DRIVER_SYMBOLS
        .iter()
        .find(|s| !driver_symbol_present(s))
    {
        return Err(Error::DriverTooOld {
            detail: format!(
                "the driver (CUDA {found}) does not export {missing}, which this build calls"
            ),
        });
    }
    Ok(found)
}

/// Blocks per thread-block cluster that every sm_90+ GPU runs without a
/// per-kernel opt-in (CUDA's "portable cluster size").
pub const PORTABLE_CLUSTER_BLOCKS: u32 = 8;

/// The address the driver reads a parameter's value from.
fn param_ptr(p: &crate::param::Param) -> *mut std::ffi::c_void {
    use crate::param::Param;
    match p {
        Param::U32(v) => v as *const u32 as *mut _,
        Param::I32(v) => v as *const i32 as *mut _,
        Param::U64(v) => v as *const u64 as *mut _,
        Param::F32(v) => v as *const f32 as *mut _,
        Param::F64(v) => v as *const f64 as *mut _,
        Param::U8(v) => v as *const u8 as *mut _,
        Param::Bytes(b) => b.bytes.as_ptr() as *mut _,
    }
}

/// Launches `f` on `stream` in thread-block clusters of `cluster` blocks:
/// `cuLaunchKernelEx` with the `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`
/// attribute (cudarc's launch builder has no launch attributes). The
/// launch shape was checked by `check_launch` (clusters on the device, at
/// most the portable size, the grid a whole number of clusters).
///
/// # Safety
/// `f` and `stream` belong to `ctx`; `params` are the entry's parameters
/// in order, of the types its PTX declares (the caller checked them), and
/// every buffer they point to is live until the kernel has finished.
pub(crate) unsafe fn launch_cluster(
    ctx: &cudarc::driver::CudaContext,
    f: sys::CUfunction,
    stream: sys::CUstream,
    cfg: &crate::config::LaunchConfig,
    cluster: ptxlab_device::Dim3,
    params: &[crate::param::Param],
) -> std::result::Result<(), cudarc::driver::DriverError> {
    if !driver_symbol_present("cuLaunchKernelEx") {
        return Err(cudarc::driver::DriverError(
            sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
        ));
    }
    ctx.bind_to_thread()?;
    let mut ptrs: Vec<*mut std::ffi::c_void> = params.iter().map(param_ptr).collect();
    // SAFETY: an all-zero attribute is a valid (ignored) value of the
    // plain-data union; the cluster fields are set just below.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster.x;
    attr.value.clusterDim.y = cluster.y;
    attr.value.clusterDim.z = cluster.z;
    let lc = sys::CUlaunchConfig {
        gridDimX: cfg.grid.x,
        gridDimY: cfg.grid.y,
        gridDimZ: cfg.grid.z,
        blockDimX: cfg.block.x,
        blockDimY: cfg.block.y,
        blockDimZ: cfg.block.z,
        sharedMemBytes: cfg.shared_bytes as u32,
        hStream: stream,
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `lc` and `attr` live across the call; `ptrs` holds one
    // pointer per parameter, each to a value in `params` (borrowed for
    // the call), of the size the entry declares (the caller's contract);
    // the driver copies them before returning.
    unsafe { sys::cuLaunchKernelEx(&lc, f, ptrs.as_mut_ptr(), std::ptr::null_mut()).result() }
}
