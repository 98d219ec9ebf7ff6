//! Pointer-offset views of buffers ([`Span`]) and launches of an already
//! loaded kernel on a chosen stream: how a slab runs the single-GPU kernels
//! on sub-ranges.

use super::element::{ResidualFn, SweepFn};
use super::team::{Member, drv};
use crate::error::{Error, Result};
use crate::runtime::{Buffer, Gpu, LaunchConfig, Param, check_launch};
use cudarc::driver::{
    CudaFunction, CudaStream, LaunchConfig as CuLaunchConfig, PushKernelArg, sys,
};
use ptxlab_device::mem::DeviceCopy;
use ptxlab_device::{DeviceSlice, DeviceSliceMut};
use std::marker::PhantomData;
use std::sync::Arc;

/// A run of elements of one buffer by address (device or simulator host
/// memory): the pointer-offset views the sub-range launches and copies use.
/// Made from a live buffer and used while it lives.
pub(super) struct Span<T> {
    pub(super) addr: u64,
    pub(super) len: usize,
    pub(super) gpu: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Span<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Span<T> {}

impl<T: DeviceCopy> Span<T> {
    pub(super) fn of(buf: &Buffer<T>) -> Self {
        match buf.cuda_slice() {
            Some(s) => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(s, s.stream());
                Self {
                    addr: p,
                    len: buf.len(),
                    gpu: true,
                    _t: PhantomData,
                }
            }
            None => Self {
                addr: crate::runtime::KernelArg::sim_value(buf).as_ptr() as u64,
                len: buf.len(),
                gpu: false,
                _t: PhantomData,
            },
        }
    }
    /// Rows `r0 .. r1` of a row-major buffer of width `nx`.
    pub(super) fn rows(self, nx: usize, r0: usize, r1: usize) -> Result<Self> {
        if r0 > r1 || r1 * nx > self.len {
            return Err(Error::input(
                "slab view",
                format!("rows {r0}..{r1} of a buffer of {} rows", self.len / nx),
            ));
        }
        Ok(Self {
            addr: self.addr + (r0 * nx * std::mem::size_of::<T>()) as u64,
            len: (r1 - r0) * nx,
            ..self
        })
    }
    pub(super) fn overlaps<U>(&self, o: &Span<U>) -> bool {
        let (a0, a1) = (
            self.addr,
            self.addr + (self.len * std::mem::size_of::<T>()) as u64,
        );
        let (b0, b1) = (o.addr, o.addr + (o.len * std::mem::size_of::<U>()) as u64);
        self.gpu == o.gpu && a0 < b1 && b0 < a1
    }
    /// The simulator's read view.
    ///
    /// # Safety
    /// The span must lie in a live simulator buffer for `'a`, and nothing may
    /// write it through another path while the view is used.
    pub(super) unsafe fn sim_ro<'a>(self) -> DeviceSlice<'a, T> {
        // SAFETY: forwarded from the caller.
        unsafe { DeviceSlice::from_raw_parts(self.addr as *const T, self.len) }
    }
    /// The simulator's write view.
    ///
    /// # Safety
    /// The span must lie in a live simulator buffer for `'a`, and no other
    /// view of the same elements may be used while this one is.
    pub(super) unsafe fn sim_rw<'a>(self) -> DeviceSliceMut<'a, T> {
        // SAFETY: forwarded from the caller.
        unsafe { DeviceSliceMut::from_raw_parts(self.addr as *mut T, self.len) }
    }
}

pub(super) fn span_params<T>(s: &Span<T>, out: &mut Vec<Param>) {
    out.push(Param::U64(s.addr));
    out.push(Param::U64(s.len as u64));
}

/// Launches an already-loaded kernel on `stream` (the runtime's own launcher
/// always uses the device's default stream).
pub(super) fn gpu_launch(
    g: &Gpu,
    stream: &CudaStream,
    f: &CudaFunction,
    name: &str,
    cfg: &LaunchConfig,
    params: &[Param],
) -> Result<()> {
    check_launch(name, cfg, &g.info().limits)?;
    if cfg.shared_bytes > 48 * 1024 {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            cfg.shared_bytes as i32,
        )
        .map_err(drv("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))?;
    }
    let lc = CuLaunchConfig {
        grid_dim: (cfg.grid.x, cfg.grid.y, cfg.grid.z),
        block_dim: (cfg.block.x, cfg.block.y, cfg.block.z),
        shared_mem_bytes: cfg.shared_bytes as u32,
    };
    let mut b = stream.launch_builder(f);
    for p in params {
        match p {
            Param::U32(v) => b.arg(v),
            Param::I32(v) => b.arg(v),
            Param::U64(v) => b.arg(v),
            Param::F32(v) => b.arg(v),
            Param::F64(v) => b.arg(v),
        };
    }
    // SAFETY: `params` follow the kernel's PTX signature (pointer and length
    // per slice, then the scalars, in the order of the Rust kernel, which the
    // simulator branch calls with the same values); every span lies inside a
    // live buffer of this GPU (`Span::rows` checks), and the kernel checks
    // `nx * ny` against each length at entry.
    unsafe { b.launch(lc) }.map_err(|e| Error::driver(format!("cuLaunchKernel({name})"), e))?;
    Ok(())
}

pub(super) struct Kern<T> {
    pub(super) name: &'static str,
    pub(super) sim: SweepFn<T>,
    pub(super) gpu: Option<CudaFunction>,
}

pub(super) struct KernR<T> {
    pub(super) name: &'static str,
    pub(super) sim: ResidualFn<T>,
    pub(super) gpu: Option<CudaFunction>,
}

/// Which stream of a GPU slab a launch goes to.
#[derive(Clone, Copy)]
pub(super) enum Lane {
    A,
    B,
}

pub(super) fn stream_of(mem: &Member, lane: Lane) -> Result<&Arc<CudaStream>> {
    let s = mem
        .streams
        .as_ref()
        .ok_or_else(|| Error::input("device", "a GPU slab without streams"))?;
    Ok(match lane {
        Lane::A => &s.a,
        Lane::B => &s.b,
    })
}
