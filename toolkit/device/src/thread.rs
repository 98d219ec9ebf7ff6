//! Thread, block and grid indices, the usual index helpers, grid-stride loops
//! and the block barrier.
//!
//! Axis convention used everywhere in this project: `x` is the fastest-varying
//! index (the column of a row-major matrix), `y` the row.

pub use crate::dim3::Dim3;

#[cfg(target_arch = "nvptx64")]
mod imp {
    use core::arch::nvptx as n;
    macro_rules! sreg {
        ($($name:ident => $f:ident),* $(,)?) => {$(
            #[inline(always)]
            pub fn $name() -> u32 {
                // SAFETY: reading a PTX special register has no preconditions.
                unsafe { n::$f() as u32 }
            }
        )*};
    }
    sreg! {
        thread_idx_x => _thread_idx_x, thread_idx_y => _thread_idx_y, thread_idx_z => _thread_idx_z,
        block_idx_x => _block_idx_x, block_idx_y => _block_idx_y, block_idx_z => _block_idx_z,
        block_dim_x => _block_dim_x, block_dim_y => _block_dim_y, block_dim_z => _block_dim_z,
        grid_dim_x => _grid_dim_x, grid_dim_y => _grid_dim_y, grid_dim_z => _grid_dim_z,
    }
    #[inline(always)]
    pub fn sync_threads() {
        // SAFETY: `bar.sync 0`; the contract that every thread of the block
        // reaches it is the caller's (see `sync_threads` docs).
        unsafe { n::_syncthreads() }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use crate::sim;
    macro_rules! sreg {
        ($($name:ident => $field:ident . $axis:ident),* $(,)?) => {$(
            #[inline]
            pub fn $name() -> u32 {
                sim::with_thread(|t| t.$field.$axis)
            }
        )*};
    }
    sreg! {
        thread_idx_x => thread_idx.x, thread_idx_y => thread_idx.y, thread_idx_z => thread_idx.z,
        block_idx_x => block_idx.x, block_idx_y => block_idx.y, block_idx_z => block_idx.z,
        block_dim_x => block_dim.x, block_dim_y => block_dim.y, block_dim_z => block_dim.z,
        grid_dim_x => grid_dim.x, grid_dim_y => grid_dim.y, grid_dim_z => grid_dim.z,
    }
    #[track_caller]
    pub fn sync_threads() {
        sim::sync_threads(core::panic::Location::caller())
    }
}

pub use imp::{
    block_dim_x, block_dim_y, block_dim_z, block_idx_x, block_idx_y, block_idx_z, grid_dim_x,
    grid_dim_y, grid_dim_z, thread_idx_x, thread_idx_y, thread_idx_z,
};

/// `threadIdx`.
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    Dim3::new(thread_idx_x(), thread_idx_y(), thread_idx_z())
}
/// `blockIdx`.
#[inline(always)]
pub fn block_idx() -> Dim3 {
    Dim3::new(block_idx_x(), block_idx_y(), block_idx_z())
}
/// `blockDim`.
#[inline(always)]
pub fn block_dim() -> Dim3 {
    Dim3::new(block_dim_x(), block_dim_y(), block_dim_z())
}
/// `gridDim`.
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    Dim3::new(grid_dim_x(), grid_dim_y(), grid_dim_z())
}

/// Global 1D index: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index_1d() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// Global 2D index `(x, y)`: `x` is the column (fastest-varying), `y` the row.
#[inline(always)]
pub fn index_2d() -> (usize, usize) {
    (
        block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize,
        block_idx_y() as usize * block_dim_y() as usize + thread_idx_y() as usize,
    )
}

/// Linear index of the thread inside its block (`x` fastest).
#[inline(always)]
pub fn thread_rank() -> u32 {
    thread_idx_x() + block_dim_x() * (thread_idx_y() + block_dim_y() * thread_idx_z())
}

/// Threads in the block.
#[inline(always)]
pub fn block_size() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}

/// Total threads in the 1D grid (`gridDim.x * blockDim.x`): the stride of a
/// grid-stride loop.
#[inline(always)]
pub fn grid_size_1d() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// Grid-stride iteration over `0..n`: thread `t` of a grid of `T` threads visits
/// `t, t + T, t + 2T, ...`. Consecutive threads touch consecutive elements, so
/// every step is coalesced, and any grid size covers any `n`.
#[inline(always)]
pub fn grid_stride(n: usize) -> GridStride {
    GridStride {
        next: index_1d(),
        stride: grid_size_1d(),
        end: n,
    }
}

/// Iterator returned by [`grid_stride`].
#[derive(Debug, Clone)]
pub struct GridStride {
    next: usize,
    stride: usize,
    end: usize,
}

impl Iterator for GridStride {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.next < self.end {
            let i = self.next;
            self.next += self.stride;
            Some(i)
        } else {
            None
        }
    }
}

/// Block-wide barrier (`__syncthreads`, `bar.sync 0`): no thread passes until
/// every thread of the block has arrived, and shared-memory writes made before
/// it are visible to every thread after it.
///
/// Every thread of the block must reach the *same* call. A barrier inside a
/// branch that only some threads take deadlocks or corrupts on the GPU; the
/// simulator reports it as a divergent barrier naming the call site.
#[inline(always)]
#[track_caller]
pub fn sync_threads() {
    imp::sync_threads()
}

/// `x`, through a register move the compiler may neither look through nor
/// move: what a loop body derives from `opaque(x)` is computed inside the
/// loop instead of hoisted out of it. A kernel whose loop holds many
/// loop-invariant addresses (a tile's swizzled shared-memory offsets for
/// every fragment) can spend fewer registers, and spill none, by
/// recomputing them each trip, at an instruction or two an address.
/// The identity in the simulator.
#[inline(always)]
pub fn opaque(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a register-to-register move; not `pure`, so the compiler
        // keeps it where it is written (once per loop trip).
        unsafe {
            core::arch::asm!("mov.b32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                options(nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x
    }
}
