//! The row-slab decomposition: which interior rows each rank owns.

use super::super::types::Grid;
use ptxlab_common::error::{Error, Result};
use std::ops::Range;

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
