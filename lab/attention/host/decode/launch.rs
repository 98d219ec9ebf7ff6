//! The typed launcher: a [`DecodePlan`] picks the kernel instance and the
//! split length for a shape, holds the partial results, and runs the two
//! kernels.

use super::problem::{DecodeShape, HostInputs, check_inputs};
use kernels_gpu::attention::decode::{
    self as dk, COMBINE_THREADS, DEC_THREADS, DEC_TK, Decode, decode_shared_bytes,
};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use ptxlab_device::Dim3;

/// The decoding inputs on the device.
pub struct DecodeInputs {
    /// `(B, q_len, H, D)` BF16 bits.
    pub q: Buffer<u16>,
    /// `(num_pages, page_size, H_kv, D)` BF16 bits.
    pub k: Buffer<u16>,
    /// Likewise.
    pub v: Buffer<u16>,
    /// `(B, max_pages)`.
    pub table: Buffer<i32>,
    /// `(B)`.
    pub kv_lens: Buffer<i32>,
}

impl DecodeInputs {
    /// Checks `x` against `shape` (lengths, block-table entries) and
    /// uploads it.
    pub fn upload(dev: &Device, shape: &DecodeShape, x: &HostInputs) -> Result<Self> {
        check_inputs(shape, x)?;
        let lens: Vec<i32> = shape.kv_lens.iter().map(|&k| k as i32).collect();
        Ok(Self {
            q: dev.upload(&x.q)?,
            k: dev.upload(&x.k)?,
            v: dev.upload(&x.v)?,
            table: dev.upload(&x.table)?,
            kv_lens: dev.upload(&lens)?,
        })
    }
}

/// Blocks of [`dk::attn_decode`] the split length aims at, per SM: about
/// four waves of the blocks an SM holds (two at `D <= 128`, one at 256),
/// so the last, partial wave is a small part of the time.
pub const WAVES: usize = 4;
/// Fewest tiles of [`DEC_TK`] keys per split: fewer would spend more on the
/// pipeline's start and on the partial results than on the keys.
pub const MIN_SPLIT_TILES: usize = 4;
/// Most splits of one sequence (the launch grid's y).
pub const MAX_SPLITS: usize = 65535;

/// Query rows per block: 8, or 16 at `D <= 128` when a `K`/`V` head has
/// more than 8 (the `D = 256` instance keeps 8 rows: its accumulators
/// would not fit twice).
pub fn rows_per_block(shape: &DecodeShape) -> usize {
    if shape.group() * shape.q_len > 8 && shape.d <= 128 {
        16
    } else {
        8
    }
}

/// The split length (keys per block) for `shape` on a GPU of `sm_count`
/// SMs: the cached tiles of all sequences, `K`/`V` heads and row blocks,
/// spread over [`WAVES`] waves of the blocks the GPU holds at once, at
/// least [`MIN_SPLIT_TILES`] tiles, and long enough that no sequence needs
/// more than [`MAX_SPLITS`].
pub fn plan_split(shape: &DecodeShape, sm_count: usize) -> usize {
    let groups = (shape.group() * shape.q_len).div_ceil(rows_per_block(shape));
    let tiles: usize = shape
        .kv_lens
        .iter()
        .map(|k| k.div_ceil(DEC_TK))
        .sum::<usize>()
        * shape.kv_heads
        * groups;
    let per_sm = if shape.d <= 128 { 2 } else { 1 };
    let target = (sm_count.max(1) * per_sm * WAVES).max(1);
    let per_block = tiles.div_ceil(target).max(MIN_SPLIT_TILES);
    let longest = shape.kv_lens.iter().copied().max().unwrap_or(1);
    let floor = longest.div_ceil(MAX_SPLITS).div_ceil(DEC_TK);
    per_block.max(floor) * DEC_TK
}

/// One decoding step, ready to launch.
pub struct DecodePlan {
    p: Decode,
    d: usize,
    part_o: Buffer<f32>,
    part_lse: Buffer<f32>,
    main: LaunchConfig,
    combine: LaunchConfig,
}

impl DecodePlan {
    /// The plan for `shape`: `split_keys` keys per split (a multiple of
    /// 64), or [`plan_split`]'s choice for this device's SM count.
    pub fn new(dev: &Device, shape: &DecodeShape, split_keys: Option<usize>) -> Result<Self> {
        let sm = dev
            .as_gpu()
            .map(|g| g.info().sm_count as usize)
            .unwrap_or(132);
        let chunk = match split_keys {
            Some(c) if c == 0 || !c.is_multiple_of(DEC_TK) => {
                return Err(Error::input(
                    "--split-keys",
                    format!(
                        "{c}; the keys per split must be a positive multiple of {DEC_TK} (the \
                         kernel's tile)"
                    ),
                ));
            }
            Some(c) => c,
            None => plan_split(shape, sm),
        };
        let longest = shape.kv_lens.iter().copied().max().unwrap_or(1);
        let splits = longest.div_ceil(chunk);
        if splits > MAX_SPLITS || chunk > u32::MAX as usize {
            return Err(Error::input(
                "--split-keys",
                format!(
                    "{chunk} keys per split gives {splits} splits of the longest sequence; at \
                     most {MAX_SPLITS}"
                ),
            ));
        }
        let rpb = rows_per_block(shape);
        let groups = (shape.group() * shape.q_len).div_ceil(rpb);
        let blocks = shape.batch * shape.kv_heads * groups;
        if blocks > i32::MAX as usize {
            return Err(Error::input(
                "shape",
                format!(
                    "{blocks} blocks (B x H_kv x row blocks); at most {}",
                    i32::MAX
                ),
            ));
        }
        let p = Decode {
            batch: shape.batch as u32,
            heads: shape.heads as u32,
            kv_heads: shape.kv_heads as u32,
            q_len: shape.q_len as u32,
            rows_per_block: rpb as u32,
            groups: groups as u32,
            page_log2: shape.page_size.trailing_zeros(),
            max_pages: shape.max_pages as u32,
            num_pages: shape.num_pages as u32,
            chunk: chunk as u32,
            splits: splits as u32,
            scale_log2: shape.scale_log2(),
        };
        let cfg = |grid: Dim3, threads: u32, shared_bytes: usize| LaunchConfig {
            grid,
            block: Dim3::x(threads),
            shared_bytes,
            module: ModuleKey::default(),
            cluster: None,
        };
        Ok(Self {
            p,
            d: shape.d,
            part_o: dev.alloc_filled(p.part_len(shape.d), 0f32)?,
            part_lse: dev.alloc_filled(p.part_rows(), 0f32)?,
            main: cfg(
                Dim3::xy(blocks as u32, splits as u32),
                DEC_THREADS,
                decode_shared_bytes(shape.d, rpb),
            ),
            combine: cfg(Dim3::xy(blocks as u32, rpb as u32), COMBINE_THREADS, 0),
        })
    }

    /// Keys per split.
    pub fn split_keys(&self) -> usize {
        self.p.chunk as usize
    }
    /// Splits of the longest sequence.
    pub fn splits(&self) -> usize {
        self.p.splits as usize
    }
    /// The kernel parameters.
    pub fn params(&self) -> Decode {
        self.p
    }

    /// Runs the step: the output `(B, q_len, H, D)` BF16 bits and the
    /// log-sum-exp `(B, q_len, H)` (natural units).
    pub fn run(
        &mut self,
        dev: &Device,
        x: &DecodeInputs,
        out: &mut Buffer<u16>,
        lse: &mut Buffer<f32>,
    ) -> Result<()> {
        let rows = (self.p.batch * self.p.q_len * self.p.heads) as usize;
        if out.len() != rows * self.d || lse.len() != rows {
            return Err(Error::input(
                "output",
                format!(
                    "{} and {} elements; the shape needs {} and {rows}",
                    out.len(),
                    lse.len(),
                    rows * self.d
                ),
            ));
        }
        let (p, main, comb) = (self.p, self.main, self.combine);
        let (po, pl) = (&mut self.part_o, &mut self.part_lse);
        // The instances differ only in their const parameters.
        macro_rules! split {
            ($d:literal, $rows:literal) => {
                launch!(
                    dev,
                    main,
                    attention::decode::attn_decode::<$d, $rows>(
                        &x.q, &x.k, &x.v, &x.table, &x.kv_lens, &mut *po, &mut *pl, p
                    )
                )
            };
        }
        macro_rules! combine {
            ($d:literal) => {
                launch!(
                    dev,
                    comb,
                    attention::decode::attn_decode_combine::<$d>(
                        &*po, &*pl, &x.kv_lens, &mut *out, &mut *lse, p
                    )
                )
            };
        }
        match (self.d, p.rows_per_block) {
            (64, 8) => split!(64, 8)?,
            (64, 16) => split!(64, 16)?,
            (128, 8) => split!(128, 8)?,
            (128, 16) => split!(128, 16)?,
            (256, 8) => split!(256, 8)?,
            (d, r) => unreachable!("DecodeShape::new refused D = {d} with {r} rows per block"),
        }
        match self.d {
            64 => combine!(64),
            128 => combine!(128),
            _ => combine!(256),
        }
    }
}

/// The PTX entry of the split kernel for `d` and `rows` rows per block
/// (for the resource report).
pub fn entry(d: usize, rows: usize) -> Option<&'static str> {
    use dk::attn_decode::{Instance, Of};
    Some(match (d, rows) {
        (64, 8) => <Of<64, 8> as Instance>::ENTRY,
        (64, 16) => <Of<64, 16> as Instance>::ENTRY,
        (128, 8) => <Of<128, 8> as Instance>::ENTRY,
        (128, 16) => <Of<128, 16> as Instance>::ENTRY,
        (256, 8) => <Of<256, 8> as Instance>::ENTRY,
        _ => return None,
    })
}
