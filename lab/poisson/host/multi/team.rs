//! The devices of a run: a [`Member`] per device (with its two streams on a
//! GPU) and the [`Team`] of them with the transport between all ranks.

use super::bootstrap::{RankEnv, unique_id};
use super::nccl::{self, NcclTransport};
use super::tcp::TcpTransport;
use super::transport::{LocalTransport, Transport};
use ptxlab_common::distributed::rendezvous::{self as tcp, Rendezvous};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::stream::Priority;
use ptxlab_common::runtime::{Device, Event, Stream, nccl::share_pools, probe::driver_present};

/// The two streams of a GPU slab and the events that order them.
pub(super) struct Streams {
    /// Edge rows, transfers, fix-ups, residual (high priority).
    pub(super) a: Stream,
    /// Interior rows.
    pub(super) b: Stream,
    /// Recorded on A at the end of each sweep.
    pub(super) a_done: Event,
    /// Recorded on B after the interior update.
    pub(super) b_done: Event,
}

/// One device of a [`Team`] and its global rank.
pub struct Member {
    pub(super) rank: usize,
    pub(super) dev: Device,
    pub(super) streams: Option<Streams>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Member(rank {}, {})", self.rank, self.dev.name())
    }
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
        let dev = ptxlab_common::Error::open_gpu(ordinal)?;
        let gpu = dev
            .as_gpu()
            .ok_or_else(|| Error::input("device", "not a GPU"))?;
        // SAFETY: the runtime's per-buffer event tracking is turned off for
        // the buffers of this GPU (all allocated after this call, by this
        // module). The contract of `disable_event_tracking` then holds by
        // construction here: uploads go through the device's own stream and
        // are followed by a device synchronisation before streams A and B use
        // the buffers; A and B are ordered with the events below; downloads
        // and frees happen only after A and B are synchronised
        // (`Placed::synchronize`, `Drop for Placed`); A and B never write the
        // same rows concurrently (module docs).
        unsafe { gpu.disable_event_tracking() };
        let a = gpu.new_stream(Priority::High)?;
        let b = gpu.new_stream(Priority::Low)?;
        let (a_done, b_done) = (gpu.new_event(false)?, gpu.new_event(false)?);
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
    pub(super) fn synchronize(&self) -> Result<()> {
        if let Some(s) = &self.streams {
            s.a.synchronize()?;
            s.b.synchronize()?;
        }
        Ok(self.dev.synchronize()?)
    }
}

/// The devices this process drives and the transport between all ranks.
pub struct Team {
    // Declared first so it is dropped first: the communicators go (after
    // their streams finish) before the devices.
    pub(super) transport: Box<dyn Transport>,
    pub(super) members: Vec<Member>,
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
        return Err(Error::NoGpu(ptxlab_common::runtime::Error::NoDriver {
            detail: format!(
                "{what} needs libcuda.so.1 and {n} GPU(s); libcuda.so / libcuda.so.1 could not be \
                 loaded"
            ),
        }));
    }
    Ok(ptxlab_common::runtime::gpu::device_count()?)
}

/// GPUs the driver reports (honouring `CUDA_VISIBLE_DEVICES`); an error when
/// there is no driver.
pub fn visible_gpus() -> Result<usize> {
    gpu_count(1, "counting GPUs")
}

impl Team {
    /// `n` devices of `backend` (simulated or GPUs): the ranks a launcher
    /// described in the environment ([`RankEnv`]), or else all `n` in this
    /// process.
    pub fn open(n: usize, backend: ptxlab_common::Backend) -> Result<Self> {
        match (backend, RankEnv::from_env()?) {
            (ptxlab_common::Backend::Sim, Some(env)) => Team::sim_from_launcher(&env, Some(n)),
            (ptxlab_common::Backend::Sim, None) => Team::sim(n),
            (_, Some(env)) => Team::from_launcher(&env, Some(n)),
            (_, None) => Team::gpus(n),
        }
    }

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
            let gpus: Vec<_> = members.iter().filter_map(|m| m.dev.as_gpu()).collect();
            share_pools(&gpus)?;
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
    /// to the process; the NCCL unique id comes from `PTXLAB_NCCL_ID_FILE`,
    /// `PTXLAB_NCCL_ID`, or rank 0 over TCP at `MASTER_ADDR`
    /// ([`unique_id`], [`ptxlab_common::distributed`]). `gpus`, when given, must equal the
    /// job's world size.
    pub fn from_launcher(env: &RankEnv, gpus: Option<usize>) -> Result<Self> {
        check_world(env, gpus)?;
        let what = format!("rank {} of {}", env.rank, env.world);
        let count = gpu_count(1, &what)?;
        if count == 0 {
            return Err(Error::Runtime(ptxlab_common::runtime::Error::NoDevice {
                ordinal: 0,
                count,
            }));
        }
        nccl::require_nvls_off()?;
        let lib = nccl::load()?;
        let ordinal = env.local_rank.unwrap_or(env.rank) % count;
        let member = Member::gpu(env.rank, ordinal)?;
        let get = |k: &str| std::env::var(k).ok();
        let by_file_or_var =
            get("PTXLAB_NCCL_ID").is_some() || get("PTXLAB_NCCL_ID_FILE").is_some();
        let (id, id_file, rdv) = match tcp::endpoint(get)? {
            Some((host, port)) if !by_file_or_var => {
                let mut rdv =
                    Rendezvous::join(env.rank, env.world, &host, port, tcp::timeout(get)?)?;
                let mine = if env.rank == 0 {
                    lib.unique_id()?.to_hex()
                } else {
                    String::new()
                };
                let all = rdv.all_gather(mine.as_bytes())?;
                let id = super::bootstrap::id_from_hex(&String::from_utf8_lossy(&all[0]))?;
                (id, None, Some(rdv))
            }
            _ => {
                let (id, file) = unique_id(lib, env.rank, get)?;
                (id, file, None)
            }
        };
        let stream = member
            .streams
            .as_ref()
            .map(|s| s.a.clone())
            .ok_or_else(|| Error::input("device", "not a GPU"))?;
        let mut transport = NcclTransport::init_rank(lib, stream, env.rank, env.world, id)?;
        if let Some(f) = id_file {
            // Every rank has joined (communicator set-up is collective), so
            // the id has been read; a stale file would mislead the next job.
            let _ = std::fs::remove_file(f);
        }
        if let Some(rdv) = rdv {
            transport = transport.with_rendezvous(rdv);
        }
        Ok(Self {
            members: vec![member],
            transport: Box::new(transport),
        })
    }

    /// This process as one rank of a job of simulated devices, one per
    /// process, started by a launcher: the ranks meet at `MASTER_ADDR`
    /// ([`ptxlab_common::distributed`]) and exchange halos through rank 0. What CI runs to
    /// test the decomposition across processes without a GPU.
    pub fn sim_from_launcher(env: &RankEnv, gpus: Option<usize>) -> Result<Self> {
        check_world(env, gpus)?;
        let get = |k: &str| std::env::var(k).ok();
        let Some((host, port)) = tcp::endpoint(get)? else {
            return Err(Error::input(
                "MASTER_ADDR",
                format!(
                    "unset, but this process is rank {} of {} ({}); simulated devices in                      separate processes meet over TCP: set MASTER_ADDR and MASTER_PORT (or unset                      the launcher's variables to simulate every device in this process)",
                    env.rank, env.world, env.source
                ),
            ));
        };
        let rdv = Rendezvous::join(env.rank, env.world, &host, port, tcp::timeout(get)?)?;
        Ok(Self {
            members: vec![Member::sim(env.rank)],
            transport: Box::new(TcpTransport::new(rdv)),
        })
    }

    /// Fails on every rank unless all ranks of the job describe their
    /// problem as `what` ([`Transport::agree`]).
    pub fn agree(&mut self, what: &str) -> Result<()> {
        self.transport.agree(what)
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
}

/// `--gpus N` under a launcher must equal its world size.
fn check_world(env: &RankEnv, gpus: Option<usize>) -> Result<()> {
    match gpus {
        Some(n) if n != env.world => Err(Error::input(
            "--gpus",
            format!(
                "{n}, but the launcher ({}) started {} process(es); one process drives one device, \
                 so --gpus must equal the world size (or unset the launcher's variables to drive \
                 {n} devices from one process)",
                env.source, env.world
            ),
        )),
        _ => Ok(()),
    }
}
