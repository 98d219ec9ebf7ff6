//! `ptxlab._native`: the extension module behind the `ptxlab` Python
//! package (`python/python/ptxlab`). The Python layer checks dtypes, shapes
//! and devices and speaks each library's conventions (astropy's
//! `LombScargle`, SciPy-like solvers); this module runs the lab's library
//! API ([`ptxlab::workloads`]) on the backend asked for.
//!
//! Host arrays cross the boundary as `bytes` in native byte order (the
//! abi3 stable ABI has no buffer protocol before Python 3.11); GPU arrays
//! cross as device addresses (the `gpu` module). Every entry point releases
//! the GIL while it runs, returns the lab's input errors as `ValueError`
//! with the lab's message, and catches a panic as a `RuntimeError` so that
//! nothing unwinds into the interpreter.

use ptxlab::runtime::Device;
use ptxlab::workloads::lomb::{
    Batch, General, Normalization, batch_peaks, batch_periodogram, reference_general,
};
use ptxlab::workloads::poisson::mg::check::{solve_cpu, solve_device};
use ptxlab::workloads::poisson::mg::{Method, MgOptions, MgReport};
use ptxlab::workloads::poisson::{Grid, Problem};
use ptxlab::{Backend, Error};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict};
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

mod gpu;

/// The lab's error as a Python exception: an invalid input is a
/// `ValueError`, anything else (no GPU, a driver error, the simulator
/// stopping a kernel) a `RuntimeError`; both carry the lab's message.
fn to_py(e: Error) -> PyErr {
    let invalid = matches!(e.runtime(), Some(ptxlab::runtime::Error::Input { .. }));
    if invalid {
        PyValueError::new_err(e.to_string())
    } else {
        PyRuntimeError::new_err(e.to_string())
    }
}

/// Runs `f` with the GIL released, turning its error into a Python
/// exception and a panic into a `RuntimeError`.
fn guarded<R: Send>(py: Python<'_>, f: impl FnOnce() -> ptxlab::Result<R> + Send) -> PyResult<R> {
    let r = py.detach(|| std::panic::catch_unwind(AssertUnwindSafe(f)));
    match r {
        Ok(r) => r.map_err(to_py),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Err(PyRuntimeError::new_err(format!(
                "ptxlab internal error (a bug; please report it): {msg}"
            )))
        }
    }
}

/// Parses one of a clap value enum's names (the CLI's spelling), or names
/// every allowed value.
fn parse_enum<E: clap::ValueEnum>(what: &str, s: &str) -> ptxlab::Result<E> {
    E::from_str(s, true).map_err(|_| {
        let names: Vec<String> = E::value_variants()
            .iter()
            .filter_map(|v| {
                v.to_possible_value()
                    .map(|p| format!("\"{}\"", p.get_name()))
            })
            .collect();
        Error::input(what, format!("\"{s}\" is not one of {}", names.join(", ")))
    })
}

/// Bytes in native order as `f64` values.
fn f64s(what: &str, b: &[u8]) -> ptxlab::Result<Vec<f64>> {
    if !b.len().is_multiple_of(8) {
        return Err(Error::input(
            what,
            format!(
                "{} bytes; float64 data is a whole number of 8-byte values",
                b.len()
            ),
        ));
    }
    Ok(b.chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("chunks of 8 bytes")))
        .collect())
}

/// Bytes in native order as `u64` values.
fn u64s(what: &str, b: &[u8]) -> ptxlab::Result<Vec<u64>> {
    if !b.len().is_multiple_of(8) {
        return Err(Error::input(
            what,
            format!(
                "{} bytes; int64 data is a whole number of 8-byte values",
                b.len()
            ),
        ));
    }
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("chunks of 8 bytes")))
        .collect())
}

/// Values as bytes in native order.
trait NeBytes: Copy {
    /// Writes the value's bytes into `out` (exactly its size).
    fn write_ne(self, out: &mut [u8]);
}
impl NeBytes for f64 {
    fn write_ne(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_ne_bytes());
    }
}
impl NeBytes for f32 {
    fn write_ne(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_ne_bytes());
    }
}

/// `v` as a new Python `bytearray` in native order: one copy, into memory
/// that NumPy then wraps without another (`np.frombuffer` of a bytearray
/// is writable).
fn to_bytearray<'py, T: NeBytes>(py: Python<'py>, v: &[T]) -> PyResult<Bound<'py, PyByteArray>> {
    let size = std::mem::size_of::<T>();
    PyByteArray::new_with(py, std::mem::size_of_val(v), |out: &mut [u8]| {
        for (c, &x) in out.chunks_exact_mut(size).zip(v) {
            x.write_ne(c);
        }
        Ok(())
    })
}

/// A result in the precision asked for.
enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl Values {
    /// [`row_peaks`] of rows `width` long.
    fn peaks(&self, width: usize) -> Vec<f64> {
        match self {
            Values::F64(v) => row_peaks(v, width),
            Values::F32(v) => row_peaks(v, width),
        }
    }

    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyByteArray>> {
        match self {
            Values::F64(v) => to_bytearray(py, &v),
            Values::F32(v) => to_bytearray(py, &v),
        }
    }
}

thread_local! {
    /// The GPUs this thread has opened, by ordinal: a context and its
    /// loaded modules are made once, not per call.
    static GPUS: RefCell<HashMap<usize, Rc<Device>>> = RefCell::new(HashMap::new());
}

/// The device of `backend` (`None` for the CPU): GPU `ordinal` (opened once
/// per thread), or a fresh simulator.
fn device(backend: Backend, ordinal: usize) -> ptxlab::Result<Option<Rc<Device>>> {
    match backend {
        Backend::Cpu => Ok(None),
        Backend::Sim => Ok(Some(Rc::new(Device::sim()))),
        Backend::Gpu => GPUS.with(|g| {
            if let Some(d) = g.borrow().get(&ordinal) {
                return Ok(Some(d.clone()));
            }
            let d = Rc::new(Error::open_gpu(ordinal)?);
            if let Some(gpu) = d.as_gpu() {
                // SAFETY: every call of this module runs its work on the
                // device's own stream (uploads, launches, downloads and
                // frees alike), and work on a caller's stream is ordered
                // against it by events both ways (`gpu::ordered`), so no
                // buffer is used on two streams without an event between;
                // the per-buffer events would only add a cuEventCreate,
                // record and wait per buffer and launch to every call.
                unsafe { gpu.disable_event_tracking() };
            }
            g.borrow_mut().insert(ordinal, d.clone());
            Ok(Some(d))
        }),
    }
}

/// Periodograms of a batch of curves (astropy's floating-mean model) on
/// one grid of angular frequencies: `curves x freqs` values, curves by
/// rows, as `bytes` of float64 (`precision="f64"`) or float32. The CPU
/// backend is the lab's f64 reference (rayon over curves), rounded to the
/// precision asked for. With `best_only`, only each curve's peak: `2 x
/// curves` float64, first the index of the highest finite power (the first
/// one of equal values; -1 for a curve without a finite value), then that
/// power (NaN without one), so the whole array never reaches Python.
#[pyfunction]
#[pyo3(signature = (t, y, dy, offsets, freqs, fit_mean, center_data, normalization, backend, precision, device_ordinal, best_only=false))]
#[allow(clippy::too_many_arguments)]
fn lomb_batch<'py>(
    py: Python<'py>,
    t: &[u8],
    y: &[u8],
    dy: Option<&[u8]>,
    offsets: &[u8],
    freqs: &[u8],
    fit_mean: bool,
    center_data: bool,
    normalization: &str,
    backend: &str,
    precision: &str,
    device_ordinal: usize,
    best_only: bool,
) -> PyResult<Bound<'py, PyByteArray>> {
    let out = guarded(py, || {
        let normalization: Normalization = parse_enum("normalization", normalization)?;
        let backend: Backend = parse_enum("backend", backend)?;
        let precision: ptxlab::cli::Precision = parse_enum("precision", precision)?;
        let g = General {
            fit_mean,
            center_data,
            normalization,
        };
        let offsets = u64s("offsets", offsets)?;
        let batch = Batch {
            t: f64s("t", t)?,
            y: f64s("y", y)?,
            dy: dy.map(|d| f64s("dy", d)).transpose()?,
            offsets: offsets.iter().map(|&o| o as usize).collect(),
        };
        let freqs = f64s("frequency", freqs)?;
        batch.validate()?;
        let f64_out = precision == ptxlab::cli::Precision::F64;
        let values = match device(backend, device_ordinal)? {
            None => {
                let rows: Vec<ptxlab::Result<Vec<f64>>> = {
                    use rayon::prelude::*;
                    (0..batch.curves())
                        .into_par_iter()
                        .map(|c| {
                            let (t, y, dy) = batch.curve(c);
                            reference_general(t, y, dy, &freqs, g)
                        })
                        .collect()
                };
                let mut all = Vec::with_capacity(batch.curves() * freqs.len());
                for r in rows {
                    all.extend(r?);
                }
                if f64_out {
                    Values::F64(all)
                } else {
                    Values::F32(all.iter().map(|&v| v as f32).collect())
                }
            }
            // The peaks on the device: only 2 values per curve come back.
            Some(dev) if best_only => {
                return Ok(Values::F64(if f64_out {
                    batch_peaks::<f64>(&dev, &batch, &freqs, g)?
                } else {
                    batch_peaks::<f32>(&dev, &batch, &freqs, g)?
                }));
            }
            Some(dev) => {
                if f64_out {
                    Values::F64(batch_periodogram::<f64>(&dev, &batch, &freqs, g)?)
                } else {
                    Values::F32(batch_periodogram::<f32>(&dev, &batch, &freqs, g)?)
                }
            }
        };
        Ok(if best_only {
            Values::F64(values.peaks(freqs.len()))
        } else {
            values
        })
    })?;
    out.into_py(py)
}

/// Each row's peak (`curves` rows of `width`): the indices of the highest
/// finite values (the first of equal ones, -1 for a row without one), then
/// those values (NaN without one), all as f64.
fn row_peaks<V: Copy + Into<f64> + Sync>(v: &[V], width: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let peaks: Vec<(f64, f64)> = v
        .par_chunks(width.max(1))
        .map(|row| {
            let mut best: Option<(usize, f64)> = None;
            for (i, &x) in row.iter().enumerate() {
                let x: f64 = x.into();
                if x.is_finite() && best.is_none_or(|(_, b)| x > b) {
                    best = Some((i, x));
                }
            }
            best.map_or((-1.0, f64::NAN), |(i, x)| (i as f64, x))
        })
        .collect();
    peaks
        .iter()
        .map(|p| p.0)
        .chain(peaks.iter().map(|p| p.1))
        .collect()
}

/// The report of a multigrid or PCG solve, as a dict.
fn report_dict<'py>(py: Python<'py>, r: &MgReport, method: &str) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("method", method)?;
    d.set_item("iterations", r.cycles)?;
    d.set_item("rel_residual", r.rel_residual)?;
    d.set_item("residual_norm", r.residual_sq.sqrt())?;
    d.set_item("converged", r.converged)?;
    d.set_item("ms", r.ms)?;
    let hist: Vec<f64> = r.history.iter().map(|h| h.1).collect();
    d.set_item("history", hist)?;
    Ok(d)
}

/// What both Poisson entry points take from Python, parsed and checked:
/// the backend, the precision, the grid, `b` and `p0` in f64, and the
/// device (none on the CPU).
struct PoissonInput {
    backend: Backend,
    precision: ptxlab::cli::Precision,
    grid: Grid,
    b: Vec<f64>,
    p0: Vec<f64>,
    dev: Option<Rc<Device>>,
}

impl PoissonInput {
    fn parse(
        b: &[u8],
        p0: &[u8],
        nx: usize,
        ny: usize,
        precision: &str,
        backend: &str,
        device_ordinal: usize,
    ) -> ptxlab::Result<Self> {
        let backend: Backend = parse_enum("backend", backend)?;
        let precision: ptxlab::cli::Precision = parse_enum("precision", precision)?;
        let grid = Grid::new(nx, ny)?;
        let (b, p0) = (f64s("b", b)?, f64s("p0", p0)?);
        let dev = device(backend, device_ordinal)?;
        Ok(PoissonInput {
            backend,
            precision,
            grid,
            b,
            p0,
            dev,
        })
    }
}

/// Solves `lap_h p = b` on an `ny x nx` grid (row-major, Dirichlet values on
/// `p0`'s boundary) by multigrid or PCG, cycles in `precision`; returns the
/// field (float64 bytes) and the report.
#[pyfunction]
#[pyo3(signature = (b, p0, nx, ny, h, method, tol, max_cycles, precision, backend, device_ordinal))]
#[allow(clippy::too_many_arguments)]
fn poisson_solve<'py>(
    py: Python<'py>,
    b: &[u8],
    p0: &[u8],
    nx: usize,
    ny: usize,
    h: f64,
    method: &str,
    tol: f64,
    max_cycles: usize,
    precision: &str,
    backend: &str,
    device_ordinal: usize,
) -> PyResult<(Bound<'py, PyByteArray>, Bound<'py, PyDict>)> {
    let (field, report, name) = guarded(py, || {
        let m: Method = parse_enum("method", method)?;
        if !(1..=ptxlab::workloads::poisson::mg::levels::MAX_CYCLES).contains(&max_cycles) {
            return Err(Error::input(
                "maxiter",
                format!(
                    "{max_cycles}; allowed 1..={}",
                    ptxlab::workloads::poisson::mg::levels::MAX_CYCLES
                ),
            ));
        }
        let opts = MgOptions {
            method: m,
            tol,
            max_cycles,
            ..MgOptions::default()
        };
        opts.validate()?;
        let PoissonInput {
            precision,
            grid,
            b,
            p0,
            dev,
            ..
        } = PoissonInput::parse(b, p0, nx, ny, precision, backend, device_ordinal)?;
        let (field, report) = match precision {
            ptxlab::cli::Precision::F64 => {
                let prob = Problem::new(grid, h, b, p0)?;
                match &dev {
                    Some(d) => solve_device::<f64>(d, &prob, &opts)?,
                    None => solve_cpu::<f64>(&prob, &opts)?,
                }
            }
            ptxlab::cli::Precision::F32 => {
                let narrow = |v: Vec<f64>| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
                let prob = Problem::new(grid, h, narrow(b), narrow(p0))?;
                match &dev {
                    Some(d) => solve_device::<f32>(d, &prob, &opts)?,
                    None => solve_cpu::<f32>(&prob, &opts)?,
                }
            }
        };
        Ok((field, report, ptxlab::cli::value_name(&m)))
    })?;
    Ok((to_bytearray(py, &field)?, report_dict(py, &report, &name)?))
}

/// Solves `lap_h p = b` directly by the spectral method (fast sine or
/// cosine transforms, [`ptxlab::workloads::poisson::spectral`]) on an
/// `ny x nx` grid in `precision`; returns the field (float64 bytes) and a
/// report with the residual measured in f64.
#[pyfunction]
#[pyo3(signature = (b, p0, nx, ny, h, boundary, precision, backend, device_ordinal))]
#[allow(clippy::too_many_arguments)]
fn poisson_spectral<'py>(
    py: Python<'py>,
    b: &[u8],
    p0: &[u8],
    nx: usize,
    ny: usize,
    h: f64,
    boundary: &str,
    precision: &str,
    backend: &str,
    device_ordinal: usize,
) -> PyResult<(Bound<'py, PyByteArray>, Bound<'py, PyDict>)> {
    use ptxlab::workloads::poisson::cpu::{cpu_residual_sq, interior_norm_sq};
    use ptxlab::workloads::poisson::spectral::{self as sp, Boundary, SpectralDevice};
    let (field, rel, ms) = guarded(py, || {
        let boundary: Boundary = parse_enum("boundary", boundary)?;
        let PoissonInput {
            backend,
            precision,
            grid,
            b,
            p0,
            dev,
        } = PoissonInput::parse(b, p0, nx, ny, precision, backend, device_ordinal)?;
        if backend == Backend::Sim {
            ptxlab::cli::check_sim_limit(
                "b",
                grid.cells(),
                sp::SIM_MAX_CELLS,
                &format!("cells ({})", grid.label()),
            )?;
        }
        let t = std::time::Instant::now();
        let field: Vec<f64> = match (&dev, precision) {
            (None, _) => {
                // The CPU solve is in f64 whatever the precision asked for.
                let prob = Problem::new(grid, h, b.clone(), p0.clone())?;
                sp::check_problem(&prob, boundary)?;
                sp::solve_cpu(grid, h, &b, &p0, boundary)?
            }
            (Some(d), ptxlab::cli::Precision::F64) => {
                let prob = Problem::new(grid, h, b.clone(), p0)?;
                SpectralDevice::<f64>::new(d, &prob, boundary)?.solve()?
            }
            (Some(d), ptxlab::cli::Precision::F32) => {
                let narrow = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
                let prob = Problem::new(grid, h, narrow(&b), narrow(&p0))?;
                let p = SpectralDevice::<f32>::new(d, &prob, boundary)?.solve()?;
                p.iter().map(|&x| f64::from(x)).collect()
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let (res, b_sq) = (
            cpu_residual_sq(&field, &b, grid, h).sqrt(),
            interior_norm_sq(&b, grid),
        );
        let rel = if b_sq > 0.0 { res / b_sq.sqrt() } else { res };
        Ok((field, rel, ms))
    })?;
    let d = PyDict::new(py);
    d.set_item("method", "spectral")?;
    d.set_item("iterations", 0)?;
    d.set_item("rel_residual", rel)?;
    d.set_item("converged", rel.is_finite())?;
    d.set_item("ms", ms)?;
    d.set_item("history", Vec::<f64>::new())?;
    Ok((to_bytearray(py, &field)?, d))
}

/// The solve methods this build has (the names `poisson_solve` takes).
#[pyfunction]
fn poisson_methods() -> Vec<String> {
    value_names::<Method>()
}

/// The normalizations the lab computes (astropy's names).
#[pyfunction]
fn lomb_normalizations() -> Vec<String> {
    value_names::<Normalization>()
}

/// The command-line names of an enum's values.
fn value_names<T: clap::ValueEnum>() -> Vec<String> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
        .collect()
}

/// The module `ptxlab._native`.
#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lomb_batch, m)?)?;
    m.add_function(wrap_pyfunction!(lomb_normalizations, m)?)?;
    m.add_function(wrap_pyfunction!(poisson_solve, m)?)?;
    m.add_function(wrap_pyfunction!(poisson_methods, m)?)?;
    m.add_function(wrap_pyfunction!(poisson_spectral, m)?)?;
    gpu::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
