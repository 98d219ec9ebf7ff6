//! The runtime: one [`Device`] type over two backends (a real GPU through
//! `cudarc`, or the CPU simulator), typed [`Buffer`]s, launch configurations
//! checked against the device and the kernel, the module cache (PTX JIT or
//! cubin, each load timed), and event timing.

use crate::error::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    LaunchConfig as CuLaunchConfig, PushKernelArg, sys,
};
use cudarc::nvrtc::Ptx;
use ptxlab_device::mem::DeviceCopy;
use ptxlab_device::sim::{self, LaunchSpec};
use ptxlab_device::{DeviceSlice, DeviceSliceMut, Dim3};
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Which build of the kernels a launch uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Variant {
    /// IEEE-accurate math (`div.rn`, `sqrt.rn`, precise `math::` functions).
    #[default]
    Precise,
    /// The fast-math build: SFU approximations, approximate division, FTZ.
    FastMath,
}

/// How a module reaches the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Form {
    /// PTX, compiled by the driver's JIT at load time.
    #[default]
    Ptx,
    /// A cubin assembled ahead of time by `ptxas` (no JIT).
    Cubin,
}

/// One loadable module: variant, form, and an optional register cap applied
/// to every kernel (`.maxnreg`, written into the PTX before the JIT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ModuleKey {
    /// Precise or fast math.
    pub variant: Variant,
    /// PTX or cubin.
    pub form: Form,
    /// Register cap for every kernel of the module (PTX only).
    pub reg_cap: Option<u32>,
}

impl ModuleKey {
    /// The fast-math PTX module.
    pub const FAST: ModuleKey = ModuleKey {
        variant: Variant::FastMath,
        form: Form::Ptx,
        reg_cap: None,
    };
    /// The default module (precise PTX).
    pub const PRECISE: ModuleKey = ModuleKey {
        variant: Variant::Precise,
        form: Form::Ptx,
        reg_cap: None,
    };
    /// A short label for reports.
    pub fn label(&self) -> String {
        let mut s = match self.variant {
            Variant::Precise => "precise".to_string(),
            Variant::FastMath => "fast-math".to_string(),
        };
        if self.form == Form::Cubin {
            s.push_str(", cubin");
        }
        if let Some(r) = self.reg_cap {
            s.push_str(&format!(", maxnreg {r}"));
        }
        s
    }
}

/// Grid, block, dynamic shared memory and module of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: usize,
    /// Which module the kernel comes from (GPU only).
    pub module: ModuleKey,
}

impl LaunchConfig {
    /// A 1D launch covering `threads` threads with `block` threads per block.
    pub fn for_threads(threads: usize, block: u32) -> Result<Self> {
        if block == 0 {
            return Err(Error::input(
                "block size",
                "0 threads per block; use 32..=1024",
            ));
        }
        if threads == 0 {
            return Err(Error::input(
                "launch size",
                "0 threads requested; the problem is empty",
            ));
        }
        let blocks = threads.div_ceil(block as usize);
        if blocks > i32::MAX as usize {
            return Err(Error::input(
                "launch size",
                format!(
                    "{threads} threads need {blocks} blocks of {block}; at most {} blocks",
                    i32::MAX
                ),
            ));
        }
        Ok(Self {
            grid: Dim3::x(blocks as u32),
            block: Dim3::x(block),
            shared_bytes: 0,
            module: ModuleKey::default(),
        })
    }
    /// A 2D launch covering `nx` x `ny` threads with `bx` x `by` blocks.
    pub fn for_2d(nx: usize, ny: usize, bx: u32, by: u32) -> Result<Self> {
        if nx == 0 || ny == 0 || bx == 0 || by == 0 {
            return Err(Error::input(
                "launch size",
                format!("{nx}x{ny} threads in {bx}x{by} blocks: no dimension may be 0"),
            ));
        }
        let gx = nx.div_ceil(bx as usize);
        let gy = ny.div_ceil(by as usize);
        if gx > i32::MAX as usize || gy > 65535 {
            return Err(Error::input(
                "launch size",
                format!("grid {gx}x{gy}: x is limited to 2^31-1 and y to 65535"),
            ));
        }
        Ok(Self {
            grid: Dim3::xy(gx as u32, gy as u32),
            block: Dim3::xy(bx, by),
            shared_bytes: 0,
            module: ModuleKey::default(),
        })
    }
    /// The same launch with `bytes` of dynamic shared memory.
    pub fn with_shared(mut self, bytes: usize) -> Self {
        self.shared_bytes = bytes;
        self
    }
    /// The same launch from another module.
    pub fn with_module(mut self, module: ModuleKey) -> Self {
        self.module = module;
        self
    }
}

/// Limits a launch is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Block dimension limits.
    pub max_block: Dim3,
    /// Grid dimension limits.
    pub max_grid: Dim3,
    /// Dynamic shared memory per block with opt-in.
    pub max_shared_optin: usize,
}

impl Limits {
    /// The simulator's limits (those of a Hopper GPU).
    pub const SIM: Limits = Limits {
        max_threads_per_block: sim::MAX_THREADS_PER_BLOCK,
        max_block: Dim3::new(1024, 1024, 64),
        max_grid: Dim3::new(i32::MAX as u32, 65535, 65535),
        max_shared_optin: sim::MAX_SHARED_BYTES,
    };
}

/// Checks a launch against the device limits and the kernel's own
/// `launch_bounds`. Shared by both backends, so the simulator rejects what the
/// GPU would.
pub fn check_launch(kernel: &str, cfg: &LaunchConfig, lim: &Limits) -> Result<()> {
    let bad = |what: &str, value: String, limit: String| Error::Launch {
        kernel: kernel.to_string(),
        what: what.to_string(),
        value,
        limit,
    };
    let (b, g) = (cfg.block, cfg.grid);
    if b.x == 0 || b.y == 0 || b.z == 0 {
        return Err(bad(
            "the block",
            b.to_string(),
            "every dimension must be at least 1".into(),
        ));
    }
    if g.x == 0 || g.y == 0 || g.z == 0 {
        return Err(bad(
            "the grid",
            g.to_string(),
            "every dimension must be at least 1".into(),
        ));
    }
    if b.volume() > lim.max_threads_per_block as u64 {
        return Err(bad(
            "the block size",
            format!("{} threads {b}", b.volume()),
            format!(
                "this device allows at most {} threads per block",
                lim.max_threads_per_block
            ),
        ));
    }
    if b.x > lim.max_block.x || b.y > lim.max_block.y || b.z > lim.max_block.z {
        return Err(bad(
            "the block",
            b.to_string(),
            format!("each dimension is limited to {}", lim.max_block),
        ));
    }
    if g.x > lim.max_grid.x || g.y > lim.max_grid.y || g.z > lim.max_grid.z {
        return Err(bad(
            "the grid",
            g.to_string(),
            format!("each dimension is limited to {}", lim.max_grid),
        ));
    }
    if let Some(info) = ptxlab_device::kernel_info(kernel)
        && info.max_threads > 0
        && b.volume() > info.max_threads as u64
    {
        return Err(bad(
            "the block size",
            format!("{} threads", b.volume()),
            format!(
                "the kernel declares launch_bounds({}) and cannot run larger blocks",
                info.max_threads
            ),
        ));
    }
    if cfg.shared_bytes > lim.max_shared_optin {
        return Err(bad(
            "the dynamic shared memory",
            format!("{} bytes", cfg.shared_bytes),
            format!(
                "this device allows at most {} bytes per block",
                lim.max_shared_optin
            ),
        ));
    }
    Ok(())
}

/// Host memory, bytes: what the kernel reports as available now (Linux
/// `MemAvailable`, lowered to the cgroup's `memory.max` headroom when a
/// container limits it) and the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    /// Bytes that can be allocated without swapping (or being OOM-killed).
    pub available: u64,
    /// Physical memory (or the cgroup limit), bytes.
    pub total: u64,
}

/// Host memory as the OS reports it; `None` where it cannot be read (the
/// checks that use it are then skipped).
pub fn host_memory() -> Option<HostMemory> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb.saturating_mul(1024))
    };
    let mut m = HostMemory {
        available: field("MemAvailable:").or_else(|| field("MemFree:"))?,
        total: field("MemTotal:")?,
    };
    let read_u64 =
        |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    if let Some(limit) = read_u64("/sys/fs/cgroup/memory.max") {
        let used = read_u64("/sys/fs/cgroup/memory.current").unwrap_or(0);
        m.total = m.total.min(limit);
        m.available = m.available.min(limit.saturating_sub(used));
    }
    Some(m)
}

/// `bytes` as "N bytes (X.Y GiB)".
pub fn fmt_bytes(bytes: u128) -> String {
    format!(
        "{bytes} bytes ({:.1} GiB)",
        bytes as f64 / (1u64 << 30) as f64
    )
}

/// Checks that `bytes` of host memory (the inputs and outputs of a run, held
/// at once) fit in what the host has available, so an absurd size is refused
/// with the limit instead of the process being aborted or OOM-killed.
/// `what` names the input (`--n`), `hint` says what to do.
pub fn check_host_alloc(what: &str, bytes: u128, hint: &str) -> Result<()> {
    let m = host_memory().unwrap_or(HostMemory {
        available: isize::MAX as u64,
        total: isize::MAX as u64,
    });
    if bytes > m.available as u128 || bytes > isize::MAX as u128 {
        return Err(Error::input(
            what,
            format!(
                "needs {} of host memory, but {} are available (of {}); {hint}",
                fmt_bytes(bytes),
                fmt_bytes(m.available as u128),
                fmt_bytes(m.total as u128)
            ),
        ));
    }
    Ok(())
}

/// Facts about a GPU, read from the driver.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GpuInfo {
    /// Device name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache, bytes.
    pub l2_bytes: u64,
    /// Device memory, bytes.
    pub total_mem: u64,
    /// Driver's CUDA version, e.g. "13.0".
    pub driver_cuda: String,
    /// SM clock, kHz (as reported: the maximum boost clock).
    pub clock_khz: u32,
    /// Memory clock, kHz.
    pub mem_clock_khz: u32,
    /// Memory bus width, bits.
    pub mem_bus_bits: u32,
    /// Launch limits.
    #[serde(skip)]
    pub limits: Limits,
}

impl GpuInfo {
    /// `sm_90` for compute capability 9.0.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// A record of one module load.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadRecord {
    /// Module label.
    pub module: String,
    /// Wall time of `cuModuleLoadData`, ms (JIT included for PTX).
    pub ms: f64,
}

/// A GPU, its default stream and the module cache.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: GpuInfo,
    modules: Mutex<HashMap<ModuleKey, Arc<CudaModule>>>,
    functions: Mutex<HashMap<(ModuleKey, String), CudaFunction>>,
    loads: Mutex<Vec<LoadRecord>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

/// `true` when `libcuda` can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library; no CUDA call is made.
    unsafe { sys::is_culib_present() }
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

/// The PTX ISA version of the embedded kernels (`.version 7.8` -> (7, 8)).
pub fn ptx_isa_version() -> Option<(u32, u32)> {
    let line = crate::modules::KERNELS_PTX
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

/// Checks that a loaded `libcuda` can run this build: it exports every entry
/// point the runtime calls and is new enough for the embedded PTX. Returns
/// the driver's CUDA version as "major.minor". Calls nothing but
/// `cuDriverGetVersion` (which needs no `cuInit`).
pub fn check_driver() -> Result<String> {
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
    let (major, minor) = ((v / 1000) as u32, ((v % 1000) / 10) as u32);
    let found = format!("{major}.{minor}");
    if let Some(isa) = ptx_isa_version()
        && let Some(need) = cuda_for_ptx_isa(isa)
        && (major, minor) < need
    {
        return Err(Error::DriverTooOld {
            detail: format!(
                "it supports CUDA {found}, but the kernels are PTX ISA {}.{}, which needs a driver \
                 for CUDA {}.{} or newer",
                isa.0, isa.1, need.0, need.1
            ),
        });
    }
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

/// The driver's CUDA version as "major.minor" (after [`check_driver`]).
pub fn driver_version() -> Result<String> {
    check_driver()
}

impl Gpu {
    /// Opens GPU `ordinal`. A missing driver or device is an error, never a panic.
    pub fn new(ordinal: usize) -> Result<Self> {
        // A missing, broken or too-old driver is refused here, before any
        // cudarc call (which would panic on a missing entry point).
        let driver_cuda = check_driver()?;
        let count =
            CudaContext::device_count().map_err(|e| Error::driver("cuDeviceGetCount", e))? as usize;
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::driver("cuCtxCreate", e))?;
        let stream = ctx.default_stream();
        use sys::CUdevice_attribute as A;
        let attr = |a: A| {
            ctx.attribute(a)
                .map_err(|e| Error::driver("cuDeviceGetAttribute", e))
        };
        let info = GpuInfo {
            name: ctx
                .name()
                .map_err(|e| Error::driver("cuDeviceGetName", e))?,
            compute_capability: ctx
                .compute_capability()
                .map_err(|e| Error::driver("cuDeviceGetAttribute", e))?,
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            total_mem: ctx
                .total_mem()
                .map_err(|e| Error::driver("cuDeviceTotalMem", e))? as u64,
            driver_cuda,
            clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32,
            mem_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as u32,
            mem_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32,
            limits: Limits {
                max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
                max_block: Dim3::new(
                    attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as u32,
                    attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as u32,
                    attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as u32,
                ),
                max_grid: Dim3::new(
                    attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u32,
                    attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u32,
                    attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u32,
                ),
                max_shared_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                    as usize,
            },
        };
        Ok(Self {
            ctx,
            stream,
            info,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            loads: Mutex::new(Vec::new()),
        })
    }

    /// Device facts.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }
    /// The stream every launch of this handle goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// Module loads so far (label and ms).
    pub fn load_records(&self) -> Vec<LoadRecord> {
        self.loads.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The image for a module key: PTX text (with the register cap written
    /// in) or the cubin for this GPU's arch.
    fn image(&self, key: ModuleKey) -> Result<Ptx> {
        let (ptx, cubins) = match key.variant {
            Variant::Precise => (crate::modules::KERNELS_PTX, crate::modules::KERNELS_CUBINS),
            Variant::FastMath => (
                crate::modules::KERNELS_FAST_PTX,
                crate::modules::KERNELS_FAST_CUBINS,
            ),
        };
        match key.form {
            Form::Ptx => {
                let text = match key.reg_cap {
                    Some(cap) => with_register_cap(ptx, cap)?,
                    None => ptx.to_string(),
                };
                Ok(Ptx::from_src(text))
            }
            Form::Cubin => {
                if key.reg_cap.is_some() {
                    return Err(Error::input(
                        "module",
                        "a register cap applies to PTX modules only (the cubin is already assembled)",
                    ));
                }
                let arch = self.info.arch();
                let built: Vec<&str> = cubins.iter().map(|(a, _)| *a).collect();
                let (_, bytes) = cubins.iter().find(|(a, _)| *a == arch).ok_or_else(|| Error::Unsupported {
                    what: format!("a cubin for {arch}"),
                    backend: "gpu".into(),
                    hint: format!(
                        "cubins were built for {built:?}; rebuild with PTXLAB_CUBIN_ARCHS={arch} and ptxas \
                         available, or use the PTX module"
                    ),
                })?;
                Ok(Ptx::from_binary(bytes.to_vec()))
            }
        }
    }

    /// Loads a module without the cache (the "JIT on every call" rung), timing it.
    pub fn load_uncached(&self, key: ModuleKey) -> Result<(Arc<CudaModule>, f64)> {
        let image = self.image(key)?;
        let t = Instant::now();
        let m = self
            .ctx
            .load_module(image)
            .map_err(|e| Error::driver("cuModuleLoadData", e))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Ok(mut l) = self.loads.lock() {
            l.push(LoadRecord {
                module: key.label(),
                ms,
            });
        }
        Ok((m, ms))
    }

    /// The module for `key`, loaded once and cached.
    pub fn module(&self, key: ModuleKey) -> Result<Arc<CudaModule>> {
        if let Some(m) = self.modules.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(m);
        }
        let (m, _) = self.load_uncached(key)?;
        if let Ok(mut c) = self.modules.lock() {
            c.insert(key, m.clone());
        }
        Ok(m)
    }

    /// Drops cached modules and functions (so the next launch loads again).
    pub fn clear_cache(&self) {
        if let Ok(mut f) = self.functions.lock() {
            f.clear();
        }
        if let Ok(mut m) = self.modules.lock() {
            m.clear();
        }
    }

    /// A kernel from the cached module `key`.
    pub fn function(&self, key: ModuleKey, name: &str) -> Result<CudaFunction> {
        if let Some(f) = self
            .functions
            .lock()
            .ok()
            .and_then(|f| f.get(&(key, name.to_string())).cloned())
        {
            return Ok(f);
        }
        let m = self.module(key)?;
        let f = m
            .load_function(name)
            .map_err(|e| Error::driver(format!("cuModuleGetFunction({name})"), e))?;
        if let Ok(mut c) = self.functions.lock() {
            c.insert((key, name.to_string()), f.clone());
        }
        Ok(f)
    }

    /// Registers of a kernel as the driver reports them after loading.
    pub fn num_regs(&self, key: ModuleKey, name: &str) -> Result<i32> {
        self.function(key, name)?
            .num_regs()
            .map_err(|e| Error::driver("cuFuncGetAttribute", e))
    }

    /// Launches kernel `name` with raw parameters, after checking the launch.
    pub fn launch_by_name(&self, name: &str, cfg: &LaunchConfig, params: &[Param]) -> Result<()> {
        let f = self.function(cfg.module, name)?;
        self.launch_function(&f, name, cfg, params)
    }

    /// Launches an already-loaded function.
    pub fn launch_function(
        &self,
        f: &CudaFunction,
        name: &str,
        cfg: &LaunchConfig,
        params: &[Param],
    ) -> Result<()> {
        check_launch(name, cfg, &self.info.limits)?;
        if cfg.shared_bytes > 48 * 1024 {
            f.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                cfg.shared_bytes as i32,
            )
            .map_err(|e| Error::driver("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", e))?;
        }
        let lc = CuLaunchConfig {
            grid_dim: (cfg.grid.x, cfg.grid.y, cfg.grid.z),
            block_dim: (cfg.block.x, cfg.block.y, cfg.block.z),
            shared_mem_bytes: cfg.shared_bytes as u32,
        };
        let mut b = self.stream.launch_builder(f);
        for p in params {
            match p {
                Param::U32(v) => b.arg(v),
                Param::I32(v) => b.arg(v),
                Param::U64(v) => b.arg(v),
                Param::F32(v) => b.arg(v),
                Param::F64(v) => b.arg(v),
            };
        }
        // SAFETY: the parameters were produced by `KernelArg` from live buffers
        // and scalars in the order of the kernel's PTX signature (the `launch!`
        // macro passes the arguments of the Rust kernel call, which the
        // simulator branch type-checks against the kernel's signature).
        unsafe { b.launch(lc) }.map_err(|e| Error::driver(format!("cuLaunchKernel({name})"), e))?;
        Ok(())
    }

    /// Waits for all work on the stream; reports asynchronous kernel errors.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| Error::driver("cuStreamSynchronize", e))
    }

    /// Device-to-device copy of `bytes` bytes (used as the bandwidth ceiling).
    pub fn copy_dtod(&self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>) -> Result<()> {
        self.stream
            .memcpy_dtod(src, dst)
            .map_err(|e| Error::driver("cuMemcpyDtoDAsync", e))
    }

    /// Free and total device memory, bytes.
    pub fn mem_info(&self) -> Result<(u64, u64)> {
        let (f, t) = self
            .ctx
            .mem_get_info()
            .map_err(|e| Error::driver("cuMemGetInfo", e))?;
        Ok((f as u64, t as u64))
    }

    fn event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| Error::driver("cuEventCreate", e))
    }

    /// Times `f` with device events: `warmup` untimed calls, then `reps` calls
    /// each between its own pair of events. Returns every sample.
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut(usize) -> Result<()>,
    ) -> Result<Timing> {
        for i in 0..warmup {
            f(i)?;
        }
        let reps = reps.max(1);
        let mut evs = Vec::with_capacity(reps);
        for i in 0..reps {
            let (a, b) = (self.event()?, self.event()?);
            a.record(&self.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            f(warmup + i)?;
            b.record(&self.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            evs.push((a, b));
        }
        self.synchronize()?;
        let mut ms = Vec::with_capacity(reps);
        for (a, b) in &evs {
            ms.push(
                a.elapsed_ms(b)
                    .map_err(|e| Error::driver("cuEventElapsedTime", e))? as f64,
            );
        }
        Ok(Timing::from_samples(ms))
    }
}

/// Writes `.maxnreg cap` into every `.entry` of a PTX module (replacing an
/// existing one), as `max_registers` would: the register-cap rung without
/// recompiling the kernels.
pub fn with_register_cap(ptx: &str, cap: u32) -> Result<String> {
    if !(16..=255).contains(&cap) {
        return Err(Error::input(
            "register cap",
            format!("{cap} registers; allowed 16..=255"),
        ));
    }
    let mut out = String::with_capacity(ptx.len() + 1024);
    let mut in_header = false;
    for line in ptx.lines() {
        let t = line.trim();
        if t.starts_with(".visible .entry") || t.starts_with(".entry") {
            in_header = true;
        }
        if in_header && t.starts_with(".maxnreg") {
            continue;
        }
        if in_header && t == "{" {
            out.push_str(&format!(".maxnreg {cap}\n"));
            in_header = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// Timing samples of a region, in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Timing {
    /// Median.
    pub median_ms: f64,
    /// Fastest.
    pub min_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Number of samples.
    pub reps: usize,
}

impl Timing {
    /// Statistics of a set of samples.
    pub fn from_samples(mut ms: Vec<f64>) -> Self {
        ms.sort_by(|a, b| a.total_cmp(b));
        let n = ms.len();
        let median_ms = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            ms[n / 2]
        } else {
            0.5 * (ms[n / 2 - 1] + ms[n / 2])
        };
        Self {
            median_ms,
            min_ms: ms.first().copied().unwrap_or(f64::NAN),
            max_ms: ms.last().copied().unwrap_or(f64::NAN),
            reps: n,
        }
    }
    /// Times a host closure with a wall clock (CPU baselines and the simulator).
    pub fn host(warmup: usize, reps: usize, mut f: impl FnMut()) -> Self {
        for _ in 0..warmup {
            f();
        }
        let ms = (0..reps.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        Self::from_samples(ms)
    }
}

/// A raw kernel parameter for the GPU.
#[derive(Debug, Clone, Copy)]
pub enum Param {
    /// `.u32`
    U32(u32),
    /// `.s32`
    I32(i32),
    /// `.u64` (pointers and lengths)
    U64(u64),
    /// `.f32`
    F32(f32),
    /// `.f64`
    F64(f64),
}

/// The backend of a [`Device`].
pub enum DeviceKind {
    /// A real GPU.
    Gpu(Box<Gpu>),
    /// The CPU simulator.
    Sim,
}

/// A device to run kernels on: a GPU or the CPU simulator, behind one API.
pub struct Device {
    kind: DeviceKind,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.name())
    }
}

impl Device {
    /// GPU `ordinal`.
    pub fn gpu(ordinal: usize) -> Result<Self> {
        Ok(Self {
            kind: DeviceKind::Gpu(Box::new(Gpu::new(ordinal)?)),
        })
    }
    /// The CPU simulator.
    pub fn sim() -> Self {
        Self {
            kind: DeviceKind::Sim,
        }
    }
    /// The backend.
    pub fn kind(&self) -> &DeviceKind {
        &self.kind
    }
    /// The GPU, if this is one.
    pub fn as_gpu(&self) -> Option<&Gpu> {
        match &self.kind {
            DeviceKind::Gpu(g) => Some(g),
            DeviceKind::Sim => None,
        }
    }
    /// `true` for the simulator.
    pub fn is_sim(&self) -> bool {
        matches!(self.kind, DeviceKind::Sim)
    }
    /// Name for reports.
    pub fn name(&self) -> String {
        match &self.kind {
            DeviceKind::Gpu(g) => g.info.name.clone(),
            DeviceKind::Sim => "CPU simulator".into(),
        }
    }
    /// Launch limits.
    pub fn limits(&self) -> Limits {
        match &self.kind {
            DeviceKind::Gpu(g) => g.info.limits,
            DeviceKind::Sim => Limits::SIM,
        }
    }

    fn check_alloc<T>(&self, len: usize, what: &str) -> Result<()> {
        let bytes = (len as u128) * std::mem::size_of::<T>() as u128;
        let (free, total) = match &self.kind {
            DeviceKind::Gpu(g) => g.mem_info()?,
            // The simulator's buffers are host memory.
            DeviceKind::Sim => match host_memory() {
                Some(m) => (m.available, m.total),
                None => (isize::MAX as u64, isize::MAX as u64),
            },
        };
        if bytes > free as u128 || bytes > isize::MAX as u128 {
            return Err(Error::OutOfMemory {
                what: what.to_string(),
                requested: bytes.min(u64::MAX as u128) as u64,
                free,
                total,
            });
        }
        Ok(())
    }

    /// Copies host data to a new device buffer.
    pub fn upload<T: DeviceCopy + DeviceRepr>(&self, data: &[T]) -> Result<Buffer<T>> {
        self.check_alloc::<T>(data.len(), "an input buffer")?;
        Ok(Buffer {
            inner: match &self.kind {
                DeviceKind::Gpu(g) => BufInner::Gpu(
                    g.stream
                        .clone_htod(data)
                        .map_err(|e| Error::driver("cuMemcpyHtoD", e))?,
                ),
                DeviceKind::Sim => {
                    BufInner::Sim(data.iter().map(|v| UnsafeCell::new(*v)).collect())
                }
            },
        })
    }

    /// A new buffer of `len` copies of `value` (use a poison value such as NaN
    /// for outputs, so an element the kernel failed to write shows up).
    pub fn alloc_filled<T: DeviceCopy + DeviceRepr>(
        &self,
        len: usize,
        value: T,
    ) -> Result<Buffer<T>> {
        self.check_alloc::<T>(len, "an output buffer")?;
        match &self.kind {
            DeviceKind::Gpu(_) => self.upload(&vec![value; len]),
            DeviceKind::Sim => Ok(Buffer {
                inner: BufInner::Sim((0..len).map(|_| UnsafeCell::new(value)).collect()),
            }),
        }
    }

    /// Overwrites a buffer with host data of the same length.
    pub fn write<T: DeviceCopy + DeviceRepr>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
        if buf.len() != data.len() {
            return Err(Error::input(
                "write",
                format!("buffer has {} elements, data {}", buf.len(), data.len()),
            ));
        }
        match (&self.kind, &mut buf.inner) {
            (DeviceKind::Gpu(g), BufInner::Gpu(s)) => g
                .stream
                .memcpy_htod(data, s)
                .map_err(|e| Error::driver("cuMemcpyHtoD", e)),
            (DeviceKind::Sim, BufInner::Sim(s)) => {
                for (d, v) in s.iter_mut().zip(data) {
                    *d.get_mut() = *v;
                }
                Ok(())
            }
            _ => Err(Error::input(
                "buffer",
                "the buffer belongs to another backend",
            )),
        }
    }

    /// Copies a buffer back to the host (synchronises).
    pub fn download<T: DeviceCopy + DeviceRepr>(&self, buf: &Buffer<T>) -> Result<Vec<T>> {
        match (&self.kind, &buf.inner) {
            (DeviceKind::Gpu(g), BufInner::Gpu(s)) => g
                .stream
                .clone_dtoh(s)
                .map_err(|e| Error::driver("cuMemcpyDtoH", e)),
            (DeviceKind::Sim, BufInner::Sim(s)) => Ok(s
                .iter()
                .map(|c| {
                    // SAFETY: no simulated launch is running (launches are
                    // synchronous), so nothing writes the cells while they are read.
                    unsafe { *c.get() }
                })
                .collect()),
            _ => Err(Error::input(
                "buffer",
                "the buffer belongs to another backend",
            )),
        }
    }

    /// Waits for queued work (no-op on the simulator, whose launches are synchronous).
    pub fn synchronize(&self) -> Result<()> {
        match &self.kind {
            DeviceKind::Gpu(g) => g.synchronize(),
            DeviceKind::Sim => Ok(()),
        }
    }

    /// Times `f`: device events on a GPU, the wall clock on the simulator.
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut(usize) -> Result<()>,
    ) -> Result<Timing> {
        match &self.kind {
            DeviceKind::Gpu(g) => g.time(warmup, reps, f),
            DeviceKind::Sim => {
                let mut err = None;
                let t = Timing::host(warmup, reps, || {
                    if err.is_none()
                        && let Err(e) = f(0)
                    {
                        err = Some(e);
                    }
                });
                match err {
                    Some(e) => Err(e),
                    None => Ok(t),
                }
            }
        }
    }
}

enum BufInner<T> {
    Gpu(CudaSlice<T>),
    Sim(Box<[UnsafeCell<T>]>),
}

/// A typed buffer on a [`Device`].
pub struct Buffer<T> {
    inner: BufInner<T>,
}

// SAFETY: simulator cells are only written by kernels through relaxed atomics
// (`ptxlab_device::sim::mem`) or through `&mut Buffer`; GPU slices are handles.
unsafe impl<T: Send> Sync for Buffer<T> {}

impl<T> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer(len {})", self.len())
    }
}

impl<T> Buffer<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        match &self.inner {
            BufInner::Gpu(s) => s.len(),
            BufInner::Sim(s) => s.len(),
        }
    }
    /// `true` when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The GPU allocation, when on a GPU.
    pub fn cuda_slice(&self) -> Option<&CudaSlice<T>> {
        match &self.inner {
            BufInner::Gpu(s) => Some(s),
            BufInner::Sim(_) => None,
        }
    }
    /// The GPU allocation, mutable.
    pub fn cuda_slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.inner {
            BufInner::Gpu(s) => Some(s),
            BufInner::Sim(_) => None,
        }
    }
    fn device_ptr(&self) -> u64 {
        match &self.inner {
            BufInner::Gpu(s) => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(s, s.stream());
                p
            }
            BufInner::Sim(s) => s.as_ptr() as u64,
        }
    }
    fn host_ptr(&self) -> *mut T {
        match &self.inner {
            BufInner::Gpu(_) => std::ptr::null_mut(),
            BufInner::Sim(s) => UnsafeCell::raw_get(s.as_ptr()),
        }
    }
}

/// A Rust value that can be a kernel argument on both backends.
pub trait KernelArg {
    /// The value the simulator passes to the kernel function.
    type Sim: Copy + Send + Sync;
    /// Appends the GPU parameters (a buffer is pointer + length).
    fn push_params(&self, out: &mut Vec<Param>);
    /// The simulator's argument.
    fn sim_value(self) -> Self::Sim;
}

impl<'b, T: DeviceCopy> KernelArg for &'b Buffer<T> {
    type Sim = DeviceSlice<'b, T>;
    fn push_params(&self, out: &mut Vec<Param>) {
        out.push(Param::U64(self.device_ptr()));
        out.push(Param::U64(self.len() as u64));
    }
    fn sim_value(self) -> DeviceSlice<'b, T> {
        // SAFETY: the simulator buffer is live for 'b and `len` long; kernels
        // only read through a `DeviceSlice`.
        unsafe { DeviceSlice::from_raw_parts(self.host_ptr(), self.len()) }
    }
}

impl<'b, T: DeviceCopy> KernelArg for &'b mut Buffer<T> {
    type Sim = DeviceSliceMut<'b, T>;
    fn push_params(&self, out: &mut Vec<Param>) {
        out.push(Param::U64(self.device_ptr()));
        out.push(Param::U64(self.len() as u64));
    }
    fn sim_value(self) -> DeviceSliceMut<'b, T> {
        // SAFETY: the buffer is borrowed mutably for 'b (the launch), `len`
        // long; simulated writes are relaxed atomics into its cells.
        unsafe { DeviceSliceMut::from_raw_parts(self.host_ptr(), self.len()) }
    }
}

macro_rules! scalar_arg {
    ($($t:ty => $v:ident as $c:ty),*) => {$(
        impl KernelArg for $t {
            type Sim = $t;
            fn push_params(&self, out: &mut Vec<Param>) {
                out.push(Param::$v(*self as $c));
            }
            fn sim_value(self) -> $t {
                self
            }
        }
    )*};
}
scalar_arg!(u32 => U32 as u32, i32 => I32 as i32, u64 => U64 as u64, usize => U64 as u64, f32 => F32 as f32, f64 => F64 as f64);

/// Calls a kernel function with a tuple of simulator arguments.
pub trait CallWith<Args> {
    /// `self(args.0, args.1, ...)`.
    fn call_with(&self, args: Args);
}
macro_rules! impl_call {
    ($($t:ident),*) => {
        impl<F: Fn($($t),*), $($t: Copy),*> CallWith<($($t,)*)> for F {
            #[allow(non_snake_case)]
            fn call_with(&self, args: ($($t,)*)) {
                let ($($t,)*) = args;
                self($($t),*)
            }
        }
    };
}
impl_call!();
impl_call!(A);
impl_call!(A, B);
impl_call!(A, B, C);
impl_call!(A, B, C, D);
impl_call!(A, B, C, D, E);
impl_call!(A, B, C, D, E, G);
impl_call!(A, B, C, D, E, G, H);
impl_call!(A, B, C, D, E, G, H, I);
impl_call!(A, B, C, D, E, G, H, I, J);
impl_call!(A, B, C, D, E, G, H, I, J, K);
impl_call!(A, B, C, D, E, G, H, I, J, K, L);
impl_call!(A, B, C, D, E, G, H, I, J, K, L, M);

/// Runs a kernel closure on the simulator after the same checks as the GPU.
pub fn sim_launch<F: Fn() + Sync>(kernel: &'static str, cfg: &LaunchConfig, f: F) -> Result<()> {
    check_launch(kernel, cfg, &Limits::SIM)?;
    let spec = LaunchSpec {
        kernel,
        grid: cfg.grid,
        block: cfg.block,
        shared_bytes: cfg.shared_bytes,
    };
    sim::launch(&spec, f).map_err(Error::from)
}

/// Launches `module::kernel(args...)` on a [`Device`]: on a GPU, the PTX entry
/// of that name with the arguments as parameters; on the simulator, the same
/// Rust function once per simulated thread. The kernel's name is written once.
///
/// ```ignore
/// launch!(&dev, cfg, vector::vector_add_f32(&a, &b, &mut c))?;
/// ```
#[macro_export]
macro_rules! launch {
    ($dev:expr, $cfg:expr, $module:ident :: $kernel:ident ( $($arg:expr),* $(,)? )) => {{
        let __dev: &$crate::runtime::Device = $dev;
        let __cfg: $crate::runtime::LaunchConfig = $cfg;
        match __dev.kind() {
            $crate::runtime::DeviceKind::Gpu(__g) => {
                let mut __p = ::std::vec::Vec::new();
                $( $crate::runtime::KernelArg::push_params(&$arg, &mut __p); )*
                __g.launch_by_name(::core::stringify!($kernel), &__cfg, &__p)
            }
            $crate::runtime::DeviceKind::Sim => {
                let __vals = ( $( $crate::runtime::KernelArg::sim_value($arg), )* );
                $crate::runtime::sim_launch(::core::stringify!($kernel), &__cfg, move || {
                    $crate::runtime::CallWith::call_with(&::kernels_gpu::$module::$kernel, __vals)
                })
            }
        }
    }};
}
