//! Typed launchers: the SGEMM rungs (`gemm`), the column-sum kernels and
//! the zeroing helpers, each checking shapes and buffer lengths first.

use super::rung::Rung;
use kernels_gpu::matmul as k;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use ptxlab_device::Dim3;

/// Checks a product's shapes: `A` is `a_rows x a_cols`, `B` is
/// `b_rows x b_cols`. Returns `(m, n, k)`.
pub fn check_shapes(
    a_rows: usize,
    a_cols: usize,
    b_rows: usize,
    b_cols: usize,
) -> Result<(usize, usize, usize)> {
    if a_cols != b_rows {
        return Err(Error::input(
            "matmul",
            format!(
                "inner dimensions do not match: A is {a_rows}x{a_cols} and B is {b_rows}x{b_cols}; \
                 A's columns ({a_cols}) must equal B's rows ({b_rows})"
            ),
        ));
    }
    let (m, n, kk) = (a_rows, b_cols, a_cols);
    if m == 0 || n == 0 || kk == 0 {
        return Err(Error::input(
            "matmul",
            format!("zero dimension: m={m}, n={n}, k={kk}; every dimension must be at least 1"),
        ));
    }
    for (name, v) in [("m", m), ("n", n), ("k", kk)] {
        if v > u32::MAX as usize {
            return Err(Error::input(
                "matmul",
                format!("{name}={v} is larger than {}", u32::MAX),
            ));
        }
    }
    Ok((m, n, kk))
}

/// `a * b` as an element count, or an input error naming `what`.
pub(super) fn elems(what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| {
        Error::input(
            "matmul",
            format!("{what} of {a}x{b} has more elements than memory can address"),
        )
    })
}

pub(super) fn check_len(what: &str, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(Error::input(
            "matmul",
            format!("{what} has {got} elements; the shapes need {want}"),
        ));
    }
    Ok(())
}

/// Checks the shapes of `A B` (`m x kk` times `kk x n`) and the lengths
/// of `A` and `B`.
pub(super) fn check_operands<T>(
    a: &Buffer<T>,
    b: &Buffer<T>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_shapes(m, kk, kk, n)?;
    check_len("A", a.len(), m * kk)?;
    check_len("B", b.len(), kk * n)
}

/// Checks the shapes and the three buffer lengths of `C = A B`.
pub(super) fn check_buffers<T, U>(
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &Buffer<U>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_operands(a, b, m, n, kk)?;
    check_len("C", c.len(), m * n)
}

/// `C = A B` with rung `rung` on `dev` (buffer lengths checked against the shapes).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    dev: &Device,
    rung: Rung,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    c: &mut Buffer<f32>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_buffers(a, b, c, m, n, kk)?;
    let cfg = rung.config(m, n)?;
    let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
    use k::{VEC_BK as B8, VEC16_BK as B16};
    // Every rung takes the same arguments; only the kernel (and its
    // instance) differs.
    macro_rules! run {
        ($($kernel:tt)+) => {
            launch!(dev, cfg, matmul::$($kernel)+(a, b, c, mu, nu, ku))
        };
    }
    match rung {
        Rung::Naive => run!(matmul_naive_f32),
        Rung::Tiled => run!(matmul_tiled_f32),
        Rung::Regblock => run!(matmul_regblock_f32),
        Rung::Vec => run!(matmul_vec::<B8, false, 2>),
        Rung::Vec1 => run!(matmul_vec::<B8, false, 1>),
        Rung::Vec16 => run!(matmul_vec::<B16, false, 1>),
        Rung::Vec16x2 => run!(matmul_vec::<B16, false, 2>),
        Rung::Vec16s => run!(matmul_vec::<B16, true, 1>),
        Rung::Vecf => run!(matmul_vecf::<1>),
        Rung::Vecf2 => run!(matmul_vecf::<2>),
        Rung::Async => run!(matmul_async::<false, 1>),
        Rung::Async2 => run!(matmul_async::<false, 2>),
        Rung::Asyncs2 => run!(matmul_async::<true, 2>),
        Rung::Asyncs => run!(matmul_async::<true, 1>),
    }
}

/// Zeroes two buffers in one launch.
pub fn zero2(dev: &Device, x: &mut Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    let n = x.len().max(y.len()).max(1);
    let threads = n.min(256 * 1024);
    let cfg = LaunchConfig::for_threads(threads, k::COLSUM_BLOCK)?;
    launch!(dev, cfg, matmul::matmul_zero2_f32(x, y))
}

/// Zeroes two f32 buffers and the counters of the one-launch column sum.
pub(super) fn zero3(
    dev: &Device,
    x: &mut Buffer<f32>,
    y: &mut Buffer<f32>,
    z: &mut Buffer<u32>,
) -> Result<()> {
    let n = x.len().max(y.len()).max(z.len()).max(1);
    let threads = n.min(256 * 1024);
    let cfg = LaunchConfig::for_threads(threads, k::COLSUM_BLOCK)?;
    launch!(dev, cfg, matmul::matmul_zero3_f32(x, y, z))
}

/// `true` when the driver exports `cuMemsetD8Async` (looked up once).
fn memset_available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| ptxlab_common::runtime::probe::driver_symbol_present("cuMemsetD8Async"))
}

/// Zeroes `x` with the driver's memset on the stream every launch goes to
/// (on the simulator: a host write of zeros).
pub(super) fn memset_zero(dev: &Device, x: &mut Buffer<f32>) -> Result<()> {
    match (dev.as_gpu(), x.cuda_slice_mut()) {
        (Some(g), Some(s)) => {
            if !memset_available() {
                return Err(Error::Runtime(ptxlab_common::runtime::Error::Unsupported {
                    what: "cuMemsetD8Async".into(),
                    backend: "gpu".into(),
                    hint: "this driver does not export it; use the zero kernel (the default plan)"
                        .into(),
                }));
            }
            g.stream()
                .memset_zeros(s)
                .map_err(|e| Error::driver("cuMemsetD8Async", e))
        }
        _ => {
            let zeros = vec![0.0f32; x.len()];
            Ok(dev.write(x, &zeros)?)
        }
    }
}

fn chunk_config(rows: usize, cols: usize, chunk: usize) -> Result<LaunchConfig> {
    if chunk == 0 || chunk > u32::MAX as usize {
        return Err(Error::input(
            "column sum",
            format!("{chunk} rows per chunk; allowed 1..={}", u32::MAX),
        ));
    }
    let gx = cols.div_ceil(k::COLSUM_BLOCK as usize);
    let gy = rows.div_ceil(chunk);
    if gy > 65535 {
        return Err(Error::input(
            "column sum",
            format!("{rows} rows need {gy} chunks of {chunk}; at most 65535"),
        ));
    }
    Ok(LaunchConfig {
        grid: Dim3::xy(gx as u32, gy as u32),
        block: Dim3::x(k::COLSUM_BLOCK),
        shared_bytes: 0,
        module: ModuleKey::default(),
        cluster: None,
    })
}

/// Loads in flight per thread of the column-sum kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loads {
    /// Four partial sums (`matmul_colsum::<4>`, `matmul_vecmat::<4>`).
    Four,
    /// Eight partial sums (`matmul_colsum::<8>`, `matmul_vecmat::<8>`).
    Eight,
}

impl Loads {
    pub(super) fn count(self) -> usize {
        match self {
            Loads::Four => 4,
            Loads::Eight => 8,
        }
    }
    /// The PTX entries of the column sum and the vector-matrix product
    /// with this many loads in flight.
    pub(super) fn entries(self) -> (&'static str, &'static str) {
        use k::{matmul_colsum as cs, matmul_vecmat as vm};
        match self {
            Loads::Four => (
                <cs::Of<4> as cs::Instance>::ENTRY,
                <vm::Of<4> as vm::Instance>::ENTRY,
            ),
            Loads::Eight => (
                <cs::Of<8> as cs::Instance>::ENTRY,
                <vm::Of<8> as vm::Instance>::ENTRY,
            ),
        }
    }
}

/// `out[j] += sum_i x[i, j]` for a `rows x cols` matrix (`out` zeroed first),
/// in chunks of [`COLSUM_ROWS`](k::COLSUM_ROWS) rows, eight loads in flight.
pub fn colsum_add(
    dev: &Device,
    x: &Buffer<f32>,
    out: &mut Buffer<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    colsum_add_with(dev, x, out, rows, cols, k::COLSUM_ROWS, Loads::Eight)
}

/// [`colsum_add`] with `chunk` rows per block and `loads` in flight.
pub fn colsum_add_with(
    dev: &Device,
    x: &Buffer<f32>,
    out: &mut Buffer<f32>,
    rows: usize,
    cols: usize,
    chunk: usize,
    loads: Loads,
) -> Result<()> {
    check_shapes(rows, cols, cols, 1)?;
    check_len("the matrix", x.len(), elems("the matrix", rows, cols)?)?;
    check_len("the column sums", out.len(), cols)?;
    let cfg = chunk_config(rows, cols, chunk)?;
    let (r, c, ch) = (rows as u32, cols as u32, chunk as u32);
    match loads {
        Loads::Four => launch!(dev, cfg, matmul::matmul_colsum::<4>(x, out, r, c, ch)),
        Loads::Eight => launch!(dev, cfg, matmul::matmul_colsum::<8>(x, out, r, c, ch)),
    }
}

/// `out[j] += sum_i v[i] b[i, j]`, `b` of `kk x n` (`out` zeroed first), in
/// chunks of [`COLSUM_ROWS`](k::COLSUM_ROWS) rows, eight loads in flight.
pub fn vecmat_add(
    dev: &Device,
    v: &Buffer<f32>,
    b: &Buffer<f32>,
    out: &mut Buffer<f32>,
    kk: usize,
    n: usize,
) -> Result<()> {
    vecmat_add_with(dev, v, b, out, kk, n, k::COLSUM_ROWS, Loads::Eight)
}

/// [`vecmat_add`] with `chunk` rows per block and `loads` in flight.
#[allow(clippy::too_many_arguments)]
pub fn vecmat_add_with(
    dev: &Device,
    v: &Buffer<f32>,
    b: &Buffer<f32>,
    out: &mut Buffer<f32>,
    kk: usize,
    n: usize,
    chunk: usize,
    loads: Loads,
) -> Result<()> {
    check_shapes(1, kk, kk, n)?;
    check_len("v", v.len(), kk)?;
    check_len("B", b.len(), elems("B", kk, n)?)?;
    check_len("the output", out.len(), n)?;
    let cfg = chunk_config(kk, n, chunk)?;
    let (kr, nc, ch) = (kk as u32, n as u32, chunk as u32);
    match loads {
        Loads::Four => launch!(dev, cfg, matmul::matmul_vecmat::<4>(v, b, out, kr, nc, ch)),
        Loads::Eight => launch!(dev, cfg, matmul::matmul_vecmat::<8>(v, b, out, kr, nc, ch)),
    }
}
