//! Launching a kernel: the arguments a Rust kernel call turns into (GPU
//! parameters, or the simulator's values), and [`launch!`](crate::launch!),
//! which runs one call of a `#[kernel]` function on either backend.
//!
//! ```ignore
//! // KERNELS: the kernel crate's build (ptxlab_runtime::include_kernels!()).
//! launch!(&dev, &KERNELS, cfg, my_kernels::saxpy(a, &x, &mut y))?;
//! ```
//!
//! On a GPU the kernel's name (the path's last segment) selects the PTX
//! entry, whose parameter list is checked against the arguments; on the
//! simulator the same Rust function runs once per simulated thread. The
//! simulator branch also type-checks the arguments against the kernel's Rust
//! signature at compile time, for both backends.

use crate::buffer::Buffer;
use crate::config::{LaunchConfig, Limits, check_launch};
use crate::error::{Error, Result};
use crate::module::ParamKind;
use ptxlab_device::mem::DeviceCopy;
use ptxlab_device::sim::{self, LaunchSpec, SimOptions};
use ptxlab_device::{DeviceSlice, DeviceSliceMut};

/// A raw kernel parameter for the GPU.
#[derive(Debug, Clone, Copy)]
pub enum Param {
    /// `.u32`
    U32(u32),
    /// `.s32`
    I32(i32),
    /// `.u64` (pointers and lengths)
    U64(u64),
    /// `.f32`
    F32(f32),
    /// `.f64`
    F64(f64),
}

impl Param {
    /// Whether the PTX type `kind` takes this value.
    pub fn matches(&self, kind: ParamKind) -> bool {
        matches!(
            (self, kind),
            (Param::U32(_) | Param::I32(_), ParamKind::U32)
                | (Param::U64(_), ParamKind::U64)
                | (Param::F32(_), ParamKind::F32)
                | (Param::F64(_), ParamKind::F64)
        )
    }
    /// The PTX type of this value, for messages.
    pub fn ptx(&self) -> String {
        match self {
            Param::U32(_) => ".u32",
            Param::I32(_) => ".s32",
            Param::U64(_) => ".u64",
            Param::F32(_) => ".f32",
            Param::F64(_) => ".f64",
        }
        .into()
    }
    /// Appends the value to a cudarc launch.
    pub(crate) fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>) {
        use cudarc::driver::PushKernelArg;
        match self {
            Param::U32(v) => b.arg(v),
            Param::I32(v) => b.arg(v),
            Param::U64(v) => b.arg(v),
            Param::F32(v) => b.arg(v),
            Param::F64(v) => b.arg(v),
        };
    }
}

/// A Rust value that can be a kernel argument on both backends.
pub trait KernelArg {
    /// The value the simulator passes to the kernel function.
    type Sim: Copy + Send + Sync;
    /// Appends the GPU parameters (a buffer is pointer + length).
    fn push_params(&self, out: &mut Vec<Param>);
    /// The simulator's argument.
    fn sim_value(self) -> Self::Sim;
}

impl<'b, T: DeviceCopy> KernelArg for &'b Buffer<T> {
    type Sim = DeviceSlice<'b, T>;
    fn push_params(&self, out: &mut Vec<Param>) {
        out.push(Param::U64(self.device_ptr()));
        out.push(Param::U64(self.len() as u64));
    }
    fn sim_value(self) -> DeviceSlice<'b, T> {
        // SAFETY: the simulator buffer is live for 'b and `len` long; kernels
        // only read through a `DeviceSlice`.
        unsafe { DeviceSlice::from_raw_parts(self.host_ptr(), self.len()) }
    }
}

impl<'b, T: DeviceCopy> KernelArg for &'b mut Buffer<T> {
    type Sim = DeviceSliceMut<'b, T>;
    fn push_params(&self, out: &mut Vec<Param>) {
        out.push(Param::U64(self.device_ptr()));
        out.push(Param::U64(self.len() as u64));
    }
    fn sim_value(self) -> DeviceSliceMut<'b, T> {
        // SAFETY: the buffer is borrowed mutably for 'b (the launch), `len`
        // long; simulated writes are relaxed atomics into its cells.
        unsafe { DeviceSliceMut::from_raw_parts(self.host_ptr(), self.len()) }
    }
}

macro_rules! scalar_arg {
    ($($t:ty => $v:ident as $c:ty),*) => {$(
        impl KernelArg for $t {
            type Sim = $t;
            fn push_params(&self, out: &mut Vec<Param>) {
                out.push(Param::$v(*self as $c));
            }
            fn sim_value(self) -> $t {
                self
            }
        }
    )*};
}
scalar_arg!(u32 => U32 as u32, i32 => I32 as i32, u64 => U64 as u64, usize => U64 as u64, f32 => F32 as f32, f64 => F64 as f64);

/// Calls a kernel function with a tuple of simulator arguments.
pub trait CallWith<Args> {
    /// `self(args.0, args.1, ...)`.
    fn call_with(&self, args: Args);
}
macro_rules! impl_call {
    ($($t:ident),*) => {
        impl<F: Fn($($t),*), $($t: Copy),*> CallWith<($($t,)*)> for F {
            #[allow(non_snake_case)]
            fn call_with(&self, args: ($($t,)*)) {
                let ($($t,)*) = args;
                self($($t),*)
            }
        }
    };
}
impl_call!();
impl_call!(A);
impl_call!(A, B);
impl_call!(A, B, C);
impl_call!(A, B, C, D);
impl_call!(A, B, C, D, E);
impl_call!(A, B, C, D, E, G);
impl_call!(A, B, C, D, E, G, H);
impl_call!(A, B, C, D, E, G, H, I);
impl_call!(A, B, C, D, E, G, H, I, J);
impl_call!(A, B, C, D, E, G, H, I, J, K);
impl_call!(A, B, C, D, E, G, H, I, J, K, L);
impl_call!(A, B, C, D, E, G, H, I, J, K, L, M);

/// Runs a kernel closure on the simulator after the same checks as the GPU,
/// with the default [`SimOptions`] (race detection on unless turned off).
pub fn sim_launch<F: Fn() + Sync>(kernel: &'static str, cfg: &LaunchConfig, f: F) -> Result<()> {
    sim_launch_with(kernel, cfg, &SimOptions::default(), f)
}

/// [`sim_launch`] with explicit simulator options.
pub fn sim_launch_with<F: Fn() + Sync>(
    kernel: &'static str,
    cfg: &LaunchConfig,
    options: &SimOptions,
    f: F,
) -> Result<()> {
    check_launch(kernel, cfg, &Limits::SIM)?;
    let spec = LaunchSpec {
        kernel,
        grid: cfg.grid,
        block: cfg.block,
        shared_bytes: cfg.shared_bytes,
    };
    sim::launch_with(&spec, options, f).map_err(Error::from)
}

/// Launches one call of a `#[kernel]` function on a [`Device`](crate::Device):
/// `launch!(&dev, &KERNELS, cfg, path::to::kernel(args...))`.
///
/// * `KERNELS`: the kernel crate's [`Kernels`](crate::Kernels), as
///   `ptxlab_builder::Embed` generated it (`include_kernels!()`).
/// * `cfg`: a [`LaunchConfig`] (grid, block, dynamic shared memory, module key).
/// * the call: the kernel's Rust path and its arguments: `&Buffer<T>` for a
///   `DeviceSlice<T>` parameter, `&mut Buffer<T>` for a `DeviceSliceMut<T>`,
///   and scalars (`u32`, `i32`, `u64`, `usize`, `f32`, `f64`).
///
/// On a GPU the path's last segment names the PTX entry, the launch shape is
/// checked against the device and the kernel's launch bounds, and the
/// parameters against the entry's PTX signature; on the simulator the Rust
/// function runs once per simulated thread, after the same shape checks,
/// with the device's [`SimOptions`] (race detection). The
/// kernel's name is written once, and the arguments are type-checked against
/// its Rust signature at compile time.
#[macro_export]
macro_rules! launch {
    ($dev:expr, $kernels:expr, $cfg:expr, :: $($seg:ident)::+ ( $($arg:expr),* $(,)? )) => {
        $crate::launch!(@go $dev, $kernels, $cfg, [:: $($seg)::+], [$($seg)::+], ($($arg),*))
    };
    ($dev:expr, $kernels:expr, $cfg:expr, $($seg:ident)::+ ( $($arg:expr),* $(,)? )) => {
        $crate::launch!(@go $dev, $kernels, $cfg, [$($seg)::+], [$($seg)::+], ($($arg),*))
    };
    (@go $dev:expr, $kernels:expr, $cfg:expr, [$($path:tt)+], [$($seg:ident)::+], ($($arg:expr),*)) => {{
        let __dev: &$crate::Device = $dev;
        let __cfg: $crate::LaunchConfig = $cfg;
        const __NAME: &str = $crate::__last_segment!($($seg)::+);
        match __dev.kind() {
            $crate::DeviceKind::Gpu(__g) => {
                let mut __p = ::std::vec::Vec::new();
                $( $crate::KernelArg::push_params(&$arg, &mut __p); )*
                __g.launch($kernels, __NAME, &__cfg, &__p)
            }
            $crate::DeviceKind::Sim => {
                let __vals = ( $( $crate::KernelArg::sim_value($arg), )* );
                $crate::sim_launch_with(__NAME, &__cfg, &__dev.sim_options(), move || {
                    $crate::CallWith::call_with(&$($path)+, __vals)
                })
            }
        }
    }};
}

/// The last segment of a path, as a string (`a::b::c` -> `"c"`).
#[doc(hidden)]
#[macro_export]
macro_rules! __last_segment {
    ($last:ident) => {
        ::core::stringify!($last)
    };
    ($first:ident :: $($rest:ident)::+) => {
        $crate::__last_segment!($($rest)::+)
    };
}
