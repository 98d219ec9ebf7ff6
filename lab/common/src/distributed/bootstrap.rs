//! The bootstrap of a job of one process per GPU: rank, world size and
//! local rank from what a launcher sets ([`RankEnv`]: ptxlab's own
//! variables, torchrun, Open MPI, MPICH/PMI, Slurm), and the NCCL unique id
//! passed from rank 0 to the others through a file or a variable
//! ([`unique_id`]).

use crate::error::{Error, Result};
use crate::runtime::nccl::{Nccl, UniqueId};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Rank, world size and local rank of this process, from a launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankEnv {
    /// This process's rank.
    pub rank: usize,
    /// Processes in the job.
    pub world: usize,
    /// Rank among the processes of this host (picks the GPU), when known.
    pub local_rank: Option<usize>,
    /// Which variables they came from (`"PTXLAB_RANK/PTXLAB_WORLD_SIZE"`).
    pub source: String,
}

/// `(rank, world size, local rank)` variable names, in the order they are tried.
pub const RANK_VARS: [(&str, &str, &str); 5] = [
    ("PTXLAB_RANK", "PTXLAB_WORLD_SIZE", "PTXLAB_LOCAL_RANK"),
    ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
    (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
    ),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
];

impl RankEnv {
    /// Reads the first set of [`RANK_VARS`] whose world-size variable is set,
    /// through `get` (e.g. `|k| std::env::var(k).ok()`). `None` when no
    /// launcher variable is set; an error when they are malformed.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>> {
        for (r, w, l) in RANK_VARS {
            let Some(ws) = get(w) else { continue };
            let num = |name: &str, v: &str| -> Result<usize> {
                v.trim().parse::<usize>().map_err(|_| {
                    Error::input(
                        name,
                        format!("`{v}` is not a non-negative integer (set by the launcher)"),
                    )
                })
            };
            let world = num(w, &ws)?;
            let rank_s = get(r).ok_or_else(|| {
                Error::input(
                    r,
                    format!("unset, but {w}={ws} is set; set both (or neither)"),
                )
            })?;
            let rank = num(r, &rank_s)?;
            if world == 0 || rank >= world {
                return Err(Error::input(
                    r,
                    format!("rank {rank} with {w}={world}: the rank must be below the world size"),
                ));
            }
            let local_rank = match get(l) {
                Some(v) => Some(num(l, &v)?),
                None => None,
            };
            return Ok(Some(Self {
                rank,
                world,
                local_rank,
                source: format!("{r}/{w}"),
            }));
        }
        Ok(None)
    }

    /// [`RankEnv::from_lookup`] on this process's environment.
    pub fn from_env() -> Result<Option<Self>> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }
}

/// An id as 256 hex digits.
pub fn id_to_hex(id: &UniqueId) -> String {
    id.to_hex()
}

/// Parses 256 hex digits (surrounding white space allowed).
pub fn id_from_hex(s: &str) -> Result<UniqueId> {
    Ok(UniqueId::from_hex(s)?)
}

/// Writes `id` to `path` so that readers never see a partial file (a
/// temporary file in the same folder, then a rename).
pub fn write_id_file(path: &Path, id: &UniqueId) -> Result<()> {
    let tmp = PathBuf::from(format!("{}.tmp.{}", path.display(), std::process::id()));
    let err = |e: std::io::Error| Error::File {
        path: path.display().to_string(),
        detail: format!("could not write the NCCL unique id: {e}"),
    };
    std::fs::write(&tmp, id_to_hex(id) + "\n").map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Waits up to `timeout` for `path` to hold an id (rank 0 writes it).
pub fn read_id_file(path: &Path, timeout: Duration) -> Result<UniqueId> {
    let t0 = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            return id_from_hex(&s).map_err(|e| Error::File {
                path: path.display().to_string(),
                detail: format!("{e}; delete the file and start the job again"),
            });
        }
        if t0.elapsed() >= timeout {
            return Err(Error::File {
                path: path.display().to_string(),
                detail: format!(
                    "no NCCL unique id after {:.0} s; rank 0 writes it when it starts: check that \
                     rank 0 runs, that every rank sees the same path (a shared file system across \
                     hosts), or raise PTXLAB_NCCL_ID_TIMEOUT (seconds)",
                    timeout.as_secs_f64()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Where a rank gets the job's unique id: `PTXLAB_NCCL_ID` (256 hex digits,
/// the same on every rank), or `PTXLAB_NCCL_ID_FILE` (rank 0 makes the id and
/// writes it there; the others wait for it, `PTXLAB_NCCL_ID_TIMEOUT` seconds,
/// default 120). Returns the id and, on rank 0, the file to remove once the
/// communicator is up.
pub fn unique_id(
    lib: &Nccl,
    rank: usize,
    get: impl Fn(&str) -> Option<String>,
) -> Result<(UniqueId, Option<PathBuf>)> {
    if let Some(hex) = get("PTXLAB_NCCL_ID") {
        return Ok((id_from_hex(&hex)?, None));
    }
    let Some(file) = get("PTXLAB_NCCL_ID_FILE") else {
        return Err(Error::input(
            "NCCL unique id",
            "one process per GPU needs the job's id: set PTXLAB_NCCL_ID_FILE=<path every rank \
             can read> (rank 0 writes it), or PTXLAB_NCCL_ID=<256 hex digits> on every rank",
        ));
    };
    let path = PathBuf::from(file);
    if rank == 0 {
        let id = lib.unique_id()?;
        write_id_file(&path, &id)?;
        Ok((id, Some(path)))
    } else {
        let secs = match get("PTXLAB_NCCL_ID_TIMEOUT") {
            Some(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|t| *t > 0.0)
                .ok_or_else(|| {
                    Error::input(
                        "PTXLAB_NCCL_ID_TIMEOUT",
                        format!("`{s}`; a positive number of seconds"),
                    )
                })?,
            None => 120.0,
        };
        Ok((read_id_file(&path, Duration::from_secs_f64(secs))?, None))
    }
}
