//! The whole field on rank 0: every rank's owned rows, gathered over the
//! team's transport. Jacobi's [`super::Placed`] and multigrid's
//! [`super::PlacedMg`] both store a rank's rows as a slab of whole rows
//! (halo rows included) and gather through [`Team::gather_field`].

use super::team::Team;
use super::transport::{Dtype, HaloOp, Rows};
use ptxlab_common::error::Result;
use ptxlab_common::runtime::Buffer;
use ptxlab_common::runtime::Element;
use std::ops::Range;

/// One rank's part of a field that [`Team::gather_field`] collects: the
/// global rows `rows` of a grid, held in `buf`, a slab whose first row is
/// global row `y0`.
#[derive(Debug)]
pub struct Share<'a, E> {
    /// Index of the rank's member in this process's team.
    pub local: usize,
    /// Global rank.
    pub rank: usize,
    /// The rank's slab of whole rows.
    pub buf: &'a Buffer<E>,
    /// Global row of the slab's first row.
    pub y0: usize,
    /// The global rows this rank reports (its owned rows, and the boundary
    /// row at either end of the grid for the first and last rank).
    pub rows: Range<usize>,
}

/// The transport's name for an element type of 4 or 8 bytes.
pub(super) fn dtype_of<E>() -> Dtype {
    if std::mem::size_of::<E>() == 4 {
        Dtype::F32
    } else {
        Dtype::F64
    }
}

impl Team {
    /// Waits for all queued work of this process's devices.
    pub fn synchronize(&self) -> Result<()> {
        for m in &self.members {
            m.synchronize()?;
        }
        Ok(())
    }

    /// The rows of an `nx`-wide field with `ny` rows that `shares` (this
    /// process's ranks) report, in a grid-sized vector that holds `fill`
    /// elsewhere, and which rows they are.
    pub fn local_field<E: Element + Copy>(
        &self,
        (nx, ny): (usize, usize),
        shares: &[Share<'_, E>],
        fill: E,
    ) -> Result<(Vec<E>, Vec<bool>)> {
        self.synchronize()?;
        let mut full = vec![fill; nx * ny];
        let mut mine = vec![false; ny];
        for s in shares {
            let local = self.members[s.local].dev.download(s.buf)?;
            for y in s.rows.clone() {
                let l = y - s.y0;
                full[y * nx..(y + 1) * nx].copy_from_slice(&local[l * nx..(l + 1) * nx]);
                mine[y] = true;
            }
        }
        Ok((full, mine))
    }

    /// The whole field, as [`Team::local_field`] and, with one process per
    /// GPU, the other ranks' rows (`rows_of(rank)` for every rank this
    /// process does not hold): they send them to rank 0 over the transport
    /// in one batch, into a grid-sized buffer on rank 0's device. `Some` on
    /// the process that holds rank 0 (or every rank), `None` on the others.
    pub fn gather_field<E: Element + Copy>(
        &mut self,
        (nx, ny): (usize, usize),
        shares: &[Share<'_, E>],
        rows_of: impl Fn(usize) -> Range<usize>,
        fill: E,
    ) -> Result<Option<Vec<E>>> {
        let (mut full, mine) = self.local_field((nx, ny), shares, fill)?;
        let world = self.transport.world_size();
        if shares.len() == world {
            return Ok(Some(full));
        }
        let lead = shares.iter().find(|s| s.rank == 0).map(|s| s.local);
        let whole = match lead {
            Some(i) => {
                let dev = &self.members[i].dev;
                let w = dev.alloc_filled(nx * ny, fill)?;
                // The fill is queued on the device's stream; the transport
                // receives on the member's own stream.
                dev.synchronize()?;
                Some(w)
            }
            None => None,
        };
        let dtype = dtype_of::<E>();
        let mut ops = Vec::new();
        match (&whole, lead) {
            (Some(w), Some(local)) => {
                for q in (1..world).filter(|&q| !shares.iter().any(|s| s.rank == q)) {
                    let rows = rows_of(q);
                    ops.push(HaloOp::Recv {
                        local,
                        peer: q,
                        rows: Rows::of(w, rows.start * nx, rows.len() * nx, dtype)?,
                    });
                }
            }
            _ => {
                for s in shares {
                    ops.push(HaloOp::Send {
                        local: s.local,
                        peer: 0,
                        rows: Rows::of(
                            s.buf,
                            (s.rows.start - s.y0) * nx,
                            s.rows.len() * nx,
                            dtype,
                        )?,
                    });
                }
            }
        }
        self.transport.exchange(&ops)?;
        self.synchronize()?;
        let (Some(i), Some(w)) = (lead, whole) else {
            return Ok(None);
        };
        let got = self.members[i].dev.download(&w)?;
        for y in (0..ny).filter(|&y| !mine[y]) {
            full[y * nx..(y + 1) * nx].copy_from_slice(&got[y * nx..(y + 1) * nx]);
        }
        Ok(Some(full))
    }
}
