//! The slabs' [`Transport`] between simulated devices in separate
//! processes: every collective goes through the job's TCP [`Rendezvous`]
//! at `MASTER_ADDR` ([`ptxlab_common::distributed`]). A halo exchange is one
//! all-gather of every rank's sends, from which each rank takes what is
//! addressed to it; a sum over ranks is one all-gather of the ranks' values,
//! added in rank order (the order of the in-process transport, so the
//! results are the same bits). What CI runs to test the decomposition across
//! processes without a GPU.

use super::transport::{Backing, Dtype, HaloOp, Rows, Transport, sim_only};
use ptxlab_common::distributed::Rendezvous;
use ptxlab_common::error::{Error, Result};

/// The transport of a job of simulated devices, one per process, over a
/// [`Rendezvous`] (see the module doc).
#[derive(Debug)]
pub struct TcpTransport {
    rdv: Rendezvous,
    ranks: [usize; 1],
}

impl TcpTransport {
    /// This process's rank of the job, over `rdv`.
    pub fn new(rdv: Rendezvous) -> Self {
        let ranks = [rdv.rank()];
        Self { rdv, ranks }
    }
}

fn dtype_code(d: Dtype) -> u8 {
    match d {
        Dtype::F32 => 0,
        Dtype::F64 => 1,
    }
}

impl Transport for TcpTransport {
    fn world_size(&self) -> usize {
        self.rdv.world()
    }
    fn local_ranks(&self) -> &[usize] {
        &self.ranks
    }
    fn exchange(&mut self, ops: &[HaloOp<'_>]) -> Result<()> {
        let (me, world) = (self.rdv.rank(), self.rdv.world());
        // Sends: (peer, dtype, count, bytes), packed into one message.
        let mut out = Vec::new();
        let mut recvs = Vec::new();
        for op in ops {
            let (local, peer, rows, send) = match *op {
                HaloOp::Send { local, peer, rows } => (local, peer, rows, true),
                HaloOp::Recv { local, peer, rows } => (local, peer, rows, false),
            };
            if local != 0 || peer >= world || peer == me {
                return Err(Error::input(
                    "halo transfer",
                    format!(
                        "local slab {local} with peer {peer}: this process is rank {me} of {world} \
                         and drives one slab"
                    ),
                ));
            }
            sim_only(&rows)?;
            if send {
                out.extend_from_slice(&(peer as u64).to_le_bytes());
                out.push(dtype_code(rows.dtype()));
                out.extend_from_slice(&(rows.count() as u64).to_le_bytes());
                // SAFETY: `rows` was made by `Rows::of` from a live simulator
                // buffer (host memory) borrowed for the lifetime of `ops` and
                // bounds-checked then; simulated launches are synchronous, so
                // nothing writes the cells while they are read, and no Rust
                // reference to them exists (the runtime reaches them through
                // raw pointers only).
                let bytes =
                    unsafe { std::slice::from_raw_parts(rows.addr() as *const u8, rows.bytes()) };
                out.extend_from_slice(bytes);
            } else {
                recvs.push((peer, rows));
            }
        }
        let all = self.rdv.all_gather(&out)?;
        for (src, to) in recvs {
            let mut found = Vec::new();
            let msg = &all[src];
            let mut at = 0usize;
            while at < msg.len() {
                let word = |i: usize| {
                    msg.get(i..i + 8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
                };
                let (Some(peer), Some(&code), Some(count)) =
                    (word(at), msg.get(at + 8), word(at + 9))
                else {
                    return Err(Error::input(
                        "halo exchange",
                        format!("a malformed batch from rank {src}"),
                    ));
                };
                let width = if code == 0 { 4 } else { 8 };
                let body = at + 17;
                let end = body.saturating_add(count.saturating_mul(width));
                if end > msg.len() {
                    return Err(Error::input(
                        "halo exchange",
                        format!("a short batch from rank {src}"),
                    ));
                }
                if peer == me {
                    found.push((code, count, &msg[body..end]));
                }
                at = end;
            }
            let [(code, count, bytes)] = found[..] else {
                return Err(Error::input(
                    "halo exchange",
                    format!(
                        "rank {me} receives from rank {src}, which sends it {} messages in this batch",
                        found.len()
                    ),
                ));
            };
            if count != to.count() || code != dtype_code(to.dtype()) {
                return Err(Error::input(
                    "halo exchange",
                    format!(
                        "rank {src} sends {count} values of {} bytes to rank {me}, which expects {} {:?}",
                        if code == 0 { 4 } else { 8 },
                        to.count(),
                        to.dtype()
                    ),
                ));
            }
            debug_assert_eq!(to.backing(), Backing::Sim);
            // SAFETY: `to` is a run of a live simulator buffer (checked by
            // `sim_only` above, bounds-checked by `Rows::of`), `bytes` has
            // exactly `to.bytes()` bytes (count and width checked above) and
            // lives in this function's own message, so they cannot overlap;
            // no launch runs and no reference to the cells exists (see above).
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), to.addr() as *mut u8, to.bytes());
            }
        }
        Ok(())
    }
    fn all_reduce_sum(&mut self, accs: &[Rows<'_>]) -> Result<()> {
        let [a] = accs else {
            return Err(Error::input(
                "all-reduce",
                format!("{} values; this process drives one slab", accs.len()),
            ));
        };
        sim_only(a)?;
        if a.count() != 1 || a.dtype() != Dtype::F64 {
            return Err(Error::input("all-reduce", "one f64 per rank is summed"));
        }
        // SAFETY: `a` is one f64 of a live simulator buffer (checked when it
        // was made, and its type above); no launch runs and no reference to
        // it exists. The buffer's elements are aligned.
        let mine = unsafe { (a.addr() as *const f64).read() };
        let all = self.rdv.all_gather(&mine.to_le_bytes())?;
        // Rank order from zero, as the in-process transport adds.
        let mut total = 0.0f64;
        for (r, v) in all.iter().enumerate() {
            let v: [u8; 8] = v.as_slice().try_into().map_err(|_| {
                Error::input(
                    "all-reduce",
                    format!("rank {r} sent {} bytes for one f64", v.len()),
                )
            })?;
            total += f64::from_le_bytes(v);
        }
        // SAFETY: as above, for a write.
        unsafe { (a.addr() as *mut f64).write(total) };
        Ok(())
    }
    fn agree(&mut self, what: &str) -> Result<()> {
        self.rdv.agree(what)
    }
    fn describe(&self) -> String {
        format!(
            "TCP through rank 0 at {}, one simulated device per process, {} ranks",
            self.rdv.at(),
            self.rdv.world()
        )
    }
}
