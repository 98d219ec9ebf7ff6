//! Typed launchers of the multigrid kernels: the only place they are named.
//!
//! A launch goes either straight to a device (GPU or simulator, through
//! [`crate::launch!`]) or into a CUDA graph being captured ([`Exec::Cap`]):
//! a cycle is recorded once by the same code that runs it directly, and the
//! graph replays it with one driver call.

use super::levels::Level;
use crate::error::{Error, Result};
use crate::runtime::{Buffer, Capture, Device, LaunchConfig};
use kernels_gpu::multigrid as km;

/// Where launches go.
pub enum Exec<'a, 'g> {
    /// Straight to the device.
    Dev(&'a Device),
    /// Into a graph under capture on this GPU device.
    Cap(&'a Device, &'a mut Capture<'g>),
}

impl Exec<'_, '_> {
    fn dev(&self) -> &Device {
        match self {
            Exec::Dev(d) | Exec::Cap(d, _) => d,
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

/// Launches `multigrid::$kernel(args)` on `ex` (the lab's kernels).
macro_rules! mg_launch {
    ($ex:expr, $cfg:expr, $kernel:ident ( $($arg:expr),* $(,)? )) => {{
        let cfg: LaunchConfig = $cfg;
        match $ex {
            Exec::Dev(dev) => crate::launch!(*dev, cfg, multigrid::$kernel($($arg),*)),
            Exec::Cap(_, cap) => crate::launch!(&mut **cap, cfg, multigrid::$kernel($($arg),*)),
        }
    }};
}

/// Row kernels: `cols` threads per row, `rows` rows (strided past the cap).
fn rows_cfg(ex: &Exec, cols: usize, rows: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig::for_2d(
        cols.max(1),
        rows.clamp(1, ex.row_cap()),
        km::BLOCK,
        1,
    )?)
}

/// Row kernels with a block reduction: about [`Exec::reduce_blocks`] blocks.
fn reduce_rows_cfg(ex: &Exec, cols: usize, rows: usize) -> Result<LaunchConfig> {
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
    mg_launch!(ex, cfg, mg_clear(&mut *acc))
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
    mg_launch!(ex, cfg, mg_cg_shift(&mut *s))
}

/// The cycle's precision: f64, or f32 (the mixed-precision solve). Each
/// method checks the buffers against the levels and launches one kernel.
pub trait MgElement: crate::workloads::poisson::Element {
    /// One colour of a red-black sweep, in place ([`km::mg_smooth_rb_f64`]).
    fn smooth_rb(
        ex: &mut Exec,
        l: &Level,
        u: &mut Buffer<Self>,
        f: &Buffer<Self>,
        colour: u32,
        zero: bool,
    ) -> Result<()>;
    /// `sweeps` sweeps through shared memory ([`km::mg_smooth_tile_f64`]);
    /// `coarse`: the level below and its correction, added first.
    #[allow(clippy::too_many_arguments)]
    fn smooth_tile(
        ex: &mut Exec,
        l: &Level,
        u_in: &Buffer<Self>,
        f: &Buffer<Self>,
        coarse: Option<(&Level, &Buffer<Self>)>,
        u_out: &mut Buffer<Self>,
        sweeps: u32,
        black_first: bool,
        zero: bool,
    ) -> Result<()>;
    /// Residual and restriction ([`km::mg_restrict_f64`]).
    #[allow(clippy::too_many_arguments)]
    fn restrict(
        ex: &mut Exec,
        l: &Level,
        c: &Level,
        u: &Buffer<Self>,
        f: &Buffer<Self>,
        fc: &mut Buffer<Self>,
        uc: &mut Buffer<Self>,
        with_u: bool,
    ) -> Result<()>;
    /// `u (+)= P uc` ([`km::mg_prolong_f64`]).
    fn prolong(
        ex: &mut Exec,
        l: &Level,
        c: &Level,
        uc: &Buffer<Self>,
        u: &mut Buffer<Self>,
        add: bool,
    ) -> Result<()>;
    /// The outer step ([`km::mg_defect_f64`]).
    #[allow(clippy::too_many_arguments)]
    fn defect(
        ex: &mut Exec,
        l: &Level,
        h: f64,
        p_in: &Buffer<f64>,
        e: &Buffer<Self>,
        b: &Buffer<f64>,
        p_out: &mut Buffer<f64>,
        r: &mut Buffer<Self>,
        acc: &mut Buffer<f64>,
        e_scale: f64,
        r_scale: f64,
    ) -> Result<()>;
    /// The fine residual ([`km::mg_residual_f64`]).
    #[allow(clippy::too_many_arguments)]
    fn residual(
        ex: &mut Exec,
        l: &Level,
        h: f64,
        p: &Buffer<f64>,
        b: &Buffer<f64>,
        rho: &mut Buffer<f64>,
        r: &mut Buffer<Self>,
        acc: &mut Buffer<f64>,
        r_scale: f64,
    ) -> Result<()>;
    /// PCG direction ([`km::mg_cg_dir_f64`]).
    #[allow(clippy::too_many_arguments)]
    fn cg_dir(
        ex: &mut Exec,
        l: &Level,
        h: f64,
        z: &Buffer<Self>,
        d_in: &Buffer<f64>,
        d_out: &mut Buffer<f64>,
        q: &mut Buffer<f64>,
        s: &mut Buffer<f64>,
        z_scale: f64,
    ) -> Result<()>;
    /// PCG update ([`km::mg_cg_update_f64`]).
    #[allow(clippy::too_many_arguments)]
    fn cg_update(
        ex: &mut Exec,
        p: &mut Buffer<f64>,
        rho: &mut Buffer<f64>,
        r: &mut Buffer<Self>,
        d: &Buffer<f64>,
        q: &Buffer<f64>,
        s: &mut Buffer<f64>,
        r_scale: f64,
    ) -> Result<()>;
    /// PCG dot product ([`km::mg_cg_dot_f64`]).
    fn cg_dot(
        ex: &mut Exec,
        rho: &Buffer<f64>,
        z: &Buffer<Self>,
        s: &mut Buffer<f64>,
        z_scale: f64,
    ) -> Result<()>;
    /// The V-cycle of the coarse levels `levels` (top first) in one block
    /// ([`km::mg_coarse_cycle_f64`]); `geom` holds their `nx, ny, cx, cy`.
    #[allow(clippy::too_many_arguments)]
    fn coarse_cycle(
        ex: &mut Exec,
        levels: &[Level],
        geom: &Buffer<f64>,
        f_top: &Buffer<Self>,
        u_top: &mut Buffer<Self>,
        pre: u32,
        post: u32,
    ) -> Result<()>;
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

macro_rules! mg_element {
    ($t:ty, $rb:ident, $tile:ident, $restrict:ident, $prolong:ident, $defect:ident, $residual:ident, $dir:ident, $update:ident, $dot:ident, $coarse:ident) => {
        impl MgElement for $t {
            fn coarse_cycle(
                ex: &mut Exec,
                levels: &[Level],
                geom: &Buffer<f64>,
                f_top: &Buffer<$t>,
                u_top: &mut Buffer<$t>,
                pre: u32,
                post: u32,
            ) -> Result<()> {
                let cells = coarse_cells(levels, std::mem::size_of::<$t>()).ok_or_else(|| {
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
                    .with_shared(km::coarse_shared_bytes::<$t>(cells));
                mg_launch!(
                    ex,
                    cfg,
                    $coarse(f_top, &mut *u_top, geom, levels.len() as u32, pre, post)
                )
            }
            fn smooth_rb(
                ex: &mut Exec,
                l: &Level,
                u: &mut Buffer<$t>,
                f: &Buffer<$t>,
                colour: u32,
                zero: bool,
            ) -> Result<()> {
                check_level("u", u, l)?;
                check_level("f", f, l)?;
                let cfg = rows_cfg(ex, (l.nx - 1) / 2, l.ny - 2)?;
                let (nx, ny) = dims(l);
                let (cx, cy) = (<$t>::from_f64(l.cx), <$t>::from_f64(l.cy));
                mg_launch!(
                    ex,
                    cfg,
                    $rb(&mut *u, f, nx, ny, cx, cy, colour & 1, u32::from(zero))
                )
            }
            fn smooth_tile(
                ex: &mut Exec,
                l: &Level,
                u_in: &Buffer<$t>,
                f: &Buffer<$t>,
                coarse: Option<(&Level, &Buffer<$t>)>,
                u_out: &mut Buffer<$t>,
                sweeps: u32,
                black_first: bool,
                zero: bool,
            ) -> Result<()> {
                check_level("u_in", u_in, l)?;
                check_level("f", f, l)?;
                check_level("u_out", u_out, l)?;
                if sweeps == 0 || sweeps > km::MAX_TILE_SWEEPS {
                    return Err(Error::input(
                        "smoothing sweeps",
                        format!("{sweeps}; allowed 1..={}", km::MAX_TILE_SWEEPS),
                    ));
                }
                let mut mode = (sweeps << km::MODE_SWEEPS_SHIFT)
                    | if black_first { km::MODE_BLACK_FIRST } else { 0 };
                if zero {
                    mode |= km::MODE_ZERO;
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
                    .with_shared(km::tile_shared_bytes::<$t>(sweeps));
                let (nx, ny) = dims(l);
                let (cx, cy) = (<$t>::from_f64(l.cx), <$t>::from_f64(l.cy));
                mg_launch!(
                    ex,
                    cfg,
                    $tile(u_in, f, uc, &mut *u_out, nx, ny, ncx, ncy, cx, cy, mode)
                )
            }
            fn restrict(
                ex: &mut Exec,
                l: &Level,
                c: &Level,
                u: &Buffer<$t>,
                f: &Buffer<$t>,
                fc: &mut Buffer<$t>,
                uc: &mut Buffer<$t>,
                with_u: bool,
            ) -> Result<()> {
                check_level("u", u, l)?;
                check_level("f", f, l)?;
                check_level("fc", fc, c)?;
                check_level("uc", uc, c)?;
                let cfg = rows_cfg(ex, c.nx, c.ny)?;
                let (nx, ny) = dims(l);
                let (ncx, ncy) = dims(c);
                let (cx, cy) = (<$t>::from_f64(l.cx), <$t>::from_f64(l.cy));
                mg_launch!(
                    ex,
                    cfg,
                    $restrict(
                        u,
                        f,
                        &mut *fc,
                        &mut *uc,
                        nx,
                        ny,
                        ncx,
                        ncy,
                        cx,
                        cy,
                        u32::from(with_u)
                    )
                )
            }
            fn prolong(
                ex: &mut Exec,
                l: &Level,
                c: &Level,
                uc: &Buffer<$t>,
                u: &mut Buffer<$t>,
                add: bool,
            ) -> Result<()> {
                check_level("u", u, l)?;
                check_level("uc", uc, c)?;
                let cfg = rows_cfg(ex, l.nx - 2, l.ny - 2)?;
                let (nx, ny) = dims(l);
                let (ncx, ncy) = dims(c);
                mg_launch!(
                    ex,
                    cfg,
                    $prolong(uc, &mut *u, nx, ny, ncx, ncy, u32::from(add))
                )
            }
            fn defect(
                ex: &mut Exec,
                l: &Level,
                h: f64,
                p_in: &Buffer<f64>,
                e: &Buffer<$t>,
                b: &Buffer<f64>,
                p_out: &mut Buffer<f64>,
                r: &mut Buffer<$t>,
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
                mg_launch!(
                    ex,
                    cfg,
                    $defect(
                        p_in,
                        e,
                        b,
                        &mut *p_out,
                        &mut *r,
                        &mut *acc,
                        nx,
                        ny,
                        1.0 / (h * h),
                        e_scale,
                        r_scale
                    )
                )
            }
            fn residual(
                ex: &mut Exec,
                l: &Level,
                h: f64,
                p: &Buffer<f64>,
                b: &Buffer<f64>,
                rho: &mut Buffer<f64>,
                r: &mut Buffer<$t>,
                acc: &mut Buffer<f64>,
                r_scale: f64,
            ) -> Result<()> {
                check_level("p", p, l)?;
                check_level("b", b, l)?;
                check_level("rho", rho, l)?;
                check_level("r", r, l)?;
                let cfg = reduce_rows_cfg(ex, l.nx, l.ny)?;
                let (nx, ny) = dims(l);
                mg_launch!(
                    ex,
                    cfg,
                    $residual(
                        p,
                        b,
                        &mut *rho,
                        &mut *r,
                        &mut *acc,
                        nx,
                        ny,
                        1.0 / (h * h),
                        r_scale
                    )
                )
            }
            fn cg_dir(
                ex: &mut Exec,
                l: &Level,
                h: f64,
                z: &Buffer<$t>,
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
                mg_launch!(
                    ex,
                    cfg,
                    $dir(
                        z,
                        d_in,
                        &mut *d_out,
                        &mut *q,
                        &mut *s,
                        nx,
                        ny,
                        1.0 / (h * h),
                        z_scale
                    )
                )
            }
            fn cg_update(
                ex: &mut Exec,
                p: &mut Buffer<f64>,
                rho: &mut Buffer<f64>,
                r: &mut Buffer<$t>,
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
                mg_launch!(
                    ex,
                    cfg,
                    $update(&mut *p, &mut *rho, &mut *r, d, q, &mut *s, r_scale)
                )
            }
            fn cg_dot(
                ex: &mut Exec,
                rho: &Buffer<f64>,
                z: &Buffer<$t>,
                s: &mut Buffer<f64>,
                z_scale: f64,
            ) -> Result<()> {
                if rho.len() != z.len() {
                    return Err(Error::input("PCG dot", "the residual and z lengths differ"));
                }
                let cfg = reduce_flat_cfg(ex, rho.len())?;
                mg_launch!(ex, cfg, $dot(rho, z, &mut *s, z_scale))
            }
        }
    };
}

use ptxlab_device::math::Real;

mg_element!(
    f64,
    mg_smooth_rb_f64,
    mg_smooth_tile_f64,
    mg_restrict_f64,
    mg_prolong_f64,
    mg_defect_f64,
    mg_residual_f64,
    mg_cg_dir_f64,
    mg_cg_update_f64,
    mg_cg_dot_f64,
    mg_coarse_cycle_f64
);
mg_element!(
    f32,
    mg_smooth_rb_f32,
    mg_smooth_tile_f32,
    mg_restrict_f32,
    mg_prolong_f32,
    mg_defect_f32,
    mg_residual_f32,
    mg_cg_dir_f32,
    mg_cg_update_f32,
    mg_cg_dot_f32,
    mg_coarse_cycle_f32
);
