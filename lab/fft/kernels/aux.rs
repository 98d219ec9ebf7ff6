//! What both rungs share: the tiled transpose that turns column transforms
//! into row transforms, Bluestein's chirp kernels (any length through a
//! power-of-two convolution), the pre- and post-processing of the real
//! transforms, and row copies.
//!
//! Every element-wise kernel here runs one thread per output element over
//! a grid-stride loop ([`super::BLOCK`] threads per block); "row" means one
//! transform of a batch, stored contiguously.

use super::{C, TILE, TILE_ROWS, load, load_mut, store, twiddle};
use core::ops::{Add, Mul, Sub};
use ptxlab_device::prelude::*;

/// `dst = src^T` for each of the row-major `rows x cols` complex matrices
/// of `src` (`dst` holds `cols x rows` ones; matrix `blockIdx.z`).
///
/// Thread mapping: a block of `TILE x TILE_ROWS` threads moves one `TILE x
/// TILE` tile: it reads the tile's rows (coalesced along `src`'s rows) into
/// shared memory, synchronises, and writes the tile's columns as rows of
/// `dst` (coalesced again). Shared memory: `TILE x (TILE + 1)` complex values
/// (the padding column spreads a tile column over every bank);
/// `super::transpose_shared_bytes(size_of::<T>())` bytes. Grid:
/// `ceil(cols / TILE) x ceil(rows / TILE) x matrices`.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_transpose<T: Real>(src: DeviceSlice<T>, dst: DeviceSliceMut<T>, rows: u32, cols: u32) {
    let t = TILE as usize;
    let tile = shared::dynamic_shared::<T>(0, 2 * t * (t + 1));
    let (rows, cols) = (rows as usize, cols as usize);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let mat = thread::block_idx_z() as usize * rows * cols;
    let c0 = thread::block_idx_x() as usize * t;
    let r0 = thread::block_idx_y() as usize * t;
    let mut y = ty;
    while y < t {
        let (r, c) = (r0 + y, c0 + tx);
        if r < rows && c < cols {
            let v = load(&src, mat + r * cols + c);
            tile.set(2 * (y * (t + 1) + tx), v.re);
            tile.set(2 * (y * (t + 1) + tx) + 1, v.im);
        }
        y += TILE_ROWS as usize;
    }
    sync_threads();
    let mut y = ty;
    while y < t {
        // dst row c0 + y, column r0 + tx = src (r0 + tx, c0 + y).
        let (c, r) = (c0 + y, r0 + tx);
        if r < rows && c < cols {
            let i = 2 * (tx * (t + 1) + y);
            store(
                &dst,
                mat + c * rows + r,
                C::new(tile.get(i), tile.get(i + 1)),
            );
        }
        y += TILE_ROWS as usize;
    }
}

/// Bluestein, step 1: `a[b][k] = x[b][k] chirp[k]` for `k < n`, 0 for
/// `n <= k < m` (`m = a.len() / (2 batches)`, a power of two `>= 2n - 1`,
/// `batches = x.len() / (2n)`, `n = chirp.len() / 2`).
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_chirp_pre<T: Real>(x: DeviceSlice<T>, a: DeviceSliceMut<T>, chirp: DeviceSlice<T>) {
    let n = chirp.len() / 2;
    let batches = x.len() / (2 * n);
    let m = a.len() / (2 * batches);
    for t in thread::grid_stride(batches * m) {
        let (b, k) = (t / m, t % m);
        let v = if k < n {
            load(&x, b * n + k).mul(load(&chirp, k))
        } else {
            C::zero()
        };
        store(&a, t, v);
    }
}

/// Bluestein, step 2: `a[b][k] *= f[k]`, the spectrum of the conjugate
/// chirp (`m = f.len() / 2`, every row of `a`).
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_pointwise<T: Real>(a: DeviceSliceMut<T>, f: DeviceSlice<T>) {
    let m = f.len() / 2;
    for t in thread::grid_stride(a.len() / 2) {
        let v = load_mut(&a, t).mul(load(&f, t % m));
        store(&a, t, v);
    }
}

/// Bluestein, step 3: `y[b][k] = c[b][k] chirp[k] scale` for `k < n`
/// (`n = chirp.len() / 2`; `c`'s rows have `m = c.len() / (2 batches)`
/// elements, `batches = y.len() / (2n)`).
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_chirp_post<T: Real>(
    c: DeviceSlice<T>,
    y: DeviceSliceMut<T>,
    chirp: DeviceSlice<T>,
    scale: T,
) {
    let n = chirp.len() / 2;
    let batches = y.len() / (2 * n);
    let m = c.len() / (2 * batches);
    for t in thread::grid_stride(batches * n) {
        let (b, k) = (t / n, t % n);
        let v = load(&c, b * m + k).mul(load(&chirp, k)).scale(scale);
        store(&y, t, v);
    }
}

/// Real-to-complex post-processing of an even length `n = 2h`: `z` holds
/// the length-`h` transforms of the rows of the real input read as `h`
/// complex values (`z_j = x_2j + i x_2j+1`); `out` gets the `h + 1` outputs
/// `X_k = E_k + w^k O_k` with `E_k = (Z_k + conj Z_(h-k)) / 2`,
/// `O_k = -i (Z_k - conj Z_(h-k)) / 2`, `w = exp(-2 pi i / n)` (`tw`, the
/// length-`n` table; `Z_h = Z_0`).
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_r2c_post<T: Real>(z: DeviceSlice<T>, out: DeviceSliceMut<T>, tw: DeviceSlice<T>) {
    let h = tw.len() / 4;
    let batches = z.len() / (2 * h);
    let half = T::from_f64(0.5);
    for t in thread::grid_stride(batches * (h + 1)) {
        let (b, k) = (t / (h + 1), t % (h + 1));
        let zk = load(&z, b * h + k % h);
        let zc = load(&z, b * h + (h - k) % h).conj();
        let e = zk.add(zc).scale(half);
        let o = zk.sub(zc).mul_i(true).scale(half);
        store(&out, t, e.add(twiddle(&tw, k, false).mul(o)));
    }
}

/// Complex-to-real pre-processing of an even length `n = 2h`: from the
/// `h + 1` values `X_k` of each row of `x` (the imaginary parts of `X_0` and
/// `X_h` ignored, as NumPy does), `z[b][k] = (X_k + conj X_(h-k)) + i w^-k
/// (X_k - conj X_(h-k))` for `k < h`. The unscaled inverse length-`h`
/// transform of `z` times `1/n` is the real output read as complex values.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_c2r_pre<T: Real>(x: DeviceSlice<T>, z: DeviceSliceMut<T>, tw: DeviceSlice<T>) {
    let h = tw.len() / 4;
    let batches = z.len() / (2 * h);
    let real_ends = |v: C<T>, k: usize| {
        if k == 0 || k == h {
            C::new(v.re, T::ZERO)
        } else {
            v
        }
    };
    for t in thread::grid_stride(batches * h) {
        let (b, k) = (t / h, t % h);
        let xk = real_ends(load(&x, b * (h + 1) + k), k);
        let xc = real_ends(load(&x, b * (h + 1) + h - k), h - k).conj();
        let e = xk.add(xc);
        let o = xk.sub(xc).mul(twiddle(&tw, k, true));
        store(&z, t, e.add(o.mul_i(false)));
    }
}

/// `z[i] = x[i] + 0i`: a real array as complex values (the real transforms
/// of odd lengths, which go through a full complex transform).
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_widen<T: Real>(x: DeviceSlice<T>, z: DeviceSliceMut<T>) {
    for i in thread::grid_stride(x.len()) {
        store(&z, i, C::new(x.get(i), T::ZERO));
    }
}

/// The Hermitian extension of rows of `n / 2 + 1` values to rows of `n`
/// (`n = y.len() / (2 batches)`, `batches = x.len() / (2 (n / 2 + 1))`):
/// `y_k = X_k` for `k <= n / 2`, `y_k = conj X_(n-k)` above, the imaginary
/// part of `X_0` (and of `X_(n/2)` for even `n`) ignored.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_hermitian<T: Real>(x: DeviceSlice<T>, y: DeviceSliceMut<T>, n: u32) {
    let n = n as usize;
    let h1 = n / 2 + 1;
    let batches = x.len() / (2 * h1);
    for t in thread::grid_stride(batches * n) {
        let (b, k) = (t / n, t % n);
        let v = if k < h1 {
            load(&x, b * h1 + k)
        } else {
            load(&x, b * h1 + n - k).conj()
        };
        let v = if k == 0 || 2 * k == n {
            C::new(v.re, T::ZERO)
        } else {
            v
        };
        store(&y, t, v);
    }
}

/// `x[i] = re(z[i]) scale`: the real output of an odd-length
/// complex-to-real transform.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_real_part<T: Real>(z: DeviceSlice<T>, x: DeviceSliceMut<T>, scale: T) {
    for i in thread::grid_stride(x.len()) {
        x.set(i, z.get(2 * i) * scale);
    }
}

/// Copies the first `dst_len` complex values of each row of `src` (rows of
/// `src_len`) to the rows of `dst`, times `scale`: a plain copy when the
/// lengths are equal, the first `n / 2 + 1` outputs of an odd-length real
/// transform otherwise.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_copy_rows<T: Real>(
    src: DeviceSlice<T>,
    dst: DeviceSliceMut<T>,
    src_len: u32,
    dst_len: u32,
    scale: T,
) {
    let (sl, dl) = (src_len as usize, dst_len as usize);
    for t in thread::grid_stride(dst.len() / 2) {
        let (b, k) = (t / dl, t % dl);
        store(&dst, t, load(&src, b * sl + k).scale(scale));
    }
}
