//! What launching a multigrid kernel takes besides [`ptxlab_common::launch!`]:
//! where the launch goes ([`Exec`]), the configuration of each launch
//! shape, the length checks, and the kernels' parameter structs from the
//! host's levels and slabs. The solvers name the kernels themselves:
//! `device.rs` on one device, `multi/mg/mod.rs` on a team of devices.
//!
//! A launch goes either straight to a device (GPU or simulator) or into a
//! CUDA graph being captured ([`Exec::Cap`]): a cycle is recorded once by
//! the same code that runs it directly, and the graph replays it with one
//! driver call.

use super::super::types::Element;
use super::levels::Level;
use kernels_gpu::multigrid as km;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::buffer::{View, ViewMut};
use ptxlab_common::runtime::launch::KernelCall;
use ptxlab_common::runtime::{Buffer, Capture, Device, Kernels, Launch, LaunchConfig};
use ptxlab_device::mem::DeviceCopy;
use std::ops::Range;

/// Where launches go.
pub enum Exec<'a, 'g> {
    /// Straight to the device.
    Dev(&'a Device),
    /// Into a graph under capture on this GPU device.
    Cap(&'a Device, &'a mut Capture<'g>),
    /// Straight to the device, on this stream of it (a slab of a team of
    /// devices, whose halo transfers are queued on the same stream); `None`
    /// (the simulator) launches as [`Exec::Dev`].
    Stream(&'a Device, Option<&'a ptxlab_common::runtime::Stream>),
}

impl Exec<'_, '_> {
    fn dev(&self) -> &Device {
        match self {
            Exec::Dev(d) | Exec::Cap(d, _) | Exec::Stream(d, _) => d,
        }
    }
    /// Blocks that fill the device for a reduction (about 8 per SM; 4 on the
    /// simulator, which runs one OS thread per GPU thread).
    fn reduce_blocks(&self) -> usize {
        self.dev()
            .as_gpu()
            .map_or(4, |g| 8 * g.info().sm_count as usize)
    }
    /// Row kernels ([`km::BLOCK`] x 1 blocks): `cols` threads per row, `rows`
    /// rows (on the simulator 4 at most: the kernels stride over the rest).
    pub fn rows(&self, cols: usize, rows: usize) -> Result<LaunchConfig> {
        let cap = if self.dev().is_sim() { 4 } else { 65535 };
        Ok(LaunchConfig::for_2d(
            cols.max(1),
            rows.clamp(1, cap),
            km::BLOCK,
            1,
        )?)
    }
    /// Row kernels with a block reduction over `cols x rows` cells: about
    /// `Exec::reduce_blocks` blocks, one shared slot per warp.
    pub fn reduce_rows(&self, cols: usize, rows: usize) -> Result<LaunchConfig> {
        let gx = cols.div_ceil(km::BLOCK as usize).max(1);
        let gy = rows.min(self.reduce_blocks().div_ceil(gx)).max(1);
        Ok(
            LaunchConfig::for_2d(gx * km::BLOCK as usize, gy, km::BLOCK, 1)?
                .with_shared(km::reduce_shared_bytes()),
        )
    }
    /// Elementwise reductions over `n` cells.
    pub fn reduce_flat(&self, n: usize) -> Result<LaunchConfig> {
        let threads = n.min(self.reduce_blocks() * km::BLOCK as usize).max(1);
        Ok(LaunchConfig::for_threads(threads, km::BLOCK)?.with_shared(km::reduce_shared_bytes()))
    }
}

impl Launch for &mut Exec<'_, '_> {
    fn launch_call<C: KernelCall>(
        self,
        kernels: &Kernels,
        entry: &'static str,
        cfg: &LaunchConfig,
        call: C,
    ) -> ptxlab_common::runtime::Result<()> {
        match self {
            Exec::Dev(dev) => dev.launch_call(kernels, entry, cfg, call),
            Exec::Cap(_, cap) => (&mut **cap).launch_call(kernels, entry, cfg, call),
            Exec::Stream(dev, s) => dev.on_stream(*s).launch_call(kernels, entry, cfg, call),
        }
    }
}

/// `n` threads in blocks of 32: the kernels of the reduction slots
/// ([`km::mg_clear`], [`km::mg_cg_shift`]).
pub fn slots_cfg(n: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig::for_threads(n.max(1), 32)?)
}

/// Zeroes the reduction slots `acc` ([`km::mg_clear`]; inside a captured
/// graph a host copy cannot).
pub fn clear(ex: &mut Exec, acc: &mut Buffer<f64>) -> Result<()> {
    launch!(ex, slots_cfg(acc.len())?, multigrid::mg_clear(acc))
}

/// The tile smoother ([`km::mg_smooth_tile`]) over level `l` in `mode`:
/// one block per output tile, after checking the sweep count.
pub fn tile_cfg<T>(l: &Level, mode: km::TileMode) -> Result<LaunchConfig> {
    if !(1..=km::MAX_TILE_SWEEPS).contains(&mode.sweeps) {
        return Err(Error::input(
            "smoothing sweeps",
            format!("{}; allowed 1..={}", mode.sweeps, km::MAX_TILE_SWEEPS),
        ));
    }
    let (gx, gy) = (l.nx.div_ceil(km::TILE_OX), l.ny.div_ceil(km::TILE_OY));
    let (tx, ty) = (km::TILE_TX, km::TILE_TY);
    Ok(
        LaunchConfig::for_2d(gx * tx as usize, gy * ty as usize, tx, ty)?
            .with_shared(mode.shared_bytes::<T>()),
    )
}

/// The cycle's precision: f64, or f32 (the mixed-precision solve): the
/// Poisson [`Element`]s for which every multigrid kernel was built (each
/// `km::<kernel>::Built` bound says that one kernel has an instance for
/// `Self`, so the solvers launch `km::<kernel>::<T>`).
pub trait MgElement:
    Element
    + km::mg_smooth_rb::Built
    + km::mg_smooth_tile::Built
    + km::mg_restrict::Built
    + km::mg_prolong::Built
    + km::mg_defect::Built
    + km::mg_residual::Built
    + km::mg_cg_dir::Built
    + km::mg_cg_update::Built
    + km::mg_cg_dot::Built
    + km::mg_coarse_cycle::Built
    + km::mg_restrict_slab::Built
    + km::mg_prolong_slab::Built
    + km::mg_defect_slab::Built
    + km::mg_cg_dir_slab::Built
{
}

impl MgElement for f32 {}
impl MgElement for f64 {}

/// A grid that buffers hold: a level, a slab of one, or a flat array.
pub trait Cells {
    /// Elements a buffer of it holds.
    fn cells(&self) -> usize;
    /// What it is, for messages.
    fn label(&self) -> String;
}

impl Cells for Level {
    fn cells(&self) -> usize {
        self.nx * self.ny
    }
    fn label(&self) -> String {
        format!("a {}x{} level", self.nx, self.ny)
    }
}

impl Cells for usize {
    fn cells(&self) -> usize {
        *self
    }
    fn label(&self) -> String {
        "the field".into()
    }
}

/// Checks that every buffer of `bufs` (its name and length) holds the cells
/// of `grid`.
pub fn holds(grid: &impl Cells, bufs: &[(&str, usize)]) -> Result<()> {
    match bufs.iter().find(|(_, len)| *len != grid.cells()) {
        Some((name, len)) => Err(Error::input(
            *name,
            format!(
                "{len} elements for {} ({} cells)",
                grid.label(),
                grid.cells()
            ),
        )),
        None => Ok(()),
    }
}

/// Checks that `s` has a slot for every PCG scalar ([`km::slot`]).
pub fn check_scalars(s: &Buffer<f64>) -> Result<()> {
    if s.len() < km::slot::COUNT {
        return Err(Error::input(
            "PCG scalars",
            format!("{} slots; {} needed", s.len(), km::slot::COUNT),
        ));
    }
    Ok(())
}

/// The cells of `levels` if the coarse-levels kernel can take them in
/// cycle precision `elem` bytes (shared memory and level count), else `None`.
pub fn coarse_cells(levels: &[Level], elem: usize) -> Option<usize> {
    let cells: usize = levels.iter().map(|l| l.cells()).sum();
    let bytes = (cells * elem).div_ceil(16) * 16 + cells * elem;
    (!levels.is_empty()
        && levels.len() <= km::MAX_COARSE_LEVELS as usize
        && bytes <= km::COARSE_SHARED_MAX)
        .then_some(cells)
}

/// `nx, ny, cx, cy` of each level, for the coarse-levels kernel.
pub fn coarse_geometry(levels: &[Level]) -> Vec<f64> {
    levels
        .iter()
        .flat_map(|l| [l.nx as f64, l.ny as f64, l.cx, l.cy])
        .collect()
}

/// The launch of the coarse-levels kernel ([`km::mg_coarse_cycle`]) over
/// `levels` (top first; `geom` values of their [`coarse_geometry`]), whose
/// top level `f_top` and `u_top` elements hold: one block and its shared
/// memory, after checking that the levels fit.
pub fn coarse_cfg<T>(
    levels: &[Level],
    geom: usize,
    f_top: usize,
    u_top: usize,
) -> Result<LaunchConfig> {
    let cells = coarse_cells(levels, std::mem::size_of::<T>()).ok_or_else(|| {
        Error::input(
            "coarse levels",
            format!(
                "{} levels do not fit one block ({} bytes of shared memory at most)",
                levels.len(),
                km::COARSE_SHARED_MAX
            ),
        )
    })?;
    holds(&levels[0], &[("f_top", f_top), ("u_top", u_top)])?;
    if geom != 4 * levels.len() {
        return Err(Error::input(
            "coarse geometry",
            format!("{geom} values for {} levels", levels.len()),
        ));
    }
    Ok(
        LaunchConfig::for_threads(km::COARSE_BLOCK as usize, km::COARSE_BLOCK)?
            .with_shared(km::coarse_shared_bytes::<T>(cells)),
    )
}

/// Where a row slab of a level lies: the global level (its row count and
/// operator), the global row of the slab's first stored row, and its
/// stored rows (the buffers hold `nx x rows` cells).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlabRows {
    /// The whole level.
    pub level: Level,
    /// Global row of the first stored row.
    pub y0: usize,
    /// Stored rows.
    pub rows: usize,
}

impl Cells for SlabRows {
    fn cells(&self) -> usize {
        self.level.nx * self.rows
    }
    fn label(&self) -> String {
        format!(
            "a slab of rows {}..{} of a {}x{} level",
            self.y0,
            self.y0 + self.rows,
            self.level.nx,
            self.level.ny
        )
    }
}

impl SlabRows {
    /// A whole level as a slab (a replicated level).
    pub fn whole(level: Level) -> Self {
        Self {
            level,
            y0: 0,
            rows: level.ny,
        }
    }
    /// The stored rows, for the kernels.
    pub fn stored(&self) -> km::Rows {
        km::Rows {
            y0: self.y0 as u32,
            rows: self.rows as u32,
        }
    }
    /// The local rows `rows` of the slab (`0` its first stored row) as one
    /// launch covers them: inside the slab and the level, and at least
    /// `min` of them.
    pub fn part(&self, rows: Range<usize>, min: usize, what: &str) -> Result<SlabPart> {
        if rows.start > rows.end || rows.end > self.rows || self.y0 + self.rows > self.level.ny {
            return Err(Error::input(
                what,
                format!("local rows {rows:?} of {}", self.label()),
            ));
        }
        if rows.len() < min {
            return Err(Error::input(
                what,
                format!("{} rows; at least {min}", rows.len()),
            ));
        }
        Ok(SlabPart {
            level: self.level,
            y0: self.y0,
            rows,
        })
    }
}

/// Local rows of a slab that one launch covers ([`SlabRows::part`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SlabPart {
    level: Level,
    y0: usize,
    rows: Range<usize>,
}

impl SlabPart {
    /// Rows covered.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    /// Whether it covers no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// The launch's own grid: the level's columns and operator, its rows.
    pub fn grid(&self) -> Level {
        Level {
            ny: self.rows.len(),
            ..self.level
        }
    }
    /// Its rows of the fine level of spacing `h`, for the fine-level slab
    /// kernels.
    pub fn fine(&self, h: f64) -> km::FineRows {
        km::FineRows {
            fine: self.level.fine(h),
            rows: self.global(),
        }
    }
    /// Whether its first row has an odd global row.
    pub fn odd(&self) -> bool {
        (self.y0 + self.rows.start) % 2 == 1
    }
    /// Its global rows, for the kernels.
    pub fn global(&self) -> km::Rows {
        km::Rows {
            y0: (self.y0 + self.rows.start) as u32,
            rows: self.rows.len() as u32,
        }
    }
    /// Its elements in a buffer of the slab.
    pub fn span(&self) -> Range<usize> {
        self.rows.start * self.level.nx..self.rows.end * self.level.nx
    }
    /// Its rows of `b` (a buffer of the slab).
    pub fn view<'b, T: DeviceCopy>(&self, b: &'b Buffer<T>) -> Result<View<'b, T>> {
        Ok(b.view(self.span())?)
    }
    /// Its rows of `b` (a buffer of the slab), to write.
    pub fn view_mut<'b, T: DeviceCopy>(&self, b: &'b mut Buffer<T>) -> Result<ViewMut<'b, T>> {
        Ok(b.view_mut(self.span())?)
    }
}
