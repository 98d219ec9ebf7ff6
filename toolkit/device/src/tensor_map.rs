//! The layout descriptions that both the kernel API and the simulator read:
//! shared-memory swizzle patterns ([`Swizzle`]) and the simulator's 2D
//! tensor map ([`SimTensorMap`]). Plain data with no dependency, so that
//! the simulator's TMA engine can read a map without importing the kernel
//! API above it; [`hopper`](crate::hopper) re-exports both.

/// A shared-memory swizzle pattern (TMA's `CU_TENSOR_MAP_SWIZZLE_*` and
/// `wgmma`'s descriptor layouts): the 16-byte chunk index inside each span
/// of 32, 64 or 128 bytes is XORed with the row index inside a repeat of
/// 256, 512 or 1024 bytes (CUTLASS's `Swizzle<B, 4, 3>`, B = 1, 2, 3),
/// computed on absolute shared-memory addresses. Tiles start on a
/// 1024-byte boundary so the pattern starts with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swizzle {
    /// No swizzle ("interleave" in `wgmma`'s terms).
    None,
    /// 32-byte spans.
    B32,
    /// 64-byte spans.
    B64,
    /// 128-byte spans: the usual choice for 128-byte tile rows.
    B128,
}

impl Swizzle {
    /// Bytes of one swizzled row span (16 without swizzle).
    pub const fn span(self) -> u32 {
        match self {
            Swizzle::None => 16,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }
    /// The physical shared-memory address of the logical address `addr`.
    pub const fn apply(self, addr: u32) -> u32 {
        let mask = match self {
            Swizzle::None => 0,
            Swizzle::B32 => 0x10,
            Swizzle::B64 => 0x30,
            Swizzle::B128 => 0x70,
        };
        addr ^ ((addr >> 3) & mask)
    }
    /// The swizzle-mode field of a `wgmma` matrix descriptor (bits 62-63).
    pub const fn descriptor_mode(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B128 => 1,
            Swizzle::B64 => 2,
            Swizzle::B32 => 3,
        }
    }
    /// The swizzle of a descriptor's mode field.
    pub const fn from_descriptor_mode(mode: u64) -> Swizzle {
        match mode & 3 {
            1 => Swizzle::B128,
            2 => Swizzle::B64,
            3 => Swizzle::B32,
            _ => Swizzle::None,
        }
    }
}

/// A 2D tiled tensor map as the simulator reads it: what the host encoded
/// with `cuTensorMapEncodeTiled` on a GPU, written as plain words into the
/// same 128-byte device buffer on the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimTensorMap {
    /// Address of element (0, 0) (the simulator buffer's host address).
    pub addr: u64,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// Columns (innermost dimension) and rows.
    pub dims: [u64; 2],
    /// Bytes between consecutive rows.
    pub row_stride: u64,
    /// The box copied per load: columns, rows.
    pub box_dims: [u32; 2],
    /// Shared-memory swizzle of the copied box.
    pub swizzle: Swizzle,
}

impl SimTensorMap {
    /// Words of a tensor map (128 bytes, the size of a `CUtensorMap`).
    pub const WORDS: usize = 16;
    const MAGIC: u64 = 0x5054_584c_544d_4150; // "PTXLTMAP"

    /// The words the host writes into the device buffer.
    pub const fn to_words(&self) -> [u64; 16] {
        let mut w = [0u64; 16];
        w[0] = Self::MAGIC;
        w[1] = self.addr;
        w[2] = self.elem_bytes as u64;
        w[3] = self.dims[0];
        w[4] = self.dims[1];
        w[5] = self.row_stride;
        w[6] = self.box_dims[0] as u64;
        w[7] = self.box_dims[1] as u64;
        w[8] = self.swizzle.descriptor_mode();
        w
    }
    /// The map from its words, or `None` if they are not one (a GPU tensor
    /// map handed to the simulator, or garbage).
    pub const fn from_words(w: &[u64; 16]) -> Option<Self> {
        if w[0] != Self::MAGIC {
            return None;
        }
        Some(Self {
            addr: w[1],
            elem_bytes: w[2] as u32,
            dims: [w[3], w[4]],
            row_stride: w[5],
            box_dims: [w[6] as u32, w[7] as u32],
            swizzle: Swizzle::from_descriptor_mode(w[8]),
        })
    }
    /// Bytes one box occupies in shared memory.
    pub const fn box_bytes(&self) -> u32 {
        self.box_dims[0] * self.box_dims[1] * self.elem_bytes
    }
}
