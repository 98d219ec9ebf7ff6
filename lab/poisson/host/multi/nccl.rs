//! The slabs' [`Transport`] over NCCL: [`NcclTransport`] wraps the runtime's
//! communicators ([`ptxlab_common::runtime::nccl::Comms`]): one process driving all
//! GPUs of a host (`ncclCommInitAll`), or one process per GPU
//! (`ncclCommInitRank` with a unique id shared through a file or a
//! variable, see [`super::bootstrap::unique_id`]).
//!
//! The runtime loads NCCL ([`load`]: `PTXLAB_NCCL`, the loader's search, the
//! Python wheels) and refuses to start it with NVLink multicast on
//! ([`require_nvls_off`]); the `ptxlab` binary sets `NCCL_NVLS_ENABLE=0`
//! first thing in `main`. Here a missing library also names the lab's way
//! out (`--backend sim`).

use super::transport::{HaloOp, Rows, Transport};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::Stream;
use ptxlab_common::runtime::nccl::{self as rt, Comms};
pub use ptxlab_common::runtime::nccl::{
    INSTALL_HINT, LIB_NAME, NVLS_ENV, Nccl, UniqueId, candidates, require_nvls_off,
};

/// The runtime's error, with the lab's way out when NCCL is missing.
fn lab(e: ptxlab_common::runtime::Error) -> Error {
    match e {
        ptxlab_common::runtime::Error::Library { name, detail, hint } => Error::File {
            path: name,
            detail: format!(
                "NCCL could not be loaded; several GPUs exchange halos through it: {detail}\n\
                 hint: {hint}. To run the decomposition without NCCL, use --backend sim"
            ),
        },
        e => Error::Runtime(e),
    }
}

/// Loads NCCL once per process (see the runtime's [`rt::load`]).
pub fn load() -> Result<&'static Nccl> {
    rt::load().map_err(lab)
}

/// Tries each candidate (a path, or a bare name for the loader's search) in
/// turn; the error names every attempt, `libnccl.so.2`, and how to get it.
pub fn load_from(candidates: &[String]) -> Result<Nccl> {
    rt::load_from(candidates).map_err(lab)
}

/// Communicators of the GPUs this process drives, each with the stream its
/// transfers are queued on.
#[derive(Debug)]
pub struct NcclTransport {
    comms: Comms,
    /// The TCP rendezvous the ranks met at, when they did (kept to compare
    /// their problems, [`Transport::agree`]).
    rdv: Option<ptxlab_common::distributed::Rendezvous>,
}

impl NcclTransport {
    /// One process driving every GPU of the job: `streams[i]` is the
    /// communication stream of rank `i` (on its GPU), `ncclCommInitAll`.
    pub fn init_all(lib: &'static Nccl, streams: Vec<Stream>) -> Result<Self> {
        Ok(Self {
            comms: Comms::init_all(lib, streams)?,
            rdv: None,
        })
    }

    /// One rank of a job of `world` processes (one GPU each), joined through
    /// the shared unique `id`: `ncclCommInitRank` on the stream's GPU.
    pub fn init_rank(
        lib: &'static Nccl,
        stream: Stream,
        rank: usize,
        world: usize,
        id: UniqueId,
    ) -> Result<Self> {
        Ok(Self {
            comms: Comms::init_rank(lib, stream, rank, world, id)?,
            rdv: None,
        })
    }

    /// Keeps the TCP rendezvous the ranks met at, so that they can compare
    /// their problems.
    pub fn with_rendezvous(mut self, rdv: ptxlab_common::distributed::Rendezvous) -> Self {
        self.rdv = Some(rdv);
        self
    }
}

impl Transport for NcclTransport {
    fn world_size(&self) -> usize {
        self.comms.world_size()
    }
    fn local_ranks(&self) -> &[usize] {
        self.comms.local_ranks()
    }
    fn exchange(&mut self, ops: &[HaloOp<'_>]) -> Result<()> {
        Ok(self.comms.exchange(ops)?)
    }
    fn all_reduce_sum(&mut self, accs: &[Rows<'_>]) -> Result<()> {
        if let Some(a) = accs
            .iter()
            .find(|a| a.count() != 1 || a.dtype() != super::transport::Dtype::F64)
        {
            return Err(Error::input(
                "all-reduce",
                format!(
                    "{} {:?} values; one f64 per rank is summed",
                    a.count(),
                    a.dtype()
                ),
            ));
        }
        Ok(self.comms.all_reduce_sum(accs)?)
    }
    fn agree(&mut self, what: &str) -> Result<()> {
        match &mut self.rdv {
            Some(rdv) => rdv.agree(what),
            None => Ok(()),
        }
    }
    fn describe(&self) -> String {
        self.comms.describe()
    }
}
