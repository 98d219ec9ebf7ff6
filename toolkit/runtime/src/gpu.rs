//! A GPU through cudarc: the context and its stream, device facts, the
//! module cache (each load timed: PTX through the driver's JIT, or a cubin),
//! launches checked against the device, the kernel's launch bounds and its
//! PTX parameter list, and event timing.

use crate::config::{LaunchConfig, Limits, check_launch};
use crate::driver::{check_driver, check_ptx_isa, driver_cuda_version, ptx_isa_version};
use crate::error::{Error, Result};
use crate::module::{Entry, Kernels, LoadPlan, ModuleImage, ModuleKey, with_register_cap};
use crate::param::Param;
use crate::stream::{Event, Priority, Stream};
use crate::timing::Timing;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchArgs,
    LaunchConfig as CuLaunchConfig, sys,
};
use cudarc::nvrtc::Ptx;
use ptxlab_device::Dim3;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    /// The module: build stem and group (`kernels/poisson`).
    pub module: String,
    /// How it was loaded (`cubin sm_90`, `cubin sm_90, maxnreg 32`,
    /// `PTX sm_80 through the driver JIT`).
    pub how: String,
    /// Whether it went through the driver's JIT (loaded from PTX).
    pub jit: bool,
    /// Wall time of `cuModuleLoadData`, ms (JIT included for PTX).
    pub ms: f64,
}

/// A GPU, its default stream and the module cache.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: GpuInfo,
    /// Loaded modules, by image (its address in the binary) and key.
    modules: Mutex<HashMap<(usize, ModuleKey), Arc<CudaModule>>>,
    /// Functions with their entries, by kernel set (its address) and key,
    /// then name: a launch finds its function without searching the modules.
    functions: Mutex<FunctionCache>,
    loads: Mutex<Vec<LoadRecord>>,
    /// Tensor maps already in device memory, by their 16 encoded words
    /// (which hold the matrix's address, shape and box): a map made again
    /// for the same matrix reuses the device copy instead of allocating
    /// and uploading 128 bytes. The most recent [`TENSOR_MAP_CACHE`] are
    /// kept.
    tensor_maps: Mutex<TensorMapCache>,
}

/// Uploaded tensor maps by their words, least recently used first.
type TensorMapCache = std::collections::VecDeque<([u64; 16], Arc<crate::Buffer<u64>>)>;

/// How many uploaded tensor maps a GPU handle keeps for reuse.
pub const TENSOR_MAP_CACHE: usize = 64;

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

type FunctionCache = HashMap<(usize, ModuleKey), HashMap<String, (CudaFunction, &'static Entry)>>;

fn image_id(img: &'static ModuleImage) -> usize {
    img as *const ModuleImage as usize
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
                // The portable cluster size where the device can launch
                // clusters at all (sm_90+); larger ones need a per-kernel
                // opt-in this runtime does not make.
                max_cluster_blocks: if attr(A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)? != 0 {
                    crate::driver::PORTABLE_CLUSTER_BLOCKS
                } else {
                    0
                },
            },
        };
        Ok(Self {
            ctx,
            stream,
            info,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            loads: Mutex::new(Vec::new()),
            tensor_maps: Mutex::new(std::collections::VecDeque::new()),
        })
    }

    /// The device copy of the tensor map `words`: the one uploaded before
    /// when the same words were (a tensor map is read-only on the device,
    /// and equal words describe the same matrix at the same address), else
    /// `upload()`'s, kept for the next time.
    pub(crate) fn tensor_map_copy(
        &self,
        words: &[u64; 16],
        upload: impl FnOnce() -> Result<crate::Buffer<u64>>,
    ) -> Result<Arc<crate::Buffer<u64>>> {
        let mut cache = self
            .tensor_maps
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(i) = cache.iter().position(|(w, _)| w == words) {
            let hit = cache.remove(i).unwrap_or_else(|| unreachable!());
            let buf = hit.1.clone();
            cache.push_back(hit);
            return Ok(buf);
        }
        let buf = Arc::new(upload()?);
        if cache.len() == TENSOR_MAP_CACHE {
            cache.pop_front();
        }
        cache.push_back((*words, buf.clone()));
        Ok(buf)
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
    /// The GPU's ordinal (among those `CUDA_VISIBLE_DEVICES` shows).
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }
    /// A new stream of this GPU, at `priority` among its streams.
    pub fn new_stream(&self, priority: Priority) -> Result<Stream> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let (least, greatest) = cudarc::driver::result::stream::get_priority_range()
            .map_err(|e| Error::driver("cuCtxGetStreamPriorityRange", e))?;
        let p = match priority {
            Priority::High => greatest,
            Priority::Low => least,
        };
        self.ctx
            .new_stream_with_priority(p)
            .map(Stream::from_cuda)
            .map_err(|e| Error::driver("cuStreamCreateWithPriority", e))
    }
    /// The stream every launch of this handle goes to, as a [`Stream`] (to
    /// order it against other streams with [`Event`]s).
    pub fn own_stream(&self) -> Stream {
        Stream::from_cuda(self.stream.clone())
    }
    /// A stream that another library owns (a torch or CuPy stream, by its
    /// `CUstream` handle: `1` the legacy default stream, `2` the per-thread
    /// default stream), to order this GPU's work against it; the handle is
    /// never destroyed through the runtime.
    ///
    /// # Safety
    /// `handle` is a live stream of this GPU's context (the primary context
    /// of its device, which torch and CuPy share) or one of the special
    /// handles `1` and `2`, and it stays alive while the returned stream
    /// (or a clone of it) is used.
    pub unsafe fn borrow_stream(&self, handle: u64) -> Stream {
        // SAFETY: the caller guarantees that the handle is a live stream of
        // this context for as long as the wrapper is used; the wrapper does
        // not own it (it is never destroyed through it).
        let s = unsafe {
            self.ctx
                .wrap_borrowed_stream(handle as usize as sys::CUstream)
        };
        Stream::from_cuda(s)
    }
    /// A new event of this GPU; `timing: false` makes one that only orders
    /// streams (cheaper to record and wait for).
    pub fn new_event(&self, timing: bool) -> Result<Event> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        self.ctx
            .new_event(Some(flags))
            .map(Event::from_cuda)
            .map_err(|e| Error::driver("cuEventCreate", e))
    }
    /// Stops the runtime from ordering each buffer's uses across streams
    /// with events of its own (one pair per buffer, recorded and waited for
    /// on every use), for code that orders its streams itself.
    ///
    /// # Safety
    /// From this call on, for every buffer of this GPU allocated after it:
    /// nothing reads or writes the buffer on one stream while work queued on
    /// another stream may still write it (or, for a write, read it), unless
    /// an [`Event`] recorded after that work is waited for first
    /// ([`Stream::wait`]); a download or drop of the buffer happens only
    /// after every stream that used it was synchronised. Uploads and
    /// downloads go to the device's own stream.
    pub unsafe fn disable_event_tracking(&self) {
        // SAFETY: the caller takes over the ordering that the tracking
        // provided (this function's contract).
        unsafe { self.ctx.disable_event_tracking() }
    }
    /// Module loads so far (label and ms).
    pub fn load_records(&self) -> Vec<LoadRecord> {
        self.loads.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// How `img` loads on this GPU for `key` (see [`ModuleImage::plan`]).
    fn plan(&self, img: &ModuleImage, key: ModuleKey) -> LoadPlan {
        img.plan(self.info.compute_capability, key)
    }

    /// The image to load for a module key: the cubin for this GPU (of the
    /// key's register cap) or the PTX text (with the cap written in).
    fn image(&self, img: &ModuleImage, key: ModuleKey) -> Result<Ptx> {
        match self.plan(img, key) {
            LoadPlan::Cubin { .. } => {
                let (_, bytes) = img
                    .cubin_for(self.info.compute_capability, key.reg_cap)
                    .ok_or_else(|| Error::input("module", "the planned cubin is missing"))?;
                Ok(Ptx::from_binary(bytes.to_vec()))
            }
            LoadPlan::Ptx { .. } => {
                let text = match key.reg_cap {
                    Some(cap) => with_register_cap(img.ptx, cap)?,
                    None => img.ptx.to_string(),
                };
                Ok(Ptx::from_src(text))
            }
            LoadPlan::NoCubin { reg_cap, .. } => {
                let arch = self.info.arch();
                let built: Vec<String> = match reg_cap {
                    None => img.cubins.iter().map(|(a, _)| a.to_string()).collect(),
                    Some(cap) => img
                        .capped
                        .iter()
                        .filter(|c| c.cap == cap)
                        .map(|c| c.arch.to_string())
                        .collect(),
                };
                let what = match reg_cap {
                    None => format!("a cubin of `{}/{}` for {arch}", img.stem, img.group),
                    Some(cap) => format!(
                        "a cubin of `{}/{}` for {arch} capped at {cap} registers",
                        img.stem, img.group
                    ),
                };
                let rebuild = match reg_cap {
                    None => format!("PTXLAB_CUBIN_ARCHS={arch}"),
                    Some(cap) => format!(
                        "`Embed::reg_capped(\"{}\", {cap})` in build.rs and PTXLAB_CUBIN_ARCHS={arch}",
                        img.group
                    ),
                };
                Err(Error::Unsupported {
                    what,
                    backend: "gpu".into(),
                    hint: format!(
                        "cubins were built for {built:?}; rebuild with {rebuild} and ptxas \
                         available, or load the PTX (Form::Ptx or Form::Auto)"
                    ),
                })
            }
            LoadPlan::NotForThisGpu { arch } => Err(Error::Unsupported {
                what: format!("module `{}/{}` (built for {arch})", img.stem, img.group),
                backend: format!("gpu ({})", self.info.arch()),
                hint: "an `a` target such as sm_90a runs on that GPU only".into(),
            }),
        }
    }

    /// How a launch from `img` with `key` would load it on this GPU
    /// (`cubin sm_90`, `cubin sm_90, maxnreg 32`, `PTX sm_80 through the
    /// driver JIT`, or why it cannot).
    pub fn load_plan(&self, img: &ModuleImage, key: ModuleKey) -> String {
        self.plan(img, key).to_string()
    }

    /// The portable module of `key`'s build that holds `entry` (the one
    /// every supported GPU can load).
    pub fn portable_module(
        &self,
        kernels: &Kernels,
        key: ModuleKey,
        entry: &str,
    ) -> Result<&'static ModuleImage> {
        let cc = self.info.compute_capability;
        kernels
            .modules
            .iter()
            .find(|m| {
                m.math == key.math
                    && !m.arch.ends_with('a')
                    && m.runs_on(cc)
                    && m.entry(entry).is_some()
            })
            .ok_or_else(|| Error::Unsupported {
                what: format!(
                    "a {:?} module of `{}` holding `{entry}`",
                    key.math, kernels.crate_name
                ),
                backend: format!("gpu ({})", self.info.arch()),
                hint:
                    "build the kernel crate for this math mode and an arch at or below this GPU's"
                        .into(),
            })
    }

    /// Loads the module that holds `entry` without the cache, timing the
    /// load (a module's first load: the JIT for PTX); it is unloaded when
    /// the handle is dropped.
    pub fn load_uncached(
        &self,
        kernels: &Kernels,
        key: ModuleKey,
        entry: &str,
    ) -> Result<(Arc<CudaModule>, f64)> {
        let img = self.portable_module(kernels, key, entry)?;
        self.load_image(img, key)
    }

    /// Drops the cached module that holds `entry` (and the cached functions
    /// of `kernels` in that form), so the next launch from it loads it again:
    /// a lesson that pays the load (the JIT of a PTX module) on every call
    /// evicts before each launch.
    pub fn evict(&self, kernels: &Kernels, key: ModuleKey, entry: &str) -> Result<()> {
        let img = kernels.select(key.math, entry, self.info.compute_capability)?;
        if let Ok(mut f) = self.functions.lock() {
            f.remove(&(kernels as *const Kernels as usize, key));
        }
        if let Ok(mut m) = self.modules.lock() {
            m.remove(&(image_id(img), key));
        }
        Ok(())
    }

    fn load_image(
        &self,
        img: &'static ModuleImage,
        key: ModuleKey,
    ) -> Result<(Arc<CudaModule>, f64)> {
        let plan = self.plan(img, key);
        if plan.is_jit()
            && let Some(isa) = ptx_isa_version(img.ptx)
        {
            check_ptx_isa(driver_cuda_version()?, isa)?;
        }
        let image = self.image(img, key)?;
        let t = Instant::now();
        let m = self
            .ctx
            .load_module(image)
            .map_err(|e| Error::driver("cuModuleLoadData", e))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Ok(mut l) = self.loads.lock() {
            l.push(LoadRecord {
                module: format!("{}/{}", img.stem, img.group),
                how: plan.to_string(),
                jit: plan.is_jit(),
                ms,
            });
        }
        Ok((m, ms))
    }

    /// The module `img` in the form `key`, loaded once and cached.
    pub fn module(&self, img: &'static ModuleImage, key: ModuleKey) -> Result<Arc<CudaModule>> {
        let id = (image_id(img), key);
        if let Some(m) = self.modules.lock().ok().and_then(|m| m.get(&id).cloned()) {
            return Ok(m);
        }
        let (m, _) = self.load_image(img, key)?;
        if let Ok(mut c) = self.modules.lock() {
            c.insert(id, m.clone());
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

    /// Kernel `name` of `kernels` in the form `key`, from the module that
    /// holds it and runs on this GPU (see [`Kernels::select`]), with its entry.
    pub fn entry(
        &self,
        kernels: &Kernels,
        key: ModuleKey,
        name: &str,
    ) -> Result<(CudaFunction, &'static Entry)> {
        let id = (kernels as *const Kernels as usize, key);
        if let Some(hit) = self
            .functions
            .lock()
            .ok()
            .and_then(|f| f.get(&id).and_then(|m| m.get(name)).cloned())
        {
            return Ok(hit);
        }
        let img = kernels.select(key.math, name, self.info.compute_capability)?;
        let entry = img
            .entry(name)
            .ok_or_else(|| Error::input("kernel", name.to_string()))?;
        let m = self.module(img, key)?;
        let f = m
            .load_function(name)
            .map_err(|e| Error::driver(format!("cuModuleGetFunction({name})"), e))?;
        if let Ok(mut c) = self.functions.lock() {
            c.entry(id)
                .or_default()
                .insert(name.to_string(), (f.clone(), entry));
        }
        Ok((f, entry))
    }

    /// Kernel `name` of `kernels` in the form `key` (see [`Gpu::entry`]).
    pub fn function(&self, kernels: &Kernels, key: ModuleKey, name: &str) -> Result<CudaFunction> {
        self.entry(kernels, key, name).map(|(f, _)| f)
    }

    /// Registers of a kernel as the driver reports them after loading.
    pub fn num_regs(&self, kernels: &Kernels, key: ModuleKey, name: &str) -> Result<i32> {
        self.function(kernels, key, name)?
            .num_regs()
            .map_err(|e| Error::driver("cuFuncGetAttribute", e))
    }

    /// Launches kernel `name` of `kernels` with raw parameters, after checking
    /// the launch shape and the parameters against the entry's PTX signature
    /// (the GPU branch of [`launch!`](crate::launch!)).
    pub(crate) fn launch_params(
        &self,
        kernels: &Kernels,
        name: &str,
        cfg: &LaunchConfig,
        params: &[Param],
    ) -> Result<()> {
        self.launch_params_on(&self.stream, kernels, name, cfg, params)
    }

    /// [`Gpu::launch_params`] on `stream` (a stream of this GPU's context).
    pub(crate) fn launch_params_on(
        &self,
        stream: &Arc<CudaStream>,
        kernels: &Kernels,
        name: &str,
        cfg: &LaunchConfig,
        params: &[Param],
    ) -> Result<()> {
        let (f, entry) = self.entry(kernels, cfg.module, name)?;
        check_params(entry, params)?;
        self.launch_function_on(stream, &f, name, cfg, params)
    }

    /// Launches an already-loaded function on `stream` (no parameter check:
    /// the caller checked `params` against its entry).
    fn launch_function_on(
        &self,
        stream: &Arc<CudaStream>,
        f: &CudaFunction,
        name: &str,
        cfg: &LaunchConfig,
        params: &[Param],
    ) -> Result<()> {
        check_launch(name, cfg, &self.info.limits)?;
        opt_in_shared(f, cfg)?;
        if let Some(cluster) = cfg.cluster {
            // SAFETY: as for the launch below: `params` were checked by the
            // caller against the entry's PTX signature; `f` and `stream`
            // belong to this GPU's context.
            return unsafe {
                crate::driver::launch_cluster(
                    &self.ctx,
                    f.cu_function(),
                    stream.cu_stream(),
                    cfg,
                    cluster,
                    params,
                )
            }
            .map_err(|e| Error::driver(format!("cuLaunchKernelEx({name})"), e));
        }
        let (mut b, lc) = cu_launch(stream, f, cfg, params);
        // SAFETY: the parameters come from `KernelArg` (live buffers as
        // pointer + length, scalars) in the order of the kernel's Rust
        // signature, which the `launch!` macro type-checks through its
        // simulator branch; `Gpu::launch` also checks them against the PTX
        // entry's parameter list.
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
    pub fn time<E: From<Error>>(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut(usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<Timing, E> {
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

/// Opts `f` in to `cfg`'s dynamic shared memory when it is over the 48 KiB
/// default (an attribute of the function, not a stream operation).
pub(crate) fn opt_in_shared(f: &CudaFunction, cfg: &LaunchConfig) -> Result<()> {
    if cfg.shared_bytes > 48 * 1024 {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            cfg.shared_bytes as i32,
        )
        .map_err(|e| Error::driver("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", e))?;
    }
    Ok(())
}

/// A cudarc launch of `f` on `stream` with `params` pushed in order, and
/// `cfg`'s grid, block and dynamic shared memory (not yet launched).
pub(crate) fn cu_launch<'a>(
    stream: &'a Arc<CudaStream>,
    f: &'a CudaFunction,
    cfg: &LaunchConfig,
    params: &'a [Param],
) -> (LaunchArgs<'a>, CuLaunchConfig) {
    let lc = CuLaunchConfig {
        grid_dim: (cfg.grid.x, cfg.grid.y, cfg.grid.z),
        block_dim: (cfg.block.x, cfg.block.y, cfg.block.z),
        shared_mem_bytes: cfg.shared_bytes as u32,
    };
    let mut b = stream.launch_builder(f);
    for p in params {
        p.push(&mut b);
    }
    (b, lc)
}

/// Checks launch parameters against an entry's PTX parameter list: the same
/// count, and each of the declared type (a stale embedded PTX, or a hand-made
/// parameter list, is refused before the driver sees it).
pub fn check_params(entry: &Entry, params: &[Param]) -> Result<()> {
    let ok = entry.params.len() == params.len()
        && entry.params.iter().zip(params).all(|(k, p)| p.matches(*k));
    if ok {
        return Ok(());
    }
    let want: Vec<String> = entry.params.iter().map(|k| k.ptx()).collect();
    let got: Vec<String> = params.iter().map(|p| p.ptx()).collect();
    Err(Error::Launch {
        kernel: entry.name.to_string(),
        what: "the parameter list".into(),
        value: format!("({})", got.join(", ")),
        limit: format!(
            "the PTX entry takes ({}); rebuild if the kernel's signature changed (the embedded \
             PTX is stale)",
            want.join(", ")
        ),
    })
}

/// GPUs the driver reports (those `CUDA_VISIBLE_DEVICES` shows); an error
/// when there is no usable driver.
pub fn device_count() -> Result<usize> {
    check_driver()?;
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .map_err(|e| Error::driver("cuDeviceGetCount", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::ParamKind;

    #[test]
    fn parameters_are_checked_against_the_ptx_entry() {
        let entry = Entry {
            name: "saxpy",
            params: &[ParamKind::F32, ParamKind::U64, ParamKind::U64],
            max_threads: 256,
            min_blocks: 0,
            max_registers: 0,
        };
        assert!(check_params(&entry, &[Param::F32(2.0), Param::U64(1), Param::U64(2)]).is_ok());
        let e = check_params(&entry, &[Param::F64(2.0), Param::U64(1), Param::U64(2)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`saxpy`")
                && e.contains("(.f64, .u64, .u64)")
                && e.contains("(.f32, .u64, .u64)"),
            "{e}"
        );
        let e = check_params(&entry, &[Param::F32(2.0)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("stale"), "{e}");
    }
}
