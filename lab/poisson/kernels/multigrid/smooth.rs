//! The smoothers of the multigrid ladder: rung 1, one colour of a red-black
//! Gauss-Seidel sweep per launch ([`mg_smooth_rb`]), and rung 2, `s` whole
//! sweeps of a tile in shared memory, optionally after the prolongation
//! ([`mg_smooth_tile`]).

use super::*;

// ---------------------------------------------------------------- rung 1: smoother

/// Which cells one launch of [`mg_smooth_rb`] updates: those with
/// `(x + y) & 1` equal to the colour's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(u32)]
pub enum Colour {
    /// `(x + y) & 1 == 0`.
    Red = 0,
    /// `(x + y) & 1 == 1`.
    Black = 1,
}

impl Colour {
    /// The other colour.
    pub fn other(self) -> Self {
        match self {
            Colour::Red => Colour::Black,
            Colour::Black => Colour::Red,
        }
    }
    /// Black when `black`, else red.
    pub fn black_if(black: bool) -> Self {
        if black { Colour::Black } else { Colour::Red }
    }
}

/// One half-sweep of [`mg_smooth_rb`]: the level, the relaxation weight
/// and what the launch updates.
#[derive(Debug, Clone, Copy, KernelParams)]
#[repr(C)]
pub struct RbSweep<T: Real> {
    /// The level's shape and stencil.
    pub level: Stencil<T>,
    /// Over-relaxation weight (1: plain Gauss-Seidel).
    pub omega: T,
    /// The colour updated.
    pub colour: Colour,
    /// Treat `u` as zero (the first half-sweep from a zero start: no
    /// neighbour loads; the other colour's cells are zeroed too).
    pub zero: bool,
}

/// Rung 1: one colour of a red-black Gauss-Seidel sweep of
/// `lap u = f` on a level, in place.
///
/// Thread mapping: blocks of [`BLOCK`] x 1; thread `t` of the row grid
/// updates the `t`-th cell of colour `colour` (`(x + y) & 1`: 0 red, 1 black)
/// of each row `y` it visits (`y = 1 + blockIdx.y, += gridDim.y`). A cell's
/// four neighbours have the other colour, so updating one colour in place is
/// race-free and is exactly Gauss-Seidel in red-black order. `zero`
/// treats `u` as zero (the first half-sweep from a zero start: no neighbour
/// loads). Boundary cells are never written. No shared memory.
///
/// Why red-black Gauss-Seidel: it damps the high-frequency half of the error
/// by about 4x per sweep (Jacobi: about 3x with the best weight), in place,
/// and in parallel. What it costs: two launches per sweep, each reading the
/// whole row (the colours interleave in every cache line) and writing half
/// of it, about 48 bytes per cell and sweep in f64.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_smooth_rb<T: Real>(u: DeviceSliceMut<T>, f: DeviceSlice<T>, s: RbSweep<T>) {
    let RbSweep {
        level:
            Stencil {
                dims: Dims { nx, ny },
                cx,
                cy,
            },
        omega,
        colour,
        zero,
    } = s;
    let colour = colour as u32;
    check_grid(
        &[u.len(), f.len()],
        nx,
        ny,
        "mg_smooth_rb: bad grid or buffer",
    );
    let xh = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let w = inv_diag(cx, cy);
    let width = nx as usize;
    let mut y = 1 + thread::block_idx_y();
    while y + 1 < ny {
        // The cells of colour `colour` ((x + y) & 1) in row y, in order.
        let x = 1 + 2 * xh + ((1 + y + colour) & 1);
        let xo = 1 + 2 * xh + ((y + colour) & 1);
        if zero && xo + 1 < nx {
            // From zero, the other colour's cell of this pair becomes 0 too
            // (the next half-sweep reads it as its old value). No thread
            // reads a neighbour in a launch from zero: no race.
            // SAFETY: 1 <= xo <= nx - 2 and 1 <= y <= ny - 2: inside `u`.
            unsafe { u.set_unchecked(y as usize * width + xo as usize, T::ZERO) };
        }
        if x + 1 < nx {
            let i = y as usize * width + x as usize;
            // SAFETY: 1 <= x <= nx - 2 and 1 <= y <= ny - 2, so the cell and
            // its four neighbours lie inside the nx * ny cells both buffers
            // hold (checked at entry). The neighbours have the other colour:
            // no thread of this launch writes them.
            unsafe {
                let v = if zero {
                    sor(
                        T::ZERO,
                        gs_point(T::ZERO, T::ZERO, f.get_unchecked(i), cx, cy, w),
                        omega,
                    )
                } else {
                    let we = u.as_const().get_unchecked(i - 1) + u.as_const().get_unchecked(i + 1);
                    let sn = u.as_const().get_unchecked(i - width)
                        + u.as_const().get_unchecked(i + width);
                    let gs = gs_point(we, sn, f.get_unchecked(i), cx, cy, w);
                    sor(u.as_const().get_unchecked(i), gs, omega)
                };
                u.set_unchecked(i, v);
            }
        }
        y += thread::grid_dim_y();
    }
}

// ---------------------------------------------------------------- rung 2: tile smoother

/// Columns of the tile smoother's block (a warp); rows are `BLOCK / TILE_TX`.
pub const TILE_TX: u32 = 32;
/// Rows of the tile smoother's block.
pub const TILE_TY: u32 = BLOCK / TILE_TX;
/// Most tile columns one thread loads: `(TILE_OX + 4 MAX_TILE_SWEEPS + 2) / 32`, rounded up.
const TILE_COLS: usize = (TILE_OX + 4 * MAX_TILE_SWEEPS as usize + 2).div_ceil(TILE_TX as usize);

/// What one call of [`mg_smooth_tile`] does besides its sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct TileMode {
    /// Sweeps (`1..=`[`MAX_TILE_SWEEPS`]).
    pub sweeps: u32,
    /// The first colour of each sweep (black-red is the reverse of
    /// pre-smoothing, which keeps the V-cycle symmetric for PCG).
    pub first: Colour,
    /// Start from a zero correction (`u_in`'s interior is not read).
    pub zero: bool,
    /// Add the prolongation of the coarse correction `uc` to `u_in` while
    /// loading.
    pub prolong: bool,
    /// Load the boundary ring from `u_in` and keep it (the fine level of
    /// rung 5 holds the field, whose boundary carries the Dirichlet values;
    /// without it the ring is zero, as a correction's is).
    pub dirichlet: bool,
    /// After the sweeps, add `sum r^2` over the output tile's interior
    /// cells (`r = f - lap u`) to `acc[0]`: the residual of the last sweep,
    /// with no pass of its own (rung 5).
    pub residual: bool,
}

impl TileMode {
    /// Halo of the tile: each half-sweep of red-black Gauss-Seidel
    /// invalidates one more ring of the tile (`2 s` for `s` sweeps), and the
    /// residual of the output tile ([`TileMode::residual`]) needs one ring
    /// more.
    pub const fn halo(self) -> usize {
        2 * self.sweeps as usize + if self.residual { 1 } else { 0 }
    }
    /// The shared tile: `(TILE_OX + 2 halo) x (TILE_OY + 2 halo)`.
    pub const fn dims(self) -> (usize, usize) {
        (TILE_OX + 2 * self.halo(), TILE_OY + 2 * self.halo())
    }
    /// Dynamic shared memory of the tile smoother: the correction and the
    /// right-hand side over the tile with its halo, then one f64 slot per
    /// warp for the residual's block sum.
    pub const fn shared_bytes<T>(self) -> usize {
        let (w, h) = self.dims();
        shared::shared_bytes::<f64>(Self::rhs_end::<T>(w * h), (BLOCK / WARP_SIZE) as usize)
    }
    /// The end of the right-hand side in shared memory, for tiles of
    /// `cells` cells.
    const fn rhs_end<T>(cells: usize) -> usize {
        shared::shared_bytes::<T>(shared::shared_bytes::<T>(0, cells), cells)
    }
}

/// One call of [`mg_smooth_tile`]: the level, the coarse level below it
/// (read with [`TileMode::prolong`]), the relaxation weight and the mode.
#[derive(Debug, Clone, Copy, KernelParams)]
#[repr(C)]
pub struct TileSweep<T: Real> {
    /// The level's shape and stencil.
    pub level: Stencil<T>,
    /// The coarse level's shape (with [`TileMode::prolong`]).
    pub coarse: Dims,
    /// Over-relaxation weight (1: plain Gauss-Seidel).
    pub omega: T,
    /// What the call does besides its sweeps.
    pub mode: TileMode,
}

/// Shared index of tile cell `(lx, ly)` in the colour-split layout of
/// [`mg_smooth_tile`]: the cells whose local parity `(lx + ly) & 1` is 0
/// come first (`plane` of them, `hw = sw / 2` a row), then those of parity
/// 1, each half row-major with `lx / 2` as its column.
#[inline(always)]
fn split_index(lx: i32, ly: i32, hw: i32, plane: i32) -> usize {
    (((lx + ly) & 1) * plane + ly * hw + (lx >> 1)) as usize
}

/// Rung 2: `s` whole red-black sweeps (Gauss-Seidel over-relaxed by
/// `omega`, [`sor`]) in shared memory, out of place (`u_in` -> `u_out`),
/// optionally after adding the prolongation of the coarse correction.
///
/// [`TileMode`]: the first colour (black-red, the reverse of
/// pre-smoothing, keeps the V-cycle symmetric for PCG), `zero` (start from
/// zero: `u_in`'s interior is not read), `prolong` (`u_in + P uc`,
/// bilinear, [`bilinear`]), `dirichlet` (the level holds a field: its
/// boundary ring is loaded from `u_in` and written back unchanged, instead
/// of zero), `residual` (add the output tile's `sum r^2` to `acc[0]`), and
/// the sweep count `s` (`1..=`[`MAX_TILE_SWEEPS`]).
///
/// Thread mapping: one block of [`TILE_TX`] x [`TILE_TY`] threads per
/// [`TILE_OX`] x [`TILE_OY`] output tile. Loading and storing, thread
/// `(tx, ty)` takes tile columns `tx, tx + 32, ...` and rows `ty, ty + 8,
/// ...`, so a column's place on the coarse grid is computed once. In a
/// half-sweep the block's 256 threads stride over the colour's cells as one
/// flat range (see below), so that every lane has a cell: with one warp per
/// row, a row's 37 cells of a colour took two passes, the second with 5
/// lanes of 32 busy, and the kernel is limited by issued instructions, not
/// by memory.
///
/// Shared layout ([`TileMode::shared_bytes`]): the correction and the
/// right-hand side over the tile plus a halo of `2 s` cells on each side
/// (`2 s + 1` with `residual`), one after the other, then one f64
/// slot per warp (the residual's block sum). Each array is split by
/// colour (`split_index`): the cells of one parity first, row-major with
/// `lx / 2` as the column, then the other parity. All the cells a
/// half-sweep updates are then one contiguous plane and their neighbours
/// the other, and consecutive threads read consecutive words; in a plain
/// row-major tile they are every other word, which spreads a warp's f64
/// access over twice as many shared-memory wavefronts (bank conflicts).
/// The kernel is limited by issued instructions more than by shared memory,
/// so the wavefronts the split saves weigh against the index arithmetic it
/// adds, which matters most where a row-major access cost least (f32;
/// figures in `docs/book/src/workloads/poisson.md`).
///
/// The block loads both arrays (clipped to the grid), then runs `2 s`
/// half-sweeps, each over the cells of one colour, with one barrier per
/// half-sweep; a half-sweep can update only cells whose four neighbours are
/// in the tile, so each one leaves one more ring stale, and after `2 s` the
/// cells at distance `>= 2 s` from the tile's edge (the output tile) are
/// exactly what `s` global sweeps give. Domain boundary cells are never
/// updated (Dirichlet).
///
/// What changed from rung 1: one launch and one pass over memory for `s`
/// sweeps (and the prolongation) instead of `2 s` launches, `2 s` passes
/// and a separate correction pass: about 26 bytes per cell for prolongation
/// plus two sweeps in f64, against about 112. What it costs: the halo is
/// loaded and updated redundantly ((64 + 8)(32 + 8) / (64 x 32) = 1.4x the
/// cells for `s = 2`; the extra loads are L2 hits), and the output must go
/// to a second buffer (neighbouring blocks read the halo from `u_in`).
///
/// What `dirichlet` and `residual` add (rung 5, the finest level holding
/// the field): the residual of the last sweep comes out of the tile already
/// in shared memory (each output cell's neighbours are exact with the extra
/// ring), reduced per warp and added with one atomic per block, so the
/// cycle needs no separate pass over the field to measure its residual or
/// to add its correction.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_smooth_tile<T: Real>(
    u_in: DeviceSlice<T>,
    f: DeviceSlice<T>,
    uc: DeviceSlice<T>,
    u_out: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    s: TileSweep<T>,
) {
    let TileSweep {
        level:
            Stencil {
                dims: Dims { nx, ny },
                cx,
                cy,
            },
        coarse: Dims { nx: ncx, ny: ncy },
        omega,
        mode,
    } = s;
    check_grid(
        &[u_in.len(), f.len(), u_out.len()],
        nx,
        ny,
        "mg_smooth_tile: bad grid or buffer",
    );
    let TileMode {
        sweeps,
        first,
        zero,
        prolong,
        dirichlet,
        residual,
    } = mode;
    if sweeps == 0
        || sweeps > MAX_TILE_SWEEPS
        || thread::block_dim_x() != TILE_TX
        || thread::block_dim_y() != TILE_TY
        || nx > i32::MAX as u32 / 2
        || ny > i32::MAX as u32 / 2
        || (prolong && (ncx < 3 || ncy < 3 || ncx > nx || ncy > ny))
        || (prolong && uc.len() < ncx as usize * ncy as usize)
        || (residual && acc.is_empty())
    {
        ptxlab_device::trap("mg_smooth_tile: bad mode, block or coarse grid");
    }
    let halo = mode.halo() as i32;
    let (sw, sh) = mode.dims();
    let (sw, sh) = (sw as i32, sh as i32);
    let cells = (sw * sh) as usize;
    // sw is even (TILE_OX + 2 halo), so each parity has hw cells a row.
    let (hw, plane) = (sw / 2, sw / 2 * sh);
    let su = shared::dynamic_shared::<T>(0, cells);
    let sf = shared::dynamic_shared::<T>(shared::shared_bytes::<T>(0, cells), cells);
    // 32-bit signed coordinates: the tile's origin may be -halo.
    let gx0 = (thread::block_idx_x() * TILE_OX as u32) as i32 - halo;
    let gy0 = (thread::block_idx_y() * TILE_OY as u32) as i32 - halo;
    let (nxi, nyi) = (nx as i32, ny as i32);
    let (tx, ty) = (thread::thread_idx_x() as i32, thread::thread_idx_y() as i32);
    let (ctx, cty) = (TILE_TX as i32, TILE_TY as i32);
    let width = nx as usize;
    // This thread's tile columns (tx, tx + 32, ...): where each falls on the
    // coarse grid, computed once for all its rows.
    let mut cpos = [(0u32, T::ZERO); TILE_COLS];
    if prolong {
        let mut c = 0;
        let mut lx = tx;
        while lx < sw && c < TILE_COLS {
            let gx = gx0 + lx;
            if gx > 0 && gx + 1 < nxi {
                cpos[c] = coarse_pos::<T>(gx as u32, ncx - 1, nx - 1);
            }
            lx += ctx;
            c += 1;
        }
    }
    // Load the tile: correction (zero, or u_in, plus the prolongation) and
    // right-hand side; cells outside the grid are never read again.
    let mut ly = ty;
    while ly < sh {
        let gy = gy0 + ly;
        if gy >= 0 && gy < nyi {
            let row_interior = gy > 0 && gy + 1 < nyi;
            let (j0, wy) = if prolong && row_interior {
                coarse_pos::<T>(gy as u32, ncy - 1, ny - 1)
            } else {
                (0, T::ZERO)
            };
            let mut lx = tx;
            let mut c = 0;
            while lx < sw {
                let gx = gx0 + lx;
                if gx >= 0 && gx < nxi {
                    let g = gy as usize * width + gx as usize;
                    let l = split_index(lx, ly, hw, plane);
                    let interior = row_interior && gx > 0 && gx + 1 < nxi;
                    // SAFETY: (gx, gy) is inside the grid, so g < nx * ny <=
                    // each length (checked at entry); l < 2 plane = cells.
                    // With the prolongation, an interior fine point's coarse
                    // cell (i0, j0) has i0 + 1 <= ncx - 1 and j0 + 1 <= ncy - 1
                    // (see `prolong_body`), inside `uc` (length checked).
                    unsafe {
                        let mut v = if (zero && interior) || !(interior || dirichlet) {
                            T::ZERO
                        } else {
                            u_in.get_unchecked(g)
                        };
                        if prolong && interior {
                            let (i0, wx) = cpos[c];
                            let w = ncx as usize;
                            let k = j0 as usize * w + i0 as usize;
                            let corners = [
                                uc.get_unchecked(k),
                                uc.get_unchecked(k + 1),
                                uc.get_unchecked(k + w),
                                uc.get_unchecked(k + w + 1),
                            ];
                            v += bilinear(corners, wx, wy);
                        }
                        su.set_unchecked(l, v);
                        sf.set_unchecked(l, f.get_unchecked(g));
                    }
                }
                lx += ctx;
                c += 1;
            }
        }
        ly += cty;
    }
    sync_threads();
    let w = inv_diag(cx, cy);
    let first = first as i32;
    // Updatable cells: in the tile's inner part and inside the domain.
    let (x_lo, x_hi) = (1.max(1 - gx0), (sw - 2).min(nxi - 2 - gx0));
    let (y_lo, y_hi) = (1.max(1 - gy0), (sh - 2).min(nyi - 2 - gy0));
    // A half-sweep updates the cells of one colour, which all lie in one
    // plane of the split layout (the plane of local parity (colour + gx0 +
    // gy0) & 1), the other plane holding their neighbours. The block's
    // threads stride over that plane's rows y_lo..=y_hi as one flat range
    // (k = ly hw + m, k += BLOCK), so every lane has a cell in every pass
    // but the last; (ly, m) advance by (BLOCK / hw, BLOCK % hw) with a carry
    // instead of a division per cell.
    let rank = thread::thread_rank() as i32;
    let (ly0, m0) = (y_lo + rank / hw, rank % hw);
    let (dly, dm) = (BLOCK as i32 / hw, BLOCK as i32 % hw);
    let hwu = hw as usize;
    for k in 0..2 * sweeps as i32 {
        let colour = (first + k) & 1;
        let q = (colour + gx0 + gy0) & 1;
        let (own, other) = ((q * plane) as usize, ((1 - q) * plane) as usize);
        let (mut ly, mut m) = (ly0, m0);
        while ly <= y_hi {
            // This row's cells of the colour sit at lx = 2 m + par; their
            // west and east neighbours at columns m - 1 + par and m + par
            // of the other plane's row, north and south at column m of its
            // rows above and below.
            let par = (colour + gx0 + gy0 + ly) & 1;
            let lx = 2 * m + par;
            if lx >= x_lo && lx <= x_hi {
                let (r, paru) = ((ly * hw + m) as usize, par as usize);
                // SAFETY: 1 <= lx <= sw - 2 and 1 <= ly <= sh - 2: the cell
                // and its four neighbours lie in the tile (for lx = 2 m + par
                // >= 1, m - 1 + par >= 0; for lx <= sw - 2, m + par < hw);
                // they have the other colour, which no thread writes in this
                // half-sweep.
                unsafe {
                    let o = other + r;
                    let we = su.get_unchecked(o + paru - 1) + su.get_unchecked(o + paru);
                    let sn = su.get_unchecked(o - hwu) + su.get_unchecked(o + hwu);
                    let s = own + r;
                    let gs = gs_point(we, sn, sf.get_unchecked(s), cx, cy, w);
                    su.set_unchecked(s, sor(su.get_unchecked(s), gs, omega));
                }
            }
            m += dm;
            ly += dly;
            if m >= hw {
                m -= hw;
                ly += 1;
            }
        }
        sync_threads();
    }
    // Write the output tile (cells at distance >= 2 s from the tile's edge
    // are exact after the 2 s half-sweeps).
    let mut ly = halo + ty;
    while ly < halo + TILE_OY as i32 {
        let gy = gy0 + ly;
        let mut lx = halo + tx;
        while lx < halo + TILE_OX as i32 {
            let gx = gx0 + lx;
            if gx < nxi && gy < nyi {
                let g = gy as usize * width + gx as usize;
                // SAFETY: gx, gy >= 0 (lx, ly >= halo) and inside the grid:
                // g is in bounds; (lx, ly) is in the tile, its index < cells.
                unsafe { u_out.set_unchecked(g, su.get_unchecked(split_index(lx, ly, hw, plane))) };
            }
            lx += ctx;
        }
        ly += cty;
    }
    if residual {
        // The residual of the output tile's interior cells: their
        // neighbours are at distance >= 2 s from the tile's edge, exact.
        let mut sum = 0.0f64;
        let mut ly = halo + ty;
        while ly < halo + TILE_OY as i32 {
            let gy = gy0 + ly;
            let mut lx = halo + tx;
            while lx < halo + TILE_OX as i32 {
                let gx = gx0 + lx;
                if gx > 0 && gy > 0 && gx + 1 < nxi && gy + 1 < nyi {
                    let s = split_index(lx, ly, hw, plane);
                    // The neighbours, of the other parity: one plane over,
                    // west at o = index(lx - 1, ly), east at o + 1, north
                    // and south at column lx / 2 of the rows above and
                    // below (o + even -+ hw, `even` = 1 when lx is even).
                    let o = split_index(lx - 1, ly, hw, plane);
                    let (hwu, even) = (hw as usize, (1 - (lx & 1)) as usize);
                    // SAFETY: an output cell is at distance >= halo >= 1
                    // from the tile's edge: it and its four neighbours are
                    // in the tile, and o, o + 1, o + even -+ hw index them
                    // (< cells).
                    let r = unsafe {
                        let c0 = su.get_unchecked(s);
                        let we = su.get_unchecked(o) + su.get_unchecked(o + 1);
                        let sn =
                            su.get_unchecked(o + even - hwu) + su.get_unchecked(o + even + hwu);
                        residual_at(sf.get_unchecked(s), c0, we, sn, cx, cy)
                    };
                    let r = r.to_f64();
                    sum += r * r;
                }
                lx += ctx;
            }
            ly += cty;
        }
        let slots = shared::dynamic_shared::<f64>(
            TileMode::rhs_end::<T>(cells),
            (BLOCK / WARP_SIZE) as usize,
        );
        let s = warp::reduce_sum(sum);
        if warp::lane_id() == 0 {
            slots.set(warp::warp_id() as usize, s);
        }
        sync_threads();
        if thread::thread_rank() == 0 {
            let mut total = 0.0f64;
            let mut k = 0;
            while k < (BLOCK / WARP_SIZE) as usize {
                total += slots.get(k);
                k += 1;
            }
            acc.atomic_add(0, total);
        }
    }
}
