//! Launching a kernel: [`launch!`](crate::launch!), which runs one call of a
//! `#[kernel]` function on a [`Device`] (GPU or simulator) or records it into
//! a CUDA graph being captured, and the pieces it is made of.
//!
//! ```ignore
//! // KERNELS: the kernel crate's build (ptxlab_runtime::include_kernels!()).
//! launch!(&dev, &KERNELS, cfg, my_kernels::saxpy(2.5, &x, &mut y))?;
//! launch!(&dev, &KERNELS, cfg, my_kernels::axpy::<f64>(2.0, &x, &mut y))?;
//! launch!(&mut capture, &KERNELS, cfg, my_kernels::axpy::<f32>(2.0, &x, &mut y))?;
//! ```
//!
//! The kernel's path and generic arguments name the instance (its PTX entry,
//! checked at compile time: an instance that was not built does not
//! compile). Each argument is converted to the kernel's parameter type
//! through [`KernelArg`]: `&Buffer<T>` for a `DeviceSlice<T>`, `&mut
//! Buffer<T>` for a `DeviceSliceMut<T>`, scalars as themselves (a literal
//! takes the parameter's type). On a GPU the arguments become the entry's
//! parameters, checked against its PTX signature; on the simulator the same
//! Rust function runs once per simulated thread.

use crate::buffer::{Buffer, View, ViewMut};
use crate::config::{LaunchConfig, Limits, check_launch};
use crate::device::{Device, DeviceKind, OnStream};
use crate::error::{Error, Result};
use crate::graph::Capture;
use crate::module::Kernels;
pub use crate::param::Param;
use ptxlab_device::mem::{DeviceCopy, KernelScalar, ScalarValue};
use ptxlab_device::sim::{self, LaunchSpec, SimOptions};
use ptxlab_device::{DeviceSlice, DeviceSliceMut};
use std::marker::PhantomData;

/// A host value that can be passed for a kernel parameter of type `P`.
///
/// | kernel parameter | host argument |
/// |---|---|
/// | `DeviceSlice<T>` | `&Buffer<T>` (or `&mut Buffer<T>`), or a [`View`] of part of one |
/// | `DeviceSliceMut<T>` | `&mut Buffer<T>`, or a [`ViewMut`] |
/// | a scalar: `u32`, `i32`, `u64`, `usize`, `f32`, `f64` (any [`KernelScalar`], so any `T: Real`), `bool` | the same type |
/// | a `#[repr(C)]` struct or field-less `#[repr(u32)]` enum deriving [`KernelParams`](ptxlab_device::KernelParams) | the same type (a struct travels as one `.align A .b8 name[SIZE]` aggregate) |
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter of type `{P}`",
    label = "this argument",
    note = "a `DeviceSlice<T>` takes `&Buffer<T>`, a `DeviceSliceMut<T>` takes `&mut Buffer<T>`, \
            a scalar takes the same scalar type"
)]
pub trait KernelArg<P> {
    /// Appends the GPU parameters (a buffer is pointer + length).
    fn push_params(&self, out: &mut Vec<Param>);
    /// The value the simulator passes to the kernel function.
    fn sim_value(self) -> P;
}

/// The buffer-like arguments: each passes its device pointer and length to
/// the GPU, and a slice view of its simulator memory to the simulator.
macro_rules! buffer_args {
    ($($arg:ty => $param:ident by $view:ident),* $(,)?) => {$(
        impl<'b, T: DeviceCopy> KernelArg<$param<'b, T>> for $arg {
            fn push_params(&self, out: &mut Vec<Param>) {
                out.push(Param::U64(self.device_ptr()));
                out.push(Param::U64(self.len() as u64));
            }
            fn sim_value(self) -> $param<'b, T> {
                self.$view()
            }
        }
    )*};
}

buffer_args! {
    &'b Buffer<T> => DeviceSlice by sim_slice,
    &'b mut Buffer<T> => DeviceSlice by sim_slice,
    &'b mut Buffer<T> => DeviceSliceMut by sim_slice_mut,
    View<'b, T> => DeviceSlice by sim_slice,
    ViewMut<'b, T> => DeviceSliceMut by sim_slice_mut,
}

impl<S: KernelScalar> KernelArg<S> for S {
    fn push_params(&self, out: &mut Vec<Param>) {
        out.push(match self.scalar_value() {
            ScalarValue::U32(v) => Param::U32(v),
            ScalarValue::I32(v) => Param::I32(v),
            ScalarValue::U64(v) => Param::U64(v),
            ScalarValue::F32(v) => Param::F32(v),
            ScalarValue::F64(v) => Param::F64(v),
            ScalarValue::U8(v) => Param::U8(v),
            ScalarValue::Bytes(v) => Param::Bytes(v),
        });
    }
    fn sim_value(self) -> S {
        self
    }
}

/// One call of a kernel with its arguments bound, ready to launch on either
/// backend (what [`launch!`](crate::launch!) builds).
pub trait KernelCall {
    /// The GPU parameters, in the order of the kernel's signature.
    fn push_params(&self, out: &mut Vec<Param>);
    /// Runs the call on the simulator as entry `entry`, after the launch
    /// checks every backend makes.
    fn run_sim(self, entry: &'static str, cfg: &LaunchConfig, options: &SimOptions) -> Result<()>;
}

/// A kernel function `F` with its host arguments `A`, matched to its
/// parameter types `P` (made by the `bindN` functions).
pub struct Bound<F, A, P> {
    f: F,
    args: A,
    _params: PhantomData<fn() -> P>,
}

impl<F, A, P> std::fmt::Debug for Bound<F, A, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bound(kernel call)")
    }
}

macro_rules! bind_arity {
    ($bind:ident; $($p:ident $a:ident $i:tt),*) => {
        /// Binds a kernel function to its arguments (used by `launch!`).
        #[allow(clippy::too_many_arguments, clippy::type_complexity)]
        pub fn $bind<F, $($p, $a),*>(f: F, args: ($($a,)*)) -> Bound<F, ($($a,)*), ($($p,)*)>
        where
            F: Fn($($p),*) + Sync,
            $($a: KernelArg<$p>, $p: Copy + Send + Sync,)*
        {
            Bound { f, args, _params: PhantomData }
        }

        impl<F, $($p, $a),*> KernelCall for Bound<F, ($($a,)*), ($($p,)*)>
        where
            F: Fn($($p),*) + Sync,
            $($a: KernelArg<$p>, $p: Copy + Send + Sync,)*
        {
            #[allow(unused_variables)]
            fn push_params(&self, out: &mut Vec<Param>) {
                $( self.args.$i.push_params(out); )*
            }
            #[allow(unused_variables, clippy::unused_unit)]
            fn run_sim(self, entry: &'static str, cfg: &LaunchConfig, options: &SimOptions) -> Result<()> {
                let f = self.f;
                let vals = ($( self.args.$i.sim_value(), )*);
                sim_launch(entry, cfg, options, move || f($(vals.$i),*))
            }
        }
    };
}
bind_arity!(bind0;);
bind_arity!(bind1; P0 A0 0);
bind_arity!(bind2; P0 A0 0, P1 A1 1);
bind_arity!(bind3; P0 A0 0, P1 A1 1, P2 A2 2);
bind_arity!(bind4; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3);
bind_arity!(bind5; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4);
bind_arity!(bind6; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5);
bind_arity!(bind7; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6);
bind_arity!(bind8; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7);
bind_arity!(bind9; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8);
bind_arity!(bind10; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9);
bind_arity!(bind11; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10);
bind_arity!(bind12; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11);
bind_arity!(bind13; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12);
bind_arity!(bind14; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13);
bind_arity!(bind15; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14);
bind_arity!(bind16; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15);

/// Where a launch goes: a [`Device`] (`&dev`: GPU or simulator), one of a
/// GPU's streams (`dev.on_stream(Some(&stream))`), or a CUDA graph under
/// capture (`&mut capture`).
pub trait Launch {
    /// Launches `call` as entry `entry` of `kernels` with `cfg`.
    fn launch_call<C: KernelCall>(
        self,
        kernels: &Kernels,
        entry: &'static str,
        cfg: &LaunchConfig,
        call: C,
    ) -> Result<()>;
}

impl Launch for &Device {
    fn launch_call<C: KernelCall>(
        self,
        kernels: &Kernels,
        entry: &'static str,
        cfg: &LaunchConfig,
        call: C,
    ) -> Result<()> {
        match self.kind() {
            DeviceKind::Gpu(g) => {
                let mut p = Vec::new();
                call.push_params(&mut p);
                g.launch_params(kernels, entry, cfg, &p)
            }
            DeviceKind::Sim => call.run_sim(entry, cfg, &self.sim_options()),
        }
    }
}

impl Launch for &mut Capture<'_> {
    fn launch_call<C: KernelCall>(
        self,
        kernels: &Kernels,
        entry: &'static str,
        cfg: &LaunchConfig,
        call: C,
    ) -> Result<()> {
        let mut p = Vec::new();
        call.push_params(&mut p);
        self.record(kernels, entry, cfg, &p)
    }
}

impl Launch for OnStream<'_> {
    fn launch_call<C: KernelCall>(
        self,
        kernels: &Kernels,
        entry: &'static str,
        cfg: &LaunchConfig,
        call: C,
    ) -> Result<()> {
        match (self.dev.kind(), self.stream) {
            (DeviceKind::Gpu(g), Some(s)) => {
                let mut p = Vec::new();
                call.push_params(&mut p);
                g.launch_params_on(s.cuda(), kernels, entry, cfg, &p)
            }
            _ => self.dev.launch_call(kernels, entry, cfg, call),
        }
    }
}

/// Runs a kernel closure on the simulator after the same launch checks as
/// the GPU (the simulator's branch of [`Launch`]).
fn sim_launch<F: Fn() + Sync>(
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
    let cluster = cfg.cluster.unwrap_or(ptxlab_device::Dim3::new(1, 1, 1));
    sim::launch_cluster(&spec, cluster, options, f).map_err(Error::from)
}

/// Launches one call of a `#[kernel]` function:
/// `launch!(target, &KERNELS, cfg, path::to::kernel(args...))`, or
/// `path::to::kernel::<T, ...>(args...)` for an instance of a generic kernel.
///
/// * `target`: `&Device` (a GPU or the simulator) or `&mut Capture` (a CUDA
///   graph being recorded; see [`Graph::capture`](crate::Graph::capture)).
/// * `KERNELS`: the kernel crate's [`Kernels`], as `ptxlab_builder::Embed`
///   generated it (`include_kernels!()`).
/// * `cfg`: a [`LaunchConfig`] (grid, block, dynamic shared memory, module).
/// * the call: the kernel's Rust path, its generic arguments (an instance
///   named in the kernel's `instances(...)`; any other is a compile error
///   that lists the built ones), and its arguments: `&Buffer<T>` for a
///   `DeviceSlice<T>` parameter, `&mut Buffer<T>` for a `DeviceSliceMut<T>`,
///   scalars for scalars (see [`KernelArg`]).
///
/// On a GPU the launch shape is checked against the device and the entry's
/// launch bounds, and the parameters against its PTX signature; on the
/// simulator the Rust function runs once per simulated thread, after the
/// same shape checks, with the device's [`SimOptions`].
#[macro_export]
macro_rules! launch {
    ($($t:tt)*) => {
        $crate::__launch!($crate, $($t)*)
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::ParamKind;
    use ptxlab_device::KernelParams;
    use ptxlab_device::kernel;
    use ptxlab_device::math::Real;

    /// Which way [`scaled_copy`] walks.
    #[derive(Clone, Copy, Debug, PartialEq, KernelParams)]
    #[repr(u32)]
    enum Order {
        Forward = 0,
        Reverse = 7,
    }

    /// The scalars of one [`scaled_copy`] call.
    #[derive(Clone, Copy, KernelParams)]
    #[repr(C)]
    struct Scale<T: Real> {
        n: u32,
        negate: bool,
        a: T,
        order: Order,
    }

    #[kernel(launch_bounds(64), instances(f32, f64))]
    fn scaled_copy<T: Real>(
        x: DeviceSlice<T>,
        mut y: DeviceSliceMut<T>,
        s: Scale<T>,
        add_one: bool,
    ) {
        let i = ptxlab_device::thread::index_1d();
        if i < s.n as usize {
            let src = match s.order {
                Order::Forward => i,
                Order::Reverse => s.n as usize - 1 - i,
            };
            let mut v = x[src] * s.a;
            if s.negate {
                v = -v;
            }
            if add_one {
                v += T::ONE;
            }
            y[i] = v;
        }
    }

    fn kernels() -> Kernels {
        Kernels {
            crate_name: "test",
            modules: &[],
        }
    }

    #[test]
    fn a_struct_bool_and_enum_parameter_run_on_the_simulator() {
        let dev = Device::sim();
        let x = dev.upload(&[1.0f64, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let mut y = dev.upload(&[0.0f64; 5]).unwrap();
        let cfg = LaunchConfig::for_threads(5, 64).unwrap();
        let s = Scale {
            n: 5,
            negate: true,
            a: 2.0,
            order: Order::Reverse,
        };
        crate::launch!(
            &dev,
            &kernels(),
            cfg,
            scaled_copy::<f64>(&x, &mut y, s, true)
        )
        .unwrap();
        assert_eq!(dev.download(&y).unwrap(), [-9.0, -7.0, -5.0, -3.0, -1.0]);
        let s = Scale {
            n: 4,
            negate: false,
            a: 0.5f32,
            order: Order::Forward,
        };
        let x = dev.upload(&[2.0f32, 4.0, 6.0, 8.0]).unwrap();
        let mut y = dev.upload(&[0.0f32; 4]).unwrap();
        crate::launch!(
            &dev,
            &kernels(),
            cfg,
            scaled_copy::<f32>(&x, &mut y, s, false)
        )
        .unwrap();
        assert_eq!(dev.download(&y).unwrap(), [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn a_struct_travels_as_its_canonical_bytes_and_is_checked_against_the_ptx() {
        let s = Scale {
            n: 3,
            negate: true,
            a: -1.5f64,
            order: Order::Reverse,
        };
        let mut p = Vec::new();
        KernelArg::<Scale<f64>>::push_params(&s, &mut p);
        let [Param::Bytes(b)] = p[..] else {
            panic!("one aggregate parameter expected, got {p:?}")
        };
        // n at 0, negate at 4, a at 8, order at 16; size 24, align 8.
        assert_eq!((b.size, b.align), (24, 8));
        assert_eq!(&b.bytes[0..4], &3u32.to_le_bytes());
        assert_eq!(&b.bytes[4..8], &[1, 0, 0, 0]);
        assert_eq!(&b.bytes[8..16], &(-1.5f64).to_le_bytes());
        assert_eq!(&b.bytes[16..24], &[7, 0, 0, 0, 0, 0, 0, 0]);
        assert!(b.bytes[24..].iter().all(|&v| v == 0));
        let agg = |size, align| ParamKind::Bytes { size, align };
        assert!(p[0].matches(agg(24, 8)));
        assert!(!p[0].matches(agg(16, 8)) && !p[0].matches(agg(24, 4)));
        assert!(!p[0].matches(ParamKind::U64));
        assert_eq!(p[0].ptx(), ".align 8 .b8[24]");
        // A bool is one `.u8`, an enum its `.u32` discriminant.
        let mut p = Vec::new();
        KernelArg::<bool>::push_params(&true, &mut p);
        KernelArg::<Order>::push_params(&Order::Reverse, &mut p);
        assert!(matches!(p[..], [Param::U8(1), Param::U32(7)]));
        assert!(p[0].matches(ParamKind::U8) && !p[0].matches(ParamKind::U32));
    }
}
