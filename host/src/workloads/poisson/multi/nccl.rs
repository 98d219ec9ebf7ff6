//! NCCL, loaded at run time, and the transport over it.
//!
//! * [`load`] finds `libnccl.so.2`: `PTXLAB_NCCL` (the file, or the folder
//!   holding it), then the dynamic loader's search (`LD_LIBRARY_PATH`, the
//!   ldconfig cache) for `libnccl.so.2` and `libnccl.so`, then the NCCL wheel
//!   of the `python3` on the `PATH` (`nvidia-nccl-cu12`/`-cu13`, which
//!   PyTorch installs). Nothing NCCL is needed to build ptxlab.
//! * [`NcclTransport`] is the [`Transport`] over NCCL communicators: one
//!   process driving all GPUs of a host (`ncclCommInitAll`), or one process
//!   per GPU (`ncclCommInitRank` with a unique id shared through a file or a
//!   variable, see [`super::bootstrap::unique_id`]).
//! * The ranks of a job ([`super::bootstrap::RankEnv`]) and the unique id
//!   come from [`super::bootstrap`].
//!
//! Why the loader is our own: cudarc 0.19's `nccl` feature supplies the types
//! used here (`ncclUniqueId`, `ncclComm_t`, the datatype and reduction enums),
//! but its dynamic loader tries `libnccl.so`, `libnccl.so.12`, `.11`, ... and
//! never `libnccl.so.2`, the only name NCCL's packages and wheels install, and
//! it panics when nothing is found. Resolving the dozen symbols ourselves gives
//! the search above and an error instead of a panic.
//!
//! NVLink SHARP (NVLS, multicast) stays off: the library refuses to start NCCL
//! unless `NCCL_NVLS_ENABLE=0` is in the environment, and the `ptxlab` binary
//! sets it first thing in `main`. On shared multi-GPU hosts a program that
//! uses multicast can take the host's GPUs out of service for everyone; a halo
//! exchange gains nothing from it (it is point-to-point).

use super::transport::{Dtype, HaloOp, Rows, Transport};
use crate::error::{Error, Result};
use cudarc::driver::CudaStream;
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// NCCL's unique id of a job (128 opaque bytes).
pub type UniqueId = ncclUniqueId;

/// The file name NCCL installs (its SONAME).
pub const LIB_NAME: &str = "libnccl.so.2";

/// What to do when NCCL is missing (the `hint:` of the error).
pub const INSTALL_HINT: &str = "NCCL ships as a Python wheel: `pip install nvidia-nccl-cu12` \
     (CUDA 12) or `nvidia-nccl-cu13` (CUDA 13); PyTorch installs one. Then set \
     PTXLAB_NCCL=<site-packages>/nvidia/nccl/lib/libnccl.so.2 (the file or its folder), or add \
     that folder to LD_LIBRARY_PATH, e.g. \
     export PTXLAB_NCCL=$(python3 -c 'import glob, site; print(sorted(glob.glob(site.getsitepackages()[0] + \"/nvidia/**/libnccl.so*\", recursive=True))[0])'). \
     A system install works too (libnccl2 from NVIDIA's apt repository). To run the \
     decomposition without NCCL, use --backend sim";

/// `NCCL_NVLS_ENABLE` must hold this before NCCL starts (see the module docs).
pub const NVLS_ENV: (&str, &str) = ("NCCL_NVLS_ENABLE", "0");

type Res = c_int;
type GetVersionFn = unsafe extern "C" fn(*mut c_int) -> Res;
type GetUniqueIdFn = unsafe extern "C" fn(*mut ncclUniqueId) -> Res;
type CommInitRankFn = unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> Res;
type CommInitAllFn = unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> Res;
type CommAbortFn = unsafe extern "C" fn(ncclComm_t) -> Res;
type SendFn = unsafe extern "C" fn(
    *const c_void,
    usize,
    ncclDataType_t,
    c_int,
    ncclComm_t,
    cudaStream_t,
) -> Res;
type RecvFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    ncclDataType_t,
    c_int,
    ncclComm_t,
    cudaStream_t,
) -> Res;
type AllReduceFn = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    ncclDataType_t,
    ncclRedOp_t,
    ncclComm_t,
    cudaStream_t,
) -> Res;
type GroupFn = unsafe extern "C" fn() -> Res;
type ErrorStringFn = unsafe extern "C" fn(Res) -> *const c_char;

/// The NCCL entry points ptxlab uses, resolved from the loaded library.
#[derive(Debug)]
pub struct Nccl {
    path: String,
    version: c_int,
    get_unique_id: GetUniqueIdFn,
    comm_init_rank: CommInitRankFn,
    comm_init_all: CommInitAllFn,
    comm_abort: CommAbortFn,
    send: SendFn,
    recv: RecvFn,
    all_reduce: AllReduceFn,
    group_start: GroupFn,
    group_end: GroupFn,
    get_error_string: ErrorStringFn,
}

fn result_name(r: Res) -> &'static str {
    match r {
        0 => "ncclSuccess",
        1 => "ncclUnhandledCudaError",
        2 => "ncclSystemError",
        3 => "ncclInternalError",
        4 => "ncclInvalidArgument",
        5 => "ncclInvalidUsage",
        6 => "ncclRemoteError",
        7 => "ncclInProgress",
        8 => "ncclTimeout",
        _ => "unknown ncclResult_t",
    }
}

impl Nccl {
    /// The file that was loaded.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// `"2.28.5"`.
    pub fn version(&self) -> String {
        let v = self.version;
        if v >= 10000 {
            format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
        } else {
            format!("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100)
        }
    }

    /// Turns an NCCL status into the crate's error.
    fn check(&self, call: &str, r: Res) -> Result<()> {
        if r == 0 {
            return Ok(());
        }
        // SAFETY: ncclGetErrorString accepts any status value and returns a
        // pointer to a static NUL-terminated string (or null).
        let p = unsafe { (self.get_error_string)(r) };
        let text = if p.is_null() {
            "no description".to_string()
        } else {
            // SAFETY: non-null, NUL-terminated and static (NCCL's contract).
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        };
        Err(Error::Runtime(crate::runtime::Error::Driver {
            call: call.to_string(),
            name: result_name(r).to_string(),
            text,
            hint: "run again with NCCL_DEBUG=WARN (or INFO) for NCCL's own account; in one \
                   process per GPU, every rank needs the same unique id and world size"
                .into(),
        }))
    }

    /// A fresh unique id (rank 0 of a job makes it; the others receive it).
    pub fn unique_id(&self) -> Result<ncclUniqueId> {
        let mut id = ncclUniqueId { internal: [0; 128] };
        // SAFETY: `id` is a valid, writable ncclUniqueId.
        let r = unsafe { (self.get_unique_id)(&mut id) };
        self.check("ncclGetUniqueId", r)?;
        Ok(id)
    }
}

#[cfg(unix)]
fn dlopen(path: &str) -> std::result::Result<usize, String> {
    let c = std::ffi::CString::new(path).map_err(|_| "the path holds a NUL byte".to_string())?;
    // SAFETY: `c` is a NUL-terminated path. Loading runs the library's
    // initialisers; NCCL's only set up its own state.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        // SAFETY: dlerror returns a thread-local NUL-terminated message or null.
        let e = unsafe { libc::dlerror() };
        let msg = if e.is_null() {
            "dlopen failed".to_string()
        } else {
            // SAFETY: non-null and NUL-terminated (dlerror's contract).
            unsafe { std::ffi::CStr::from_ptr(e) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(msg);
    }
    Ok(h as usize)
}

#[cfg(not(unix))]
fn dlopen(_path: &str) -> std::result::Result<usize, String> {
    Err("NCCL is only supported on Linux".into())
}

#[cfg(unix)]
fn dlsym(handle: usize, name: &str) -> Option<*mut c_void> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `handle` came from a successful dlopen and is never closed; `c`
    // is NUL-terminated.
    let p = unsafe { libc::dlsym(handle as *mut c_void, c.as_ptr()) };
    (!p.is_null()).then_some(p)
}

#[cfg(not(unix))]
fn dlsym(_handle: usize, _name: &str) -> Option<*mut c_void> {
    None
}

fn resolve(handle: usize, path: &str) -> std::result::Result<Nccl, String> {
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            let p = dlsym(handle, $name).ok_or_else(|| {
                format!(
                    "{path} has no symbol {}; NCCL 2.12 or newer is needed",
                    $name
                )
            })?;
            // SAFETY: the symbol is NCCL's exported C function of that name,
            // whose signature (NCCL's nccl.h, stable since 2.7) is `$ty`; a data
            // pointer and a function pointer have the same size on every
            // platform NCCL runs on.
            unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
        }};
    }
    let get_version = sym!("ncclGetVersion", GetVersionFn);
    let mut version = 0;
    // SAFETY: `version` is a valid out-pointer; ncclGetVersion needs no init.
    if unsafe { get_version(&mut version) } != 0 {
        return Err(format!("{path}: ncclGetVersion failed"));
    }
    Ok(Nccl {
        path: path.to_string(),
        version,
        get_unique_id: sym!("ncclGetUniqueId", GetUniqueIdFn),
        comm_init_rank: sym!("ncclCommInitRank", CommInitRankFn),
        comm_init_all: sym!("ncclCommInitAll", CommInitAllFn),
        comm_abort: sym!("ncclCommAbort", CommAbortFn),
        send: sym!("ncclSend", SendFn),
        recv: sym!("ncclRecv", RecvFn),
        all_reduce: sym!("ncclAllReduce", AllReduceFn),
        group_start: sym!("ncclGroupStart", GroupFn),
        group_end: sym!("ncclGroupEnd", GroupFn),
        get_error_string: sym!("ncclGetErrorString", ErrorStringFn),
    })
}

/// Tries each candidate (a path, or a bare name for the loader's search) in
/// turn; the error names every attempt, `libnccl.so.2`, and how to get it.
pub fn load_from(candidates: &[String]) -> Result<Nccl> {
    let mut tried = Vec::new();
    for c in candidates {
        match dlopen(c).and_then(|h| resolve(h, c)) {
            Ok(n) => return Ok(n),
            Err(e) => tried.push(format!("{c} ({e})")),
        }
    }
    Err(missing(&tried))
}

fn missing(tried: &[String]) -> Error {
    Error::File {
        path: LIB_NAME.into(),
        detail: format!(
            "NCCL could not be loaded; several GPUs exchange halos through it. Tried: {}\nhint: {INSTALL_HINT}",
            if tried.is_empty() {
                "nothing".to_string()
            } else {
                tried.join("; ")
            }
        ),
    }
}

/// The NCCL libraries of the Python wheels `python3` can see (best effort:
/// nothing when there is no python3).
fn wheel_candidates() -> Vec<String> {
    const SCRIPT: &str = "import glob, os, site, sys\n\
roots = []\n\
try:\n    roots += site.getsitepackages()\nexcept Exception:\n    pass\n\
try:\n    roots.append(site.getusersitepackages())\nexcept Exception:\n    pass\n\
roots += [p for p in sys.path if p]\n\
seen = set()\n\
for r in roots:\n\
    for pat in ('nvidia/nccl/lib/libnccl.so*', 'nvidia/*/lib/libnccl.so*'):\n\
        for p in sorted(glob.glob(os.path.join(r, pat))):\n\
            if p not in seen:\n\
                seen.add(p)\n\
                print(p)\n";
    let Ok(out) = std::process::Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    // libnccl.so.2 first, then any other name (a libnccl.so link).
    v.sort_by_key(|p| !p.ends_with(LIB_NAME));
    v
}

/// The candidates [`load`] tries, in order, from `PTXLAB_NCCL` (a file, or a
/// folder holding `libnccl.so.2`) and the loader's own search.
pub fn candidates(ptxlab_nccl: Option<&str>) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(p) = ptxlab_nccl.filter(|p| !p.is_empty()) {
        let path = Path::new(p);
        if path.is_dir() {
            v.push(path.join(LIB_NAME).display().to_string());
            v.push(path.join("libnccl.so").display().to_string());
        } else {
            v.push(p.to_string());
        }
    }
    v.push(LIB_NAME.to_string());
    v.push("libnccl.so".to_string());
    v
}

/// Loads NCCL once per process (see the module docs for the search); later
/// calls return the same library.
pub fn load() -> Result<&'static Nccl> {
    static LIB: OnceLock<Nccl> = OnceLock::new();
    if let Some(l) = LIB.get() {
        return Ok(l);
    }
    let env = std::env::var("PTXLAB_NCCL").ok();
    let mut c = candidates(env.as_deref());
    let lib = match load_from(&c) {
        Ok(l) => l,
        Err(first) => {
            let wheels = wheel_candidates();
            if wheels.is_empty() {
                return Err(first);
            }
            c.extend(wheels);
            load_from(&c)?
        }
    };
    Ok(LIB.get_or_init(|| lib))
}

/// Refuses to go on unless NVLink multicast is off (see the module docs).
pub fn require_nvls_off() -> Result<()> {
    let (k, v) = NVLS_ENV;
    match std::env::var(k) {
        Ok(x) if x == v => Ok(()),
        got => Err(Error::Runtime(crate::runtime::Error::Unsupported {
            what: format!("NCCL with {k}={}", got.unwrap_or_else(|_| "<unset>".into())),
            backend: "gpu".into(),
            hint: format!(
                "export {k}={v} before starting (the ptxlab binary sets it itself): NVLink \
                 multicast can take a shared host's GPUs out of service, and a halo exchange \
                 does not use it"
            ),
        })),
    }
}

fn dtype(d: Dtype) -> ncclDataType_t {
    match d {
        Dtype::F32 => ncclDataType_t::ncclFloat32,
        Dtype::F64 => ncclDataType_t::ncclFloat64,
    }
}

/// Communicators of the GPUs this process drives, each with the stream its
/// transfers are queued on.
pub struct NcclTransport {
    lib: &'static Nccl,
    comms: Vec<ncclComm_t>,
    streams: Vec<Arc<CudaStream>>,
    ranks: Vec<usize>,
    world: usize,
    per_process: bool,
}

impl std::fmt::Debug for NcclTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclTransport")
            .field("ranks", &self.ranks)
            .field("world", &self.world)
            .finish()
    }
}

fn bind(s: &CudaStream) -> Result<()> {
    s.context()
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent", e))
}

impl NcclTransport {
    /// One process driving every GPU of the job: `streams[i]` is the
    /// communication stream of rank `i` (on its GPU), `ncclCommInitAll`.
    pub fn init_all(lib: &'static Nccl, streams: Vec<Arc<CudaStream>>) -> Result<Self> {
        require_nvls_off()?;
        let n = streams.len();
        let ordinals: Vec<c_int> = streams
            .iter()
            .map(|s| s.context().ordinal() as c_int)
            .collect();
        let mut comms = vec![std::ptr::null_mut(); n];
        // SAFETY: `comms` has room for `n` communicators and `ordinals` holds
        // `n` device ordinals; NCCL initialises one communicator per device.
        let r = unsafe { (lib.comm_init_all)(comms.as_mut_ptr(), n as c_int, ordinals.as_ptr()) };
        lib.check("ncclCommInitAll", r)?;
        Ok(Self {
            lib,
            comms,
            streams,
            ranks: (0..n).collect(),
            world: n,
            per_process: false,
        })
    }

    /// One rank of a job of `world` processes (one GPU each), joined through
    /// the shared unique `id`: `ncclCommInitRank` on the stream's GPU.
    pub fn init_rank(
        lib: &'static Nccl,
        stream: Arc<CudaStream>,
        rank: usize,
        world: usize,
        id: ncclUniqueId,
    ) -> Result<Self> {
        require_nvls_off()?;
        bind(&stream)?;
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` is a valid out-pointer; the current context is the
        // rank's GPU (bound above), which ncclCommInitRank uses.
        let r = unsafe { (lib.comm_init_rank)(&mut comm, world as c_int, id, rank as c_int) };
        lib.check("ncclCommInitRank", r)?;
        Ok(Self {
            lib,
            comms: vec![comm],
            streams: vec![stream],
            ranks: vec![rank],
            world,
            per_process: true,
        })
    }

    fn grouped(&self, f: impl FnOnce() -> Result<()>) -> Result<()> {
        // SAFETY: no arguments; opens a group that is closed below on every path.
        let r = unsafe { (self.lib.group_start)() };
        self.lib.check("ncclGroupStart", r)?;
        let inner = f();
        // SAFETY: closes the group opened above.
        let r = unsafe { (self.lib.group_end)() };
        inner.and(self.lib.check("ncclGroupEnd", r))
    }
}

impl Transport for NcclTransport {
    fn world_size(&self) -> usize {
        self.world
    }
    fn local_ranks(&self) -> &[usize] {
        &self.ranks
    }
    fn exchange(&mut self, ops: &[HaloOp<'_>]) -> Result<()> {
        for op in ops {
            let (HaloOp::Send { local, peer, rows } | HaloOp::Recv { local, peer, rows }) = *op;
            if local >= self.comms.len() || peer >= self.world {
                return Err(Error::input(
                    "halo transfer",
                    format!("local slab {local}, peer {peer}, world {}", self.world),
                ));
            }
            if rows.backing() != super::transport::Backing::Gpu {
                return Err(Error::input(
                    "halo transfer",
                    "NCCL moves GPU memory; this buffer is on the simulator",
                ));
            }
        }
        self.grouped(|| {
            for op in ops {
                let (HaloOp::Send { local, peer, rows } | HaloOp::Recv { local, peer, rows }) = *op;
                let (comm, stream) = (self.comms[local], &self.streams[local]);
                bind(stream)?;
                let s = stream.cu_stream() as cudaStream_t;
                let (call, r) = match op {
                    // SAFETY: `rows` is a bounds-checked run of a live device
                    // buffer on this communicator's GPU (made by `Rows::of`);
                    // `comm` is initialised and `s` is a stream of the same
                    // GPU. The slab runner keeps the buffer alive and orders
                    // its own accesses around the stream.
                    HaloOp::Send { .. } => ("ncclSend", unsafe {
                        (self.lib.send)(
                            rows.addr() as *const c_void,
                            rows.count(),
                            dtype(rows.dtype()),
                            peer as c_int,
                            comm,
                            s,
                        )
                    }),
                    // SAFETY: as for the send; the receiver writes `count`
                    // elements into the run, which nothing else touches until
                    // the stream passes this point.
                    HaloOp::Recv { .. } => ("ncclRecv", unsafe {
                        (self.lib.recv)(
                            rows.addr() as *mut c_void,
                            rows.count(),
                            dtype(rows.dtype()),
                            peer as c_int,
                            comm,
                            s,
                        )
                    }),
                };
                self.lib.check(call, r)?;
            }
            Ok(())
        })
    }
    fn all_reduce_sum(&mut self, accs: &[Rows<'_>]) -> Result<()> {
        if accs.len() != self.comms.len() {
            return Err(Error::input(
                "all-reduce",
                format!("{} values for {} local ranks", accs.len(), self.comms.len()),
            ));
        }
        for a in accs {
            if a.count() != 1
                || a.dtype() != Dtype::F64
                || a.backing() != super::transport::Backing::Gpu
            {
                return Err(Error::input(
                    "all-reduce",
                    "one f64 in GPU memory per rank is summed",
                ));
            }
        }
        self.grouped(|| {
            for (i, a) in accs.iter().enumerate() {
                bind(&self.streams[i])?;
                // SAFETY: `a` is one f64 of a live device buffer on this
                // communicator's GPU (checked above and by `Rows::of`); the
                // reduction is in place (send and receive buffers equal, which
                // NCCL allows); the stream is the same GPU's.
                let r = unsafe {
                    (self.lib.all_reduce)(
                        a.addr() as *const c_void,
                        a.addr() as *mut c_void,
                        1,
                        ncclDataType_t::ncclFloat64,
                        ncclRedOp_t::ncclSum,
                        self.comms[i],
                        self.streams[i].cu_stream() as cudaStream_t,
                    )
                };
                self.lib.check("ncclAllReduce", r)?;
            }
            Ok(())
        })
    }
    fn describe(&self) -> String {
        format!(
            "NCCL {} ({}), {}",
            self.lib.version(),
            self.lib.path(),
            if self.per_process {
                format!("rank {} of {} processes", self.ranks[0], self.world)
            } else {
                format!("one process, {} GPUs", self.world)
            }
        )
    }
}

impl Drop for NcclTransport {
    fn drop(&mut self) {
        for s in &self.streams {
            let _ = s.synchronize();
        }
        for &c in &self.comms {
            // SAFETY: `c` was initialised by NCCL and is released exactly once,
            // here; its streams were synchronised above, so no operation of it
            // is in flight. Abort (rather than destroy) cannot wait on a peer
            // that has already failed.
            let _ = unsafe { (self.lib.comm_abort)(c) };
        }
    }
}
