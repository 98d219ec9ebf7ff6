//! [`ptxlab_device::println!`] in a kernel: the same lines on the GPU and
//! in the simulator.

use ptxlab_device::prelude::*;

/// Threads of [`debug_println`] per block.
pub const PRINT_THREADS: u32 = 64;

/// `out[i] = 2 x[i]`, and the first four threads print their index, `x[i]`
/// with three decimals, `2 x[i]` and its bits: one `vprintf` each on the
/// GPU, one line each on standard output in the simulator.
///
/// Thread mapping: one element per thread.
#[kernel(launch_bounds(64))]
pub fn debug_println(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        let v = 2.0 * x.get(i);
        if i < 4 {
            ptxlab_device::println!(
                "thread {}: x = {:.3}, 2x = {}, bits {:#x}",
                i,
                x.get(i),
                v,
                v.to_bits()
            );
        }
        out.set(i, v);
    }
}
