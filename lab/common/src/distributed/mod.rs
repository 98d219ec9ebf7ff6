//! Jobs of several processes, one per device, started by a launcher
//! (torchrun, Slurm's srun, mpirun, or a shell loop): who this process is
//! ([`RankEnv`], from the launcher's variables), the NCCL unique id passed
//! through a file or a variable ([`bootstrap`]), and the TCP
//! [`Rendezvous`] at `MASTER_ADDR` through which the ranks meet, compare
//! their problems and gather small results ([`rendezvous`]).
//!
//! The multi-GPU Poisson solvers (`workloads/poisson/multi`) and the batched
//! Lomb-Scargle periodograms (`workloads/lomb/cli_batch.rs`) run in it.

pub mod bootstrap;
pub mod rendezvous;

pub use bootstrap::RankEnv;
pub use rendezvous::Rendezvous;

use crate::error::{Error, Result};

/// This process's rank and the job's rendezvous, when a launcher started it
/// (`None` otherwise); an error when the launcher's variables are set but
/// `MASTER_ADDR` is not, naming `what` the job needs it for.
pub fn join_from_env(what: &str) -> Result<Option<(RankEnv, Rendezvous)>> {
    let Some(env) = RankEnv::from_env()? else {
        return Ok(None);
    };
    let get = |k: &str| std::env::var(k).ok();
    let Some((host, port)) = rendezvous::endpoint(get)? else {
        return Err(Error::input(
            "MASTER_ADDR",
            format!(
                "unset, but this process is rank {} of {} ({}); {what} meet over TCP: set \
                 MASTER_ADDR and MASTER_PORT (or unset the launcher's variables to run in one \
                 process)",
                env.rank, env.world, env.source
            ),
        ));
    };
    let rdv = Rendezvous::join(env.rank, env.world, &host, port, rendezvous::timeout(get)?)?;
    Ok(Some((env, rdv)))
}

/// FNV-1a over the little-endian bytes of `words`: the checksum of inputs
/// that the ranks compare ([`Rendezvous::agree`]); any different input
/// differs.
pub fn checksum(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for byte in w.to_le_bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
