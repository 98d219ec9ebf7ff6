//! The vector-add ladder's launchers: rungs, element types and [`add`],
//! which checks the lengths and computes the grid.

use kernels_gpu::vector::{self as vk, BLOCK, lanes, threads_needed};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use ptxlab_device::math::Real;

/// The rungs of the vector-add ladder (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rung {
    /// One element per thread.
    Scalar,
    /// One 16-byte group per thread (four f32 or two f64).
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
    /// The PTX entry of the rung's kernel for `T` (for reports).
    pub fn entry<T: Element>(&self) -> &'static str {
        match self {
            Rung::Scalar => <T as vk::vector_add::Built>::ENTRY,
            Rung::Wide => <T as vk::vector_add_wide::Built>::ENTRY,
        }
    }
}

/// Element types of the vector-add kernels: f32 and f64, for which both
/// rungs were built.
pub trait Element:
    Real
    + vk::Wide
    + ptxlab_common::runtime::Element
    + Send
    + Sync
    + ndarray_npy::WritableElement
    + ndarray_npy::ReadableElement
    + vk::vector_add::Built
    + vk::vector_add_wide::Built
{
    /// `f32` / `f64`.
    const NAME: &'static str;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
}

impl Element for f64 {
    const NAME: &'static str = "f64";
}

/// Launches the kernel of `rung` (the caller checked the lengths).
pub fn launch_rung<T: Element>(
    dev: &Device,
    cfg: LaunchConfig,
    rung: Rung,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<T>,
) -> Result<()> {
    match rung {
        Rung::Scalar => launch!(dev, cfg, vector::vector_add::<T>(a, b, c)),
        Rung::Wide => launch!(dev, cfg, vector::vector_add_wide::<T>(a, b, c)),
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
    launch_rung(
        dev,
        config::<T>(n, rung)?.with_module(module),
        rung,
        a,
        b,
        c,
    )
}
