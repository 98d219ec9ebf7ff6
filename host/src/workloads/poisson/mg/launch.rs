//! Typed launchers of the multigrid kernels: the only place they are named.
//!
//! A launch goes either straight to a device (GPU or simulator, through
//! [`crate::launch!`]) or into a CUDA graph being captured ([`Exec::Cap`]):
//! a cycle is recorded once by the same code that runs it directly, and the
//! graph replays it with one driver call.

use super::super::types::Element;
use super::levels::Level;
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::launch::KernelCall;
use crate::runtime::{Buffer, Capture, Device, Kernels, Launch, LaunchConfig};
use kernels_gpu::multigrid as km;

/// Where launches go.
pub enum Exec<'a, 'g> {
    /// Straight to the device.
    Dev(&'a Device),
    /// Into a graph under capture on this GPU device.
    Cap(&'a Device, &'a mut Capture<'g>),
    /// Straight to the device, on this stream of it (a slab of a team of
    /// devices, whose halo transfers are queued on the same stream); `None`
    /// (the simulator) launches as [`Exec::Dev`].
    Stream(&'a Device, Option<&'a crate::runtime::Stream>),
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
    /// Most rows a row kernel's grid covers (the kernels stride over the rest).
    fn row_cap(&self) -> usize {
        if self.dev().is_sim() { 4 } else { 65535 }
    }
}

impl Launch for &mut Exec<'_, '_> {
    fn launch_call<C: KernelCall>(
        self,
        kernels: &Kernels,
        entry: &'static str,
        cfg: &LaunchConfig,
        call: C,
    ) -> crate::runtime::Result<()> {
        match self {
            Exec::Dev(dev) => dev.launch_call(kernels, entry, cfg, call),
            Exec::Cap(_, cap) => (&mut **cap).launch_call(kernels, entry, cfg, call),
            Exec::Stream(dev, s) => dev.on_stream(*s).launch_call(kernels, entry, cfg, call),
        }
    }
}

/// Row kernels: `cols` threads per row, `rows` rows (strided past the cap).
pub(crate) fn rows_cfg(ex: &Exec, cols: usize, rows: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig::for_2d(
        cols.max(1),
        rows.clamp(1, ex.row_cap()),
        km::BLOCK,
        1,
    )?)
}

/// Row kernels with a block reduction: about [`Exec::reduce_blocks`] blocks.
pub(crate) fn reduce_rows_cfg(ex: &Exec, cols: usize, rows: usize) -> Result<LaunchConfig> {
    let gx = cols.div_ceil(km::BLOCK as usize).max(1);
    let gy = rows.min(ex.reduce_blocks().div_ceil(gx)).max(1);
    Ok(
        LaunchConfig::for_2d(gx * km::BLOCK as usize, gy, km::BLOCK, 1)?
            .with_shared(km::reduce_shared_bytes()),
    )
}

/// Elementwise reductions over `n` cells.
fn reduce_flat_cfg(ex: &Exec, n: usize) -> Result<LaunchConfig> {
    let threads = n.min(ex.reduce_blocks() * km::BLOCK as usize).max(1);
    Ok(LaunchConfig::for_threads(threads, km::BLOCK)?.with_shared(km::reduce_shared_bytes()))
}

fn dims(l: &Level) -> (u32, u32) {
    (l.nx as u32, l.ny as u32)
}

fn check_level<T>(what: &str, b: &Buffer<T>, l: &Level) -> Result<()> {
    if b.len() != l.cells() {
        return Err(Error::input(
            what,
            format!(
                "{} elements for a {}x{} level ({} cells)",
                b.len(),
                l.nx,
                l.ny,
                l.cells()
            ),
        ));
    }
    Ok(())
}

/// Zeroes `acc` ([`km::mg_clear`]).
pub fn clear(ex: &mut Exec, acc: &mut Buffer<f64>) -> Result<()> {
    let cfg = LaunchConfig::for_threads(acc.len().max(1), 32)?;
    launch!(&mut *ex, cfg, multigrid::mg_clear(acc))
}

/// The start of a PCG iteration ([`km::mg_cg_shift`]).
pub fn cg_shift(ex: &mut Exec, s: &mut Buffer<f64>) -> Result<()> {
    if s.len() < km::slot::COUNT {
        return Err(Error::input(
            "PCG scalars",
            format!("{} slots; {} needed", s.len(), km::slot::COUNT),
        ));
    }
    let cfg = LaunchConfig::for_threads(1, 32)?;
    launch!(&mut *ex, cfg, multigrid::mg_cg_shift(s))
}

/// The cycle's precision: f64, or f32 (the mixed-precision solve): the
/// Poisson [`Element`]s for which every multigrid kernel was built (each
/// `km::<kernel>::Built` bound says that one kernel has an instance for
/// `Self`, so the launchers below launch `km::<kernel>::<T>`).
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

/// The V-cycle of the coarse levels `levels` (top first) in one block
/// ([`km::mg_coarse_cycle`]); `geom` holds their `nx, ny, cx, cy`.
pub fn coarse_cycle<T: MgElement>(
    ex: &mut Exec,
    levels: &[Level],
    geom: &Buffer<f64>,
    f_top: &Buffer<T>,
    u_top: &mut Buffer<T>,
    pre: u32,
    post: u32,
    post_black_first: bool,
    omega: f64,
) -> Result<()> {
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
    check_level("f_top", f_top, &levels[0])?;
    check_level("u_top", u_top, &levels[0])?;
    if geom.len() != 4 * levels.len() {
        return Err(Error::input(
            "coarse geometry",
            format!("{} values for {} levels", geom.len(), levels.len()),
        ));
    }
    let cfg = LaunchConfig::for_threads(km::COARSE_BLOCK as usize, km::COARSE_BLOCK)?
        .with_shared(km::coarse_shared_bytes::<T>(cells));
    let n = levels.len() as u32;
    let (first, omega) = (u32::from(post_black_first), T::from_f64(omega));
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_coarse_cycle::<T>(f_top, u_top, geom, n, pre, post, first, omega)
    )
}

/// The fine level of `nx x ny` cells of spacing `h`, as its kernels take it.
fn fine(nx: u32, ny: u32, h: f64) -> km::Fine {
    km::Fine {
        nx,
        ny,
        inv_h2: 1.0 / (h * h),
    }
}

/// The colour `(x + y) & 1 == c & 1` of a red-black sweep.
fn rb_colour(c: u32) -> km::Colour {
    if c & 1 == 0 {
        km::Colour::Red
    } else {
        km::Colour::Black
    }
}

/// One colour of a red-black sweep, in place ([`km::mg_smooth_rb`]).
pub fn smooth_rb<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    u: &mut Buffer<T>,
    f: &Buffer<T>,
    colour: u32,
    zero: bool,
    omega: f64,
) -> Result<()> {
    check_level("u", u, l)?;
    check_level("f", f, l)?;
    let cfg = rows_cfg(ex, (l.nx - 1) / 2, l.ny - 2)?;
    let (nx, ny) = dims(l);
    let (cx, cy, omega) = (T::from_f64(l.cx), T::from_f64(l.cy), T::from_f64(omega));
    let colour = rb_colour(colour);
    let s = km::RbSweep {
        nx,
        ny,
        cx,
        cy,
        omega,
        colour,
        zero,
    };
    launch!(&mut *ex, cfg, multigrid::mg_smooth_rb::<T>(u, f, s))
}

/// What one call of the tile smoother does besides its sweeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TileSweeps {
    /// Sweeps (1..=[`km::MAX_TILE_SWEEPS`]).
    pub sweeps: u32,
    /// Black first.
    pub black_first: bool,
    /// From a zero correction.
    pub zero: bool,
    /// Over-relaxation.
    pub omega: f64,
    /// The level holds a field: load and keep its boundary ring.
    pub dirichlet: bool,
    /// Add the output tiles' `sum r^2` to `acc[0]`.
    pub residual: bool,
}

/// Sweeps through shared memory ([`km::mg_smooth_tile`]); `coarse`: the
/// level below and its correction, added first; `acc`: the residual's sum
/// (read only with `how.residual`).
#[allow(clippy::too_many_arguments)]
pub fn smooth_tile<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    u_in: &Buffer<T>,
    f: &Buffer<T>,
    coarse: Option<(&Level, &Buffer<T>)>,
    u_out: &mut Buffer<T>,
    acc: &mut Buffer<f64>,
    how: TileSweeps,
) -> Result<()> {
    let TileSweeps {
        sweeps,
        black_first,
        zero,
        omega,
        dirichlet,
        residual,
    } = how;
    check_level("u_in", u_in, l)?;
    check_level("f", f, l)?;
    check_level("u_out", u_out, l)?;
    if sweeps == 0 || sweeps > km::MAX_TILE_SWEEPS {
        return Err(Error::input(
            "smoothing sweeps",
            format!("{sweeps}; allowed 1..={}", km::MAX_TILE_SWEEPS),
        ));
    }
    let mut mode =
        (sweeps << km::MODE_SWEEPS_SHIFT) | if black_first { km::MODE_BLACK_FIRST } else { 0 };
    if zero {
        mode |= km::MODE_ZERO;
    }
    if dirichlet {
        mode |= km::MODE_DIRICHLET;
    }
    if residual {
        mode |= km::MODE_RESIDUAL;
    }
    let (uc, ncx, ncy) = match coarse {
        Some((c, uc)) => {
            check_level("uc", uc, c)?;
            mode |= km::MODE_PROLONG;
            (uc, c.nx as u32, c.ny as u32)
        }
        // Not read without MODE_PROLONG.
        None => (f, 0, 0),
    };
    let (gx, gy) = (l.nx.div_ceil(km::TILE_OX), l.ny.div_ceil(km::TILE_OY));
    let (tx, ty) = (km::TILE_TX, km::TILE_TY);
    let cfg = LaunchConfig::for_2d(gx * tx as usize, gy * ty as usize, tx, ty)?
        .with_shared(km::tile_shared_bytes::<T>(mode));
    let (nx, ny) = dims(l);
    let (cx, cy, omega) = (T::from_f64(l.cx), T::from_f64(l.cy), T::from_f64(omega));
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_smooth_tile::<T>(
            u_in, f, uc, u_out, acc, nx, ny, ncx, ncy, cx, cy, omega, mode
        )
    )
}

/// Residual and restriction ([`km::mg_restrict`]).
#[allow(clippy::too_many_arguments)]
pub fn restrict<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    c: &Level,
    u: &Buffer<T>,
    f: &Buffer<T>,
    fc: &mut Buffer<T>,
    uc: &mut Buffer<T>,
    with_u: bool,
) -> Result<()> {
    check_level("u", u, l)?;
    check_level("f", f, l)?;
    check_level("fc", fc, c)?;
    check_level("uc", uc, c)?;
    let cfg = rows_cfg(ex, c.nx, c.ny)?;
    let ((nx, ny), (ncx, ncy)) = (dims(l), dims(c));
    let (cx, cy) = (T::from_f64(l.cx), T::from_f64(l.cy));
    let with_u = u32::from(with_u);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_restrict::<T>(u, f, fc, uc, nx, ny, ncx, ncy, cx, cy, with_u)
    )
}

/// `u (+)= P uc` ([`km::mg_prolong`]).
pub fn prolong<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    c: &Level,
    uc: &Buffer<T>,
    u: &mut Buffer<T>,
    add: bool,
) -> Result<()> {
    check_level("u", u, l)?;
    check_level("uc", uc, c)?;
    let cfg = rows_cfg(ex, l.nx - 2, l.ny - 2)?;
    let ((nx, ny), (ncx, ncy)) = (dims(l), dims(c));
    let add = u32::from(add);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_prolong::<T>(uc, u, nx, ny, ncx, ncy, add)
    )
}

/// The outer step ([`km::mg_defect`]).
#[allow(clippy::too_many_arguments)]
pub fn defect<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    h: f64,
    p_in: &Buffer<f64>,
    e: &Buffer<T>,
    b: &Buffer<f64>,
    p_out: &mut Buffer<f64>,
    r: &mut Buffer<T>,
    acc: &mut Buffer<f64>,
    e_scale: f64,
    r_scale: f64,
) -> Result<()> {
    check_level("p_in", p_in, l)?;
    check_level("e", e, l)?;
    check_level("b", b, l)?;
    check_level("p_out", p_out, l)?;
    check_level("r", r, l)?;
    let cfg = reduce_rows_cfg(ex, l.nx, l.ny)?;
    let (nx, ny) = dims(l);
    let step = km::DefectStep {
        fine: fine(nx, ny, h),
        e_scale,
        r_scale,
    };
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_defect::<T>(p_in, e, b, p_out, r, acc, step)
    )
}

/// The fine residual ([`km::mg_residual`]).
#[allow(clippy::too_many_arguments)]
pub fn residual<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    h: f64,
    p: &Buffer<f64>,
    b: &Buffer<f64>,
    rho: &mut Buffer<f64>,
    r: &mut Buffer<T>,
    acc: &mut Buffer<f64>,
    r_scale: f64,
) -> Result<()> {
    check_level("p", p, l)?;
    check_level("b", b, l)?;
    check_level("rho", rho, l)?;
    check_level("r", r, l)?;
    let cfg = reduce_rows_cfg(ex, l.nx, l.ny)?;
    let (nx, ny) = dims(l);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_residual::<T>(p, b, rho, r, acc, fine(nx, ny, h), r_scale)
    )
}

/// PCG direction ([`km::mg_cg_dir`]).
#[allow(clippy::too_many_arguments)]
pub fn cg_dir<T: MgElement>(
    ex: &mut Exec,
    l: &Level,
    h: f64,
    z: &Buffer<T>,
    d_in: &Buffer<f64>,
    d_out: &mut Buffer<f64>,
    q: &mut Buffer<f64>,
    s: &mut Buffer<f64>,
    z_scale: f64,
) -> Result<()> {
    check_level("z", z, l)?;
    check_level("d_in", d_in, l)?;
    check_level("d_out", d_out, l)?;
    check_level("q", q, l)?;
    let cfg = reduce_rows_cfg(ex, l.nx, l.ny)?;
    let (nx, ny) = dims(l);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_cg_dir::<T>(z, d_in, d_out, q, s, fine(nx, ny, h), z_scale)
    )
}

/// PCG update ([`km::mg_cg_update`]).
#[allow(clippy::too_many_arguments)]
pub fn cg_update<T: MgElement>(
    ex: &mut Exec,
    p: &mut Buffer<f64>,
    rho: &mut Buffer<f64>,
    r: &mut Buffer<T>,
    d: &Buffer<f64>,
    q: &Buffer<f64>,
    s: &mut Buffer<f64>,
    r_scale: f64,
) -> Result<()> {
    let n = p.len();
    if [rho.len(), r.len(), d.len(), q.len()]
        .iter()
        .any(|&m| m != n)
    {
        return Err(Error::input(
            "PCG update",
            "the field, residual and direction lengths differ",
        ));
    }
    let cfg = reduce_flat_cfg(ex, n)?;
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_cg_update::<T>(p, rho, r, d, q, s, r_scale)
    )
}

/// PCG dot product ([`km::mg_cg_dot`]).
pub fn cg_dot<T: MgElement>(
    ex: &mut Exec,
    rho: &Buffer<f64>,
    z: &Buffer<T>,
    s: &mut Buffer<f64>,
    z_scale: f64,
) -> Result<()> {
    if rho.len() != z.len() {
        return Err(Error::input("PCG dot", "the residual and z lengths differ"));
    }
    let cfg = reduce_flat_cfg(ex, rho.len())?;
    launch!(&mut *ex, cfg, multigrid::mg_cg_dot::<T>(rho, z, s, z_scale))
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

impl SlabRows {
    fn cells(&self) -> usize {
        self.level.nx * self.rows
    }
    fn check<T>(&self, what: &str, b: &Buffer<T>) -> Result<()> {
        if b.len() != self.cells() || self.y0 + self.rows > self.level.ny {
            return Err(Error::input(
                what,
                format!(
                    "{} elements for a slab of rows {}..{} of a {}x{} level",
                    b.len(),
                    self.y0,
                    self.y0 + self.rows,
                    self.level.nx,
                    self.level.ny
                ),
            ));
        }
        Ok(())
    }
}

fn local_range(s: &SlabRows, rows: &std::ops::Range<usize>, what: &str) -> Result<()> {
    if rows.start > rows.end || rows.end > s.rows {
        return Err(Error::input(
            what,
            format!("local rows {rows:?} of a slab of {} rows", s.rows),
        ));
    }
    Ok(())
}

/// The rows `rows` of a slab as one launch of a row-reduction kernel (the
/// outer step, the residual, the PCG direction): inside the slab
/// ([`local_range`]) and at least 3 of them. Returns its configuration,
/// the slab's width, the row count and the rows' element span.
fn reduce_rows_launch(
    ex: &Exec,
    s: &SlabRows,
    rows: &std::ops::Range<usize>,
    what: &str,
) -> Result<(LaunchConfig, usize, usize, std::ops::Range<usize>)> {
    local_range(s, rows, what)?;
    let (nx, ny) = (s.level.nx, rows.end - rows.start);
    if ny < 3 {
        return Err(Error::input(what, format!("{ny} rows; at least 3")));
    }
    let cfg = reduce_rows_cfg(ex, nx, ny)?;
    Ok((cfg, nx, ny, rows.start * nx..rows.end * nx))
}

/// One colour of a red-black sweep ([`km::mg_smooth_rb`]) of the local rows
/// `rows` of a slab (the first and last are read, not written): the
/// kernel's colour is `(x + y) & 1` in the launch's own rows, so it is
/// flipped when the first of them has an odd global row, which keeps the
/// colours those of the whole level.
#[allow(clippy::too_many_arguments)]
pub fn smooth_rb_slab<T: MgElement>(
    ex: &mut Exec,
    s: &SlabRows,
    u: &mut Buffer<T>,
    f: &Buffer<T>,
    rows: std::ops::Range<usize>,
    colour: u32,
    zero: bool,
    omega: f64,
) -> Result<()> {
    s.check("u", u)?;
    s.check("f", f)?;
    local_range(s, &rows, "slab smoothing")?;
    let (nx, ny) = (s.level.nx, rows.end - rows.start);
    if ny < 3 {
        return Err(Error::input(
            "slab smoothing",
            format!("{ny} rows; at least one row to update between two read rows"),
        ));
    }
    let cfg = rows_cfg(ex, (nx - 1) / 2, ny - 2)?;
    let flip = ((s.y0 + rows.start) & 1) as u32;
    let colour = rb_colour(colour ^ flip);
    let l = &s.level;
    let (cx, cy, omega) = (T::from_f64(l.cx), T::from_f64(l.cy), T::from_f64(omega));
    let span = rows.start * nx..rows.end * nx;
    let (uv, fv) = (u.view_mut(span.clone())?, f.view(span)?);
    let s = km::RbSweep {
        nx: nx as u32,
        ny: ny as u32,
        cx,
        cy,
        omega,
        colour,
        zero,
    };
    launch!(&mut *ex, cfg, multigrid::mg_smooth_rb::<T>(uv, fv, s))
}

/// Restriction from a fine slab to the local rows `rows` of a coarse slab
/// ([`km::mg_restrict_slab`]).
#[allow(clippy::too_many_arguments)]
pub fn restrict_slab<T: MgElement>(
    ex: &mut Exec,
    fs: &SlabRows,
    cs: &SlabRows,
    u: &Buffer<T>,
    f: &Buffer<T>,
    fc: &mut Buffer<T>,
    uc: &mut Buffer<T>,
    rows: std::ops::Range<usize>,
    with_u: bool,
) -> Result<()> {
    fs.check("u", u)?;
    fs.check("f", f)?;
    cs.check("fc", fc)?;
    cs.check("uc", uc)?;
    local_range(cs, &rows, "slab restriction")?;
    if rows.is_empty() {
        return Ok(());
    }
    let (l, c) = (&fs.level, &cs.level);
    let cfg = rows_cfg(ex, c.nx, rows.end - rows.start)?;
    let (cx, cy) = (T::from_f64(l.cx), T::from_f64(l.cy));
    let u32s = |v: usize| v as u32;
    // The coarse rows computed, as a slab of their own.
    let span = rows.start * c.nx..rows.end * c.nx;
    let (fcv, ucv) = (fc.view_mut(span.clone())?, uc.view_mut(span)?);
    let (nx, fny, ncx, cny) = (
        u32s(l.nx),
        u32s(fs.rows),
        u32s(c.nx),
        u32s(rows.end - rows.start),
    );
    let (ny_g, ncy_g) = (u32s(l.ny), u32s(c.ny));
    let (fy0, cy0, with_u) = (u32s(fs.y0), u32s(cs.y0 + rows.start), u32::from(with_u));
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_restrict_slab::<T>(
            u, f, fcv, ucv, nx, fny, ncx, cny, ny_g, ncy_g, fy0, cy0, cx, cy, with_u
        )
    )
}

/// `u (+)= P uc` on the local rows `rows` of a fine slab, from a coarse
/// slab ([`km::mg_prolong_slab`]).
pub fn prolong_slab<T: MgElement>(
    ex: &mut Exec,
    fs: &SlabRows,
    cs: &SlabRows,
    uc: &Buffer<T>,
    u: &mut Buffer<T>,
    rows: std::ops::Range<usize>,
    add: bool,
) -> Result<()> {
    fs.check("u", u)?;
    cs.check("uc", uc)?;
    local_range(fs, &rows, "slab prolongation")?;
    if rows.is_empty() {
        return Ok(());
    }
    let (l, c) = (&fs.level, &cs.level);
    let cfg = rows_cfg(ex, l.nx - 2, rows.end - rows.start)?;
    let u32s = |v: usize| v as u32;
    let (nx, fny, ncx, cny) = (u32s(l.nx), u32s(fs.rows), u32s(c.nx), u32s(cs.rows));
    let (ny_g, ncy_g, fy0, cy0) = (u32s(l.ny), u32s(c.ny), u32s(fs.y0), u32s(cs.y0));
    let (y_lo, y_hi, add) = (u32s(rows.start), u32s(rows.end), u32::from(add));
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_prolong_slab::<T>(
            uc, u, nx, fny, ncx, cny, ny_g, ncy_g, fy0, cy0, y_lo, y_hi, add
        )
    )
}

/// The outer step ([`km::mg_defect_slab`]) on the local rows `rows` of a
/// slab of the finest level: the owned rows and one more on each side,
/// which are corrected into `p_out` too but get no residual.
#[allow(clippy::too_many_arguments)]
pub fn defect_slab<T: MgElement>(
    ex: &mut Exec,
    s: &SlabRows,
    h: f64,
    p_in: &Buffer<f64>,
    e: &Buffer<T>,
    b: &Buffer<f64>,
    p_out: &mut Buffer<f64>,
    r: &mut Buffer<T>,
    acc: &mut Buffer<f64>,
    rows: std::ops::Range<usize>,
    e_scale: f64,
    r_scale: f64,
) -> Result<()> {
    for (n, len) in [("p_in", p_in.len()), ("b", b.len()), ("p_out", p_out.len())] {
        if len != s.cells() {
            return Err(Error::input(n, format!("{len} elements for a slab")));
        }
    }
    s.check("e", e)?;
    s.check("r", r)?;
    let (cfg, nx, ny, span) = reduce_rows_launch(ex, s, &rows, "slab defect")?;
    let (pi, ev, bv) = (
        p_in.view(span.clone())?,
        e.view(span.clone())?,
        b.view(span.clone())?,
    );
    let (po, rv) = (p_out.view_mut(span.clone())?, r.view_mut(span)?);
    let inv_h2 = 1.0 / (h * h);
    let (gy0, ny_g) = ((s.y0 + rows.start) as u32, s.level.ny as u32);
    let (nx, ny) = (nx as u32, ny as u32);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_defect_slab::<T>(
            pi, ev, bv, po, rv, acc, nx, ny, gy0, ny_g, inv_h2, e_scale, r_scale
        )
    )
}

/// The fine residual ([`km::mg_residual`]) on the local rows `rows` of a
/// slab of the finest level: the owned rows and one more on each side,
/// which are read (their `rho` and `r` are set to 0, as the kernel does on
/// its launch's edge rows); the owned rows get the single-device
/// arithmetic, in its order. The start of PCG on a team.
#[allow(clippy::too_many_arguments)]
pub fn residual_slab<T: MgElement>(
    ex: &mut Exec,
    s: &SlabRows,
    h: f64,
    p: &Buffer<f64>,
    b: &Buffer<f64>,
    rho: &mut Buffer<f64>,
    r: &mut Buffer<T>,
    acc: &mut Buffer<f64>,
    rows: std::ops::Range<usize>,
    r_scale: f64,
) -> Result<()> {
    s.check("p", p)?;
    s.check("b", b)?;
    s.check("rho", rho)?;
    s.check("r", r)?;
    let (cfg, nx, ny, span) = reduce_rows_launch(ex, s, &rows, "slab residual")?;
    let (pv, bv) = (p.view(span.clone())?, b.view(span.clone())?);
    let (rhov, rv) = (rho.view_mut(span.clone())?, r.view_mut(span)?);
    let fine = fine(nx as u32, ny as u32, h);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_residual::<T>(pv, bv, rhov, rv, acc, fine, r_scale)
    )
}

/// The PCG direction ([`km::mg_cg_dir_slab`]) on the local rows `rows` of a
/// slab of the finest level (the owned rows and one more on each side).
#[allow(clippy::too_many_arguments)]
pub fn cg_dir_slab<T: MgElement>(
    ex: &mut Exec,
    sr: &SlabRows,
    h: f64,
    z: &Buffer<T>,
    d_in: &Buffer<f64>,
    d_out: &mut Buffer<f64>,
    q: &mut Buffer<f64>,
    s: &mut Buffer<f64>,
    rows: std::ops::Range<usize>,
    z_scale: f64,
) -> Result<()> {
    sr.check("z", z)?;
    sr.check("d_in", d_in)?;
    sr.check("d_out", d_out)?;
    sr.check("q", q)?;
    if s.len() < km::slot::COUNT {
        return Err(Error::input(
            "PCG scalars",
            format!("{} slots; {} needed", s.len(), km::slot::COUNT),
        ));
    }
    let (cfg, nx, ny, span) = reduce_rows_launch(ex, sr, &rows, "slab PCG direction")?;
    let (zv, di) = (z.view(span.clone())?, d_in.view(span.clone())?);
    let (dov, qv) = (d_out.view_mut(span.clone())?, q.view_mut(span)?);
    let inv_h2 = 1.0 / (h * h);
    let (gy0, ny_g) = ((sr.y0 + rows.start) as u32, sr.level.ny as u32);
    let (nx, ny) = (nx as u32, ny as u32);
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_cg_dir_slab::<T>(zv, di, dov, qv, s, nx, ny, gy0, ny_g, inv_h2, z_scale)
    )
}

/// The PCG dot product ([`km::mg_cg_dot`]) over the elements `span` of
/// `rho` and `z` (a slab's owned rows).
pub fn cg_dot_span<T: MgElement>(
    ex: &mut Exec,
    rho: &Buffer<f64>,
    z: &Buffer<T>,
    s: &mut Buffer<f64>,
    span: std::ops::Range<usize>,
    z_scale: f64,
) -> Result<()> {
    if rho.len() != z.len() {
        return Err(Error::input("PCG dot", "the residual and z lengths differ"));
    }
    if s.len() < km::slot::COUNT {
        return Err(Error::input(
            "PCG scalars",
            format!("{} slots; {} needed", s.len(), km::slot::COUNT),
        ));
    }
    let cfg = reduce_flat_cfg(ex, span.len())?;
    let (rv, zv) = (rho.view(span.clone())?, z.view(span)?);
    launch!(&mut *ex, cfg, multigrid::mg_cg_dot::<T>(rv, zv, s, z_scale))
}

/// The PCG update ([`km::mg_cg_update`]) over the elements `span` of its
/// arrays (a slab's owned rows).
#[allow(clippy::too_many_arguments)]
pub fn cg_update_span<T: MgElement>(
    ex: &mut Exec,
    p: &mut Buffer<f64>,
    rho: &mut Buffer<f64>,
    r: &mut Buffer<T>,
    d: &Buffer<f64>,
    q: &Buffer<f64>,
    s: &mut Buffer<f64>,
    span: std::ops::Range<usize>,
    r_scale: f64,
) -> Result<()> {
    let n = p.len();
    if [rho.len(), r.len(), d.len(), q.len()]
        .iter()
        .any(|&m| m != n)
    {
        return Err(Error::input(
            "PCG update",
            "the field, residual and direction lengths differ",
        ));
    }
    if s.len() < km::slot::COUNT {
        return Err(Error::input(
            "PCG scalars",
            format!("{} slots; {} needed", s.len(), km::slot::COUNT),
        ));
    }
    let cfg = reduce_flat_cfg(ex, span.len())?;
    let (pv, rhov) = (p.view_mut(span.clone())?, rho.view_mut(span.clone())?);
    let (rv, dv, qv) = (
        r.view_mut(span.clone())?,
        d.view(span.clone())?,
        q.view(span)?,
    );
    launch!(
        &mut *ex,
        cfg,
        multigrid::mg_cg_update::<T>(pv, rhov, rv, dv, qv, s, r_scale)
    )
}
