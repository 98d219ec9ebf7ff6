//! Rungs 5 to 5d of the SGEMM ladder ([`matmul_async`]): rung 4b's tile
//! with the tiles brought in by asynchronous copies (`cp.async`), four
//! stages deep, `A` row-major in shared memory.

use super::tile::{Stage, copy_group, ld4, outer8, store_patch};
use super::*;
use ptxlab_device::mem::F32x4;
use ptxlab_device::pipeline::CpAsyncPipeline;

/// Rung 5: stages in flight (tiles copied ahead of the one being multiplied).
pub const ASYNC_STAGES: usize = 4;
/// Rung 5: `k` per tile.
pub const ASYNC_BK: usize = 8;

/// Rung 5: floats per row of `As` (`A`'s 8 columns, unpadded).
pub const ASYNC_AS_LD: usize = 8;
/// Rungs 5c and 5d: floats per row of `As`, padded from 8 to 12 so the two
/// rows a warp reads with one scalar load (4 apart: 192 bytes) fall in
/// different banks; still a multiple of 4 (16-byte `cp.async` targets).
pub const ASYNC_AS_LD_SCALAR: usize = 12;

/// Dynamic shared memory of rungs 5 to 5d: [`ASYNC_STAGES`] stages of
/// `As[128][a_ld]` (row-major, as in global memory) then as many of
/// `Bs[8][128]`: 32 KiB with `a_ld = 8`, 40 KiB with 12.
pub const fn async_shared_bytes(a_ld: usize) -> usize {
    shared::shared_bytes::<f32>(0, ASYNC_STAGES * (VEC_BM * a_ld + ASYNC_BK * VEC_BN))
}

/// Rungs 5 to 5d: rung 4b's 128x128 tile and 8x8 outputs per thread, with
/// the tiles brought in by asynchronous copies (`cp.async`, sm_80+), four
/// stages deep, and `A` kept row-major in shared memory. The instance
/// `<SCALAR_A, BLOCKS>` is the rung: `SCALAR_A` the per-step scalar `A`
/// reads of rungs 5c/5d, `BLOCKS` the blocks per SM of its launch bounds:
///
/// | rung | instance | entry | launch bounds |
/// |---|---|---|---|
/// | 5 | `<false, 1>` | `matmul_async_f32` | `(256)` |
/// | 5b | `<false, 2>` | `matmul_async2_f32` | `(256, 2)` |
/// | 5c | `<true, 2>` | `matmul_asyncs2_f32` | `(256, 2)` |
/// | 5d | `<true, 1>` | `matmul_asyncs_f32` | `(256)` |
///
/// # Rung 5
///
/// What changed from rung 4:
/// * Global to shared without registers: each thread starts one 16-byte
///   `cp.async` for `A` and one for `B` per tile
///   ([`SharedSlice::copy_async`]); rung 4 loaded them into 8 registers,
///   kept them live across the tile's 512 FMAs, then stored them.
/// * Four stages instead of two: tiles `t+1..t+3` are in flight while tile
///   `t` is multiplied, so a tile has three tiles' worth of FMAs (about
///   3000 issue cycles per scheduler) to arrive from L2 instead of one.
///   Per tile: `wait_group 2` (this thread's copies of tile `t` landed),
///   one barrier (everyone's landed, and everyone is done with tile `t-1`,
///   whose stage the next copies overwrite), start tile `t+3`, commit: the
///   ring of [`CpAsyncPipeline`].
/// * `A` is not transposed: `cp.async` copies bytes as they are, so `As`
///   keeps `A`'s layout, `As[r][p]`. A thread reads, per half tile (4 of
///   depth), one float4 `As[r][4h..4h+4]` for each of its 8 rows: 8
///   `ld.shared.v4` per 4 steps, two per step as in rung 4, at the price of
///   32 registers holding 4 steps of `A` (the 8 staging registers are gone).
///   The two rows a warp reads at once are in different quarter-warps of the
///   16-byte access, so there is no bank conflict.
///
/// Thread mapping as rung 4 (`tx = rank % 16`, `ty = rank / 16`; rows
/// `4ty..4ty+4` and `64+4ty..+4`, columns `4tx..4tx+4` and `64+4tx..+4`).
/// Copies: thread `t` copies `A[bm + t/2, k0 + 4(t%2)..+4]` to float4
/// `t` of the `A` stage and `B[k0 + t/32, bn + 4(t%32)..+4]` to float4 `t`
/// of the `B` stage (a warp writes 512 contiguous bytes). Groups outside
/// the matrix are zero-filled (`src-size` 0). When `k` (or `n`) is not a
/// multiple of 4 the rows of `A` (or `B`) are not 16-byte aligned; that
/// operand is then loaded element by element and stored synchronously,
/// which the same wait-and-barrier orders.
///
/// Shared layout (float4 units): `As[s]` at `512 s + 2 r + h`, then `Bs[s]`
/// at `512 S + 256 s + 32 p + c4` for stage `s < S = 4`.
///
/// What it tests: whether rung 4 waits on global memory. On the device the
/// deeper pipeline does not pay, so it does not; the rung stays as that
/// lesson (figures and registers: `docs/book/src/workloads/matmul.md`, "What rung 5
/// taught").
///
/// # Rung 5b
///
/// Rung 5 with `launch_bounds(256, 2)`: two blocks (16 warps) per SM if
/// ptxas fits the body in 128 registers. Rung 5 holds no prefetched tile in
/// registers, but the 32 registers of `A` fragments cost more than the 8
/// staging registers they replace, so at 128 registers it spills (counts
/// and timings: `docs/book/src/workloads/matmul.md`).
///
/// # Rung 5c
///
/// Rung 5 with `A` read one float per row and step (8 scalar `ld.shared`
/// per step, rows padded to 12 floats) instead of a float4 per row and half
/// tile, and `launch_bounds(256, 2)`.
///
/// Why: rung 5b has to hold 4 steps of `A` (32 registers) and spills at
/// 128. Reading `A` per step needs 8 registers, so the body should fit in
/// 128 without a spill and two blocks (16 warps) share an SM, twice the
/// warps to hide shared-load and barrier latency. The price: 10 shared
/// loads per 64 FMAs instead of 4.
///
/// LLVM merges the per-step loads of a row back into `ld.shared.v4` and
/// ptxas hoists them, so at 128 registers the body still spills (outside
/// the main loop); what that cost on the device is in
/// `docs/book/src/workloads/matmul.md` ("What rung 5 taught").
///
/// # Rung 5d
///
/// Rung 5c with `launch_bounds(256)` (one block per SM), to separate the
/// effect of the scalar `A` reads from that of the occupancy.
#[kernel(
    launch_bounds(256),
    instances(
        <false, 1> => (name = "matmul_async_f32"),
        <false, 2> => (launch_bounds(256, 2), name = "matmul_async2_f32"),
        <true, 2> => (launch_bounds(256, 2), name = "matmul_asyncs2_f32"),
        <true, 1> => (name = "matmul_asyncs_f32"),
    )
)]
pub fn matmul_async<const SCALAR_A: bool, const BLOCKS: u32>(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    async_body::<SCALAR_A>(a, b, c, m, n, k);
}

/// One step `p` of rungs 5c/5d in stage `s`: the 8 `A` values of this
/// thread's rows at depth `p` (scalar loads from `As[r][p]`, row stride
/// `ld`), two float4 of `Bs[p]`, 64 FMAs.
#[inline(always)]
fn async_step_scalar(
    acc: &mut [[f32; 8]; 8],
    s: Stage<f32>,
    ld: usize,
    p: usize,
    tx: usize,
    ty: usize,
) {
    let mut af = [0.0f32; 8];
    for i in 0..8 {
        let r = (i / 4) * 64 + 4 * ty + i % 4;
        // SAFETY: `s.a0 + r*ld + p` is inside one stage of `As` (`r < 128`,
        // `p < 8 <= ld`), and the view holds every stage.
        af[i] = unsafe { s.a.get_unchecked(s.a0 + r * ld + p) };
    }
    outer8(acc, af, s.b, s.b0 + p * (VEC_BN / 4), tx);
}

/// One step `p` of rung 5: `A` for this step from the registers `av`
/// (column `q` of the half tile), two float4 of `Bs[p]`, 64 FMAs.
#[inline(always)]
fn async_step(
    acc: &mut [[f32; 8]; 8],
    av: &[[f32; 4]; 8],
    q: usize,
    sb4: SharedSlice<F32x4>,
    bbase: usize,
    tx: usize,
) {
    let af = [
        av[0][q], av[1][q], av[2][q], av[3][q], av[4][q], av[5][q], av[6][q], av[7][q],
    ];
    outer8(acc, af, sb4, bbase, tx);
}

/// Half `h` of a rung-5 tile in stage `s` (depth `4h..4h+4`): 8 float4 of
/// `As`, then four steps.
#[inline(always)]
fn async_half(acc: &mut [[f32; 8]; 8], s: Stage<F32x4>, h: usize, tx: usize, ty: usize) {
    let mut av = [[0.0f32; 4]; 8];
    for i in 0..8 {
        let r = (i / 4) * 64 + 4 * ty + i % 4;
        av[i] = ld4(s.a, s.a0 + (ASYNC_AS_LD / 4) * r + h);
    }
    let b = s.b0 + 4 * h * (VEC_BN / 4);
    async_step(acc, &av, 0, s.b, b, tx);
    async_step(acc, &av, 1, s.b, b + VEC_BN / 4, tx);
    async_step(acc, &av, 2, s.b, b + 2 * (VEC_BN / 4), tx);
    async_step(acc, &av, 3, s.b, b + 3 * (VEC_BN / 4), tx);
}

/// The body of rungs 5 to 5d; `SCALAR_A` selects 5c/5d's per-step scalar
/// `A` reads and padded `As` rows.
#[inline(always)]
fn async_body<const SCALAR_A: bool>(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const S: usize = ASYNC_STAGES;
    const BK: usize = ASYNC_BK;
    const BM: usize = VEC_BM;
    const BN: usize = VEC_BN;
    // Floats per row of `As`, and float4 per stage of each operand.
    let ld = if SCALAR_A {
        ASYNC_AS_LD_SCALAR
    } else {
        ASYNC_AS_LD
    };
    let a4 = BM * ld / 4;
    const B4: usize = BK * BN / 4;
    let sa4 = shared::dynamic_shared::<F32x4>(0, S * a4);
    let sa = shared::dynamic_shared::<f32>(0, S * a4 * 4);
    let sb4 = shared::dynamic_shared::<F32x4>(S * a4 * 16, S * B4);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread::thread_idx_x() as usize;
    let tx = t % 16;
    let ty = t / 16;
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let a_vec_ok = k % 4 == 0;
    let b_vec_ok = n % 4 == 0;
    let a_row = bm + t / 2;
    let a_col = (t % 2) * 4;
    let b_row = t / 32;
    let b_col = bn + (t % 32) * 4;

    // Starts (or, for unaligned rows, performs) the copies of tile `tile`
    // into stage `stage`: float4 `(t/2)(ld/4) + t%2` of the `A` stage (row
    // `t/2`, half `t%2`; `< a4`) and float4 `t` of the `B` stage (`< B4`).
    let a_dst = (t / 2) * (ld / 4) + t % 2;
    let issue = |stage: usize, tile: usize| {
        let k0 = tile * BK;
        let a_src = RowMajor {
            x: a,
            rows: m,
            cols: k,
            aligned: a_vec_ok,
        };
        copy_group(sa4, stage * a4 + a_dst, a_src, a_row, k0 + a_col);
        let b_src = RowMajor {
            x: b,
            rows: k,
            cols: n,
            aligned: b_vec_ok,
        };
        copy_group(sb4, stage * B4 + t, b_src, k0 + b_row, b_col);
    };

    let mut acc = [[0.0f32; 8]; 8];
    let pipe = CpAsyncPipeline::<S>::new(k.div_ceil(BK));
    pipe.prologue(issue);
    let mut tile = 0;
    while tile < pipe.tiles() {
        let stage = pipe.next_tile(tile, issue);
        if SCALAR_A {
            let s = Stage {
                a: sa,
                a0: stage * a4 * 4,
                b: sb4,
                b0: stage * B4,
            };
            async_step_scalar(&mut acc, s, ld, 0, tx, ty);
            async_step_scalar(&mut acc, s, ld, 1, tx, ty);
            async_step_scalar(&mut acc, s, ld, 2, tx, ty);
            async_step_scalar(&mut acc, s, ld, 3, tx, ty);
            async_step_scalar(&mut acc, s, ld, 4, tx, ty);
            async_step_scalar(&mut acc, s, ld, 5, tx, ty);
            async_step_scalar(&mut acc, s, ld, 6, tx, ty);
            async_step_scalar(&mut acc, s, ld, 7, tx, ty);
        } else {
            let s = Stage {
                a: sa4,
                a0: stage * a4,
                b: sb4,
                b0: stage * B4,
            };
            async_half(&mut acc, s, 0, tx, ty);
            async_half(&mut acc, s, 1, tx, ty);
        }
        tile += 1;
    }
    store_patch(c, bm + ty * 4, bn + tx * 4, m, n, &acc);
}
