//! Warpgroup-level tensor cores (sm_90a): `wgmma.mma_async` with both
//! operands in shared memory, described by 64-bit matrix descriptors.
//!
//! A warpgroup is four consecutive warps (128 threads, the first warp's
//! index a multiple of 4). One `wgmma.mma_async.m64nNk16` multiplies a
//! 64 x 16 tile of `A` by a 16 x N tile of `B` into 64 x N f32 accumulators
//! held in the warpgroup's registers (N / 2 per thread); the tensor core
//! reads the operands straight from shared memory, asynchronously.
//!
//! | item | PTX | PTX ISA section (9.0) |
//! |---|---|---|
//! | [`SmemDesc`] | matrix descriptor | 9.7.15.5.1 "Matrix Descriptor Format"; canonical layouts 9.7.15.5.1.1 "Shared Memory Matrix Layout" |
//! | [`wgmma_m64n64k16`], [`wgmma_m64n80k16`], [`wgmma_m64n128k16`], [`wgmma_m64n256k16`] | `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16}` | 9.7.15.5.2 "wgmma.mma_async" |
//! | [`wgmma_m64n128k8_tf32`] | `wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32` | 9.7.15.5.2 |
//! | [`wgmma_m64n128k32`], [`wgmma_m64n256k32`] | `wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2}` | 9.7.15.5.2 |
//! | [`wgmma_fence`], [`wgmma_commit_group`], [`wgmma_wait_group`] | `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group` | 9.7.15.6, 9.7.15.7, 9.7.15.8 |
//!
//! # Layouts
//! Accumulators: thread `t` of the warpgroup (warp `w = t / 32`, lane
//! `(gid, tig)`) holds `D[16 w + gid + 8 (i / 2 % 2)][8 (i / 4) + 2 tig + i % 2]`
//! in element `i` ([`acc_coord`]): for each 8-column block, the
//! `mma.m16n8` accumulator layout of its warp's 16 rows.
//!
//! Shared-memory operands follow the ISA's canonical layouts, in units of
//! 16-byte chunks (`T` elements each), with a swizzle span of `W` chunks
//! (2, 4, 8 for 32, 64, 128 bytes) applied on absolute addresses:
//! * K-major (rows of the `M` or `N` dimension, `k` contiguous): row `r`
//!   at `(r % 8) W 16 + (r / 8) SBO` bytes, `k` contiguous from there (the
//!   32 bytes of one instruction's `k` inside the span); without swizzle,
//!   rows are 16 bytes apart and the two 16-byte halves of `k` `LBO` apart.
//! * MN-major (the transposed operand, `M` or `N` contiguous): index `x`
//!   along `M`/`N` at `x % (T W)` elements then `(x / (T W)) LBO`; `k` at
//!   `(k % 8) W 16 + (k / 8) SBO` bytes; without swizzle, `x / T` steps
//!   `SBO` and `k / 8` steps `LBO`.
//!
//! The simulator computes each thread's accumulators from the two
//! descriptors exactly so (raw shared-memory reads: the asynchronous
//! proxy's), so a wrong descriptor, major-ness or swizzle gives a wrong
//! product there as on the GPU. It runs `wgmma` asynchronously: the
//! product lands in the accumulators at the `wgmma_wait_group` that covers
//! its group (before, they hold poison, and storing one is an error naming
//! the `wgmma`), the operand tiles may not be written until the whole
//! warpgroup has waited, and the operands must have been delivered (a TMA
//! phase this thread has seen complete, ordinary stores fenced with
//! `fence_proxy_async_shared`); see `ptxlab_device::sim`'s "Asynchronous
//! operations".

use crate::fp8::Fp8;
use crate::hopper::Swizzle;
use crate::mma::Half16;

/// A `wgmma` shared-memory matrix descriptor: start address, leading and
/// stride byte offsets (all in 16-byte units, 14 bits each) and the
/// swizzle mode; the base offset (bits 49-51) is 0: tiles start on a
/// swizzle-repeat boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmemDesc(pub u64);

impl SmemDesc {
    /// A descriptor for a tile at shared address `addr` with leading byte
    /// offset `lbo` and stride byte offset `sbo` (see the module docs).
    pub const fn new(addr: u32, lbo: u32, sbo: u32, swizzle: Swizzle) -> Self {
        let a = ((addr & 0x3ffff) >> 4) as u64;
        let l = ((lbo >> 4) & 0x3fff) as u64;
        let s = ((sbo >> 4) & 0x3fff) as u64;
        Self(a | l << 16 | s << 32 | swizzle.descriptor_mode() << 62)
    }
    /// The same layout starting `bytes` further (a multiple of 16): the next
    /// `k` step of a K-major tile inside its swizzle span.
    #[inline(always)]
    pub const fn offset(self, bytes: u32) -> Self {
        Self(self.0 + (bytes >> 4) as u64)
    }
    /// Start address in bytes.
    pub const fn start(self) -> u32 {
        ((self.0 & 0x3fff) << 4) as u32
    }
    /// Leading byte offset.
    pub const fn lbo(self) -> u32 {
        (((self.0 >> 16) & 0x3fff) << 4) as u32
    }
    /// Stride byte offset.
    pub const fn sbo(self) -> u32 {
        (((self.0 >> 32) & 0x3fff) << 4) as u32
    }
    /// Swizzle mode.
    pub const fn swizzle(self) -> Swizzle {
        Swizzle::from_descriptor_mode(self.0 >> 62)
    }
    /// Byte offset (before the swizzle) of element (`mn`, `k`) of a K-major
    /// operand with `eb`-byte elements.
    pub const fn k_major_offset(self, mn: u32, k: u32, eb: u32) -> u32 {
        let kb = k * eb;
        match self.swizzle() {
            Swizzle::None => {
                (mn % 8) * 16 + (mn / 8) * self.sbo() + (kb / 16) * self.lbo() + kb % 16
            }
            sw => (mn % 8) * sw.span() + (mn / 8) * self.sbo() + kb,
        }
    }
    /// Byte offset (before the swizzle) of element (`mn`, `k`) of an
    /// MN-major operand with `eb`-byte elements.
    pub const fn mn_major_offset(self, mn: u32, k: u32, eb: u32) -> u32 {
        let t = 16 / eb;
        match self.swizzle() {
            Swizzle::None => {
                (mn % t) * eb + (mn / t) * self.sbo() + (k % 8) * 16 + (k / 8) * self.lbo()
            }
            sw => {
                let per = t * (sw.span() / 16);
                (mn % per) * eb
                    + (mn / per) * self.lbo()
                    + (k % 8) * sw.span()
                    + (k / 8) * self.sbo()
            }
        }
    }
}

/// `(row, col)` of accumulator element `i` of thread `t` (0..128) of a
/// warpgroup in an `m64nN` result.
pub const fn acc_coord(t: u32, i: usize) -> (usize, usize) {
    let (w, lane) = ((t / 32) as usize, t % 32);
    let (gid, tig) = ((lane / 4) as usize, (lane % 4) as usize);
    (
        16 * w + gid + 8 * ((i / 2) % 2),
        8 * (i / 4) + 2 * tig + i % 2,
    )
}

/// `wgmma.fence.sync.aligned`: orders this warpgroup's register accesses
/// (the accumulators) before the `wgmma` that follow. Issue it before the
/// first `wgmma` of a batch.
#[inline(always)]
pub fn wgmma_fence() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_wgmma::fence();
}

/// `wgmma.commit_group.sync.aligned`: closes the group of `wgmma` issued
/// since the last commit.
#[inline(always)]
pub fn wgmma_commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_wgmma::commit();
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` committed
/// groups are pending; after `N = 0` the accumulators are final and the
/// shared memory they read may be overwritten.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn wgmma_wait_group<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands besides the immediate; a compiler barrier for
    // memory, so later shared writes stay after it.
    unsafe {
        core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_wgmma::wait(N, core::panic::Location::caller());
}

/// Keeps the compiler from moving accesses of the accumulators across this
/// point (CUTLASS's `warpgroup_fence_operand`): call it on the accumulators
/// after the last `wgmma` of a batch and after `wgmma_wait_group`, so their
/// registers are not read or copied while the tensor core still writes
/// them.
#[inline(always)]
pub fn fence_operands<const N: usize>(d: &mut [f32; N]) {
    #[cfg(target_arch = "nvptx64")]
    for v in d.iter_mut() {
        // SAFETY: an empty instruction that "modifies" one register.
        unsafe { core::arch::asm!("// {0}", inout(reg32) * v, options(nomem, nostack)) };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = d;
}

#[cfg(target_arch = "nvptx64")]
macro_rules! regs {
    ($f:literal $(, $r:literal)*) => {
        concat!("{", stringify!($f), "}" $(, ", {", stringify!($r), "}")*)
    };
}

#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_asm {
    ($shape:literal, $ty:literal, $tail:literal, $d:ident, $a:expr, $b:expr, $scale:expr,
     [$($i:literal),+]) => {
        // SAFETY: the warpgroup-wide instruction reads the shared-memory
        // tiles the descriptors name and writes the accumulators; the
        // kernel's contract (the whole warpgroup executes it, converged,
        // the tiles written and fenced) is the caller's.
        unsafe {
            core::arch::asm!(
                "{{",
                ".reg .pred p;",
                "setp.ne.b32 p, {sc}, 0;",
                concat!(
                    "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty, " {{",
                    regs!($($i),+), "}}, {da}, {db}, p, ", $tail, ";"
                ),
                "}}",
                $(inout(reg32) $d[$i],)+
                da = in(reg64) $a.0,
                db = in(reg64) $b.0,
                sc = in(reg32) $scale as u32,
                options(nostack),
            )
        }
    };
}

/// `D (+)= A B` on 64 x 128 x 16 with BF16/FP16 operands in shared
/// memory: `A` K-major (descriptor `a`), `B` K-major or, with
/// `TRANS_B`, N-major (descriptor `b`); `accumulate == false` ignores
/// `D`'s old value. Issued by all 128 threads of a warpgroup; complete
/// after [`wgmma_commit_group`] and [`wgmma_wait_group`].
#[inline(always)]
#[track_caller]
pub fn wgmma_m64n128k16<T: Half16, const TRANS_B: bool>(
    d: &mut [f32; 64],
    a: SmemDesc,
    b: SmemDesc,
    accumulate: bool,
) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal, $tail:literal) => {
                wgmma_asm!(
                    "m64n128k16",
                    $ty,
                    $tail,
                    d,
                    a,
                    b,
                    accumulate,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                        40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
                        59, 60, 61, 62, 63
                    ]
                )
            };
        }
        match (T::IS_BF16, TRANS_B) {
            (true, false) => go!("bf16", "1, 1, 0, 0"),
            (true, true) => go!("bf16", "1, 1, 0, 1"),
            (false, false) => go!("f16", "1, 1, 0, 0"),
            (false, true) => go!("f16", "1, 1, 0, 1"),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma::<64, 128, 16>(d, a, b, accumulate, [false, TRANS_B], 2, &|bits| {
        T::to_f32(bits as u16) as f64
    });
}

/// [`wgmma_m64n128k16`] with `N = 256` (128 accumulators per thread).
#[inline(always)]
#[track_caller]
pub fn wgmma_m64n256k16<T: Half16, const TRANS_B: bool>(
    d: &mut [f32; 128],
    a: SmemDesc,
    b: SmemDesc,
    accumulate: bool,
) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal, $tail:literal) => {
                wgmma_asm!(
                    "m64n256k16",
                    $ty,
                    $tail,
                    d,
                    a,
                    b,
                    accumulate,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                        40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
                        59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
                        78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96,
                        97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
                        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126,
                        127
                    ]
                )
            };
        }
        match (T::IS_BF16, TRANS_B) {
            (true, false) => go!("bf16", "1, 1, 0, 0"),
            (true, true) => go!("bf16", "1, 1, 0, 1"),
            (false, false) => go!("f16", "1, 1, 0, 0"),
            (false, true) => go!("f16", "1, 1, 0, 1"),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma::<128, 256, 16>(d, a, b, accumulate, [false, TRANS_B], 2, &|bits| {
        T::to_f32(bits as u16) as f64
    });
}

/// Defines a `wgmma` on `64 x N x 16` with BF16/FP16 operands in shared
/// memory and both transposes, `N / 2` accumulators per thread (the
/// instructions differ only in `N` and the registers they name).
macro_rules! wgmma_ss16 {
    ($(#[$doc:meta])* $name:ident, $shape:literal, $n:literal, $acc:literal, [$($i:literal),+]) => {
        $(#[$doc])*
        #[inline(always)]
        #[track_caller]
        pub fn $name<T: Half16, const TRANS_A: bool, const TRANS_B: bool>(
            d: &mut [f32; $acc],
            a: SmemDesc,
            b: SmemDesc,
            accumulate: bool,
        ) {
            #[cfg(target_arch = "nvptx64")]
            match (T::IS_BF16, TRANS_A, TRANS_B) {
                (true, false, false) => wgmma_asm!($shape, "bf16", "1, 1, 0, 0", d, a, b, accumulate, [$($i),+]),
                (true, false, true) => wgmma_asm!($shape, "bf16", "1, 1, 0, 1", d, a, b, accumulate, [$($i),+]),
                (true, true, false) => wgmma_asm!($shape, "bf16", "1, 1, 1, 0", d, a, b, accumulate, [$($i),+]),
                (true, true, true) => wgmma_asm!($shape, "bf16", "1, 1, 1, 1", d, a, b, accumulate, [$($i),+]),
                (false, false, false) => wgmma_asm!($shape, "f16", "1, 1, 0, 0", d, a, b, accumulate, [$($i),+]),
                (false, false, true) => wgmma_asm!($shape, "f16", "1, 1, 0, 1", d, a, b, accumulate, [$($i),+]),
                (false, true, false) => wgmma_asm!($shape, "f16", "1, 1, 1, 0", d, a, b, accumulate, [$($i),+]),
                (false, true, true) => wgmma_asm!($shape, "f16", "1, 1, 1, 1", d, a, b, accumulate, [$($i),+]),
            }
            #[cfg(not(target_arch = "nvptx64"))]
            sim::mma::<$acc, $n, 16>(d, a, b, accumulate, [TRANS_A, TRANS_B], 2, &|bits| {
                T::to_f32(bits as u16) as f64
            });
        }
    };
}

wgmma_ss16!(
    /// `D (+)= A B` on 64 x 64 x 16 with BF16/FP16 operands in shared memory:
    /// `A` K-major or, with `TRANS_A`, M-major (descriptor `a`); `B` K-major
    /// or, with `TRANS_B`, N-major (descriptor `b`). 32 accumulators per
    /// thread. The transposed forms read a tile stored the other way round
    /// without moving it: the attention backward pass multiplies by `dS` from
    /// the `dS^T` tile it wrote, and by `K` from the tile that `S^T = K Q^T`
    /// read K-major.
    wgmma_m64n64k16, "m64n64k16", 64, 32, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]
);

wgmma_ss16!(
    /// [`wgmma_m64n64k16`] with `N = 32` (16 accumulators per thread): the
    /// score tile of the attention backward pass at head dimension 256,
    /// where each warpgroup takes half of a 64-query tile.
    wgmma_m64n32k16, "m64n32k16", 32, 16, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
);

wgmma_ss16!(
    /// [`wgmma_m64n64k16`] with `N = 80` (40 accumulators per thread): the
    /// score tile of the attention kernel at head dimension 256, whose 80
    /// keys leave room for 128 output accumulators.
    wgmma_m64n80k16, "m64n80k16", 80, 40, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]
);

/// `D (+)= A B` on 64 x 128 x 8 with TF32 operands (f32 bit patterns, the
/// low 13 bits ignored) in shared memory, both K-major (TF32 has no
/// transposed form).
#[inline(always)]
#[track_caller]
pub fn wgmma_m64n128k8_tf32(d: &mut [f32; 64], a: SmemDesc, b: SmemDesc, accumulate: bool) {
    #[cfg(target_arch = "nvptx64")]
    wgmma_asm!(
        "m64n128k8",
        "tf32",
        "1, 1",
        d,
        a,
        b,
        accumulate,
        [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
            24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45,
            46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63
        ]
    );
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma::<64, 128, 8>(d, a, b, accumulate, [false, false], 4, &|bits| {
        crate::mma::tf32_trunc(f32::from_bits(bits)) as f64
    });
}

/// `D (+)= A B` on 64 x 128 x 32 with FP8 operands ([`E4m3`](crate::fp8::E4m3)
/// or [`E5m2`](crate::fp8::E5m2), both of type `T`) in shared memory, both
/// K-major (FP8 `wgmma` has no transposed form): one instruction covers
/// 32 bytes of `k`, as [`wgmma_m64n128k16`] does for 16-bit types, so the
/// descriptors and swizzles of a 16-bit kernel carry over with `k`
/// doubled. `accumulate == false` ignores `D`'s old value. Issued by all
/// 128 threads of a warpgroup; complete after [`wgmma_commit_group`] and
/// [`wgmma_wait_group`].
///
/// Every product of two FP8 values is exact in f32, but the tensor core
/// adds them into the accumulators with fewer bits than an f32 addition
/// keeps, so long `k` loops lose accuracy: FP8 GEMMs (DeepGEMM's) add
/// each few `k` steps' partial sums into separate f32 registers. The
/// simulator adds the exact products and the old value in f64 and rounds
/// once, so compare with a tolerance.
#[inline(always)]
#[track_caller]
pub fn wgmma_m64n128k32<T: Fp8>(d: &mut [f32; 64], a: SmemDesc, b: SmemDesc, accumulate: bool) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal) => {
                wgmma_asm!(
                    "m64n128k32",
                    $ty,
                    "1, 1",
                    d,
                    a,
                    b,
                    accumulate,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                        40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
                        59, 60, 61, 62, 63
                    ]
                )
            };
        }
        if T::IS_E4M3 { go!("e4m3") } else { go!("e5m2") }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma::<64, 128, 32>(d, a, b, accumulate, [false, false], 1, &|bits| {
        T::from_bits(bits as u8).to_f32() as f64
    });
}

/// [`wgmma_m64n128k32`] with `N = 256` (128 accumulators per thread).
#[inline(always)]
#[track_caller]
pub fn wgmma_m64n256k32<T: Fp8>(d: &mut [f32; 128], a: SmemDesc, b: SmemDesc, accumulate: bool) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal) => {
                wgmma_asm!(
                    "m64n256k32",
                    $ty,
                    "1, 1",
                    d,
                    a,
                    b,
                    accumulate,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                        40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
                        59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
                        78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96,
                        97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
                        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126,
                        127
                    ]
                )
            };
        }
        if T::IS_E4M3 { go!("e4m3") } else { go!("e5m2") }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma::<128, 256, 32>(d, a, b, accumulate, [false, false], 1, &|bits| {
        T::from_bits(bits as u8).to_f32() as f64
    });
}

/// The simulator's `wgmma`: each thread computes its own accumulators,
/// reading both operands through their descriptors.
#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use super::{SmemDesc, acc_coord};
    use crate::sim::{shared_base, with_thread};
    use std::vec::Vec;

    /// The (swizzled) shared-memory address of operand element (`mn`, `k`).
    fn address(d: SmemDesc, mn: usize, k: usize, mn_major: bool, eb: u32) -> usize {
        let (mn, k) = (mn as u32, k as u32);
        let off = if mn_major {
            d.mn_major_offset(mn, k, eb)
        } else {
            d.k_major_offset(mn, k, eb)
        };
        d.swizzle().apply(d.start() + off) as usize
    }

    /// `D (+)= A B` for a 64 x `N` x `K` instruction with `R = N / 2`
    /// accumulators per thread, `A` and `B` each K-major or MN-major
    /// (`majors`); `value` turns operand bits into their value.
    /// Every operand address is computed first and checked against the
    /// block's shared memory in one go, then read raw. The product goes
    /// through the simulator's `wgmma` tracking (in flight until the wait).
    #[track_caller]
    pub(super) fn mma<const R: usize, const N: usize, const K: usize>(
        d: &mut [f32; R],
        a: SmemDesc,
        b: SmemDesc,
        accumulate: bool,
        [a_mn_major, b_mn_major]: [bool; 2],
        eb: u32,
        value: &dyn Fn(u32) -> f64,
    ) {
        const { assert!(R * 2 == N) };
        let t = with_thread(|t| {
            let bd = t.block_dim;
            t.thread_idx.x + bd.x * (t.thread_idx.y + bd.y * t.thread_idx.z)
        }) % 128;
        // This thread's two rows of A (`r0`, `r0 + 8`) and N / 4 columns of B.
        let r0 = acc_coord(t, 0).0;
        let mut a_at = [[0usize; K]; 2];
        let mut b_at = [[0usize; K]; R];
        let mut end = 0;
        for (h, row) in a_at.iter_mut().enumerate() {
            for (k, at) in row.iter_mut().enumerate() {
                *at = address(a, r0 + 8 * h, k, a_mn_major, eb);
                end = end.max(*at + eb as usize);
            }
        }
        for (i, col) in b_at.iter_mut().enumerate() {
            let c = acc_coord(t, i).1;
            for (k, at) in col.iter_mut().enumerate() {
                *at = address(b, c, k, b_mn_major, eb);
                end = end.max(*at + eb as usize);
            }
        }
        let base = shared_base(end, 0, 1);
        let read = |at: usize| -> f64 {
            // SAFETY: `shared_base` checked every address is inside the
            // block's shared memory; offsets are multiples of the element
            // size, so the reads are aligned.
            let bits = unsafe {
                if eb == 1 {
                    crate::sim::mem::read(base.add(at) as *const u8) as u32
                } else if eb == 2 {
                    crate::sim::mem::read(base.add(at) as *const u16) as u32
                } else {
                    crate::sim::mem::read(base.add(at) as *const u32)
                }
            };
            value(bits)
        };
        let loc = core::panic::Location::caller();
        // The chunks of both whole operand tiles (the warpgroup's
        // instruction reads them all), for the tracking.
        let chunks = || {
            let mut c: Vec<u32> = Vec::with_capacity(64 * K + N * K);
            for r in 0..64 {
                for k in 0..K {
                    c.push((address(a, r, k, a_mn_major, eb) / 16) as u32);
                }
            }
            for col in 0..N {
                for k in 0..K {
                    c.push((address(b, col, k, b_mn_major, eb) / 16) as u32);
                }
            }
            c.sort_unstable();
            c.dedup();
            c
        };
        let input = crate::sim::async_wgmma::begin(&d[..], &chunks, loc);
        let av: [[f64; K]; 2] =
            core::array::from_fn(|h| core::array::from_fn(|k| read(a_at[h][k])));
        let mut out = [0f32; R];
        for (i, o) in out.iter_mut().enumerate() {
            let h = (i / 2) % 2;
            let mut s = if accumulate { input[i] as f64 } else { 0.0 };
            for k in 0..K {
                s += av[h][k] * read(b_at[i][k]);
            }
            *o = s as f32;
        }
        crate::sim::async_wgmma::end(&mut d[..], &out, loc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hopper::{Mbarrier, SimTensorMap, fence_mbarrier_init, tma_load_2d};
    use crate::mem::{DeviceSlice, DeviceSliceMut};
    use crate::mma::{Bf16, shared_addr, tf32_trunc};
    use crate::shared::dynamic_shared;
    use crate::sim::{LaunchSpec, launch};
    use crate::thread::{Dim3, sync_threads, thread_idx_x};
    use std::vec::Vec;

    #[test]
    fn descriptors_round_trip_and_swizzles_permute_chunks() {
        let d = SmemDesc::new(0x1_2400, 8192, 1024, Swizzle::B128);
        assert_eq!(
            (d.start(), d.lbo(), d.sbo(), d.swizzle()),
            (0x1_2400, 8192, 1024, Swizzle::B128)
        );
        assert_eq!(d.offset(32).start(), 0x1_2420);
        for sw in [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128] {
            let mut seen = [false; 64];
            for chunk in 0..64u32 {
                let p = sw.apply(chunk * 16);
                assert_eq!(p % 16, 0);
                // Chunks stay inside their span.
                assert_eq!(p / sw.span(), chunk * 16 / sw.span(), "{sw:?}");
                seen[(p / 16) as usize] = true;
            }
            assert!(seen.iter().all(|s| *s), "{sw:?} is not a permutation");
        }
        // Row 1 of a 128-byte swizzle: chunk 0 goes to chunk 1.
        assert_eq!(Swizzle::B128.apply(128), 128 + 16);
        assert_eq!(Swizzle::B128.apply(7 * 128 + 16), 7 * 128 + 6 * 16);
    }

    fn words(t: SimTensorMap) -> Vec<u64> {
        t.to_words().to_vec()
    }

    /// `count` small integers (exact in bf16) from `i * mul % modulo`,
    /// centred on 0.
    fn ints(count: usize, mul: usize, modulo: usize) -> Vec<f32> {
        (0..count)
            .map(|i| ((i * mul) % modulo) as f32 - (modulo / 2) as f32)
            .collect()
    }

    /// A simulator tensor map over the row-major bf16 matrix `bits` of
    /// `rows x cols`, boxes of 64 x 64 with the 128-byte swizzle.
    fn bf16_map(bits: &[u16], rows: usize, cols: usize) -> Vec<u64> {
        words(SimTensorMap {
            addr: bits.as_ptr() as u64,
            elem_bytes: 2,
            dims: [cols as u64, rows as u64],
            row_stride: 2 * cols as u64,
            box_dims: [64, 64],
            swizzle: Swizzle::B128,
        })
    }

    /// One warpgroup on the simulator: thread 0 loads the TMA `boxes`
    /// (`(map, x)`: the 64 x 64 box at column `x`, row 0, each 8192 bytes
    /// after the last from the tile base) on one mbarrier; then every
    /// thread runs `mma` on the tile base and stores its accumulators as
    /// `D[r][c]` of a result with `n` columns and 64 rows.
    fn wgmma_on_sim<const R: usize>(
        boxes: &[(&[u64], i32)],
        n: usize,
        mma: impl Fn(u32, &mut [f32; R]) + Sync,
    ) -> Vec<f32> {
        let mut out = std::vec![f32::NAN; 64 * n];
        // SAFETY: the maps and `out` outlive the launch; thread `t` writes
        // its own accumulator elements of `out`.
        let (maps, o): (Vec<_>, _) = unsafe {
            (
                boxes
                    .iter()
                    .map(|(m, x)| (DeviceSlice::from_raw_parts(m.as_ptr(), 16), *x))
                    .collect(),
                DeviceSliceMut::from_raw_parts(out.as_mut_ptr(), out.len()),
            )
        };
        let bytes = 8192 * maps.len();
        let spec = LaunchSpec {
            kernel: "wgmma_test",
            grid: Dim3::x(1),
            block: Dim3::x(128),
            shared_bytes: bytes + 16,
        };
        launch(&spec, || {
            let t = thread_idx_x();
            let tiles = dynamic_shared::<u64>(0, bytes / 8);
            let base = shared_addr(tiles.as_mut_ptr());
            let bar = Mbarrier::at(dynamic_shared::<u64>(bytes, 1), 0);
            if t == 0 {
                bar.init(1);
                fence_mbarrier_init();
            }
            sync_threads();
            if t == 0 {
                bar.arrive_expect_tx(bytes as u32);
                for (i, (map, x)) in maps.iter().enumerate() {
                    tma_load_2d(base + 8192 * i as u32, *map, *x, 0, bar);
                }
            }
            bar.wait(0);
            // The accumulators stay where `mma` issued into them: the
            // products land there at the wait (a copy taken before it would
            // hold the simulator's poison, and it says so).
            let mut acc = [0f32; R];
            wgmma_fence();
            mma(base, &mut acc);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for (i, v) in acc.iter().enumerate() {
                let (r, c) = acc_coord(t, i);
                o.set(r * n + c, *v);
            }
        })
        .unwrap();
        out
    }

    /// `D = A B` for A 64 x 64 (bf16, K-major by TMA with a 128-byte
    /// swizzle) and B 64 x 128 (bf16, N-major: two 64-column boxes), read by
    /// four `m64n128k16` whose descriptors use `a_swizzle` for A.
    fn wgmma_bf16_on_sim(a_swizzle: Swizzle) -> (Vec<f32>, Vec<f32>) {
        let (m, n, k) = (64usize, 128usize, 64usize);
        let (av, bv) = (ints(m * k, 7, 13), ints(k * n, 5, 11));
        let ah: Vec<u16> = av.iter().map(|v| Bf16::from_f32(*v)).collect();
        let bh: Vec<u16> = bv.iter().map(|v| Bf16::from_f32(*v)).collect();
        let (ta, tb) = (bf16_map(&ah, m, k), bf16_map(&bh, k, n));
        let out = wgmma_on_sim(
            &[(&ta, 0), (&tb, 0), (&tb, 64)],
            n,
            |base, acc: &mut [f32; 64]| {
                for kk in 0..4u32 {
                    let da = SmemDesc::new(base, 16, 1024, a_swizzle).offset(32 * kk);
                    let db = SmemDesc::new(base + 8192 + 2048 * kk, 8192, 1024, Swizzle::B128);
                    wgmma_m64n128k16::<Bf16, true>(acc, da, db, kk > 0);
                }
            },
        );
        let mut want = std::vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
            }
        }
        (out, want)
    }

    /// `D = A B` (64 x 64 x 64, bf16) by four `m64n64k16` with both
    /// operands stored transposed: `A^T` (`k` rows of `m`) read M-major,
    /// `B` (`k` rows of `n`) read N-major, each one TMA box.
    #[test]
    fn wgmma_m64n64k16_reads_both_operands_transposed() {
        let (m, n, k) = (64usize, 64usize, 64usize);
        let (av, bv) = (ints(m * k, 7, 13), ints(k * n, 5, 11));
        // A^T[p][i] = A[i][p], row-major.
        let at: Vec<u16> = (0..k * m)
            .map(|x| Bf16::from_f32(av[(x % m) * k + x / m]))
            .collect();
        let bh: Vec<u16> = bv.iter().map(|v| Bf16::from_f32(*v)).collect();
        let (ta, tb) = (bf16_map(&at, k, m), bf16_map(&bh, k, n));
        let out = wgmma_on_sim(&[(&ta, 0), (&tb, 0)], n, |base, acc: &mut [f32; 32]| {
            for kk in 0..4u32 {
                let da = SmemDesc::new(base + 2048 * kk, 8192, 1024, Swizzle::B128);
                let db = SmemDesc::new(base + 8192 + 2048 * kk, 8192, 1024, Swizzle::B128);
                wgmma_m64n64k16::<Bf16, true, true>(acc, da, db, kk > 0);
            }
        });
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
                assert_eq!(out[i * n + j], want, "D[{i}][{j}]");
            }
        }
    }

    #[test]
    fn tma_and_wgmma_compute_the_product_and_a_wrong_swizzle_does_not() {
        let (got, want) = wgmma_bf16_on_sim(Swizzle::B128);
        assert_eq!(got, want);
        let (wrong, want) = wgmma_bf16_on_sim(Swizzle::B64);
        let diff = wrong.iter().zip(&want).filter(|(x, y)| x != y).count();
        assert!(
            diff > 4000,
            "a 64-byte swizzle on 128-byte-swizzled data changed {diff} outputs"
        );
    }

    #[test]
    fn wgmma_tf32_with_k_major_b() {
        // A 64 x 32 and B^T 128 x 32 (f32, K-major, 128-byte rows), k = 32:
        // four m64n128k8 steps of 32 bytes inside the swizzle span.
        let (m, n, k) = (64usize, 128usize, 32usize);
        let av: Vec<f32> = (0..m * k)
            .map(|i| ((i * 3) % 7) as f32 * 0.5 - 1.5)
            .collect();
        let mut bt: Vec<f32> = (0..n * k)
            .map(|i| ((i * 5) % 9) as f32 * 0.25 - 1.0)
            .collect();
        bt[3] = f32::from_bits(bt[3].to_bits() | 0x0fff); // ignored bits
        let map = |p: &Vec<f32>, rows: usize| {
            words(SimTensorMap {
                addr: p.as_ptr() as u64,
                elem_bytes: 4,
                dims: [k as u64, rows as u64],
                row_stride: 4 * k as u64,
                box_dims: [32, rows as u32],
                swizzle: Swizzle::B128,
            })
        };
        let (ta, tb) = (map(&av, m), map(&bt, n));
        let mut out = std::vec![f32::NAN; m * n];
        // SAFETY: as in `wgmma_bf16_on_sim`.
        let (ma, mb, o) = unsafe {
            (
                DeviceSlice::from_raw_parts(ta.as_ptr(), 16),
                DeviceSlice::from_raw_parts(tb.as_ptr(), 16),
                DeviceSliceMut::from_raw_parts(out.as_mut_ptr(), out.len()),
            )
        };
        let spec = LaunchSpec {
            kernel: "wgmma_tf32_test",
            grid: Dim3::x(1),
            block: Dim3::x(128),
            shared_bytes: 8192 + 16384 + 16,
        };
        launch(&spec, || {
            let t = thread_idx_x();
            let tiles = dynamic_shared::<u64>(0, 3 * 1024);
            let base = shared_addr(tiles.as_mut_ptr());
            let bar = Mbarrier::at(dynamic_shared::<u64>(8192 + 16384, 1), 0);
            if t == 0 {
                bar.init(1);
                fence_mbarrier_init();
            }
            sync_threads();
            if t == 0 {
                bar.arrive_expect_tx(8192 + 16384);
                tma_load_2d(base, ma, 0, 0, bar);
                tma_load_2d(base + 8192, mb, 0, 0, bar);
            }
            bar.wait(0);
            let mut acc = [0f32; 64];
            wgmma_fence();
            for kk in 0..4u32 {
                let da = SmemDesc::new(base, 16, 1024, Swizzle::B128).offset(32 * kk);
                let db = SmemDesc::new(base + 8192, 16, 1024, Swizzle::B128).offset(32 * kk);
                wgmma_m64n128k8_tf32(&mut acc, da, db, kk > 0);
            }
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for (i, v) in acc.iter().enumerate() {
                let (r, c) = acc_coord(t, i);
                o.set(r * n + c, *v);
            }
        })
        .unwrap();
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..k)
                    .map(|p| av[i * k + p] * tf32_trunc(bt[j * k + p]))
                    .sum();
                assert_eq!(out[i * n + j], want, "({i}, {j})");
            }
        }
    }

    #[test]
    fn tma_zero_fills_outside_the_tensor() {
        // A 5 x 20 f32 tensor, box 32 x 8 at (-4, 2): rows 2..5 and columns
        // 0..20 are data, everything else zero; no swizzle.
        let v: Vec<f32> = (0..100).map(|i| i as f32 + 1.0).collect();
        let tm = words(SimTensorMap {
            addr: v.as_ptr() as u64,
            elem_bytes: 4,
            dims: [20, 5],
            row_stride: 80,
            box_dims: [32, 8],
            swizzle: Swizzle::None,
        });
        let mut out = std::vec![f32::NAN; 256];
        // SAFETY: as above; thread 0 alone writes `out`.
        let (mm, o) = unsafe {
            (
                DeviceSlice::from_raw_parts(tm.as_ptr(), 16),
                DeviceSliceMut::from_raw_parts(out.as_mut_ptr(), 256),
            )
        };
        let spec = LaunchSpec {
            kernel: "tma_oob_test",
            grid: Dim3::x(1),
            block: Dim3::x(32),
            shared_bytes: 1024 + 16,
        };
        launch(&spec, || {
            let s = dynamic_shared::<f32>(0, 256);
            let bar = Mbarrier::at(dynamic_shared::<u64>(1024, 1), 0);
            if thread_idx_x() == 0 {
                bar.init(1);
                fence_mbarrier_init();
                bar.arrive_expect_tx(1024);
                tma_load_2d(shared_addr(s.as_mut_ptr()), mm, -4, 2, bar);
                bar.wait(0);
                for i in 0..256 {
                    o.set(i, s.get(i));
                }
            }
        })
        .unwrap();
        for r in 0..8 {
            for c in 0..32 {
                let (gy, gx) = (r as i64 + 2, c as i64 - 4);
                let want = if (0..5).contains(&gy) && (0..20).contains(&gx) {
                    v[(gy * 20 + gx) as usize]
                } else {
                    0.0
                };
                assert_eq!(out[r * 32 + c], want, "box ({r}, {c})");
            }
        }
    }
}
