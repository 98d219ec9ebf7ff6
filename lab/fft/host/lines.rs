//! What the plans are made of: the element types, the twiddle tables, and
//! the line kernels of rungs 3 and 4 (which lengths they take, how many
//! lines a block holds, the launch of one pass over rows or columns).

use kernels_gpu::fft::coalesced::{self, COAL_MAX_THREADS, coalesced_shared_bytes};
use kernels_gpu::fft::register::{
    self, Lines, POINTS, REG_MAX_LEN, REG_MAX_THREADS, REG_MIN_LEN, register_shared_bytes,
};
use kernels_gpu::fft::{BLOCK, aux, global, shared};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, Dim3, LaunchConfig};
use ptxlab_device::math::Real;

/// Element types of the FFT kernels: f32 and f64.
pub trait Element:
    Real
    + ptxlab_common::runtime::Element
    + Send
    + Sync
    + ndarray_npy::WritableElement
    + ndarray_npy::ReadableElement
    + global::fft_global_pass::Built
    + shared::fft_shared::Built
    + register::fft_register::Built
    + coalesced::fft_coalesced::Built
    + coalesced::Complex
    + aux::fft_transpose::Built
    + aux::fft_chirp_pre::Built
    + aux::fft_pointwise::Built
    + aux::fft_chirp_post::Built
    + aux::fft_r2c_post::Built
    + aux::fft_c2r_pre::Built
    + aux::fft_widen::Built
    + aux::fft_hermitian::Built
    + aux::fft_real_part::Built
    + aux::fft_copy_rows::Built
{
    /// `f32` / `f64`.
    const NAME: &'static str;
    /// NumPy's name of the complex type (`complex64` / `complex128`).
    const COMPLEX_NAME: &'static str;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const COMPLEX_NAME: &'static str = "complex64";
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    const COMPLEX_NAME: &'static str = "complex128";
}

/// `exp(-2 pi i m / n)` for `m < n`, in f64, the angle reduced to
/// `[-pi, pi]` first.
pub fn root(m: u128, n: u128) -> (f64, f64) {
    let m = m % n;
    let e = if 2 * m > n {
        -((n - m) as f64 / n as f64)
    } else {
        m as f64 / n as f64
    };
    let (s, c) = (2.0 * std::f64::consts::PI * e).sin_cos();
    (c, -s)
}

/// The twiddle table of length `n`, interleaved, rounded once to `T`.
pub fn twiddle_table<T: Element>(n: usize) -> Vec<T> {
    let mut t = Vec::with_capacity(2 * n);
    for m in 0..n {
        let (c, s) = root(m as u128, n as u128);
        t.push(T::from_f64(c));
        t.push(T::from_f64(s));
    }
    t
}

/// A launch of `count` grid-stride threads.
pub(super) fn elementwise(count: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig::for_threads(count.clamp(1, 1 << 24), BLOCK)?)
}

/// The passes of a kernel with `points` values per thread on a power of
/// two `n >= points`: a first radix `2^b` (`1 <= b <= log2 points`), then
/// radix `points` up to `n`.
pub fn line_radices(n: usize, points: usize) -> Vec<usize> {
    let bits = n.trailing_zeros() as usize;
    let lp = points.trailing_zeros() as usize;
    let passes = bits.div_ceil(lp).max(1);
    let mut out = vec![1 << (bits - lp * (passes - 1))];
    out.extend(std::iter::repeat_n(points, passes - 1));
    out
}

/// `true` when the coalesced rung's kernel transforms lines of length `n`
/// of `T` in one launch: a power of two from 16 (f32) or 8 (f64) points to
/// 16384 (f32) or 8192 (f64).
pub fn coalesced_takes<T>(n: usize) -> bool {
    let e = size_of::<T>();
    n.is_power_of_two() && (coalesced::min_len(e)..=coalesced::max_len(e)).contains(&n)
}

/// `true` when the coalesced rung splits `n` into two launches of its
/// kernel (four-step): a power of two above [`coalesced_takes`]' longest,
/// up to its square.
pub fn coalesced_four_step_takes<T>(n: usize) -> bool {
    let max = coalesced::max_len(size_of::<T>());
    n.is_power_of_two() && n > max && n <= max * max
}

/// `true` when the register rung's kernel transforms lines of length `n`
/// in one launch: a power of two from 16 to 4096.
pub fn register_takes(n: usize) -> bool {
    n.is_power_of_two() && (REG_MIN_LEN..=REG_MAX_LEN).contains(&n)
}

/// `true` when the register rung splits `n` into two launches of its
/// kernel (four-step): a power of two above 4096, up to `4096^2`.
pub fn register_four_step_takes(n: usize) -> bool {
    n.is_power_of_two() && n > REG_MAX_LEN && n <= REG_MAX_LEN * REG_MAX_LEN
}

/// Shared memory a block of the register kernel may use: rows take at
/// most this much (three blocks fit an SM at the longest line), and
/// column tiles twice as much (a second column per block halves the
/// wasted part of every 32-byte sector they read).
pub(super) const REG_ROW_SHARED: usize = 72 * 1024;
pub(super) const REG_COL_SHARED: usize = 2 * REG_ROW_SHARED;

/// Lines per block of the register kernel for `lines` lines of length `n`:
/// the largest power of two within the thread limit and the shared-memory
/// budget (and not far above the line count).
pub(super) fn lines_per_block<T: Element>(n: usize, lines: usize, columns: bool) -> u32 {
    let budget = if columns {
        REG_COL_SHARED
    } else {
        REG_ROW_SHARED
    };
    let mut l = 1usize;
    while 2 * l * (n / POINTS) <= REG_MAX_THREADS
        && register_shared_bytes(n, 2 * l, size_of::<T>()) <= budget
        && 2 * l <= lines.next_power_of_two()
    {
        l *= 2;
    }
    l as u32
}

/// Strides of one line set of the register kernel (complex elements).
#[derive(Debug, Clone, Copy)]
pub(super) struct Strides {
    pub(super) line: usize,
    pub(super) elem: usize,
}

/// The rows of `mats` row-major matrices: `per_mat` lines of length `n`,
/// element stride 1 (line-fastest when `columns`: then the lines are
/// columns, element stride `line` apart).
pub(super) fn rows_of(n: usize, per_mat: usize, mats: usize, mat_stride: usize) -> Lines {
    Lines {
        log2n: n.trailing_zeros(),
        lines: (per_mat * mats) as u32,
        lines_per_block: 1,
        lines_per_mat: per_mat as u32,
        mat_stride: mat_stride as u32,
        in_line_stride: n as u32,
        in_elem_stride: 1,
        out_line_stride: n as u32,
        out_elem_stride: 1,
        four_step_bits: 0,
        split_bits: 0,
        in_lines_fastest: false,
        out_lines_fastest: false,
        inverse: false,
    }
}

/// `lines` with the given input and output strides; a stride-1 line set
/// maps threads element-fastest, any other (columns) line-fastest.
pub(super) fn with_strides(mut lines: Lines, input: Strides, output: Strides) -> Lines {
    lines.in_line_stride = input.line as u32;
    lines.in_elem_stride = input.elem as u32;
    lines.out_line_stride = output.line as u32;
    lines.out_elem_stride = output.elem as u32;
    lines.in_lines_fastest = input.elem != 1;
    lines.out_lines_fastest = output.elem != 1;
    lines
}

/// The kernel of a line plan: rung 3's or rung 4's (both take [`Lines`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineKernel {
    /// [`register::fft_register`].
    Register,
    /// [`coalesced::fft_coalesced`].
    Coalesced,
}

impl LineKernel {
    /// `true` when the kernel takes lines of length `n` of `T`.
    pub(super) fn takes<T: Element>(self, n: usize) -> bool {
        match self {
            LineKernel::Register => register_takes(n),
            LineKernel::Coalesced => coalesced_takes::<T>(n),
        }
    }
    /// Complex values per thread.
    pub(super) fn points<T: Element>(self) -> usize {
        match self {
            LineKernel::Register => POINTS,
            LineKernel::Coalesced => coalesced::points(size_of::<T>()),
        }
    }
}

/// Threads the coalesced kernel aims at per block of rows: enough lines
/// of a short length to fill 8 warps.
pub(super) const COAL_ROW_THREADS: usize = 256;

/// Lines per block of the coalesced kernel for `lines` lines of length `n`
/// of `T`, with at most `max_shared` bytes of shared memory: rows take
/// [`COAL_ROW_THREADS`] threads' worth of lines (one line at the longest
/// lengths); columns at least a 32-byte sector's worth (4 in f32, 2 in
/// f64), so every global access of a warp uses whole sectors. A power of
/// two within 1024 threads, the shared memory and the line count.
pub(super) fn coalesced_lines_per_block<T: Element>(
    n: usize,
    lines: usize,
    columns: bool,
    max_shared: usize,
) -> u32 {
    let tpl = n / coalesced::points(size_of::<T>());
    let sector = 32 / (2 * size_of::<T>());
    let want = (COAL_ROW_THREADS / tpl).max(if columns { sector } else { 1 });
    let mut l = 1usize;
    while 2 * l <= want
        && 2 * l * tpl <= COAL_MAX_THREADS
        && coalesced_shared_bytes(n, 2 * l, size_of::<T>()) <= max_shared
        && 2 * l <= lines.next_power_of_two()
    {
        l *= 2;
    }
    l as u32
}

/// One launch of a line kernel ([`register::fft_register`] or
/// [`coalesced::fft_coalesced`]): checks that every line fits `src` and
/// `dst`, picks the lines per block and the grid.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_lines<T: Element>(
    dev: &Device,
    kernel: LineKernel,
    src: &Buffer<T>,
    dst: &mut Buffer<T>,
    tw: &Buffer<T>,
    ftw: &Buffer<T>,
    mut lines: Lines,
    scale: T,
) -> Result<()> {
    let n = 1usize << lines.log2n;
    let total = lines.lines as usize;
    let per_mat = lines.lines_per_mat as usize;
    let mats = total.div_ceil(per_mat.max(1));
    let last = |line: u32, elem: u32| {
        (mats - 1) * lines.mat_stride as usize
            + (per_mat.min(total) - 1) * line as usize
            + (n - 1) * elem as usize
    };
    if !kernel.takes::<T>(n) || total == 0 || per_mat == 0 || tw.len() != 2 * n {
        return Err(Error::input(
            "fft lines",
            format!(
                "{total} lines of length {n} ({per_mat} per matrix), twiddles {}: the {kernel:?} kernel takes powers of two from {} points per thread, at least one line, and a table of the length",
                tw.len(),
                kernel.points::<T>()
            ),
        ));
    }
    let (need_in, need_out) = (
        last(lines.in_line_stride, lines.in_elem_stride),
        last(lines.out_line_stride, lines.out_elem_stride),
    );
    if 2 * need_in >= src.len() || 2 * need_out >= dst.len() {
        return Err(Error::input(
            "fft lines",
            format!(
                "{total} lines of length {n} ({per_mat} per matrix) reach complex elements {need_in} and {need_out} of buffers of {} and {} values; every line must lie inside both buffers",
                src.len(),
                dst.len(),
            ),
        ));
    }
    let columns = lines.in_lines_fastest || lines.out_lines_fastest;
    let cfg = match kernel {
        LineKernel::Register => {
            lines.lines_per_block = lines_per_block::<T>(n, total, columns);
            let per_block = lines.lines_per_block as usize;
            LaunchConfig {
                grid: Dim3::x(total.div_ceil(per_block).min(1 << 20) as u32),
                block: Dim3::x((per_block * (n / POINTS)) as u32),
                shared_bytes: register_shared_bytes(n, per_block, size_of::<T>()),
                module: Default::default(),
                cluster: None,
            }
        }
        LineKernel::Coalesced => {
            let max_shared = dev.limits().max_shared_optin;
            lines.lines_per_block = coalesced_lines_per_block::<T>(n, total, columns, max_shared);
            let per_block = lines.lines_per_block as usize;
            let shared_bytes = coalesced_shared_bytes(n, per_block, size_of::<T>());
            if shared_bytes > max_shared {
                return Err(Error::input(
                    "fft lines",
                    format!(
                        "a line of {n} points needs {shared_bytes} bytes of shared memory; this device gives a block at most {max_shared}"
                    ),
                ));
            }
            LaunchConfig {
                grid: Dim3::x(total.div_ceil(per_block).min(1 << 20) as u32),
                block: Dim3::x((per_block * (n / kernel.points::<T>())) as u32),
                shared_bytes,
                module: Default::default(),
                cluster: None,
            }
        }
    };
    match kernel {
        LineKernel::Register => launch!(
            dev,
            cfg,
            fft::register::fft_register::<T>(src, dst, tw, ftw, lines, scale)
        ),
        LineKernel::Coalesced => launch!(
            dev,
            cfg,
            fft::coalesced::fft_coalesced::<T>(src, dst, tw, ftw, lines, scale)
        ),
    }
}

/// The four-step twiddle table of length `2^bits` for the register kernel:
/// `2^split` fine entries `exp(-2 pi i m / N)` then `N / 2^split` coarse ones
/// `exp(-2 pi i m 2^split / N)`, in f64, rounded once to `T`; and `split`.
pub(super) fn four_step_table<T: Element>(bits: u32) -> (Vec<T>, u32) {
    let split = bits.div_ceil(2);
    let n = 1u128 << bits;
    let fine = 1u128 << split;
    let mut t = Vec::new();
    for m in (0..fine).chain((0..n / fine).map(|h| h * fine)) {
        let (c, s) = root(m, n);
        t.push(T::from_f64(c));
        t.push(T::from_f64(s));
    }
    (t, split)
}
