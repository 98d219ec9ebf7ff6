//! The vector-add ladder's launchers: rungs, element types (each maps a rung
//! to its kernel) and [`add`], which checks the lengths and computes the grid.

use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use cudarc::driver::DeviceRepr;
use kernels_gpu::vector::{BLOCK, lanes, threads_needed};
use ptxlab_device::math::Real;

/// The rungs of the vector-add ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// One element per thread.
    Scalar,
    /// One 16-byte group per thread (`x4` for f32, `x2` for f64).
    Wide,
}

impl Rung {
    /// All rungs in ladder order.
    pub const ALL: [Rung; 2] = [Rung::Scalar, Rung::Wide];
    /// Label.
    pub fn label(&self) -> &'static str {
        match self {
            Rung::Scalar => "1 element/thread",
            Rung::Wide => "16-byte loads",
        }
    }
    /// Kernel name for element type `T`.
    pub fn kernel<T: Element>(&self) -> &'static str {
        match self {
            Rung::Scalar => T::SCALAR_KERNEL,
            Rung::Wide => T::WIDE_KERNEL,
        }
    }
}

impl std::str::FromStr for Rung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "scalar" => Ok(Rung::Scalar),
            "wide" | "x4" | "x2" => Ok(Rung::Wide),
            _ => Err(Error::input(
                "variant",
                format!("`{s}`; allowed: scalar, wide"),
            )),
        }
    }
}

/// Element types of the vector-add kernels.
pub trait Element:
    Real + DeviceRepr + Send + Sync + ndarray_npy::WritableElement + ndarray_npy::ReadableElement
{
    /// `f32` / `f64`.
    const NAME: &'static str;
    /// Rung 1 kernel.
    const SCALAR_KERNEL: &'static str;
    /// Rung 2 kernel.
    const WIDE_KERNEL: &'static str;
    /// Launches the kernel of `rung`.
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        a: &Buffer<Self>,
        b: &Buffer<Self>,
        c: &mut Buffer<Self>,
    ) -> Result<()>;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const SCALAR_KERNEL: &'static str = "vector_add_f32";
    const WIDE_KERNEL: &'static str = "vector_add_x4_f32";
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        a: &Buffer<f32>,
        b: &Buffer<f32>,
        c: &mut Buffer<f32>,
    ) -> Result<()> {
        match rung {
            Rung::Scalar => launch!(dev, cfg, vector::vector_add_f32(a, b, c)),
            Rung::Wide => launch!(dev, cfg, vector::vector_add_x4_f32(a, b, c)),
        }
    }
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    const SCALAR_KERNEL: &'static str = "vector_add_f64";
    const WIDE_KERNEL: &'static str = "vector_add_x2_f64";
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        a: &Buffer<f64>,
        b: &Buffer<f64>,
        c: &mut Buffer<f64>,
    ) -> Result<()> {
        match rung {
            Rung::Scalar => launch!(dev, cfg, vector::vector_add_f64(a, b, c)),
            Rung::Wide => launch!(dev, cfg, vector::vector_add_x2_f64(a, b, c)),
        }
    }
}

/// The launch configuration of `rung` for `n` elements.
pub fn config<T: Element>(n: usize, rung: Rung) -> Result<LaunchConfig> {
    let per = match rung {
        Rung::Scalar => 1,
        Rung::Wide => lanes::<T>(),
    };
    Ok(LaunchConfig::for_threads(threads_needed(n, per), BLOCK)?)
}

/// `c = a + b` on `dev`. Checks that the three lengths agree and are not zero.
pub fn add<T: Element>(
    dev: &Device,
    rung: Rung,
    module: ModuleKey,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<T>,
) -> Result<()> {
    let n = c.len();
    if a.len() != n || b.len() != n {
        return Err(Error::input(
            "vector add",
            format!(
                "lengths differ: a has {}, b has {}, c has {}; all three must be equal",
                a.len(),
                b.len(),
                n
            ),
        ));
    }
    if n == 0 {
        return Err(Error::input(
            "vector add",
            "length 0; the vectors must have at least one element",
        ));
    }
    T::launch(
        dev,
        config::<T>(n, rung)?.with_module(module),
        rung,
        a,
        b,
        c,
    )
}
