//! The problem the CLI arguments describe: the grid from --size or
//! the shape of --b, the .npy files, or the manufactured problem; and the
//! solution written back (`--out`).

use super::args::Args;
use super::problem::{Problem, manufactured};
use super::types::{Element, Grid, check_h_for, default_h};
use ptxlab_common::error::{Error, Result};
use std::path::{Path, PathBuf};

fn cli_grid(args: &Args, from_file: Option<(usize, usize)>) -> Result<Grid> {
    let asked = args.size.map(|g| (g.nx, g.ny));
    match (asked, from_file) {
        (Some((nx, ny)), Some((rows, cols))) if (nx, ny) != (cols, rows) => Err(Error::input(
            "--b",
            format!(
                "the file has shape ({rows}, {cols}) = (ny, nx), but the grid asked for is {nx}x{ny} (nx x ny)"
            ),
        )),
        (Some((nx, ny)), _) => Grid::new(nx, ny),
        (None, Some((rows, cols))) => Grid::new(cols, rows),
        (None, None) => Grid::new(2000, 2000),
    }
}

/// Reads and validates the problem the CLI arguments describe; returns it and
/// the exact solution when it is the manufactured one.
pub fn cli_problem<T: Element>(args: &Args) -> Result<(Problem<T>, Option<Vec<f64>>)> {
    let read = |p: &PathBuf, what: &str| -> Result<(usize, usize, Vec<T>)> {
        ptxlab_common::npy::read_2d::<T>(p, T::NAME).map_err(|e| {
            Error::input(
                what,
                format!(
                    "{e} (a 2-D C-order array of {} with shape (ny, nx) is required)",
                    T::NAME
                ),
            )
        })
    };
    let b_file = args.b.as_ref().map(|p| read(p, "--b")).transpose()?;
    let grid = cli_grid(args, b_file.as_ref().map(|(r, c, _)| (*r, *c)))?;
    // The manufactured problem (3 f64 arrays), b and p0 in T, the solver's
    // two fields and the device's three: about 8 f64 arrays at once.
    ptxlab_common::cli::check_host_arrays("grid (--size)", grid.cells(), 8, 8)?;
    let h = args.h.unwrap_or_else(|| default_h(grid));
    check_h_for::<T>(h)?;
    let (b, exact, p0_default) = match b_file {
        Some((_, _, b)) => (b, None, vec![T::ZERO; grid.cells()]),
        None => {
            if args.h.is_some() {
                return Err(Error::input(
                    "--h",
                    "the manufactured problem (no --b) fixes h = 1 / (max(nx, ny) - 1); give --b to choose h",
                ));
            }
            let (m, exact) = manufactured(grid);
            let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
            (conv(&m.b), Some(exact), conv(&m.p0))
        }
    };
    let p0 = match &args.p0 {
        Some(path) => {
            let (r, c, v) = read(path, "--p0")?;
            if (c, r) != (grid.nx, grid.ny) {
                return Err(Error::input(
                    "--p0",
                    format!(
                        "shape ({r}, {c}), but the grid is {} (nx x ny): shape ({}, {}) is required",
                        grid.label(),
                        grid.ny,
                        grid.nx
                    ),
                ));
            }
            v
        }
        None => p0_default,
    };
    Ok((Problem::new(grid, h, b, p0)?, exact))
}

/// Writes a solution of `grid` to `out` as a 2D `.npy` of shape `(ny, nx)`
/// and says so (`--out` of every Poisson solve).
pub fn write_field<T: Element>(out: &Path, grid: Grid, field: &[T]) -> Result<()> {
    ptxlab_common::npy::write_2d(out, grid.ny, grid.nx, field)?;
    println!(
        "wrote {} ({}x{} {}, shape (ny, nx))",
        out.display(),
        grid.ny,
        grid.nx,
        T::NAME
    );
    Ok(())
}
