//! [`Fft`]: what `ptxlab fft` computes (1-D or 2-D, complex or real,
//! forward or inverse), put together from [`Plan`]s and [`Columns`].

use super::launch::{Columns, Plan, Rung};
use super::lines::{Element, twiddle_table};
use kernels_gpu::fft::BLOCK;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};

/// The transform: `rows` rows of length `n` (the last axis), as a batch of
/// 1-D transforms or one 2-D transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Rows (the batch of 1-D transforms, or the first axis of a 2-D one).
    pub rows: usize,
    /// Length of the last axis (of the real array for real transforms).
    pub n: usize,
    /// One 2-D transform instead of `rows` 1-D ones.
    pub two_d: bool,
    /// Real-to-complex (forward) or complex-to-real (inverse).
    pub real: bool,
    /// Inverse transform (scaled by `1/n`, NumPy's convention).
    pub inverse: bool,
}

impl Spec {
    /// Complex values per output row of a real forward transform (and per
    /// input row of an inverse one): `n / 2 + 1`.
    pub fn half(&self) -> usize {
        self.n / 2 + 1
    }
    /// The input's shape (`[rows, cols]`) and whether it is complex.
    pub fn input_shape(&self) -> ([usize; 2], bool) {
        match (self.real, self.inverse) {
            (true, false) => ([self.rows, self.n], false),
            (true, true) => ([self.rows, self.half()], true),
            _ => ([self.rows, self.n], true),
        }
    }
    /// The output's shape and whether it is complex.
    pub fn output_shape(&self) -> ([usize; 2], bool) {
        match (self.real, self.inverse) {
            (true, false) => ([self.rows, self.half()], true),
            (true, true) => ([self.rows, self.n], false),
            _ => ([self.rows, self.n], true),
        }
    }
    /// Values of `T` in the input buffer.
    pub fn input_len(&self) -> usize {
        let ([r, c], cx) = self.input_shape();
        r * c * if cx { 2 } else { 1 }
    }
    /// Values of `T` in the output buffer.
    pub fn output_len(&self) -> usize {
        let ([r, c], cx) = self.output_shape();
        r * c * if cx { 2 } else { 1 }
    }
    /// Checks the shape: both sizes at least 1, real transforms of the
    /// last axis at least 2 long.
    pub fn check(&self) -> Result<()> {
        if self.rows == 0 || self.n == 0 {
            return Err(Error::input(
                "--shape",
                format!(
                    "{}x{}: the array is empty; every dimension must be at least 1",
                    self.rows, self.n
                ),
            ));
        }
        if self.real && self.n < 2 {
            return Err(Error::input(
                "--shape",
                format!(
                    "last axis {}: a real transform needs a length of at least 2",
                    self.n
                ),
            ));
        }
        Ok(())
    }
}

/// Every plan and buffer of one [`Spec`] on one device and rung.
pub struct Fft<T: Element> {
    /// The transform.
    pub spec: Spec,
    /// The rung.
    pub rung: Rung,
    rows: Plan<T>,
    cols: Option<Columns<T>>,
    tw: Option<Buffer<T>>,
    w1: Buffer<T>,
    w2: Buffer<T>,
    y: Option<Buffer<T>>,
}

/// A launch of `count` grid-stride threads.
fn elementwise(count: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig::for_threads(count.clamp(1, 1 << 24), BLOCK)?)
}

impl<T: Element> Fft<T> {
    /// Builds the plans of `spec` for `rung` on `dev`.
    pub fn new(dev: &Device, spec: Spec, rung: Rung) -> Result<Self> {
        spec.check()?;
        let even_real = spec.real && spec.n.is_multiple_of(2);
        let len = if even_real { spec.n / 2 } else { spec.n };
        let rows = Plan::new(dev, len, spec.rows, rung)?;
        let col_width = if spec.real { spec.half() } else { spec.n };
        let cols = if spec.two_d {
            Some(Columns::new(dev, spec.rows, col_width, rung)?)
        } else {
            None
        };
        let tw = if even_real {
            Some(dev.upload(&twiddle_table::<T>(spec.n))?)
        } else {
            None
        };
        // Intermediate rows: the 2-D and real transforms need them.
        let w = if spec.real || spec.two_d {
            2 * spec.rows * len
        } else {
            0
        };
        let w2 = if spec.real && !even_real { w } else { 0 };
        let y = if spec.two_d {
            Some(dev.alloc_filled(2 * spec.rows * col_width, T::ZERO)?)
        } else {
            None
        };
        Ok(Fft {
            spec,
            rung,
            rows,
            cols,
            tw,
            w1: dev.alloc_filled(w, T::ZERO)?,
            w2: dev.alloc_filled(w2, T::ZERO)?,
            y,
        })
    }

    /// How the row (and column) transforms compute, in words.
    pub fn describe(&self) -> String {
        match &self.cols {
            None => format!("rows: {}", self.rows.describe()),
            Some(c) => format!("rows: {}; columns: {}", self.rows.describe(), c.describe()),
        }
    }

    /// Runs the transform of `input` into `out` (lengths
    /// [`Spec::input_len`] and [`Spec::output_len`]).
    pub fn run(&mut self, dev: &Device, input: &Buffer<T>, out: &mut Buffer<T>) -> Result<()> {
        let s = self.spec;
        if input.len() != s.input_len() || out.len() != s.output_len() {
            return Err(Error::input(
                "fft",
                format!(
                    "buffers of {} and {} values; this transform takes {} and gives {}",
                    input.len(),
                    out.len(),
                    s.input_len(),
                    s.output_len()
                ),
            ));
        }
        let inv = s.inverse;
        let row_scale = T::from_f64(if inv { 1.0 / s.n as f64 } else { 1.0 });
        let col_scale = T::from_f64(if inv { 1.0 / s.rows as f64 } else { 1.0 });
        match (s.real, s.two_d) {
            (false, false) => self.rows.run(dev, input, out, inv, row_scale),
            (false, true) => {
                let cols = self.cols.as_mut().expect("2-D plans have columns");
                if inv {
                    cols.run(dev, input, &mut self.w1, true, col_scale)?;
                    self.rows.run(dev, &self.w1, out, true, row_scale)
                } else {
                    self.rows.run(dev, input, &mut self.w1, false, T::ONE)?;
                    cols.run(dev, &self.w1, out, false, T::ONE)
                }
            }
            (true, false) if !inv => self.r2c(dev, input, out),
            (true, false) => self.c2r(dev, input, out, row_scale),
            (true, true) if !inv => {
                let mut y = self.y.take().expect("2-D plans have a middle buffer");
                let r = self.r2c(dev, input, &mut y).and_then(|()| {
                    let cols = self.cols.as_mut().expect("2-D plans have columns");
                    cols.run(dev, &y, out, false, T::ONE)
                });
                self.y = Some(y);
                r
            }
            (true, true) => {
                let mut y = self.y.take().expect("2-D plans have a middle buffer");
                let cols = self.cols.as_mut().expect("2-D plans have columns");
                let r = cols
                    .run(dev, input, &mut y, true, col_scale)
                    .and_then(|()| self.c2r(dev, &y, out, row_scale));
                self.y = Some(y);
                r
            }
        }
    }

    /// The real-to-complex transform of the rows of `x` into `out` (rows of
    /// `n / 2 + 1`).
    fn r2c(&mut self, dev: &Device, x: &Buffer<T>, out: &mut Buffer<T>) -> Result<()> {
        let (n, rows) = (self.spec.n, self.spec.rows);
        match &self.tw {
            Some(tw) => {
                // The real rows read as n/2 complex values each.
                self.rows.run(dev, x, &mut self.w1, false, T::ONE)?;
                launch!(
                    dev,
                    elementwise(rows * (n / 2 + 1))?,
                    fft::aux::fft_r2c_post::<T>(&self.w1, out, tw)
                )
            }
            None => {
                launch!(
                    dev,
                    elementwise(rows * n)?,
                    fft::aux::fft_widen::<T>(x, &mut self.w1)
                )?;
                self.rows.run(dev, &self.w1, &mut self.w2, false, T::ONE)?;
                launch!(
                    dev,
                    elementwise(rows * (n / 2 + 1))?,
                    fft::aux::fft_copy_rows::<T>(
                        &self.w2,
                        out,
                        n as u32,
                        (n / 2 + 1) as u32,
                        T::ONE
                    )
                )
            }
        }
    }

    /// The complex-to-real transform of the rows of `x` (`n / 2 + 1` values
    /// each) into the real rows of `out`, times `scale`.
    fn c2r(&mut self, dev: &Device, x: &Buffer<T>, out: &mut Buffer<T>, scale: T) -> Result<()> {
        let (n, rows) = (self.spec.n, self.spec.rows);
        match &self.tw {
            Some(tw) => {
                launch!(
                    dev,
                    elementwise(rows * n / 2)?,
                    fft::aux::fft_c2r_pre::<T>(x, &mut self.w1, tw)
                )?;
                // The output's real rows, written as n/2 complex values each.
                self.rows.run(dev, &self.w1, out, true, scale)
            }
            None => {
                launch!(
                    dev,
                    elementwise(rows * n)?,
                    fft::aux::fft_hermitian::<T>(x, &mut self.w1, n as u32)
                )?;
                self.rows.run(dev, &self.w1, &mut self.w2, true, scale)?;
                launch!(
                    dev,
                    elementwise(rows * n)?,
                    fft::aux::fft_real_part::<T>(&self.w2, out, T::ONE)
                )
            }
        }
    }
}
