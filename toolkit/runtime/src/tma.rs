//! TMA tensor maps: the description of a 2D row-major matrix in device
//! memory that `cp.async.bulk.tensor` (Hopper's tensor memory accelerator)
//! copies boxes of into shared memory.
//!
//! On a GPU the map is encoded by the driver (`cuTensorMapEncodeTiled`) and
//! copied into a 128-byte device buffer (once: the GPU handle keeps the
//! copies of recent maps, so that a map made again for the same matrix
//! costs no allocation and no copy); a kernel receives that buffer as a
//! `DeviceSlice<u64>` and passes its address to the copy instruction (a
//! tensor map in global memory, read after a
//! `fence.proxy.tensormap::generic.acquire`:
//! [`fence_tensormap_acquire`](ptxlab_device::hopper::fence_tensormap_acquire)).
//! On the simulator the same buffer holds a
//! [`ptxlab_device::hopper::SimTensorMap`], which the
//! simulated copy reads. Either way the map borrows the matrix's buffer:
//! it holds its address.

use crate::buffer::Buffer;
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};
use cudarc::driver::sys;
use ptxlab_device::hopper::{SimTensorMap, Swizzle};
use ptxlab_device::mem::DeviceCopy;
use std::marker::PhantomData;
use std::sync::Arc;

/// A 2D tiled tensor map of a row-major matrix (see the module docs), in a
/// device buffer of 16 words that a kernel takes as a `DeviceSlice<u64>`.
pub struct TensorMap<'a> {
    words: Arc<Buffer<u64>>,
    box_bytes: u32,
    _data: PhantomData<&'a ()>,
}

impl std::fmt::Debug for TensorMap<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TensorMap(box of {} bytes)", self.box_bytes)
    }
}

impl<'a> TensorMap<'a> {
    /// The map of the `rows x cols` row-major matrix in `data`, copied in
    /// boxes of `box_rows x box_cols` elements with `swizzle` applied in
    /// shared memory; elements outside the matrix read as zero.
    ///
    /// The hardware's rules, checked here with a clear error rather than a
    /// driver code: rows 16-byte aligned (`cols * size_of::<T>()` a
    /// multiple of 16), box sides in `1..=256`, box rows of a multiple of
    /// 16 bytes, and with a swizzle box rows of exactly its span (32, 64 or
    /// 128 bytes).
    pub fn tiled_2d<T: DeviceCopy>(
        dev: &Device,
        data: &'a Buffer<T>,
        rows: usize,
        cols: usize,
        box_rows: u32,
        box_cols: u32,
        swizzle: Swizzle,
    ) -> Result<Self> {
        Self::tiled_2d_pitched(dev, data, (rows, cols, cols), box_rows, box_cols, swizzle)
    }

    /// [`TensorMap::tiled_2d`] of a `rows x cols` matrix whose rows start
    /// `pitch` elements apart (`pitch >= cols`; the elements between a row's
    /// end and the next row's start are never read).
    pub fn tiled_2d_pitched<T: DeviceCopy>(
        dev: &Device,
        data: &'a Buffer<T>,
        (rows, cols, pitch): (usize, usize, usize),
        box_rows: u32,
        box_cols: u32,
        swizzle: Swizzle,
    ) -> Result<Self> {
        let eb = std::mem::size_of::<T>();
        let what = "tensor map";
        if rows == 0 || cols == 0 {
            return Err(Error::input(
                what,
                format!("a {rows}x{cols} matrix; both sides must be at least 1"),
            ));
        }
        if pitch < cols {
            return Err(Error::input(
                what,
                format!("rows of {cols} elements {pitch} apart; the pitch must be at least {cols}"),
            ));
        }
        if (rows - 1)
            .checked_mul(pitch)
            .and_then(|n| n.checked_add(cols))
            .is_none_or(|n| n > data.len())
        {
            return Err(Error::input(
                what,
                format!(
                    "a {rows}x{cols} matrix with rows {pitch} elements apart does not fit in a \
                     buffer of {} elements",
                    data.len()
                ),
            ));
        }
        if rows > u32::MAX as usize || cols > u32::MAX as usize {
            return Err(Error::input(
                what,
                format!("a {rows}x{cols} matrix; each side at most 2^32-1"),
            ));
        }
        if !matches!(eb, 1 | 2 | 4 | 8) {
            return Err(Error::input(
                what,
                format!("{eb}-byte elements; allowed 1, 2, 4 or 8 bytes"),
            ));
        }
        if !(pitch * eb).is_multiple_of(16) {
            return Err(Error::input(
                what,
                format!(
                    "rows of {pitch} elements of {eb} bytes ({} bytes) are not 16-byte aligned, as \
                     the tensor memory accelerator needs: use a column count that is a multiple of {}",
                    pitch * eb,
                    16 / eb
                ),
            ));
        }
        if !(1..=256).contains(&box_rows) || !(1..=256).contains(&box_cols) {
            return Err(Error::input(
                what,
                format!("a box of {box_rows}x{box_cols}; each side must be in 1..=256"),
            ));
        }
        let row_bytes = box_cols as usize * eb;
        if !row_bytes.is_multiple_of(16) {
            return Err(Error::input(
                what,
                format!("box rows of {row_bytes} bytes; they must be a multiple of 16 bytes"),
            ));
        }
        if swizzle != Swizzle::None && row_bytes != swizzle.span() as usize {
            return Err(Error::input(
                what,
                format!(
                    "box rows of {row_bytes} bytes with a {}-byte swizzle; they must be equal",
                    swizzle.span()
                ),
            ));
        }
        let box_bytes = box_rows * box_cols * eb as u32;
        let words = match dev.kind() {
            DeviceKind::Sim => Arc::new(
                dev.upload(
                    &SimTensorMap {
                        addr: data.host_ptr() as u64,
                        elem_bytes: eb as u32,
                        dims: [cols as u64, rows as u64],
                        row_stride: (pitch * eb) as u64,
                        box_dims: [box_cols, box_rows],
                        swizzle,
                    }
                    .to_words(),
                )?,
            ),
            DeviceKind::Gpu(g) => {
                let w = encode(
                    data.device_ptr(),
                    eb,
                    (rows, cols, pitch),
                    box_rows,
                    box_cols,
                    swizzle,
                )?;
                g.tensor_map_copy(&w, || dev.upload(&w))?
            }
        };
        Ok(Self {
            words,
            box_bytes,
            _data: PhantomData,
        })
    }

    /// The 16-word device buffer a kernel takes (`DeviceSlice<u64>`).
    pub fn buffer(&self) -> &Buffer<u64> {
        &self.words
    }

    /// Bytes one box occupies in shared memory (what a copy completes on
    /// its barrier).
    pub fn box_bytes(&self) -> u32 {
        self.box_bytes
    }
}

/// `cuTensorMapEncodeTiled` for a 2D row-major matrix at `addr`, rows
/// `pitch` elements apart.
fn encode(
    addr: u64,
    eb: usize,
    (rows, cols, pitch): (usize, usize, usize),
    box_rows: u32,
    box_cols: u32,
    swizzle: Swizzle,
) -> Result<[u64; 16]> {
    use sys::CUtensorMapDataType as D;
    use sys::CUtensorMapSwizzle as S;
    if !crate::probe::driver_symbol_present("cuTensorMapEncodeTiled") {
        return Err(Error::Unsupported {
            what: "cuTensorMapEncodeTiled (TMA tensor maps)".into(),
            backend: "gpu".into(),
            hint: "the driver is older than CUDA 12.0; update it, or use the kernels without TMA"
                .into(),
        });
    }
    let dtype = match eb {
        1 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        4 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        _ => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
    };
    let sw = match swizzle {
        Swizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let dims: [u64; 2] = [cols as u64, rows as u64];
    let strides: [u64; 1] = [(pitch * eb) as u64];
    let boxes: [u32; 2] = [box_cols, box_rows];
    let elem_strides: [u32; 2] = [1, 1];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: `map` and the four arrays are valid for the rank (2) the
    // call reads; `addr` is a live device allocation of at least
    // `(rows - 1) * pitch + cols` elements (checked by the caller), 256-byte aligned; the
    // symbol is present (checked above).
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            2,
            addr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sw,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::driver(
            "cuTensorMapEncodeTiled",
            cudarc::driver::DriverError(r),
        ));
    }
    Ok(map.opaque)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_rules_are_clear_errors() {
        let dev = Device::sim();
        let buf = dev.upload(&[0u16; 64 * 60]).unwrap();
        let e = TensorMap::tiled_2d(&dev, &buf, 64, 60, 64, 64, Swizzle::B128)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("120 bytes") && e.contains("multiple of 8"),
            "{e}"
        );
        let buf = dev.upload(&[0u16; 64 * 64]).unwrap();
        let e = TensorMap::tiled_2d(&dev, &buf, 64, 64, 64, 32, Swizzle::B128)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("64 bytes") && e.contains("128-byte swizzle"),
            "{e}"
        );
        let e = TensorMap::tiled_2d(&dev, &buf, 65, 64, 64, 64, Swizzle::B128)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit"), "{e}");
        let e = TensorMap::tiled_2d(&dev, &buf, 64, 64, 300, 64, Swizzle::B128)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1..=256"), "{e}");
        let m = TensorMap::tiled_2d(&dev, &buf, 64, 64, 32, 64, Swizzle::B128).unwrap();
        assert_eq!(m.box_bytes(), 4096);
        let w = dev.download(m.buffer()).unwrap();
        let t = SimTensorMap::from_words(&w.try_into().unwrap()).unwrap();
        assert_eq!(
            (t.dims, t.box_dims, t.row_stride),
            ([64, 64], [64, 32], 128)
        );
        // Pitched: 60 columns (120 bytes) whose rows start 64 apart.
        let m =
            TensorMap::tiled_2d_pitched(&dev, &buf, (64, 60, 64), 32, 64, Swizzle::B128).unwrap();
        let w = dev.download(m.buffer()).unwrap();
        let t = SimTensorMap::from_words(&w.try_into().unwrap()).unwrap();
        assert_eq!((t.dims, t.row_stride), ([60, 64], 128));
        let e = TensorMap::tiled_2d_pitched(&dev, &buf, (64, 60, 59), 32, 64, Swizzle::B128)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 60"), "{e}");
        let e = TensorMap::tiled_2d_pitched(&dev, &buf, (65, 60, 64), 32, 64, Swizzle::B128)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit"), "{e}");
    }
}
