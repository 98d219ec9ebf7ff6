//! The spectral Poisson solver (`ptxlab poisson --method spectral`): the
//! exact solution, up to rounding, of the 5-point equation `lap_h p = b` on
//! the interior of a uniform rectangle, by a separable real-to-real
//! transform (DST-I for Dirichlet boundaries, DCT-II for Neumann), a
//! division by the discrete eigenvalues, and the inverse transform.
//!
//! The kernels and the transforms' definitions are in
//! [`kernels_gpu::spectral`]; this module holds the plans (factors,
//! twiddles, eigenvalues in f64), the boundary handling shared by the
//! kernels and the CPU reference ([`solve_cpu`], a direct f64 solve by
//! dense transforms), the device solver ([`SpectralDevice`]), the CLI and
//! the simulator check.
//!
//! # Boundaries
//! * Dirichlet: the boundary cells of `p0` are the values; they are folded
//!   into the right-hand side (`b - g / h^2` next to the boundary) and
//!   copied into the result.
//! * Neumann: the boundary cells are ghost cells half a cell outside the
//!   domain; the boundary cell of `p0` is the outward normal derivative `g`
//!   there (0: homogeneous), the ghost cell is `p_inner + h g`, and `b - g /
//!   h` is solved with the interior operator. The problem has a solution
//!   only when the folded right-hand side sums to zero over the interior
//!   (the compatibility condition, checked to [`NEUMANN_TOL`]); of its
//!   solutions the one of zero interior mean is returned (the gauge). A
//!   corner cell, which no stencil reads, takes the value of its diagonal
//!   interior neighbour.

mod cli;
mod device;

pub use cli::{SIM_MAX_CELLS, check_case, cli, exact_problem, sim_check, tolerance};
pub use device::{Kernels, SpectralDevice, SpectralElement};

use super::problem::Problem;
use super::types::{Element, Grid};
use kernels_gpu::spectral as ks;
use ptxlab_common::error::{Error, Result};

/// The boundary condition of a spectral solve (`--boundary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Boundary {
    /// Given values on the boundary cells (DST-I).
    #[default]
    Dirichlet,
    /// Given outward normal derivative, ghost cells (DCT-II).
    Neumann,
}

impl Boundary {
    /// The kernels' `kind`.
    pub fn kind(self) -> u32 {
        match self {
            Boundary::Dirichlet => ks::DIRICHLET,
            Boundary::Neumann => ks::NEUMANN,
        }
    }
    /// The transform's name, for reports.
    pub fn transform(self) -> &'static str {
        match self {
            Boundary::Dirichlet => "DST-I",
            Boundary::Neumann => "DCT-II",
        }
    }
    /// `dirichlet` or `neumann`.
    pub fn name(self) -> &'static str {
        match self {
            Boundary::Dirichlet => "dirichlet",
            Boundary::Neumann => "neumann",
        }
    }
    /// The factor the boundary value is folded into `b` with: `1 / h^2`
    /// (a value) or `1 / h` (a normal derivative).
    pub fn fold(self, h: f64) -> f64 {
        match self {
            Boundary::Dirichlet => 1.0 / (h * h),
            Boundary::Neumann => 1.0 / h,
        }
    }
}

/// Largest `|sum b'| / sum |b'|` (over the interior, `b'` the right-hand
/// side with the boundary derivative folded in) a Neumann problem may have;
/// the part of `b'` along the constant mode is dropped (the solve is then
/// the least-squares one).
pub const NEUMANN_TOL: f64 = 1e-6;

/// The prime factors of `n` in increasing order, the factors 2 merged into
/// radices 8 (and one 4 or 2 for the rest) and the factors 3 in pairs into
/// radices 9: fewer passes, each a butterfly in registers; empty for 1.
pub fn factors(mut n: usize) -> Vec<u32> {
    let mut f = Vec::new();
    let mut twos = 0;
    while n > 1 && n.is_multiple_of(2) {
        twos += 1;
        n /= 2;
    }
    f.extend(std::iter::repeat_n(8, twos / 3));
    match twos % 3 {
        1 => f.push(2),
        2 => f.push(4),
        _ => {}
    }
    while n.is_multiple_of(9) {
        f.push(9);
        n /= 9;
    }
    let mut p = 3;
    while p * p <= n {
        while n.is_multiple_of(p) {
            f.push(p as u32);
            n /= p;
        }
        p += 2;
    }
    if n > 1 {
        f.push(n as u32);
    }
    f.sort_unstable();
    f
}

/// The eigenvalues of the 1-D operator along an axis of `n` interior cells,
/// in the order of the transform's outputs: `(2 cos(pi k / (n + 1)) - 2) /
/// h^2`, `k = 1..n` (Dirichlet) or `(2 cos(pi k / n) - 2) / h^2`, `k =
/// 0..n-1` (Neumann). Written as `-4 sin^2(theta / 2) / h^2` (no
/// cancellation at small `k`).
pub fn eigenvalues(boundary: Boundary, n: usize, h: f64) -> Vec<f64> {
    let pi = std::f64::consts::PI;
    (0..n)
        .map(|i| {
            let theta = match boundary {
                Boundary::Dirichlet => pi * (i + 1) as f64 / (n + 1) as f64,
                Boundary::Neumann => pi * i as f64 / n as f64,
            };
            let s = (0.5 * theta).sin();
            -4.0 * s * s / (h * h)
        })
        .collect()
}

/// The plan of one axis of `n` interior cells: the FFT length, its factors
/// (`[count, f...]`) and the table of [`kernels_gpu::spectral`] in f64.
#[derive(Debug, Clone)]
pub struct AxisPlan {
    /// Interior cells along the axis.
    pub n: usize,
    /// FFT length.
    pub nf: usize,
    /// `[count, factors...]`.
    pub fac: Vec<u32>,
    /// Twiddles, post-processing factors, eigenvalues.
    pub table: Vec<f64>,
}

impl AxisPlan {
    /// The plan of an axis of `n >= 1` cells with spacing `h`.
    pub fn new(boundary: Boundary, n: usize, h: f64) -> Self {
        let nf = ks::fft_len(boundary.kind(), n);
        let f = factors(nf);
        let mut fac = vec![f.len() as u32];
        fac.extend(&f);
        let mut table = Vec::with_capacity(ks::plan_len(n, nf));
        let tau = 2.0 * std::f64::consts::PI;
        for e in 0..nf {
            let a = tau * e as f64 / nf as f64;
            table.push(a.cos());
            table.push(-a.sin());
        }
        // e^{-i pi k / N} (DST-I) or e^{-i pi k / 2n} (DCT-II).
        let den = match boundary {
            Boundary::Dirichlet => 2 * nf,
            Boundary::Neumann => 4 * nf,
        };
        for k in 0..nf {
            let a = tau * k as f64 / den as f64;
            table.push(a.cos());
            table.push(-a.sin());
        }
        table.extend(eigenvalues(boundary, n, h));
        Self { n, nf, fac, table }
    }
    /// The normalisation of the raw inverse: `2 / (n + 1)` or `1 / n`.
    pub fn inverse_scale(&self, boundary: Boundary) -> f64 {
        match boundary {
            Boundary::Dirichlet => 2.0 / self.nf as f64,
            Boundary::Neumann => 1.0 / self.n as f64,
        }
    }
}

/// The interior right-hand side (`my x mx`, row-major, f64) with the
/// boundary cells of `p0` folded in.
pub fn folded_rhs(grid: Grid, h: f64, b: &[f64], p0: &[f64], boundary: Boundary) -> Vec<f64> {
    let (nx, ny) = (grid.nx, grid.ny);
    let fold = boundary.fold(h);
    let mut r = Vec::with_capacity((nx - 2) * (ny - 2));
    for y in 1..ny - 1 {
        for x in 1..nx - 1 {
            let mut v = b[y * nx + x];
            if x == 1 {
                v -= p0[y * nx] * fold;
            }
            if x == nx - 2 {
                v -= p0[y * nx + nx - 1] * fold;
            }
            if y == 1 {
                v -= p0[x] * fold;
            }
            if y == ny - 2 {
                v -= p0[(ny - 1) * nx + x] * fold;
            }
            r.push(v);
        }
    }
    r
}

/// Checks what a spectral solve needs beyond [`Problem::validate`]: for
/// Neumann, the compatibility condition (see [`NEUMANN_TOL`]).
pub fn check_problem<T: Element>(prob: &Problem<T>, boundary: Boundary) -> Result<()> {
    prob.validate()?;
    if boundary == Boundary::Neumann {
        let b: Vec<f64> = prob.b.iter().map(|v| v.to_f64()).collect();
        let p0: Vec<f64> = prob.p0.iter().map(|v| v.to_f64()).collect();
        let r = folded_rhs(prob.grid, prob.h, &b, &p0, boundary);
        let (sum, abs) = r.iter().fold((0.0, 0.0), |(s, a), v| (s + v, a + v.abs()));
        if abs > 0.0 && sum.abs() > NEUMANN_TOL * abs {
            return Err(Error::input(
                "b",
                format!(
                    "with --boundary neumann the interior of b, minus the boundary derivative of \
                     p0 over h next to the boundary, must sum to zero (the compatibility \
                     condition); its mean is {:e}, {:.1e} of the mean |value| (at most {NEUMANN_TOL:e} \
                     is allowed): subtract the mean from b, or fix the boundary derivatives",
                    sum / r.len() as f64,
                    sum.abs() / abs
                ),
            ));
        }
    }
    Ok(())
}

/// A dense real-to-real transform of every line of a `lines x n` array
/// (line `l`, element `i` at `l * ls + i * es`), forward or the exact
/// inverse, by the O(n^2) sums with exactly reduced angles.
fn dense_lines(
    a: &mut [f64],
    boundary: Boundary,
    n: usize,
    lines: usize,
    (ls, es): (usize, usize),
    inverse: bool,
) {
    let pi = std::f64::consts::PI;
    // m[k][j]: the transform's matrix.
    let mat: Vec<f64> = match boundary {
        Boundary::Dirichlet => {
            let period = 2 * (n + 1);
            (0..n * n)
                .map(|t| {
                    let (k, j) = (t / n + 1, t % n + 1);
                    (pi * ((k * j) % period) as f64 / (n + 1) as f64).sin()
                })
                .collect()
        }
        Boundary::Neumann => {
            let period = 4 * n;
            (0..n * n)
                .map(|t| {
                    let (k, j) = (t / n, t % n);
                    (pi * ((k * (2 * j + 1)) % period) as f64 / (2 * n) as f64).cos()
                })
                .collect()
        }
    };
    let mut line = vec![0.0; n];
    for l in 0..lines {
        for (i, v) in line.iter_mut().enumerate() {
            *v = a[l * ls + i * es];
        }
        for o in 0..n {
            let s: f64 = match (boundary, inverse) {
                (Boundary::Dirichlet, false) => (0..n).map(|j| mat[o * n + j] * line[j]).sum(),
                (Boundary::Dirichlet, true) => {
                    2.0 / (n + 1) as f64 * (0..n).map(|k| mat[k * n + o] * line[k]).sum::<f64>()
                }
                (Boundary::Neumann, false) => (0..n).map(|j| mat[o * n + j] * line[j]).sum(),
                (Boundary::Neumann, true) => {
                    (line[0] + 2.0 * (1..n).map(|k| mat[k * n + o] * line[k]).sum::<f64>())
                        / n as f64
                }
            };
            a[l * ls + o * es] = s;
        }
    }
}

/// Largest side [`solve_cpu`] takes (dense transforms: `O(side^3)`).
pub const CPU_MAX_SIDE: usize = 2049;

/// The direct f64 solve on the CPU by dense transforms (the reference):
/// the whole field, boundary cells as the kernels write them.
pub fn solve_cpu(
    grid: Grid,
    h: f64,
    b: &[f64],
    p0: &[f64],
    boundary: Boundary,
) -> Result<Vec<f64>> {
    grid.validate()?;
    if grid.nx.max(grid.ny) > CPU_MAX_SIDE {
        return Err(Error::input(
            "grid (--size)",
            format!(
                "{}: the CPU spectral solve uses dense transforms (O(side^3)); at most \
                 {CPU_MAX_SIDE} cells per side",
                grid.label()
            ),
        ));
    }
    let (nx, ny) = (grid.nx, grid.ny);
    let (mx, my) = (nx - 2, ny - 2);
    let mut a = folded_rhs(grid, h, b, p0, boundary);
    dense_lines(&mut a, boundary, mx, my, (mx, 1), false);
    dense_lines(&mut a, boundary, my, mx, (1, mx), false);
    let (lx, ly) = (eigenvalues(boundary, mx, h), eigenvalues(boundary, my, h));
    for y in 0..my {
        for x in 0..mx {
            let d = lx[x] + ly[y];
            let v = &mut a[y * mx + x];
            *v = if d == 0.0 { 0.0 } else { *v / d };
        }
    }
    dense_lines(&mut a, boundary, my, mx, (1, mx), true);
    dense_lines(&mut a, boundary, mx, my, (mx, 1), true);
    Ok(assemble(grid, h, &a, p0, boundary))
}

/// The whole field from the interior solution `a` (`my x mx`): the
/// boundary cells as [`kernels_gpu::spectral::spectral_rows_inverse`]
/// writes them.
pub fn assemble(grid: Grid, h: f64, a: &[f64], p0: &[f64], boundary: Boundary) -> Vec<f64> {
    let (nx, ny) = (grid.nx, grid.ny);
    let mx = nx - 2;
    let mut p = vec![0.0; grid.cells()];
    for y in 0..ny {
        let src = y.clamp(1, ny - 2) - 1;
        let edge = y == 0 || y == ny - 1;
        let row = y * nx;
        if edge && boundary == Boundary::Dirichlet {
            p[row..row + nx].copy_from_slice(&p0[row..row + nx]);
            continue;
        }
        for i in 0..mx {
            let x = a[src * mx + i];
            p[row + 1 + i] = if edge { x + h * p0[row + 1 + i] } else { x };
        }
        let (first, last) = (a[src * mx], a[src * mx + mx - 1]);
        match (boundary, edge) {
            (Boundary::Dirichlet, _) => {
                p[row] = p0[row];
                p[row + nx - 1] = p0[row + nx - 1];
            }
            (Boundary::Neumann, true) => {
                p[row] = first;
                p[row + nx - 1] = last;
            }
            (Boundary::Neumann, false) => {
                p[row] = first + h * p0[row];
                p[row + nx - 1] = last + h * p0[row + nx - 1];
            }
        }
    }
    p
}

/// Bytes the three passes of one solve move in `T` (each reads and writes
/// the interior once; the boundary cells of `p0` and the last pass's whole
/// row of `p` included; the plans are not counted).
pub fn solve_bytes(grid: Grid, elem: usize) -> f64 {
    let (nx, ny) = (grid.nx as f64, grid.ny as f64);
    let interior = (nx - 2.0) * (ny - 2.0);
    let edge = 2.0 * (nx + ny);
    let pass1 = 2.0 * interior + edge;
    let pass2 = 2.0 * interior;
    let pass3 = interior + nx * ny + edge;
    (pass1 + pass2 + pass3) * elem as f64
}

/// Bytes any solve must move: read `b`, write `p`.
pub fn floor_bytes(grid: Grid, elem: usize) -> f64 {
    2.0 * grid.cells() as f64 * elem as f64
}

/// `||x - y||_2 / ||y||_2` over the interior cells (`||x - y||` when `y`
/// is zero there).
pub fn rel_error_interior(x: &[f64], y: &[f64], grid: Grid) -> f64 {
    let (mut d, mut n) = (0.0, 0.0);
    for r in 1..grid.ny - 1 {
        for c in 1..grid.nx - 1 {
            let i = r * grid.nx + c;
            d += (x[i] - y[i]) * (x[i] - y[i]);
            n += y[i] * y[i];
        }
    }
    if n > 0.0 { (d / n).sqrt() } else { d.sqrt() }
}

/// The manufactured Neumann problem of the CLI: `p* = cos(pi x / Lx) cos(pi
/// y / Ly)` at the cell centres `x = (i - 1/2) h` of the interior (`Lx = mx
/// h`), `b = lap p*` (continuous), zero normal derivative. Returns the
/// problem and `p*` (interior cells; the ghost cells hold their inner
/// neighbour, the corners their diagonal one).
pub fn manufactured_neumann(grid: Grid) -> (Problem<f64>, Vec<f64>) {
    let h = super::types::default_h(grid);
    let pi = std::f64::consts::PI;
    let (nx, ny) = (grid.nx, grid.ny);
    let (lx, ly) = ((nx - 2) as f64 * h, (ny - 2) as f64 * h);
    let mut exact = vec![0.0; grid.cells()];
    let mut b = vec![0.0; grid.cells()];
    for y in 0..ny {
        for x in 0..nx {
            let (cx, cy) = (x.clamp(1, nx - 2), y.clamp(1, ny - 2));
            let (px, py) = ((cx as f64 - 0.5) * h, (cy as f64 - 0.5) * h);
            let v = (pi * px / lx).cos() * (pi * py / ly).cos();
            exact[y * nx + x] = v;
            if (x, y) == (cx, cy) {
                b[y * nx + x] = -pi * pi * (1.0 / (lx * lx) + 1.0 / (ly * ly)) * v;
            }
        }
    }
    (
        Problem {
            grid,
            h,
            b,
            p0: vec![0.0; grid.cells()],
        },
        exact,
    )
}
