//! Multi-GPU Poisson: the Jacobi sweep of [`super::poisson`] on a grid split
//! into row slabs, one per device, with a halo exchange every sweep.
//!
//! # Decomposition
//! The global grid has `ny` rows; rows `0` and `ny - 1` are Dirichlet
//! boundary. The `ny - 2` interior rows are dealt out in contiguous blocks,
//! as evenly as possible ([`Decomp`]): rank `r` owns rows `r0 .. r1`
//! (`m = r1 - r0` of them) and stores rows `r0 - 1 ..= r1`: its own rows plus
//! one *halo row* on each side, `m + 2` rows in all. To the single-GPU sweep
//! kernels such a slab is just a grid whose first and last rows are boundary
//! (copied, never updated), which is exactly how a halo row must behave. So the
//! kernels run unchanged on slabs, and a slab sweep computes every owned cell
//! from the same four neighbours with the same arithmetic (explicit `.rn`
//! roundings, no contraction) as the whole-grid sweep: the result is the same
//! bit for bit, provided the halo rows hold the neighbours' current rows.
//!
//! # Halo exchange
//! After each sweep rank `r` sends its first owned row to rank `r - 1` (which
//! stores it as its bottom halo) and its last owned row to rank `r + 1`, and
//! receives their edge rows into its own halo rows: NCCL point-to-point
//! (`ncclSend`/`ncclRecv`), all four calls of every local slab in one group.
//! The ranks at the ends have the global boundary row in place of one halo;
//! it never changes, so it is never exchanged (both ping-pong buffers start
//! with it). The residual norm is a local reduction per slab (over its owned
//! rows, whose neighbours are all present) followed by an NCCL all-reduce.
//!
//! # Overlap
//! Without overlap a sweep is: update the whole slab, then exchange. The
//! exchange then sits on the critical path every sweep. With overlap
//! (the default) each slab uses two streams:
//!
//! * stream A (high priority): the two edge rows first, each as a 3-row grid
//!   (halo, edge, next row) written into a small scratch buffer; then the NCCL
//!   group sends those rows and receives the neighbours' into the halo rows;
//! * stream B (normal priority): the interior rows `2 ..= m - 1` as one
//!   `m`-row grid (owned rows `1 ..= m`, whose first and last are copied),
//!   at the same time;
//! * then A waits for B (an event) and copies the two edge rows from the
//!   scratch buffer into place, over the stale copies B wrote.
//!
//! All of them are the same sweep kernels launched on sub-ranges of the
//! buffers: a launch takes a pointer and a length, so a pointer offset by
//! `row * nx` elements with `rows * nx` elements is a smaller grid. The
//! transfer of 2 rows hides behind the update of `m - 2`.
//!
//! # Rungs
//! The rungs of depth 1 (naive, tiled, register) are decomposed. The temporal
//! rung is not: a pass of depth `d` needs `d` halo rows per side and an
//! exchange every `d` sweeps; asking for it with several devices is an error
//! that says so.
//!
//! # Where the devices are
//! A [`Team`] is the devices this process drives and the [`Transport`] between
//! all ranks of the job: [`Team::sim`] (several simulated devices, in-process
//! copies: what CI tests), [`Team::gpus`] (one process driving N GPUs of a
//! host, NCCL), [`Team::from_launcher`] (one process per GPU started by
//! mpirun, torchrun or srun, joined through an NCCL unique id passed in a
//! file or a variable; runs across hosts). [`Team::place`] puts a problem on a
//! team ([`Placed`]), which iterates, computes the residual, solves, compares
//! with a single-device result and gathers the field.

pub mod nccl;
pub mod transport;

use super::poisson::{
    self as ps, Args, Element, Field, Grid, Problem, Rung, SolveOptions, SolveReport,
};
use crate::Backend;
use crate::error::{Error, Result};
use crate::report::fmt_ms;
use crate::runtime::{
    Buffer, Device, DeviceKind, Gpu, LaunchConfig, ModuleKey, Param, Timing, check_launch,
    driver_present, sim_launch,
};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaStream, LaunchConfig as CuLaunchConfig,
    PushKernelArg, sys,
};
use kernels_gpu::poisson as kp;
use ptxlab_device::mem::DeviceCopy;
use ptxlab_device::{DeviceSlice, DeviceSliceMut};
use std::marker::PhantomData;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub use nccl::{NcclTransport, RankEnv};
pub use transport::{Dtype, HaloOp, LocalTransport, Rows, Transport};

// ---------------------------------------------------------------- element types

/// A sweep kernel as the simulator calls it.
pub type SweepFn<T> =
    fn(DeviceSlice<'_, T>, DeviceSlice<'_, T>, DeviceSliceMut<'_, T>, u32, u32, T);
/// The residual kernel as the simulator calls it.
pub type ResidualFn<T> =
    fn(DeviceSlice<'_, T>, DeviceSlice<'_, T>, DeviceSliceMut<'_, f64>, u32, u32, f64);

/// Element types the decomposition runs: the Poisson [`Element`]s plus what a
/// launch on a sub-range and a transfer need.
pub trait SlabElement: Element {
    /// The transfer datatype.
    const DTYPE: Dtype;
    /// The bits, for the bit-for-bit comparison.
    fn bits(self) -> u64;
    /// The value as a GPU kernel parameter.
    fn param(self) -> Param;
    /// Name and simulator function of `rung`'s sweep kernel; `None` for the
    /// temporal rung, which is not decomposed.
    fn sweep_kernel(rung: Rung) -> Option<(&'static str, SweepFn<Self>)>;
    /// Name and simulator function of the residual kernel.
    fn residual_kernel() -> (&'static str, ResidualFn<Self>);
}

impl SlabElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn param(self) -> Param {
        Param::F32(self)
    }
    fn sweep_kernel(rung: Rung) -> Option<(&'static str, SweepFn<f32>)> {
        match rung {
            Rung::Naive => Some(("poisson_naive_f32", kp::poisson_naive_f32)),
            Rung::Tiled => Some(("poisson_tiled_f32", kp::poisson_tiled_f32)),
            Rung::Register => Some(("poisson_register_f32", kp::poisson_register_f32)),
            Rung::Temporal => None,
        }
    }
    fn residual_kernel() -> (&'static str, ResidualFn<f32>) {
        ("poisson_residual_f32", kp::poisson_residual_f32)
    }
}

impl SlabElement for f64 {
    const DTYPE: Dtype = Dtype::F64;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn param(self) -> Param {
        Param::F64(self)
    }
    fn sweep_kernel(rung: Rung) -> Option<(&'static str, SweepFn<f64>)> {
        match rung {
            Rung::Naive => Some(("poisson_naive_f64", kp::poisson_naive_f64)),
            Rung::Tiled => Some(("poisson_tiled_f64", kp::poisson_tiled_f64)),
            Rung::Register => Some(("poisson_register_f64", kp::poisson_register_f64)),
            Rung::Temporal => None,
        }
    }
    fn residual_kernel() -> (&'static str, ResidualFn<f64>) {
        ("poisson_residual_f64", kp::poisson_residual_f64)
    }
}

fn temporal_error() -> Error {
    Error::input(
        "--variant temporal",
        "the temporal rung is not decomposed over devices: a pass of depth d needs d halo rows \
         per side and an exchange every d sweeps; use naive, tiled or register with --gpus",
    )
}

// ---------------------------------------------------------------- decomposition

/// Row slabs of a grid: which interior rows each rank owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decomp {
    grid: Grid,
    starts: Vec<usize>,
}

impl Decomp {
    /// Splits the `ny - 2` interior rows of `grid` into `world` contiguous
    /// blocks whose sizes differ by at most one (the first ranks take the
    /// extra rows). Every rank needs at least one row.
    pub fn new(grid: Grid, world: usize) -> Result<Self> {
        let interior = grid.ny - 2;
        if world == 0 {
            return Err(Error::input("--gpus", "0 devices; at least 1"));
        }
        if world > interior {
            return Err(Error::input(
                "--gpus",
                format!(
                    "{world} slabs for the grid {}: it has {interior} interior row(s) to share and \
                     each slab needs at least one; use at most {interior} devices or more rows",
                    grid.label()
                ),
            ));
        }
        let (q, r) = (interior / world, interior % world);
        let mut starts = vec![1];
        for i in 0..world {
            starts.push(starts[i] + q + usize::from(i < r));
        }
        Ok(Self { grid, starts })
    }
    /// The global grid.
    pub fn grid(&self) -> Grid {
        self.grid
    }
    /// Ranks.
    pub fn world(&self) -> usize {
        self.starts.len() - 1
    }
    /// Global rows rank `rank` owns (and updates).
    pub fn owned(&self, rank: usize) -> Range<usize> {
        self.starts[rank]..self.starts[rank + 1]
    }
    /// Rows rank `rank` owns.
    pub fn rows(&self, rank: usize) -> usize {
        self.starts[rank + 1] - self.starts[rank]
    }
    /// The slab as a grid: `nx` x (owned rows + 2 halo rows).
    pub fn local_grid(&self, rank: usize) -> Result<Grid> {
        Grid::new(self.grid.nx, self.rows(rank) + 2)
    }
}

// ---------------------------------------------------------------- team

/// The two streams of a GPU slab and the events that order them.
struct Streams {
    /// Edge rows, transfers, fix-ups, residual (high priority).
    a: Arc<CudaStream>,
    /// Interior rows.
    b: Arc<CudaStream>,
    /// Recorded on A at the end of each sweep.
    a_done: CudaEvent,
    /// Recorded on B after the interior update.
    b_done: CudaEvent,
}

/// One device of a [`Team`] and its global rank.
pub struct Member {
    rank: usize,
    dev: Device,
    streams: Option<Streams>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Member(rank {}, {})", self.rank, self.dev.name())
    }
}

/// Makes the stream's context current on this thread (raw driver calls act
/// on the current context; one thread drives several GPUs).
fn bind(s: &CudaStream) -> Result<()> {
    s.context().bind_to_thread().map_err(drv("cuCtxSetCurrent"))
}

fn drv(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::driver(call, e)
}

impl Member {
    fn sim(rank: usize) -> Self {
        Self {
            rank,
            dev: Device::sim(),
            streams: None,
        }
    }

    fn gpu(rank: usize, ordinal: usize) -> Result<Self> {
        let dev = Device::gpu(ordinal)?;
        let ctx = dev
            .as_gpu()
            .ok_or_else(|| Error::input("device", "not a GPU"))?
            .context()
            .clone();
        // SAFETY: cudarc's automatic event tracking is turned off for the
        // buffers of this context (all allocated after this call, by this
        // module). Its contract then holds by construction here: uploads go
        // through the legacy default stream and are followed by a device
        // synchronisation before streams A and B use the buffers; A and B are
        // ordered with the events below; downloads and frees happen only after
        // A and B are synchronised (`Placed::synchronize`, `Drop for Placed`);
        // A and B never write the same rows concurrently (module docs).
        unsafe { ctx.disable_event_tracking() };
        ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let (least, greatest) = cudarc::driver::result::stream::get_priority_range()
            .map_err(drv("cuCtxGetStreamPriorityRange"))?;
        let a = ctx
            .new_stream_with_priority(greatest)
            .map_err(drv("cuStreamCreateWithPriority"))?;
        let b = ctx
            .new_stream_with_priority(least)
            .map_err(drv("cuStreamCreateWithPriority"))?;
        let ev = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(drv("cuEventCreate"))
        };
        let (a_done, b_done) = (ev()?, ev()?);
        Ok(Self {
            rank,
            dev,
            streams: Some(Streams {
                a,
                b,
                a_done,
                b_done,
            }),
        })
    }
    /// Global rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// The device.
    pub fn device(&self) -> &Device {
        &self.dev
    }
    /// Waits for everything queued on the device's streams.
    fn synchronize(&self) -> Result<()> {
        if let Some(s) = &self.streams {
            s.a.synchronize().map_err(drv("cuStreamSynchronize"))?;
            s.b.synchronize().map_err(drv("cuStreamSynchronize"))?;
        }
        self.dev.synchronize()
    }
}

/// The devices this process drives and the transport between all ranks.
pub struct Team {
    // Declared first so it is dropped first: the communicators go (after
    // their streams finish) before the devices.
    transport: Box<dyn Transport>,
    members: Vec<Member>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("members", &self.members)
            .field("transport", &self.transport.describe())
            .finish()
    }
}

fn visible_devices() -> String {
    std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into())
}

fn gpu_count(n: usize, what: &str) -> Result<usize> {
    if !driver_present() {
        return Err(Error::NoDriver {
            detail: format!(
                "{what} needs libcuda.so.1 and {n} GPU(s); libcuda.so / libcuda.so.1 could not be \
                 loaded"
            ),
        });
    }
    Ok(CudaContext::device_count().map_err(drv("cuDeviceGetCount"))? as usize)
}

/// Lets every GPU of the team read and write the others' stream-ordered
/// allocations. The runtime's buffers come from each device's default memory
/// pool (`cuMemAllocAsync`), which other GPUs cannot reach unless the pool
/// grants them access, and NCCL, between GPUs of one process, may read or
/// write the user buffers of the peer directly ("P2P/direct pointer"). Where
/// two GPUs cannot reach each other at all, NCCL does not take that path,
/// and nothing is granted.
fn share_pools(members: &[Member]) -> Result<()> {
    use cudarc::driver::sys::{
        CUmemAccess_flags, CUmemAccessDesc, CUmemLocation, CUmemLocationType, CUmemoryPool,
        CUresult,
    };
    let ordinals: Vec<usize> = members
        .iter()
        .filter_map(|m| m.dev.as_gpu().map(|g| g.context().ordinal()))
        .collect();
    let devs = ordinals
        .iter()
        .map(|&o| cudarc::driver::result::device::get(o as i32).map_err(drv("cuDeviceGet")))
        .collect::<Result<Vec<_>>>()?;
    for (m, (&owner, &dev)) in members.iter().zip(ordinals.iter().zip(&devs)) {
        if let Some(s) = &m.streams {
            bind(&s.a)?;
        }
        let mut pool: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer and `dev` a device handle
        // from cuDeviceGet.
        let r = unsafe { cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, dev) };
        if r != CUresult::CUDA_SUCCESS {
            continue;
        }
        for (&peer, &peer_dev) in ordinals.iter().zip(&devs) {
            if peer == owner {
                continue;
            }
            let mut can = 0;
            // SAFETY: `can` is a valid out-pointer; both are device handles.
            let r = unsafe { cudarc::driver::sys::cuDeviceCanAccessPeer(&mut can, peer_dev, dev) };
            if r != CUresult::CUDA_SUCCESS || can == 0 {
                continue;
            }
            let desc = CUmemAccessDesc {
                location: CUmemLocation {
                    type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: peer as i32,
                },
                flags: CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: `pool` is the owner's default pool, `desc` one valid
            // access descriptor (count 1) naming a peer device that can access
            // the owner. A failure only leaves NCCL without direct access.
            let _ = unsafe { cudarc::driver::sys::cuMemPoolSetAccess(pool, &desc, 1) };
        }
    }
    Ok(())
}

/// GPUs the driver reports (honouring `CUDA_VISIBLE_DEVICES`); an error when
/// there is no driver.
pub fn visible_gpus() -> Result<usize> {
    gpu_count(1, "counting GPUs")
}

impl Team {
    /// `n` simulated devices in this process (in-process transport).
    pub fn sim(n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::input("--gpus", "0 devices; at least 1"));
        }
        Ok(Self {
            members: (0..n).map(Member::sim).collect(),
            transport: Box::new(LocalTransport::new(n)),
        })
    }

    /// GPUs `0..n` of this host, driven by this process; NCCL between them
    /// (`ncclCommInitAll`) when `n > 1`. Errors name what is missing: the
    /// driver, GPUs, or NCCL.
    pub fn gpus(n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::input("--gpus", "0 GPUs; at least 1"));
        }
        let what = format!("--gpus {n}");
        let count = gpu_count(n, &what)?;
        if count < n {
            let nccl_note = if n > 1 {
                match nccl::load() {
                    Ok(l) => format!("NCCL {} is present", l.version()),
                    Err(_) => format!("NCCL ({}) is missing as well", nccl::LIB_NAME),
                }
            } else {
                String::new()
            };
            return Err(Error::input(
                "--gpus",
                format!(
                    "{n} GPUs asked for, but the driver reports {count} \
                     (CUDA_VISIBLE_DEVICES={}){}{nccl_note}; ask for at most {count}, or run the \
                     same decomposition on simulated devices with --backend sim",
                    visible_devices(),
                    if nccl_note.is_empty() { "" } else { "; " },
                ),
            ));
        }
        let lib = if n > 1 {
            nccl::require_nvls_off()?;
            Some(nccl::load()?)
        } else {
            None
        };
        let members = (0..n)
            .map(|i| Member::gpu(i, i))
            .collect::<Result<Vec<_>>>()?;
        if n > 1 {
            share_pools(&members)?;
        }
        let transport: Box<dyn Transport> = match lib {
            Some(lib) => Box::new(NcclTransport::init_all(
                lib,
                members
                    .iter()
                    .filter_map(|m| m.streams.as_ref().map(|s| s.a.clone()))
                    .collect(),
            )?),
            None => Box::new(LocalTransport::new(1)),
        };
        Ok(Self { members, transport })
    }

    /// This process as one rank of a job started by a launcher (one process
    /// per GPU): the GPU is `local_rank` (or `rank`) modulo the GPUs visible
    /// to the process; the NCCL unique id comes from `PTXLAB_NCCL_ID_FILE` or
    /// `PTXLAB_NCCL_ID` ([`nccl::unique_id`]). `gpus`, when given, must equal
    /// the job's world size.
    pub fn from_launcher(env: &RankEnv, gpus: Option<usize>) -> Result<Self> {
        if let Some(n) = gpus
            && n != env.world
        {
            return Err(Error::input(
                "--gpus",
                format!(
                    "{n}, but the launcher ({}) started {} process(es); one process drives one GPU, \
                     so --gpus must equal the world size (or unset the launcher's variables to \
                     drive {n} GPUs from one process)",
                    env.source, env.world
                ),
            ));
        }
        let what = format!("rank {} of {}", env.rank, env.world);
        let count = gpu_count(1, &what)?;
        if count == 0 {
            return Err(Error::NoDevice { ordinal: 0, count });
        }
        nccl::require_nvls_off()?;
        let lib = nccl::load()?;
        let ordinal = env.local_rank.unwrap_or(env.rank) % count;
        let member = Member::gpu(env.rank, ordinal)?;
        let (id, id_file) = nccl::unique_id(lib, env.rank, |k| std::env::var(k).ok())?;
        let stream = member
            .streams
            .as_ref()
            .map(|s| s.a.clone())
            .ok_or_else(|| Error::input("device", "not a GPU"))?;
        let transport = NcclTransport::init_rank(lib, stream, env.rank, env.world, id)?;
        if let Some(f) = id_file {
            // Every rank has joined (communicator set-up is collective), so
            // the id has been read; a stale file would mislead the next job.
            let _ = std::fs::remove_file(f);
        }
        Ok(Self {
            members: vec![member],
            transport: Box::new(transport),
        })
    }

    /// Ranks in the whole job.
    pub fn world_size(&self) -> usize {
        self.transport.world_size()
    }
    /// Global ranks of the devices of this process.
    pub fn local_ranks(&self) -> Vec<usize> {
        self.members.iter().map(|m| m.rank).collect()
    }
    /// The devices of this process.
    pub fn members(&self) -> &[Member] {
        &self.members
    }
    /// How the ranks talk, for reports.
    pub fn describe(&self) -> String {
        self.transport.describe()
    }
    /// `true` when this process holds rank 0 (the one that prints).
    pub fn is_lead(&self) -> bool {
        self.members.first().is_some_and(|m| m.rank == 0)
    }

    /// Puts `prob` on the team: each device gets its slab (rows of `p0` and
    /// `b` with the halo rows) in two buffers, two one-edge scratch grids and
    /// the residual accumulator. `rung` must have depth 1.
    pub fn place<T: SlabElement>(
        &mut self,
        prob: &Problem<T>,
        rung: Rung,
    ) -> Result<Placed<'_, T>> {
        let (name, sim) = T::sweep_kernel(rung).ok_or_else(temporal_error)?;
        let (rname, rsim) = T::residual_kernel();
        let world = self.transport.world_size();
        let decomp = Decomp::new(prob.grid, world)?;
        let nx = prob.grid.nx;
        let mut slabs = Vec::with_capacity(self.members.len());
        for mem in &self.members {
            let r = mem.rank;
            let m = decomp.rows(r);
            let first = decomp.owned(r).start - 1;
            let span = first * nx..(first + m + 2) * nx;
            let (p0, b) = (&prob.p0[span.clone()], &prob.b[span]);
            let dev = &mem.dev;
            let (gs, gr) = match dev.as_gpu() {
                Some(g) => (
                    Some(g.function(&crate::modules::KERNELS, ModuleKey::PRECISE, name)?),
                    Some(g.function(&crate::modules::KERNELS, ModuleKey::PRECISE, rname)?),
                ),
                None => (None, None),
            };
            let nan = T::from_f64(f64::NAN);
            slabs.push(Slab {
                rank: r,
                m,
                nx,
                field: [dev.upload(p0)?, dev.upload(p0)?],
                cur: 0,
                b: dev.upload(b)?,
                top: dev.alloc_filled(3 * nx, nan)?,
                bot: dev.alloc_filled(3 * nx, nan)?,
                acc: dev.alloc_filled(1, 0.0f64)?,
                sweep: Kern { name, sim, gpu: gs },
                resid: KernR {
                    name: rname,
                    sim: rsim,
                    gpu: gr,
                },
                sms: dev.as_gpu().map(|g| g.info().sm_count as usize),
            });
            // Uploads went through the legacy default stream: finish them
            // before streams A and B touch the buffers.
            dev.synchronize()?;
            if let Some(s) = &mem.streams {
                s.a_done.record(&s.a).map_err(drv("cuEventRecord"))?;
            }
        }
        let mut placed = Placed {
            b_sq: ps::interior_norm_sq(&prob.b, prob.grid),
            team: self,
            decomp,
            slabs,
            rung,
            k: T::from_f64(ps::k_of_h(prob.h)),
            h: prob.h,
            overlap: true,
            iterations: 0,
        };
        placed.warm_up()?;
        Ok(placed)
    }
}

// ---------------------------------------------------------------- spans and launches

/// A run of elements of one buffer by address (device or simulator host
/// memory): the pointer-offset views the sub-range launches and copies use.
/// Made from a live buffer and used while it lives.
struct Span<T> {
    addr: u64,
    len: usize,
    gpu: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Span<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Span<T> {}

impl<T: DeviceCopy> Span<T> {
    fn of(buf: &Buffer<T>) -> Self {
        match buf.cuda_slice() {
            Some(s) => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(s, s.stream());
                Self {
                    addr: p,
                    len: buf.len(),
                    gpu: true,
                    _t: PhantomData,
                }
            }
            None => Self {
                addr: crate::runtime::KernelArg::sim_value(buf).as_ptr() as u64,
                len: buf.len(),
                gpu: false,
                _t: PhantomData,
            },
        }
    }
    /// Rows `r0 .. r1` of a row-major buffer of width `nx`.
    fn rows(self, nx: usize, r0: usize, r1: usize) -> Result<Self> {
        if r0 > r1 || r1 * nx > self.len {
            return Err(Error::input(
                "slab view",
                format!("rows {r0}..{r1} of a buffer of {} rows", self.len / nx),
            ));
        }
        Ok(Self {
            addr: self.addr + (r0 * nx * std::mem::size_of::<T>()) as u64,
            len: (r1 - r0) * nx,
            ..self
        })
    }
    fn overlaps<U>(&self, o: &Span<U>) -> bool {
        let (a0, a1) = (
            self.addr,
            self.addr + (self.len * std::mem::size_of::<T>()) as u64,
        );
        let (b0, b1) = (o.addr, o.addr + (o.len * std::mem::size_of::<U>()) as u64);
        self.gpu == o.gpu && a0 < b1 && b0 < a1
    }
    /// The simulator's read view.
    ///
    /// # Safety
    /// The span must lie in a live simulator buffer for `'a`, and nothing may
    /// write it through another path while the view is used.
    unsafe fn sim_ro<'a>(self) -> DeviceSlice<'a, T> {
        // SAFETY: forwarded from the caller.
        unsafe { DeviceSlice::from_raw_parts(self.addr as *const T, self.len) }
    }
    /// The simulator's write view.
    ///
    /// # Safety
    /// The span must lie in a live simulator buffer for `'a`, and no other
    /// view of the same elements may be used while this one is.
    unsafe fn sim_rw<'a>(self) -> DeviceSliceMut<'a, T> {
        // SAFETY: forwarded from the caller.
        unsafe { DeviceSliceMut::from_raw_parts(self.addr as *mut T, self.len) }
    }
}

fn span_params<T>(s: &Span<T>, out: &mut Vec<Param>) {
    out.push(Param::U64(s.addr));
    out.push(Param::U64(s.len as u64));
}

/// Launches an already-loaded kernel on `stream` (the runtime's own launcher
/// always uses the device's default stream).
fn gpu_launch(
    g: &Gpu,
    stream: &CudaStream,
    f: &CudaFunction,
    name: &str,
    cfg: &LaunchConfig,
    params: &[Param],
) -> Result<()> {
    check_launch(name, cfg, &g.info().limits)?;
    if cfg.shared_bytes > 48 * 1024 {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            cfg.shared_bytes as i32,
        )
        .map_err(drv("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))?;
    }
    let lc = CuLaunchConfig {
        grid_dim: (cfg.grid.x, cfg.grid.y, cfg.grid.z),
        block_dim: (cfg.block.x, cfg.block.y, cfg.block.z),
        shared_mem_bytes: cfg.shared_bytes as u32,
    };
    let mut b = stream.launch_builder(f);
    for p in params {
        match p {
            Param::U32(v) => b.arg(v),
            Param::I32(v) => b.arg(v),
            Param::U64(v) => b.arg(v),
            Param::F32(v) => b.arg(v),
            Param::F64(v) => b.arg(v),
        };
    }
    // SAFETY: `params` follow the kernel's PTX signature (pointer and length
    // per slice, then the scalars, in the order of the Rust kernel, which the
    // simulator branch calls with the same values); every span lies inside a
    // live buffer of this GPU (`Span::rows` checks), and the kernel checks
    // `nx * ny` against each length at entry.
    unsafe { b.launch(lc) }.map_err(|e| Error::driver(format!("cuLaunchKernel({name})"), e))?;
    Ok(())
}

struct Kern<T> {
    name: &'static str,
    sim: SweepFn<T>,
    gpu: Option<CudaFunction>,
}

struct KernR<T> {
    name: &'static str,
    sim: ResidualFn<T>,
    gpu: Option<CudaFunction>,
}

/// Which stream of a GPU slab a launch goes to.
#[derive(Clone, Copy)]
enum Lane {
    A,
    B,
}

fn stream_of(mem: &Member, lane: Lane) -> Result<&Arc<CudaStream>> {
    let s = mem
        .streams
        .as_ref()
        .ok_or_else(|| Error::input("device", "a GPU slab without streams"))?;
    Ok(match lane {
        Lane::A => &s.a,
        Lane::B => &s.b,
    })
}

/// One rank's slab on its device.
struct Slab<T> {
    rank: usize,
    m: usize,
    nx: usize,
    field: [Buffer<T>; 2],
    cur: usize,
    b: Buffer<T>,
    top: Buffer<T>,
    bot: Buffer<T>,
    acc: Buffer<f64>,
    sweep: Kern<T>,
    resid: KernR<T>,
    sms: Option<usize>,
}

impl<T: SlabElement> Slab<T> {
    /// One sweep of the `ny`-row grid `p` into `out` (same shape) on `lane`.
    fn sweep_on(
        &self,
        mem: &Member,
        lane: Lane,
        rung: Rung,
        ny: usize,
        (p, b, out): (Span<T>, Span<T>, Span<T>),
        k: T,
    ) -> Result<()> {
        let nx = self.nx;
        let grid = Grid::new(nx, ny)?;
        if p.len != grid.cells() || b.len != grid.cells() || out.len != grid.cells() {
            return Err(Error::input(
                "slab sweep",
                format!(
                    "views of {} / {} / {} cells for {}",
                    p.len,
                    b.len,
                    out.len,
                    grid.label()
                ),
            ));
        }
        if out.overlaps(&p) || out.overlaps(&b) {
            return Err(Error::input("slab sweep", "the output overlaps an input"));
        }
        let cfg = ps::sweep_config::<T>(rung, grid, 1)?;
        let (nxu, nyu) = (nx as u32, ny as u32);
        match mem.dev.kind() {
            DeviceKind::Sim => {
                let f = self.sweep.sim;
                // SAFETY: the three spans lie in live simulator buffers of this
                // slab (made by `Span::of` and `Span::rows`, which checks the
                // bounds), which outlive this synchronous launch; the output
                // does not overlap the inputs (checked above), and nothing else
                // runs on the slab's buffers during the launch.
                let (pv, bv, ov) = unsafe { (p.sim_ro(), b.sim_ro(), out.sim_rw()) };
                sim_launch(self.sweep.name, &cfg, move || f(pv, bv, ov, nxu, nyu, k))
            }
            DeviceKind::Gpu(g) => {
                let f = self
                    .sweep
                    .gpu
                    .as_ref()
                    .ok_or_else(|| Error::input("slab sweep", "kernel not loaded"))?;
                let mut prm = Vec::with_capacity(9);
                span_params(&p, &mut prm);
                span_params(&b, &mut prm);
                span_params(&out, &mut prm);
                prm.extend([Param::U32(nxu), Param::U32(nyu), k.param()]);
                gpu_launch(g, stream_of(mem, lane)?, f, self.sweep.name, &cfg, &prm)
            }
        }
    }

    fn spans(&self) -> (Span<T>, Span<T>, Span<T>) {
        (
            Span::of(&self.field[self.cur]),
            Span::of(&self.b),
            Span::of(&self.field[1 - self.cur]),
        )
    }

    /// Overlapped sweep, first half: edges on A into the scratch grids,
    /// interior on B into the output.
    fn launch_overlap(&self, mem: &Member, rung: Rung, k: T) -> Result<()> {
        let (nx, m) = (self.nx, self.m);
        let (p, b, out) = self.spans();
        let rows = |r0, r1| -> Result<(Span<T>, Span<T>)> {
            Ok((p.rows(nx, r0, r1)?, b.rows(nx, r0, r1)?))
        };
        let (pt, bt) = rows(0, 3)?;
        self.sweep_on(mem, Lane::A, rung, 3, (pt, bt, Span::of(&self.top)), k)?;
        if m >= 2 {
            let (pb, bb) = rows(m - 1, m + 2)?;
            self.sweep_on(mem, Lane::A, rung, 3, (pb, bb, Span::of(&self.bot)), k)?;
        }
        if let Some(s) = &mem.streams {
            s.b.wait(&s.a_done).map_err(drv("cuStreamWaitEvent"))?;
        }
        if m >= 3 {
            let (pi, bi) = rows(1, m + 1)?;
            self.sweep_on(mem, Lane::B, rung, m, (pi, bi, out.rows(nx, 1, m + 1)?), k)?;
        }
        if let Some(s) = &mem.streams {
            s.b_done.record(&s.b).map_err(drv("cuEventRecord"))?;
        }
        Ok(())
    }

    /// Sweep without overlap: the whole slab (halo rows copied) on A.
    fn launch_full(&self, mem: &Member, rung: Rung, k: T) -> Result<()> {
        self.sweep_on(mem, Lane::A, rung, self.m + 2, self.spans(), k)
    }

    /// The sends and receives of this slab (local index `i`) for this sweep.
    fn halo_ops<'a>(
        &'a self,
        i: usize,
        world: usize,
        overlap: bool,
        ops: &mut Vec<HaloOp<'a>>,
    ) -> Result<()> {
        let (nx, m, r) = (self.nx, self.m, self.rank);
        let out = &self.field[1 - self.cur];
        let row = |buf: &'a Buffer<T>, y: usize| Rows::of(buf, y * nx, nx, T::DTYPE);
        let (up, down) = if overlap {
            let edge_bot = if m >= 2 { &self.bot } else { &self.top };
            (row(&self.top, 1)?, row(edge_bot, 1)?)
        } else {
            (row(out, 1)?, row(out, m)?)
        };
        if r > 0 {
            ops.push(HaloOp::Send {
                local: i,
                peer: r - 1,
                rows: up,
            });
            ops.push(HaloOp::Recv {
                local: i,
                peer: r - 1,
                rows: row(out, 0)?,
            });
        }
        if r + 1 < world {
            ops.push(HaloOp::Send {
                local: i,
                peer: r + 1,
                rows: down,
            });
            ops.push(HaloOp::Recv {
                local: i,
                peer: r + 1,
                rows: row(out, m + 1)?,
            });
        }
        Ok(())
    }

    /// Copies `src` over `dst` (same length) on stream A.
    fn copy(&self, mem: &Member, dst: Span<T>, src: Span<T>) -> Result<()> {
        if dst.len != src.len || dst.overlaps(&src) {
            return Err(Error::input(
                "slab copy",
                "lengths differ or the runs overlap",
            ));
        }
        match &mem.streams {
            Some(s) => {
                bind(&s.a)?;
                // SAFETY: both runs lie in live device buffers of this GPU
                // (`Span::rows` checks) and do not overlap; the copy is queued
                // on A, which the slab runner orders against B with events.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        dst.addr,
                        src.addr,
                        src.len * std::mem::size_of::<T>(),
                        s.a.cu_stream(),
                    )
                }
                .map_err(drv("cuMemcpyDtoDAsync"))
            }
            None => {
                // SAFETY: both runs lie in live simulator buffers (host memory
                // of `UnsafeCell` elements) and do not overlap (checked); no
                // simulated launch runs (they are synchronous) and no reference
                // to those cells exists.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.addr as *const T, dst.addr as *mut T, src.len)
                };
                Ok(())
            }
        }
    }

    /// Overlapped sweep, second half: after B, the edge rows go into place.
    /// Both modes: mark the end of the sweep on A and swap the buffers.
    fn finish(&mut self, mem: &Member, overlap: bool) -> Result<()> {
        if overlap {
            if let Some(s) = &mem.streams {
                s.a.wait(&s.b_done).map_err(drv("cuStreamWaitEvent"))?;
            }
            let (nx, m) = (self.nx, self.m);
            let out = Span::of(&self.field[1 - self.cur]);
            self.copy(
                mem,
                out.rows(nx, 1, 2)?,
                Span::of(&self.top).rows(nx, 1, 2)?,
            )?;
            if m >= 2 {
                self.copy(
                    mem,
                    out.rows(nx, m, m + 1)?,
                    Span::of(&self.bot).rows(nx, 1, 2)?,
                )?;
            }
        }
        if let Some(s) = &mem.streams {
            s.a_done.record(&s.a).map_err(drv("cuEventRecord"))?;
        }
        self.cur = 1 - self.cur;
        Ok(())
    }

    /// Queues the local residual sum into `acc` (zeroed first) on A.
    fn residual(&self, mem: &Member, h: f64) -> Result<()> {
        let (nx, rows) = (self.nx, self.m + 2);
        let gx = (nx - 2).div_ceil(kp::RES_BLOCK as usize);
        let wanted = self.sms.map_or(4, |s| 8 * s);
        let gy = (rows - 2).min(wanted.div_ceil(gx)).max(1);
        let cfg = LaunchConfig::for_2d(gx * kp::RES_BLOCK as usize, gy, kp::RES_BLOCK, 1)?
            .with_shared(kp::residual_shared_bytes());
        self.set_acc(mem, 0.0)?;
        let (p, b) = (Span::of(&self.field[self.cur]), Span::of(&self.b));
        let acc = Span::of(&self.acc);
        let (nxu, nyu, inv_h2) = (nx as u32, rows as u32, 1.0 / (h * h));
        match mem.dev.kind() {
            DeviceKind::Sim => {
                let f = self.resid.sim;
                // SAFETY: as in `sweep_on`: live simulator buffers of this slab,
                // bounds from `Span::of`; `acc` is a separate buffer.
                let (pv, bv, av) = unsafe { (p.sim_ro(), b.sim_ro(), acc.sim_rw()) };
                sim_launch(self.resid.name, &cfg, move || {
                    f(pv, bv, av, nxu, nyu, inv_h2)
                })
            }
            DeviceKind::Gpu(g) => {
                let f = self
                    .resid
                    .gpu
                    .as_ref()
                    .ok_or_else(|| Error::input("slab residual", "kernel not loaded"))?;
                let mut prm = Vec::with_capacity(9);
                span_params(&p, &mut prm);
                span_params(&b, &mut prm);
                span_params(&acc, &mut prm);
                prm.extend([Param::U32(nxu), Param::U32(nyu), Param::F64(inv_h2)]);
                gpu_launch(g, stream_of(mem, Lane::A)?, f, self.resid.name, &cfg, &prm)
            }
        }
    }

    /// Writes the accumulator (queued on A for a GPU).
    fn set_acc(&self, mem: &Member, v: f64) -> Result<()> {
        let acc = Span::of(&self.acc);
        match &mem.streams {
            Some(s) => {
                bind(&s.a)?;
                // SAFETY: `acc` is the slab's live one-f64 device buffer; the
                // host value is read before the call returns (a pageable
                // source is staged by the driver), and the copy is ordered on A.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(acc.addr, &[v], s.a.cu_stream())
                }
                .map_err(drv("cuMemcpyHtoDAsync"))
            }
            None => {
                // SAFETY: `acc` is the slab's live one-f64 simulator buffer; no
                // launch runs and no reference to it exists.
                unsafe { (acc.addr as *mut f64).write(v) };
                Ok(())
            }
        }
    }

    /// Reads the accumulator (waits for A on a GPU).
    fn get_acc(&self, mem: &Member) -> Result<f64> {
        let acc = Span::of(&self.acc);
        match &mem.streams {
            Some(s) => {
                bind(&s.a)?;
                let mut v = [0.0f64];
                // SAFETY: `acc` is the slab's live one-f64 device buffer and `v`
                // a host array of one f64 that lives until the stream is
                // synchronised just below.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(&mut v, acc.addr, s.a.cu_stream())
                }
                .map_err(drv("cuMemcpyDtoHAsync"))?;
                s.a.synchronize().map_err(drv("cuStreamSynchronize"))?;
                Ok(v[0])
            }
            // SAFETY: as in `set_acc`, for a read.
            None => Ok(unsafe { (acc.addr as *const f64).read() }),
        }
    }
}

// ---------------------------------------------------------------- placed problem

/// Cells of a comparison with a single-device field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    /// Cells compared, all ranks.
    pub cells: u64,
    /// Cells whose bits differ, all ranks.
    pub differ: u64,
    /// The first differing cell `(x, y)` among this process's slabs.
    pub first: Option<(usize, usize)>,
}

/// A problem on a [`Team`]: the slabs, the sweep count, the overlap switch.
pub struct Placed<'t, T: SlabElement> {
    team: &'t mut Team,
    decomp: Decomp,
    slabs: Vec<Slab<T>>,
    rung: Rung,
    k: T,
    h: f64,
    b_sq: f64,
    overlap: bool,
    iterations: usize,
}

impl<T: SlabElement> std::fmt::Debug for Placed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placed")
            .field("decomp", &self.decomp)
            .field("rung", &self.rung)
            .field("overlap", &self.overlap)
            .field("iterations", &self.iterations)
            .finish()
    }
}

impl<T: SlabElement> Drop for Placed<'_, T> {
    fn drop(&mut self) {
        // The buffers are freed on the default stream, which does not wait for
        // streams A and B: let them finish first.
        let _ = self.synchronize();
    }
}

impl<'t, T: SlabElement> Placed<'t, T> {
    /// Overlap the halo exchange with the interior update (default on).
    pub fn set_overlap(&mut self, on: bool) {
        self.overlap = on;
    }
    /// Whether the exchange is overlapped.
    pub fn overlap(&self) -> bool {
        self.overlap
    }
    /// The decomposition.
    pub fn decomposition(&self) -> &Decomp {
        &self.decomp
    }
    /// Sweeps done since placement.
    pub fn iterations(&self) -> usize {
        self.iterations
    }
    /// The team.
    pub fn team(&self) -> &Team {
        self.team
    }

    /// Waits for all queued work of this process's devices.
    pub fn synchronize(&self) -> Result<()> {
        for m in &self.team.members {
            m.synchronize()?;
        }
        Ok(())
    }

    /// One halo exchange of the initial field (whose halo rows already hold
    /// the neighbours' rows, so nothing changes) and one all-reduce: NCCL sets
    /// up its connections on first use, and that belongs outside any timing.
    fn warm_up(&mut self) -> Result<()> {
        let world = self.team.transport.world_size();
        {
            let mut ops = Vec::new();
            for (i, s) in self.slabs.iter().enumerate() {
                let (nx, m, r) = (s.nx, s.m, s.rank);
                let cur = &s.field[s.cur];
                let row = |y: usize| Rows::of(cur, y * nx, nx, T::DTYPE);
                if r > 0 {
                    ops.push(HaloOp::Send {
                        local: i,
                        peer: r - 1,
                        rows: row(1)?,
                    });
                    ops.push(HaloOp::Recv {
                        local: i,
                        peer: r - 1,
                        rows: row(0)?,
                    });
                }
                if r + 1 < world {
                    ops.push(HaloOp::Send {
                        local: i,
                        peer: r + 1,
                        rows: row(m)?,
                    });
                    ops.push(HaloOp::Recv {
                        local: i,
                        peer: r + 1,
                        rows: row(m + 1)?,
                    });
                }
            }
            self.team.transport.exchange(&ops)?;
        }
        self.sum_over_ranks(&vec![0.0; self.slabs.len()])?;
        self.synchronize()
    }

    fn step(&mut self) -> Result<()> {
        let world = self.team.transport.world_size();
        let (overlap, rung, k) = (self.overlap, self.rung, self.k);
        for (s, mem) in self.slabs.iter().zip(&self.team.members) {
            if overlap {
                s.launch_overlap(mem, rung, k)?;
            } else {
                s.launch_full(mem, rung, k)?;
            }
        }
        {
            let mut ops = Vec::with_capacity(4 * self.slabs.len());
            for (i, s) in self.slabs.iter().enumerate() {
                s.halo_ops(i, world, overlap, &mut ops)?;
            }
            self.team.transport.exchange(&ops)?;
        }
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            s.finish(mem, overlap)?;
        }
        self.iterations += 1;
        Ok(())
    }

    /// `n` sweeps (queued; a GPU may still be running them on return).
    pub fn iterate(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            self.step()?;
        }
        Ok(())
    }

    fn sum_accs(&mut self) -> Result<f64> {
        {
            let accs = self
                .slabs
                .iter()
                .map(|s| Rows::of(&s.acc, 0, 1, Dtype::F64))
                .collect::<Result<Vec<_>>>()?;
            self.team.transport.all_reduce_sum(&accs)?;
        }
        match (self.slabs.first(), self.team.members.first()) {
            (Some(s), Some(m)) => s.get_acc(m),
            _ => Err(Error::input("team", "no device")),
        }
    }

    /// Sum over all interior cells of `r^2`, `r = b - lap_h p`: each slab
    /// reduces its own rows on its device, then an all-reduce over ranks.
    pub fn residual_sq(&mut self) -> Result<f64> {
        for (s, mem) in self.slabs.iter().zip(&self.team.members) {
            s.residual(mem, self.h)?;
        }
        self.sum_accs()
    }

    /// Sums one value per local slab over all ranks.
    fn sum_over_ranks(&mut self, vals: &[f64]) -> Result<f64> {
        for ((s, mem), v) in self.slabs.iter().zip(&self.team.members).zip(vals) {
            s.set_acc(mem, *v)?;
        }
        self.sum_accs()
    }

    /// Global rows this slab reports: its own, and the global boundary row
    /// it stores in place of a halo at either end.
    fn reported_rows(&self, i: usize) -> Vec<(usize, usize)> {
        let s = &self.slabs[i];
        let owned = self.decomp.owned(s.rank);
        let mut v: Vec<(usize, usize)> = (1..=s.m).map(|l| (l, owned.start + l - 1)).collect();
        if s.rank == 0 {
            v.insert(0, (0, 0));
        }
        if s.rank + 1 == self.decomp.world() {
            v.push((s.m + 1, self.decomp.grid().ny - 1));
        }
        v
    }

    /// Compares the current field with a whole-grid field (`reference`, e.g.
    /// the single-device result after as many sweeps) bit for bit; the counts
    /// are summed over all ranks.
    pub fn compare(&mut self, reference: &[T]) -> Result<Comparison> {
        let grid = self.decomp.grid();
        if reference.len() != grid.cells() {
            return Err(Error::input(
                "reference field",
                format!("{} values for the grid {}", reference.len(), grid.label()),
            ));
        }
        self.synchronize()?;
        let nx = grid.nx;
        let (mut cells, mut differ, mut first) = (Vec::new(), Vec::new(), None);
        for (i, (s, mem)) in self.slabs.iter().zip(&self.team.members).enumerate() {
            let local = mem.dev.download(&s.field[s.cur])?;
            let (mut c, mut d) = (0u64, 0u64);
            for (l, y) in self.reported_rows(i) {
                let (got, want) = (
                    &local[l * nx..(l + 1) * nx],
                    &reference[y * nx..(y + 1) * nx],
                );
                for (x, (a, b)) in got.iter().zip(want).enumerate() {
                    c += 1;
                    if a.bits() != b.bits() {
                        d += 1;
                        first.get_or_insert((x, y));
                    }
                }
            }
            cells.push(c as f64);
            differ.push(d as f64);
        }
        let cells = self.sum_over_ranks(&cells)? as u64;
        let differ = self.sum_over_ranks(&differ)? as u64;
        Ok(Comparison {
            cells,
            differ,
            first,
        })
    }

    /// The whole field, on the process that holds rank 0 (`None` elsewhere).
    /// With one process per GPU the other ranks send their rows to rank 0
    /// through the transport; every rank must call it.
    pub fn gather(&mut self) -> Result<Option<Vec<T>>> {
        self.synchronize()?;
        let grid = self.decomp.grid();
        let nx = grid.nx;
        let world = self.decomp.world();
        let mut full = vec![T::ZERO; grid.cells()];
        for (i, (s, mem)) in self.slabs.iter().zip(&self.team.members).enumerate() {
            let local = mem.dev.download(&s.field[s.cur])?;
            for (l, y) in self.reported_rows(i) {
                full[y * nx..(y + 1) * nx].copy_from_slice(&local[l * nx..(l + 1) * nx]);
            }
        }
        if self.slabs.len() == world {
            return Ok(Some(full));
        }
        // One process per GPU: rank r > 0 sends its reported rows (contiguous
        // in its buffer), rank 0 receives them one rank at a time.
        let me = self.slabs[0].rank;
        let mem = &self.team.members[0];
        let max_rows = (0..world)
            .map(|r| self.decomp.rows(r) + 1)
            .max()
            .unwrap_or(1);
        let land = if me == 0 {
            let b = mem.dev.alloc_filled(max_rows * nx, T::from_f64(f64::NAN))?;
            mem.dev.synchronize()?;
            Some(b)
        } else {
            None
        };
        for r in 1..world {
            let count = self.decomp.rows(r) + usize::from(r + 1 == world);
            if me == r {
                let s = &self.slabs[0];
                let rows = Rows::of(&s.field[s.cur], nx, count * nx, T::DTYPE)?;
                self.team.transport.exchange(&[HaloOp::Send {
                    local: 0,
                    peer: 0,
                    rows,
                }])?;
                mem.synchronize()?;
            } else if let Some(buf) = &land {
                let rows = Rows::of(buf, 0, count * nx, T::DTYPE)?;
                self.team.transport.exchange(&[HaloOp::Recv {
                    local: 0,
                    peer: r,
                    rows,
                }])?;
                mem.synchronize()?;
                let got = mem.dev.download(buf)?;
                let y0 = self.decomp.owned(r).start;
                full[y0 * nx..(y0 + count) * nx].copy_from_slice(&got[..count * nx]);
            }
        }
        Ok((me == 0).then_some(full))
    }

    /// Iterates like [`ps::solve_device`] (same stopping rule, residual
    /// checks every `check_every` sweeps) from the current field. `ms` is the
    /// wall time of the sweeps and residual checks, the devices synchronised
    /// at both ends.
    pub fn solve(&mut self, opts: &SolveOptions) -> Result<SolveReport> {
        opts.validate()?;
        if opts.rung != self.rung {
            return Err(Error::input(
                "solve",
                format!(
                    "the slabs were placed for the {} rung, the options ask for {}",
                    self.rung.name(),
                    opts.rung.name()
                ),
            ));
        }
        let rel = |res: f64, b_sq: f64| {
            if b_sq > 0.0 {
                (res / b_sq).sqrt()
            } else {
                res.sqrt()
            }
        };
        self.synchronize()?;
        let t0 = Instant::now();
        let (mut done, mut checks, mut res, mut converged) = (0, 0, f64::NAN, false);
        loop {
            if let Some(tol) = opts.tol {
                res = self.residual_sq()?;
                checks += 1;
                if rel(res, self.b_sq) < tol {
                    converged = true;
                    break;
                }
            }
            if done >= opts.max_iters {
                break;
            }
            let n = if opts.tol.is_some() {
                opts.check_every.min(opts.max_iters - done)
            } else {
                opts.max_iters
            };
            self.iterate(n)?;
            done += n;
        }
        if opts.tol.is_none() {
            res = self.residual_sq()?;
            checks += 1;
        }
        self.synchronize()?;
        Ok(SolveReport {
            iterations: done,
            rel_residual: rel(res, self.b_sq),
            residual_norm: res.sqrt(),
            converged,
            ms: t0.elapsed().as_secs_f64() * 1e3,
            residual_checks: checks,
        })
    }

    /// Wall time per sweep: `warmup` sweeps, then `reps` batches of `iters`
    /// sweeps, each timed from a synchronised start to a synchronised end.
    pub fn time_sweeps(&mut self, warmup: usize, reps: usize, iters: usize) -> Result<Timing> {
        self.iterate(warmup)?;
        self.synchronize()?;
        let iters = iters.max(1);
        let mut ms = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            self.iterate(iters)?;
            self.synchronize()?;
            ms.push(t.elapsed().as_secs_f64() * 1e3 / iters as f64);
        }
        Ok(Timing::from_samples(ms))
    }
}

/// Places `prob` on `team`, solves (as [`ps::solve_device`]) and gathers the
/// field to the process holding rank 0.
pub fn solve_multi<T: SlabElement>(
    team: &mut Team,
    prob: &Problem<T>,
    opts: &SolveOptions,
    overlap: bool,
) -> Result<(Option<Vec<T>>, SolveReport)> {
    let mut placed = team.place(prob, opts.rung)?;
    placed.set_overlap(overlap);
    let report = placed.solve(opts)?;
    let field = placed.gather()?;
    Ok((field, report))
}

/// `iters` sweeps of `rung` on one device over the whole grid (the reference
/// a decomposition must equal bit for bit).
pub fn single_device<T: SlabElement>(
    dev: &Device,
    prob: &Problem<T>,
    rung: Rung,
    iters: usize,
) -> Result<Vec<T>> {
    T::sweep_kernel(rung).ok_or_else(temporal_error)?;
    let b = dev.upload(&prob.b)?;
    let mut f = Field::new(dev, &prob.p0)?;
    f.run(
        dev,
        rung,
        prob.grid,
        &b,
        T::from_f64(ps::k_of_h(prob.h)),
        iters,
        1,
    )?;
    dev.download(&f.cur)
}

// ---------------------------------------------------------------- CLI

/// The multi-GPU options of `ptxlab poisson` (flattened into its `Args`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GpuArgs {
    /// Split the grid into N row slabs, one per device, with a halo exchange
    /// every sweep (NCCL between GPUs; --backend sim: N simulated devices).
    /// Under a launcher (PTXLAB_RANK/PTXLAB_WORLD_SIZE, torchrun's RANK/
    /// WORLD_SIZE, mpirun's OMPI_COMM_WORLD_*), this process is one of N
    /// ranks with one GPU each.
    #[arg(long = "gpus", value_name = "N")]
    pub count: Option<usize>,
    /// Exchange halos after the whole slab is updated, instead of overlapping
    /// the exchange with the interior update (for comparison).
    #[arg(long)]
    pub no_overlap: bool,
}

impl GpuArgs {
    /// `true` when a multi-device option was given (`ptxlab poisson` then
    /// dispatches to [`cli`]).
    pub fn requested(&self) -> bool {
        self.count.is_some() || self.no_overlap
    }
}

/// Sets `NCCL_NVLS_ENABLE=0` (NVLink multicast off, see [`nccl`]).
///
/// # Safety
/// No other thread may read or write the environment while this runs (call
/// it first thing in `main`, before any thread exists).
pub unsafe fn disable_nvls_in_env() {
    let (k, v) = nccl::NVLS_ENV;
    // SAFETY: forwarded from the caller: the process is single-threaded here.
    unsafe { std::env::set_var(k, v) };
}

/// Most cells of a grid on simulated devices (one OS thread per GPU thread).
pub const SIM_MAX_CELLS: usize = 1 << 16;
/// Most simulated cell updates of one run on simulated devices.
pub const SIM_MAX_WORK: usize = 1 << 22;

fn sim_limits(grid: Grid, work: usize) -> Result<()> {
    if grid.cells() > SIM_MAX_CELLS || work > SIM_MAX_WORK {
        return Err(Error::input(
            "grid/--iters",
            format!(
                "{} cells ({}) and {work} cell updates on simulated devices; at most \
                 {SIM_MAX_CELLS} cells and {SIM_MAX_WORK} updates (the simulator runs one OS \
                 thread per GPU thread): use a smaller grid or fewer sweeps",
                grid.cells(),
                grid.label()
            ),
        ));
    }
    Ok(())
}

fn rungs_of(variant: &str) -> Result<Vec<Rung>> {
    let rungs = if variant == "all" {
        vec![Rung::Naive, Rung::Tiled, Rung::Register]
    } else {
        vec![variant.parse::<Rung>()?]
    };
    if rungs.contains(&Rung::Temporal) {
        return Err(temporal_error());
    }
    Ok(rungs)
}

fn per_sweep(r: &SolveReport) -> String {
    if r.iterations == 0 {
        return String::new();
    }
    format!(", {:.4} ms/sweep", r.ms / r.iterations as f64)
}

/// `ptxlab poisson --gpus N [--no-overlap]`: solves on one device over the
/// whole grid, then on N slabs, prints both (ms per sweep) and checks that
/// the N-device field equals the single-device field bit for bit.
pub fn cli(args: &Args) -> Result<()> {
    let Some(n) = args.gpus.count else {
        return Err(Error::input(
            "--no-overlap",
            "applies to the multi-device run; add --gpus N",
        ));
    };
    let backend: Backend = args.backend.parse()?;
    if backend == Backend::Cpu {
        return Err(Error::input(
            "--gpus",
            "needs --backend gpu (N GPUs through NCCL) or --backend sim (N simulated devices); \
             --backend cpu has no devices",
        ));
    }
    match args.precision.as_str() {
        "f32" => cli_typed::<f32>(args, n, backend),
        "f64" => cli_typed::<f64>(args, n, backend),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64"),
        )),
    }
}

fn open_team(n: usize, backend: Backend) -> Result<Team> {
    match backend {
        Backend::Sim => Team::sim(n),
        _ => match RankEnv::from_env()? {
            Some(env) => Team::from_launcher(&env, Some(n)),
            None => Team::gpus(n),
        },
    }
}

fn reference_device(team: &Team) -> Result<Device> {
    match team.members.first().and_then(|m| m.dev.as_gpu()) {
        Some(g) => Device::gpu(g.context().ordinal()),
        None => Ok(Device::sim()),
    }
}

fn cli_typed<T: SlabElement>(args: &Args, n: usize, backend: Backend) -> Result<()> {
    let rungs = rungs_of(&args.variant)?;
    let opts = SolveOptions {
        rung: rungs[0],
        depth: 1,
        tol: args.tol,
        max_iters: args.iters.unwrap_or(match (args.tol, backend) {
            (None, _) => 100,
            (Some(_), Backend::Sim) => 5_000,
            (Some(_), _) => 100_000,
        }),
        check_every: args.check_every,
    };
    opts.validate()?;
    // The devices first (a missing driver, GPU or NCCL is reported before any
    // input is made), then the problem.
    let mut team = open_team(n, backend)?;
    let (prob, _) = ps::cli_problem::<T>(args)?;
    Decomp::new(prob.grid, team.world_size())?;
    if backend == Backend::Sim {
        // The single-device run and the slab run, each sweep on every rung.
        let work = prob
            .grid
            .cells()
            .saturating_mul(opts.max_iters.saturating_add(3))
            .saturating_mul(2 * rungs.len());
        sim_limits(prob.grid, work)?;
    }
    let lead = team.is_lead();
    let say = |s: String| {
        if lead {
            println!("{s}");
        }
    };
    let overlap = !args.gpus.no_overlap;
    let grid = prob.grid;
    let decomp = Decomp::new(grid, team.world_size())?;
    say(format!(
        "poisson {} {} on {} device(s) ({}), h={:e}, {}",
        grid.label(),
        T::NAME,
        team.world_size(),
        team.members[0].dev.name(),
        prob.h,
        match opts.tol {
            Some(t) => format!(
                "until ||r||/||b|| < {t:e} (at most {} sweeps, checked every {})",
                opts.max_iters, opts.check_every
            ),
            None => format!("{} sweeps", opts.max_iters),
        }
    ));
    say(format!(
        "slabs (owned rows): {}; halo exchange: {}, {}",
        (0..decomp.world())
            .map(|r| {
                let o = decomp.owned(r);
                format!("rank {r} {}..{}", o.start, o.end)
            })
            .collect::<Vec<_>>()
            .join(", "),
        team.describe(),
        if overlap {
            "overlapped with the interior update"
        } else {
            "after the whole slab (no overlap)"
        }
    ));
    let refdev = reference_device(&team)?;
    let mut last = None;
    for rung in rungs {
        let o = SolveOptions { rung, ..opts };
        if let Some(g) = refdev.as_gpu() {
            // Load the module now, so the timed solve does not include the JIT.
            g.function(
                &crate::modules::KERNELS,
                ModuleKey::PRECISE,
                &rung.kernel::<T>(),
            )?;
            g.function(
                &crate::modules::KERNELS,
                ModuleKey::PRECISE,
                T::residual_kernel().0,
            )?;
        }
        let (p1, r1) = ps::solve_device(&refdev, &prob, &o)?;
        let fmt = |r: &SolveReport| {
            format!(
                "{} sweeps, ||r||/||b|| = {:.6e} (||r|| = {:.6e}), {} ms{}{}",
                r.iterations,
                r.rel_residual,
                r.residual_norm,
                fmt_ms(r.ms),
                per_sweep(r),
                match (o.tol, r.converged) {
                    (Some(_), true) => ", converged",
                    (Some(_), false) => ", NOT converged",
                    (None, _) => "",
                }
            )
        };
        say(format!(
            "{} {}, 1 device (whole grid): {}",
            rung.label(1),
            T::NAME,
            fmt(&r1)
        ));
        let mut placed = team.place(&prob, rung)?;
        placed.set_overlap(overlap);
        let rn = placed.solve(&o)?;
        say(format!(
            "{} {}, {} slabs: {}",
            rung.label(1),
            T::NAME,
            decomp.world(),
            fmt(&rn)
        ));
        if rn.iterations != r1.iterations {
            return Err(Error::Verification {
                what: format!("poisson --gpus {n} {} {}", rung.name(), grid.label()),
                detail: format!(
                    "{} sweeps on {n} devices, {} on one: the residuals crossed the tolerance at \
                     different checks",
                    rn.iterations, r1.iterations
                ),
            });
        }
        let c = placed.compare(&p1)?;
        if c.differ > 0 {
            return Err(Error::Verification {
                what: format!("poisson --gpus {n} {} {}", rung.name(), grid.label()),
                detail: format!(
                    "{} of {} cells differ from the single-device field after {} sweeps{}",
                    c.differ,
                    c.cells,
                    rn.iterations,
                    c.first
                        .map(|(x, y)| format!(" (first here at x={x}, y={y})"))
                        .unwrap_or_default()
                ),
            });
        }
        let rdiff = ((rn.residual_norm - r1.residual_norm) / r1.residual_norm).abs();
        if !(rdiff <= 1e-9 || r1.residual_norm == rn.residual_norm) {
            return Err(Error::Verification {
                what: format!("poisson --gpus {n} residual {}", grid.label()),
                detail: format!(
                    "||r|| {:e} on {n} devices, {:e} on one: relative difference {rdiff:.2e}, \
                     tolerance 1e-9",
                    rn.residual_norm, r1.residual_norm
                ),
            });
        }
        say(format!(
            "PASS bit-identical to the single-device field: all {} cells after {} sweeps; \
             ||r|| differs by {rdiff:.1e} (summation order); speedup {:.2}x",
            c.cells,
            rn.iterations,
            r1.ms / rn.ms
        ));
        if args.out.is_some() {
            last = Some(placed.gather()?);
        }
    }
    if let (Some(out), Some(Some(field))) = (&args.out, last) {
        crate::npy::write_2d(out, grid.ny, grid.nx, &field)?;
        println!(
            "wrote {} ({}x{} {}, shape (ny, nx))",
            out.display(),
            grid.ny,
            grid.nx,
            T::NAME
        );
    }
    Ok(())
}

// ---------------------------------------------------------------- scaling benchmark

/// `ptxlab poisson-scaling` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ScalingArgs {
    /// Square sizes S: strong scaling on S x S, weak scaling on S columns x
    /// N*S rows (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "8192,16384")]
    pub sizes: Vec<usize>,
    /// GPUs (or simulated devices) to scale to.
    #[arg(long, default_value_t = 2)]
    pub gpus: usize,
    /// Sweeps per timed batch.
    #[arg(long, default_value_t = 200)]
    pub iters: usize,
    /// Timed batches (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Untimed sweeps first.
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// naive, tiled or register.
    #[arg(long, default_value = "register")]
    pub variant: String,
    /// gpu or sim (sim: a smoke test at small sizes).
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Skip the weak-scaling rows.
    #[arg(long)]
    pub no_weak: bool,
    /// Skip the bit-for-bit checks (odd grid after 1, 2, 37 sweeps, and each
    /// strong-scaling grid after the timed sweeps).
    #[arg(long)]
    pub no_check: bool,
    /// Also write the Markdown table to this file.
    #[arg(long)]
    pub md: Option<PathBuf>,
}

impl Default for ScalingArgs {
    fn default() -> Self {
        Self {
            sizes: vec![8192, 16384],
            gpus: 2,
            iters: 200,
            reps: 5,
            warmup: 20,
            precision: "f32".into(),
            variant: "register".into(),
            backend: "gpu".into(),
            no_weak: false,
            no_check: false,
            md: None,
        }
    }
}

/// One row of the scaling table.
#[derive(Debug, Clone)]
pub struct ScalingRow {
    /// `"strong"` or `"weak"`.
    pub kind: &'static str,
    /// Global grid.
    pub grid: Grid,
    /// Devices.
    pub gpus: usize,
    /// What ran: whole grid, slab code, overlapped, not overlapped.
    pub mode: String,
    /// Median ms per sweep.
    pub ms: f64,
    /// Speedup over one device on S x S (strong) or `None`.
    pub speedup: Option<f64>,
    /// Efficiency: speedup / devices (strong), or t1 / tN (weak).
    pub efficiency: Option<f64>,
}

/// The scaling table as Markdown.
pub fn scaling_table(rows: &[ScalingRow], precision: &str, rung: Rung) -> String {
    let mut s = format!(
        "| scaling | grid ({precision}, {}) | GPUs | halo exchange | ms/sweep | GCells/s | speedup | efficiency |\n|---|---|---|---|---|---|---|---|\n",
        rung.name()
    );
    for r in rows {
        let gcells = r.grid.cells() as f64 / (r.ms * 1e-3) / 1e9;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {:.1} | {} | {} |\n",
            r.kind,
            r.grid.label(),
            r.gpus,
            r.mode,
            r.ms,
            gcells,
            r.speedup.map_or("".into(), |v| format!("{v:.2}x")),
            r.efficiency
                .map_or("".into(), |v| format!("{:.1}%", 100.0 * v)),
        ));
    }
    s
}

/// `ptxlab poisson-scaling`: ms per sweep on one device and on N, strong
/// (same global grid) and weak (N times the rows) scaling, with and without
/// the overlap; prints a Markdown table.
pub fn cli_scaling(args: &ScalingArgs) -> Result<()> {
    let backend: Backend = args.backend.parse()?;
    if backend == Backend::Cpu {
        return Err(Error::input("--backend", "cpu; gpu or sim"));
    }
    if backend == Backend::Gpu && RankEnv::from_env()?.is_some() {
        return Err(Error::input(
            "poisson-scaling",
            "runs as one process driving every GPU; unset the launcher's rank variables \
             (use `ptxlab poisson --gpus N` for one process per GPU)",
        ));
    }
    if args.sizes.is_empty() || args.iters == 0 {
        return Err(Error::input(
            "--sizes/--iters",
            "at least one size and one sweep per batch",
        ));
    }
    let rung = rungs_of(&args.variant)?;
    let [rung] = rung[..] else {
        return Err(Error::input(
            "--variant",
            "one rung (naive, tiled or register)",
        ));
    };
    match args.precision.as_str() {
        "f32" => scaling_typed::<f32>(args, backend, rung),
        "f64" => scaling_typed::<f64>(args, backend, rung),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64"),
        )),
    }
}

fn time_single<T: SlabElement>(
    dev: &Device,
    f: &mut Field<T>,
    b: &Buffer<T>,
    grid: Grid,
    k: T,
    rung: Rung,
    args: &ScalingArgs,
) -> Result<Timing> {
    f.run(dev, rung, grid, b, k, args.warmup, 1)?;
    dev.synchronize()?;
    let mut ms = Vec::new();
    for _ in 0..args.reps.max(1) {
        let t = Instant::now();
        f.run(dev, rung, grid, b, k, args.iters, 1)?;
        dev.synchronize()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3 / args.iters as f64);
    }
    Ok(Timing::from_samples(ms))
}

fn check_equal<T: SlabElement>(
    placed: &mut Placed<'_, T>,
    want: &[T],
    what: &str,
) -> Result<String> {
    let c = placed.compare(want)?;
    if c.differ > 0 {
        return Err(Error::Verification {
            what: what.to_string(),
            detail: format!(
                "{} of {} cells differ from the single-device field after {} sweeps{}",
                c.differ,
                c.cells,
                placed.iterations(),
                c.first
                    .map(|(x, y)| format!(" (first at x={x}, y={y})"))
                    .unwrap_or_default()
            ),
        });
    }
    Ok(format!(
        "PASS {what}: bit-identical to one device after {} sweeps ({} cells)",
        placed.iterations(),
        c.cells
    ))
}

fn scaling_typed<T: SlabElement>(args: &ScalingArgs, backend: Backend, rung: Rung) -> Result<()> {
    let n = args.gpus;
    let sim = backend == Backend::Sim;
    if sim {
        for &s in &args.sizes {
            let grid = Grid::new(s, n.max(1) * s)?;
            let sweeps = (args.warmup + args.reps.max(1) * args.iters).saturating_mul(6);
            sim_limits(grid, grid.cells().saturating_mul(sweeps))?;
        }
    }
    let mut team = if sim { Team::sim(n)? } else { Team::gpus(n)? };
    let mut team1 = if sim { Team::sim(1)? } else { Team::gpus(1)? };
    let dev = reference_device(&team)?;
    println!(
        "poisson-scaling: {} {} on {} x {}; {}; {} warm-up sweeps, then {} batches of {} sweeps \
         (median ms per sweep, wall clock between synchronisations)",
        rung.label(1),
        T::NAME,
        n,
        dev.name(),
        team.describe(),
        args.warmup,
        args.reps,
        args.iters
    );
    if !args.no_check {
        let (cx, cy) = if sim { (37, 29) } else { ps::CHECK_GRID_GPU };
        let grid = Grid::new(cx, cy)?;
        let (p0, b) = ps::random_inputs(grid, 9);
        let conv = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
        let prob = Problem::new(grid, ps::CHECK_H, conv(b), conv(p0))?;
        for overlap in [true, false] {
            let mut placed = team.place(&prob, rung)?;
            placed.set_overlap(overlap);
            let mut done = 0;
            for s in ps::CHECK_SWEEPS {
                placed.iterate(s - done)?;
                done = s;
                let want = single_device(&dev, &prob, rung, s)?;
                println!(
                    "{}",
                    check_equal(
                        &mut placed,
                        &want,
                        &format!(
                            "{} GPUs {}, {}",
                            n,
                            grid.label(),
                            if overlap {
                                "overlapped"
                            } else {
                                "not overlapped"
                            }
                        )
                    )?
                );
            }
        }
    }
    let mut rows = Vec::new();
    for &s in &args.sizes {
        let grid = Grid::new(s, s)?;
        let (p0, bh) = ps::bench_inputs::<T>(grid);
        let h = ps::default_h(grid);
        let k = T::from_f64(ps::k_of_h(h));
        let b = dev.upload(&bh)?;
        let mut f = Field::new(&dev, &p0)?;
        let t1 = time_single(&dev, &mut f, &b, grid, k, rung, args)?.median_ms;
        println!("{} 1 device, whole grid: {t1:.4} ms/sweep", grid.label());
        rows.push(ScalingRow {
            kind: "strong",
            grid,
            gpus: 1,
            mode: "none (whole grid, single-GPU code)".into(),
            ms: t1,
            speedup: Some(1.0),
            efficiency: Some(1.0),
        });
        let prob = Problem { grid, h, b: bh, p0 };
        {
            let mut placed = team1.place(&prob, rung)?;
            let t = placed
                .time_sweeps(args.warmup, args.reps, args.iters)?
                .median_ms;
            println!("{} 1 device, slab code: {t:.4} ms/sweep", grid.label());
            rows.push(ScalingRow {
                kind: "strong",
                grid,
                gpus: 1,
                mode: "none (slab code, no peers)".into(),
                ms: t,
                speedup: Some(t1 / t),
                efficiency: Some(t1 / t),
            });
        }
        {
            let mut placed = team.place(&prob, rung)?;
            for overlap in [true, false] {
                placed.set_overlap(overlap);
                let t = placed
                    .time_sweeps(args.warmup, args.reps, args.iters)?
                    .median_ms;
                let mode = if overlap {
                    "overlapped"
                } else {
                    "not overlapped"
                };
                println!(
                    "{} {n} devices, {mode}: {t:.4} ms/sweep, speedup {:.2}x",
                    grid.label(),
                    t1 / t
                );
                rows.push(ScalingRow {
                    kind: "strong",
                    grid,
                    gpus: n,
                    mode: mode.into(),
                    ms: t,
                    speedup: Some(t1 / t),
                    efficiency: Some(t1 / t / n as f64),
                });
                if !args.no_check {
                    // Bring the single-device field to the same sweep count
                    // (it ran one timing's worth; the slabs now ran one or two).
                    if !overlap {
                        let w = args.warmup + args.reps.max(1) * args.iters;
                        f.run(&dev, rung, grid, &b, k, w, 1)?;
                    }
                    let want = dev.download(&f.cur)?;
                    println!(
                        "{}",
                        check_equal(
                            &mut placed,
                            &want,
                            &format!("{n} GPUs {}, {mode}", grid.label())
                        )?
                    );
                }
            }
        }
        drop(f);
        drop(b);
        if !args.no_weak && n > 1 {
            let wgrid = match Grid::new(s, n * s) {
                Ok(g) => g,
                Err(e) => {
                    println!("weak scaling at {s} x {}: skipped ({e})", n * s);
                    continue;
                }
            };
            let (p0, bh) = ps::bench_inputs::<T>(wgrid);
            let prob = Problem {
                grid: wgrid,
                h,
                b: bh,
                p0,
            };
            let mut placed = team.place(&prob, rung)?;
            for overlap in [true, false] {
                placed.set_overlap(overlap);
                let t = placed
                    .time_sweeps(args.warmup, args.reps, args.iters)?
                    .median_ms;
                let mode = if overlap {
                    "overlapped"
                } else {
                    "not overlapped"
                };
                println!(
                    "{} {n} devices, {mode}: {t:.4} ms/sweep, weak-scaling efficiency {:.1}%",
                    wgrid.label(),
                    100.0 * t1 / t
                );
                rows.push(ScalingRow {
                    kind: "weak",
                    grid: wgrid,
                    gpus: n,
                    mode: mode.into(),
                    ms: t,
                    speedup: None,
                    efficiency: Some(t1 / t),
                });
            }
        }
    }
    let table = scaling_table(&rows, T::NAME, rung);
    println!("\n{table}");
    if let Some(md) = &args.md {
        std::fs::write(md, &table).map_err(|e| Error::File {
            path: md.display().to_string(),
            detail: e.to_string(),
        })?;
        println!("wrote {}", md.display());
    }
    Ok(())
}
