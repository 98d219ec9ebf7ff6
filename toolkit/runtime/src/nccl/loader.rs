//! The NCCL library, loaded at run time: [`load`] finds `libnccl.so.2`
//! (see [the module docs](super)) and resolves the entry points the runtime
//! calls; nothing NCCL is needed to build.

use crate::error::{Error, Result};
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::OnceLock;

/// NCCL's unique id of a job (128 opaque bytes): rank 0 makes it
/// ([`Nccl::unique_id`]) and every rank of the job joins with it.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId {
    /// The bytes, as NCCL's `ncclUniqueId` holds them.
    pub internal: [c_char; 128],
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UniqueId(..)")
    }
}

impl UniqueId {
    /// The id as 256 hex digits.
    pub fn to_hex(&self) -> String {
        self.internal
            .iter()
            .map(|&b| format!("{:02x}", b as u8))
            .collect()
    }
    /// Parses 256 hex digits (surrounding white space allowed).
    pub fn from_hex(s: &str) -> Result<Self> {
        let s = s.trim();
        if s.len() != 256 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::input(
                "NCCL unique id",
                format!(
                    "{} characters; 256 hex digits (the 128 bytes of ncclUniqueId) are expected",
                    s.len()
                ),
            ));
        }
        let mut id = Self { internal: [0; 128] };
        for (i, out) in id.internal.iter_mut().enumerate() {
            let byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
                .map_err(|e| Error::input("NCCL unique id", e.to_string()))?;
            *out = byte as c_char;
        }
        Ok(id)
    }
    pub(crate) fn to_nccl(self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.internal,
        }
    }
}

/// The file name NCCL installs (its SONAME).
pub const LIB_NAME: &str = "libnccl.so.2";

/// What to do when NCCL is missing (the `hint:` of the error).
pub const INSTALL_HINT: &str = "NCCL ships as a Python wheel: `pip install nvidia-nccl-cu12` \
     (CUDA 12) or `nvidia-nccl-cu13` (CUDA 13); PyTorch installs one. Then set \
     PTXLAB_NCCL=<site-packages>/nvidia/nccl/lib/libnccl.so.2 (the file or its folder), or add \
     that folder to LD_LIBRARY_PATH, e.g. \
     export PTXLAB_NCCL=$(python3 -c 'import glob, site; print(sorted(glob.glob(site.getsitepackages()[0] + \"/nvidia/**/libnccl.so*\", recursive=True))[0])'). \
     A system install works too (libnccl2 from NVIDIA's apt repository)";

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

/// The NCCL entry points the runtime uses, resolved from the loaded library.
#[derive(Debug)]
pub struct Nccl {
    path: String,
    version: c_int,
    get_unique_id: GetUniqueIdFn,
    pub(super) comm_init_rank: CommInitRankFn,
    pub(super) comm_init_all: CommInitAllFn,
    pub(super) comm_abort: CommAbortFn,
    pub(super) send: SendFn,
    pub(super) recv: RecvFn,
    pub(super) all_reduce: AllReduceFn,
    pub(super) group_start: GroupFn,
    pub(super) group_end: GroupFn,
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
    pub(super) fn check(&self, call: &str, r: Res) -> Result<()> {
        if r == 0 {
            return Ok(());
        }
        // SAFETY: ncclGetErrorString accepts any status value and returns a
        // pointer to a static NUL-terminated string (or null).
        let p = unsafe { (self.get_error_string)(r) };
        // SAFETY: `p` is null or NUL-terminated and static (NCCL's contract).
        let text = unsafe { c_text(p, "no description") };
        Err(Error::Driver {
            call: call.to_string(),
            name: result_name(r).to_string(),
            text,
            hint: "run again with NCCL_DEBUG=WARN (or INFO) for NCCL's own account; in one \
                   process per GPU, every rank needs the same unique id and world size"
                .into(),
        })
    }

    /// A fresh unique id (rank 0 of a job makes it; the others receive it).
    pub fn unique_id(&self) -> Result<UniqueId> {
        let mut id = ncclUniqueId { internal: [0; 128] };
        // SAFETY: `id` is a valid, writable ncclUniqueId.
        let r = unsafe { (self.get_unique_id)(&mut id) };
        self.check("ncclGetUniqueId", r)?;
        Ok(UniqueId {
            internal: id.internal,
        })
    }
}

/// The text of a C string a library returned (lossy UTF-8), or `none` for null.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for this call.
unsafe fn c_text(p: *const c_char, none: &str) -> String {
    if p.is_null() {
        return none.to_string();
    }
    // SAFETY: non-null, so NUL-terminated and valid (the caller's contract).
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
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
        // SAFETY: `e` is null or NUL-terminated, valid until the thread's
        // next dl* call (dlerror's contract); `c_text` copies it at once.
        return Err(unsafe { c_text(e, "dlopen failed") });
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
    Error::Library {
        name: LIB_NAME.into(),
        detail: format!(
            "tried {}",
            if tried.is_empty() {
                "nothing".to_string()
            } else {
                tried.join("; ")
            }
        ),
        hint: INSTALL_HINT.into(),
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
        got => Err(Error::Unsupported {
            what: format!("NCCL with {k}={}", got.unwrap_or_else(|_| "<unset>".into())),
            backend: "gpu".into(),
            hint: format!(
                "export {k}={v} before starting (or set it first thing in `main`, before any \
                 thread starts): NVLink multicast can take a shared host's GPUs out of \
                 service, and point-to-point exchanges do not use it"
            ),
        }),
    }
}
