//! The FFT ladder's plans and launchers (with `problem.rs`, the only files
//! that name the `fft_*` kernels). A [`Plan`] transforms the rows of a batch (any length: Stockham
//! passes for the factors 2, 3, 5, 7, Bluestein for the rest); `Fft` puts
//! plans together into what the command runs: 1-D or 2-D, complex or real,
//! forward or inverse ([`super::Fft`]).

use super::lines::{
    Element, LineKernel, Strides, coalesced_four_step_takes, coalesced_takes, elementwise,
    four_step_table, launch_lines, line_radices, register_four_step_takes, register_takes, root,
    rows_of, twiddle_table, with_strides,
};
use kernels_gpu::fft::coalesced;
use kernels_gpu::fft::register::{self, POINTS};
use kernels_gpu::fft::{
    RADIX_BITS, TILE, TILE_ROWS, global, shared, shared_bytes, shared_max_len,
    transpose_shared_bytes,
};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, Dim3, LaunchConfig};

/// The rungs of the FFT ladder (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rung {
    /// Radix-2 (and 3, 5, 7) Stockham passes through global memory, one
    /// launch per pass.
    Global,
    /// One block per transform, radix-8/4 passes in shared memory; columns
    /// through tiled transposes, long transforms by the four-step split.
    Shared,
    /// Radix-16 butterflies in registers, shared memory only between passes,
    /// several lines per block; columns read in place (no transpose), long
    /// lengths in two launches (four-step). Powers of two from 16 to
    /// 4096 per line (`16 * 2^24` through four-step); other lengths with
    /// small factors run the shared rung's kernel, large primes Bluestein
    /// on this rung's kernel.
    Register,
    /// Rung 3's data path sized to the register file (16 points per thread
    /// in f32, 8 in f64, at most 64 registers: no spills), 32-bit indexing,
    /// column tiles a whole 32-byte sector wide. Powers of two up to 16384
    /// (f32) or 8192 (f64) in one launch per axis, longer ones four-step in
    /// two; other lengths as on the register rung.
    Coalesced,
}

impl Rung {
    /// Every rung, in ladder order.
    pub const ALL: [Rung; 4] = [Rung::Global, Rung::Shared, Rung::Register, Rung::Coalesced];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Rung::Global => "1 Stockham radix-2, global memory",
            Rung::Shared => "2 one block per transform, shared memory",
            Rung::Register => "3 radix-16 in registers, one launch per axis",
            Rung::Coalesced => "4 sector-wide tiles, registers without spills",
        }
    }
    /// The PTX entry of the rung's main kernel for `T` (for reports).
    pub fn entry<T: Element>(&self) -> &'static str {
        match self {
            Rung::Global => <T as global::fft_global_pass::Built>::ENTRY,
            Rung::Shared => <T as shared::fft_shared::Built>::ENTRY,
            Rung::Register => <T as register::fft_register::Built>::ENTRY,
            Rung::Coalesced => <T as coalesced::fft_coalesced::Built>::ENTRY,
        }
    }
}

/// Longest transform length (the kernels index with 32-bit integers).
pub const MAX_LEN: usize = 1 << 30;

/// Factors of `n` into the radices of `rung` (first pass first), or `None`
/// when `n` has a prime factor above 7. The register rung's are those of
/// its kernel for the lengths it takes ([`register_takes`]: `2^b` then
/// 16s) and the shared rung's otherwise (the kernel it falls back to); the
/// coalesced rung's those of its f32 instance ([`line_radices`] with 16
/// points; f64 has 8) on the lengths it takes in one launch.
pub fn radices(n: usize, rung: Rung) -> Option<Vec<usize>> {
    if rung == Rung::Register {
        if !register_takes(n) {
            return radices(n, Rung::Shared);
        }
        return Some(line_radices(n, POINTS));
    }
    if rung == Rung::Coalesced {
        if !coalesced_takes::<f32>(n) {
            return radices(n, Rung::Shared);
        }
        return Some(line_radices(n, coalesced::points(4)));
    }
    let mut m = n;
    let mut out = Vec::new();
    let mut twos = 0;
    while m.is_multiple_of(2) {
        m /= 2;
        twos += 1;
    }
    match rung {
        Rung::Global => out.extend(std::iter::repeat_n(2, twos)),
        Rung::Shared | Rung::Register | Rung::Coalesced => {
            out.extend(std::iter::repeat_n(8, twos / 3));
            match twos % 3 {
                1 => out.push(2),
                2 => out.push(4),
                _ => {}
            }
        }
    }
    for p in [3, 5, 7] {
        while m.is_multiple_of(p) {
            m /= p;
            out.push(p);
        }
    }
    (m == 1).then_some(out)
}

/// How a [`Plan`] computes.
// One `Kind` per plan, made once and kept: the size of its largest variant
// costs nothing, so no variant is boxed for the lint's sake.
#[allow(clippy::large_enum_variant)]
enum Kind<T: Element> {
    /// Stockham passes in global memory (rung 1).
    Global {
        tw: Buffer<T>,
        radices: Vec<usize>,
        scratch: Buffer<T>,
    },
    /// One block per transform in shared memory (rung 2).
    Shared { tw: Buffer<T>, radices: Vec<usize> },
    /// Passes in registers, several rows per block (rungs 3 and 4).
    Lines { tw: Buffer<T>, kernel: LineKernel },
    /// `n = n1 n2` on rung 3 or 4: the `n2` columns (length `n1`) of each
    /// row seen as an `n1 x n2` matrix, the four-step twiddle on their way
    /// out; then its `n1` rows (length `n2`), written as the columns of an
    /// `n2 x n1` matrix, which is the output in natural order.
    LinesFourStep {
        kernel: LineKernel,
        n1: usize,
        n2: usize,
        tw1: Buffer<T>,
        tw2: Buffer<T>,
        ftw: Buffer<T>,
        split: u32,
        tmp: Buffer<T>,
    },
    /// `n = n1 n2`: transpose, `n1`-transforms with the four-step twiddle,
    /// transpose, `n2`-transforms, transpose (rung 2, lengths above shared
    /// memory).
    FourStep {
        n1: usize,
        n2: usize,
        p1: Box<Plan<T>>,
        p2: Box<Plan<T>>,
        t1: Buffer<T>,
        t2: Buffer<T>,
    },
    /// Bluestein: chirp, a power-of-two convolution, chirp.
    Bluestein {
        m: usize,
        chirp: [Buffer<T>; 2],
        spec: [Buffer<T>; 2],
        sub: Box<Plan<T>>,
        a: Buffer<T>,
        b: Buffer<T>,
    },
}

/// `batches` complex transforms of length `n`, each a contiguous row, with
/// the buffers and tables they need (built once, run many times).
pub struct Plan<T: Element> {
    /// Transform length.
    pub n: usize,
    /// Transforms per run.
    pub batches: usize,
    /// The rung.
    pub rung: Rung,
    kind: Kind<T>,
    /// The register or coalesced rung's plan runs the shared rung's
    /// kernels (a length its kernel does not take, without a prime factor
    /// above 7).
    fallback: bool,
}

impl<T: Element> Plan<T> {
    /// Builds the plan of `batches` length-`n` transforms on `dev`.
    pub fn new(dev: &Device, n: usize, batches: usize, rung: Rung) -> Result<Self> {
        if n == 0 || batches == 0 {
            return Err(Error::input(
                "fft",
                format!(
                    "{batches} transforms of length {n}: the length and the count must be at least 1"
                ),
            ));
        }
        if n > MAX_LEN || n.checked_mul(batches).is_none_or(|t| t > MAX_LEN) {
            return Err(Error::input(
                "fft",
                format!("{batches} transforms of length {n}: at most {MAX_LEN} elements in all"),
            ));
        }
        let line_kernel = match rung {
            Rung::Register => Some(LineKernel::Register),
            Rung::Coalesced => Some(LineKernel::Coalesced),
            Rung::Global | Rung::Shared => None,
        };
        if let Some(kernel) = line_kernel
            && kernel.takes::<T>(n)
        {
            return Ok(Plan {
                n,
                batches,
                rung,
                kind: Kind::Lines {
                    tw: dev.upload(&twiddle_table::<T>(n))?,
                    kernel,
                },
                fallback: false,
            });
        }
        let four_step = match line_kernel {
            Some(LineKernel::Register) => register_four_step_takes(n),
            Some(LineKernel::Coalesced) => coalesced_four_step_takes::<T>(n),
            None => false,
        };
        if let Some(kernel) = line_kernel
            && four_step
        {
            let bits = n.trailing_zeros();
            let (n1, n2) = (1usize << bits.div_ceil(2), 1usize << (bits / 2));
            let (ftw, split) = four_step_table::<T>(bits);
            return Ok(Plan {
                n,
                batches,
                rung,
                kind: Kind::LinesFourStep {
                    kernel,
                    n1,
                    n2,
                    tw1: dev.upload(&twiddle_table::<T>(n1))?,
                    tw2: dev.upload(&twiddle_table::<T>(n2))?,
                    ftw: dev.upload(&ftw)?,
                    split,
                    tmp: dev.alloc_filled(2 * n * batches, T::ZERO)?,
                },
                fallback: false,
            });
        }
        // The register and coalesced rungs' kernels take powers of two;
        // other lengths with factors 2, 3, 5, 7 (and powers of two outside
        // their range) run on the shared rung's kernels, large primes
        // through Bluestein on the rung's own.
        let asked = rung;
        let fallback = line_kernel.is_some() && radices(n, Rung::Shared).is_some();
        let rung = if fallback { Rung::Shared } else { rung };
        let kind = match (radices(n, rung), rung) {
            (Some(r), Rung::Global) => Kind::Global {
                tw: dev.upload(&twiddle_table::<T>(n))?,
                radices: r,
                scratch: dev.alloc_filled(2 * n * batches, T::ZERO)?,
            },
            (Some(r), Rung::Shared | Rung::Register | Rung::Coalesced)
                if n <= shared_max_len(size_of::<T>()) =>
            {
                Kind::Shared {
                    tw: dev.upload(&twiddle_table::<T>(n))?,
                    radices: r,
                }
            }
            (Some(_), Rung::Shared | Rung::Register | Rung::Coalesced) => {
                let max = shared_max_len(size_of::<T>());
                let n2 = (1..=max)
                    .rev()
                    .find(|d| n.is_multiple_of(*d) && n / d <= max)
                    .ok_or_else(|| {
                        Error::input(
                            "fft",
                            format!(
                                "length {n}: the shared rung splits a length into two factors of at most {max}; use --variant global"
                            ),
                        )
                    })?;
                let n1 = n / n2;
                Kind::FourStep {
                    n1,
                    n2,
                    p1: Box::new(Plan::new(dev, n1, batches * n2, rung)?),
                    p2: Box::new(Plan::new(dev, n2, batches * n1, rung)?),
                    t1: dev.alloc_filled(2 * n * batches, T::ZERO)?,
                    t2: dev.alloc_filled(2 * n * batches, T::ZERO)?,
                }
            }
            (None, _) => {
                let m = (2 * n - 1).next_power_of_two();
                let mut chirp = Vec::new();
                let mut spec = Vec::new();
                for inverse in [false, true] {
                    let (c, s) = bluestein_tables(n, m, inverse);
                    chirp.push(dev.upload(&c.iter().map(|v| T::from_f64(*v)).collect::<Vec<_>>())?);
                    spec.push(dev.upload(&s.iter().map(|v| T::from_f64(*v)).collect::<Vec<_>>())?);
                }
                let [c0, c1]: [Buffer<T>; 2] = chirp.try_into().map_err(|_| unreachable_two())?;
                let [s0, s1]: [Buffer<T>; 2] = spec.try_into().map_err(|_| unreachable_two())?;
                Kind::Bluestein {
                    m,
                    chirp: [c0, c1],
                    spec: [s0, s1],
                    sub: Box::new(Plan::new(dev, m, batches, rung)?),
                    a: dev.alloc_filled(2 * m * batches, T::ZERO)?,
                    b: dev.alloc_filled(2 * m * batches, T::ZERO)?,
                }
            }
        };
        Ok(Plan {
            n,
            batches,
            rung: asked,
            kind,
            fallback,
        })
    }

    /// `true` when the plan runs Stockham passes in global memory (and so
    /// transforms strided columns in place of rows, [`Plan::run_strided`]).
    pub fn is_global(&self) -> bool {
        matches!(self.kind, Kind::Global { .. })
    }

    /// How the plan computes, in words (for the command's output).
    pub fn describe(&self) -> String {
        let how = self.describe_kind();
        if self.fallback {
            format!("{how}, on the shared rung's kernel (this rung's takes powers of two)")
        } else {
            how
        }
    }

    fn describe_kind(&self) -> String {
        match &self.kind {
            Kind::Lines { kernel, .. } => format!(
                "radices {}, in registers",
                line_radices(self.n, kernel.points::<T>())
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
            Kind::LinesFourStep { n1, n2, .. } => {
                format!("four-step {n1}x{n2} in two launches, in registers")
            }
            Kind::Global { radices, .. } | Kind::Shared { radices, .. } => format!(
                "radices {}",
                radices
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
            Kind::FourStep { n1, n2, .. } => format!("four-step {n1}x{n2}"),
            Kind::Bluestein { m, .. } => format!("Bluestein through length {m}"),
        }
    }

    /// Transforms the rows of `src` into `dst` (each `2 n batches` values),
    /// output times `scale`. `src` is left as it was.
    pub fn run(
        &mut self,
        dev: &Device,
        src: &Buffer<T>,
        dst: &mut Buffer<T>,
        inverse: bool,
        scale: T,
    ) -> Result<()> {
        let need = 2 * self.n * self.batches;
        if src.len() != need || dst.len() != need {
            return Err(Error::input(
                "fft",
                format!(
                    "buffers of {} and {} values for {} transforms of length {}; both must hold {need}",
                    src.len(),
                    dst.len(),
                    self.batches,
                    self.n
                ),
            ));
        }
        let layout = global::Layout {
            batches: self.batches,
            elem_stride: 1,
            batch_stride: self.n,
        };
        self.run_layout(dev, src, dst, layout, false, inverse, scale, 0)
    }

    /// Transforms the `nx` columns (length `n`, the plan's) of a row-major
    /// `n x nx` matrix in `src` into `dst`; only for a global plan of
    /// `nx` transforms.
    pub fn run_strided(
        &mut self,
        dev: &Device,
        src: &Buffer<T>,
        dst: &mut Buffer<T>,
        inverse: bool,
        scale: T,
    ) -> Result<()> {
        let need = 2 * self.n * self.batches;
        if !self.is_global() || src.len() != need || dst.len() != need {
            return Err(Error::input(
                "fft columns",
                format!(
                    "strided transforms need a global plan and two {}x{} matrices of {need} values",
                    self.n, self.batches
                ),
            ));
        }
        let layout = global::Layout {
            batches: self.batches,
            elem_stride: self.batches,
            batch_stride: 1,
        };
        self.run_layout(dev, src, dst, layout, true, inverse, scale, 0)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_layout(
        &mut self,
        dev: &Device,
        src: &Buffer<T>,
        dst: &mut Buffer<T>,
        layout: global::Layout,
        batch_fastest: bool,
        inverse: bool,
        scale: T,
        four_step: usize,
    ) -> Result<()> {
        let (n, batches) = (self.n, self.batches);
        match &mut self.kind {
            Kind::Global {
                tw,
                radices,
                scratch,
            } => {
                let p = radices.len();
                if p == 0 {
                    let total = (n * batches) as u32;
                    return launch!(
                        dev,
                        elementwise(n * batches)?,
                        fft::aux::fft_copy_rows::<T>(src, &mut *dst, total, total, scale)
                    );
                }
                let mut ns = 1;
                for (s, &r) in radices.iter().enumerate() {
                    let last = s + 1 == p;
                    let sc = if last { scale } else { T::ONE };
                    let cfg = elementwise(n / r * batches)?;
                    // Pass s writes dst when p - s is odd, so the last pass lands in dst.
                    let to_dst = (p - s) % 2 == 1;
                    let lay = global::Layout { batches, ..layout };
                    let step = global::GlobalPass::new(n, ns, r, lay, batch_fastest, inverse);
                    // The first pass reads the input; then the passes ping-pong
                    // between scratch and dst.
                    let (input, output): (&Buffer<T>, &mut Buffer<T>) = match (s == 0, to_dst) {
                        (true, true) => (src, &mut *dst),
                        (true, false) => (src, &mut *scratch),
                        (false, true) => (&*scratch, &mut *dst),
                        (false, false) => (&*dst, &mut *scratch),
                    };
                    launch!(
                        dev,
                        cfg,
                        fft::global::fft_global_pass::<T>(input, output, &*tw, step, sc)
                    )?;
                    ns *= r;
                }
                Ok(())
            }
            Kind::Shared { tw, radices } => {
                let packed = radices
                    .iter()
                    .rev()
                    .fold(0u64, |acc, &r| (acc << RADIX_BITS) | r as u64);
                let per = n / radices.iter().copied().max().unwrap_or(1).max(1);
                let threads = per.div_ceil(32).clamp(1, 32) as u32 * 32;
                let cfg = LaunchConfig {
                    grid: Dim3::x(batches.min(1 << 20) as u32),
                    block: Dim3::x(threads),
                    shared_bytes: shared_bytes(n, size_of::<T>()),
                    module: Default::default(),
                    cluster: None,
                };
                launch!(
                    dev,
                    cfg,
                    fft::shared::fft_shared::<T>(
                        src,
                        dst,
                        tw,
                        n as u32,
                        packed,
                        radices.len() as u32,
                        u32::from(inverse),
                        scale,
                        four_step as u32
                    )
                )
            }
            Kind::FourStep {
                n1,
                n2,
                p1,
                p2,
                t1,
                t2,
            } => {
                let (n1, n2) = (*n1, *n2);
                transpose(dev, src, t1, n1, n2, batches)?;
                p1.run_layout(
                    dev,
                    t1,
                    t2,
                    global::Layout {
                        batches: p1.batches,
                        elem_stride: 1,
                        batch_stride: n1,
                    },
                    false,
                    inverse,
                    T::ONE,
                    n,
                )?;
                transpose(dev, t2, t1, n2, n1, batches)?;
                p2.run(dev, t1, t2, inverse, scale)?;
                transpose(dev, t2, dst, n1, n2, batches)
            }
            Kind::Lines { tw, kernel } => {
                if four_step != 0 || layout.elem_stride != 1 || layout.batch_stride != n {
                    return Err(Error::input(
                        "fft lines",
                        "a register or coalesced plan transforms contiguous rows only, without a four-step twiddle",
                    ));
                }
                let mut lines = rows_of(n, batches, 1, 0);
                lines.inverse = inverse;
                launch_lines(dev, *kernel, src, dst, tw, tw, lines, scale)
            }
            Kind::LinesFourStep {
                kernel,
                n1,
                n2,
                tw1,
                tw2,
                ftw,
                split,
                tmp,
            } => {
                let (n1, n2) = (*n1, *n2);
                // Pass 1: the n2 columns (length n1) of each n1 x n2 matrix,
                // in place in `tmp`, times the four-step twiddle.
                let col = Strides { line: 1, elem: n2 };
                let mut l1 = with_strides(rows_of(n1, n2, batches, n), col, col);
                l1.inverse = inverse;
                l1.four_step_bits = n.trailing_zeros();
                l1.split_bits = *split;
                launch_lines(dev, *kernel, src, tmp, tw1, ftw, l1, T::ONE)?;
                // Pass 2: its n1 rows (length n2), row k1 written as column
                // k1 of the n2 x n1 output.
                let mut l2 = with_strides(
                    rows_of(n2, n1, batches, n),
                    Strides { line: n2, elem: 1 },
                    Strides { line: 1, elem: n1 },
                );
                l2.inverse = inverse;
                launch_lines(dev, *kernel, tmp, dst, tw2, tw2, l2, scale)
            }
            Kind::Bluestein {
                m,
                chirp,
                spec,
                sub,
                a,
                b,
            } => {
                let d = usize::from(inverse);
                let m = *m;
                launch!(
                    dev,
                    elementwise(m * batches)?,
                    fft::aux::fft_chirp_pre::<T>(src, &mut *a, &chirp[d])
                )?;
                sub.run(dev, a, b, false, T::ONE)?;
                launch!(
                    dev,
                    elementwise(m * batches)?,
                    fft::aux::fft_pointwise::<T>(&mut *b, &spec[d])
                )?;
                sub.run(dev, b, a, true, T::ONE)?;
                let sc = scale * T::from_f64(1.0 / m as f64);
                launch!(
                    dev,
                    elementwise(n * batches)?,
                    fft::aux::fft_chirp_post::<T>(&*a, dst, &chirp[d], sc)
                )
            }
        }
    }
}

fn unreachable_two() -> Error {
    Error::input("fft", "internal: two Bluestein tables expected")
}

/// Bluestein's tables for length `n` through `m`: the chirp
/// `exp(-+ pi i k^2 / n)` (`k < n`) and the length-`m` spectrum of its
/// conjugate wrapped around (`b_k = b_(m-k) = conj chirp_k`), in f64.
pub fn bluestein_tables(n: usize, m: usize, inverse: bool) -> (Vec<f64>, Vec<f64>) {
    use rustfft::num_complex::Complex64;
    let mut chirp = Vec::with_capacity(2 * n);
    let mut bs = vec![Complex64::new(0.0, 0.0); m];
    for k in 0..n {
        // exp(-pi i k^2 / n) = root(k^2 mod 2n, 2n).
        let (c, s) = root((k as u128 * k as u128) % (2 * n as u128), 2 * n as u128);
        let s = if inverse { -s } else { s };
        chirp.push(c);
        chirp.push(s);
        bs[k] = Complex64::new(c, -s);
        if k > 0 {
            bs[m - k] = Complex64::new(c, -s);
        }
    }
    let mut planner = rustfft::FftPlanner::<f64>::new();
    planner.plan_fft_forward(m).process(&mut bs);
    let spec = bs.iter().flat_map(|z| [z.re, z.im]).collect();
    (chirp, spec)
}

/// `dst = src^T` for each of `mats` row-major `rows x cols` complex matrices.
pub fn transpose<T: Element>(
    dev: &Device,
    src: &Buffer<T>,
    dst: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    mats: usize,
) -> Result<()> {
    let t = TILE as usize;
    if mats > 65535 {
        return Err(Error::input(
            "fft transpose",
            format!("{mats} matrices: at most 65535 per launch"),
        ));
    }
    let cfg = LaunchConfig {
        grid: Dim3::new(
            cols.div_ceil(t) as u32,
            rows.div_ceil(t) as u32,
            mats as u32,
        ),
        block: Dim3::xy(TILE, TILE_ROWS),
        shared_bytes: transpose_shared_bytes(size_of::<T>()),
        module: Default::default(),
        cluster: None,
    };
    launch!(
        dev,
        cfg,
        fft::aux::fft_transpose::<T>(src, dst, rows as u32, cols as u32)
    )
}

/// How [`Columns`] computes.
enum ColKind<T: Element> {
    /// The global rung's strided passes.
    Strided(Plan<T>),
    /// A transpose, row transforms and a transpose back (the shared rung,
    /// and the register and coalesced rungs for column lengths their
    /// kernels do not take).
    Transposed(Plan<T>, Buffer<T>, Buffer<T>),
    /// A line kernel on tiles of adjacent columns, read and written in
    /// place (one launch).
    Tiles(Buffer<T>, LineKernel),
}

/// Transforms along the columns of a row-major `rows x cols` matrix: the
/// global rung's strided passes, the register and coalesced rungs' column
/// tiles, or a transpose, row transforms and a transpose back.
pub struct Columns<T: Element> {
    kind: ColKind<T>,
    rows: usize,
    cols: usize,
}

impl<T: Element> Columns<T> {
    /// The column transforms of a `rows x cols` matrix.
    pub fn new(dev: &Device, rows: usize, cols: usize, rung: Rung) -> Result<Self> {
        let line_kernel = match rung {
            Rung::Register => Some(LineKernel::Register),
            Rung::Coalesced => Some(LineKernel::Coalesced),
            Rung::Global | Rung::Shared => None,
        }
        .filter(|k| k.takes::<T>(rows));
        let kind = if let Some(k) = line_kernel {
            ColKind::Tiles(dev.upload(&twiddle_table::<T>(rows))?, k)
        } else {
            let plan = Plan::new(dev, rows, cols, rung)?;
            if plan.is_global() {
                ColKind::Strided(plan)
            } else {
                ColKind::Transposed(
                    plan,
                    dev.alloc_filled(2 * rows * cols, T::ZERO)?,
                    dev.alloc_filled(2 * rows * cols, T::ZERO)?,
                )
            }
        };
        Ok(Columns { kind, rows, cols })
    }
    /// Transforms the columns of `src` into `dst`, output times `scale`.
    pub fn run(
        &mut self,
        dev: &Device,
        src: &Buffer<T>,
        dst: &mut Buffer<T>,
        inverse: bool,
        scale: T,
    ) -> Result<()> {
        let (rows, cols) = (self.rows, self.cols);
        match &mut self.kind {
            ColKind::Strided(plan) => plan.run_strided(dev, src, dst, inverse, scale),
            ColKind::Transposed(plan, a, b) => {
                transpose(dev, src, a, rows, cols, 1)?;
                plan.run(dev, a, b, inverse, scale)?;
                transpose(dev, b, dst, cols, rows, 1)
            }
            ColKind::Tiles(tw, kernel) => {
                let col = Strides {
                    line: 1,
                    elem: cols,
                };
                let mut lines = with_strides(rows_of(rows, cols, 1, 0), col, col);
                lines.inverse = inverse;
                launch_lines(dev, *kernel, src, dst, tw, tw, lines, scale)
            }
        }
    }
    /// How the column transforms compute.
    pub fn describe(&self) -> String {
        match &self.kind {
            ColKind::Strided(plan) => format!("{}, strided", plan.describe()),
            ColKind::Transposed(plan, ..) => format!("{}, transposed", plan.describe()),
            ColKind::Tiles(_, kernel) => format!(
                "radices {}, in registers, column tiles in place",
                line_radices(self.rows, kernel.points::<T>())
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
        }
    }
}
