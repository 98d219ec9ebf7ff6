//! `.npy` input and output with errors that name the file, the expected and
//! the found dtype or shape.

use crate::error::{Error, Result};
use ndarray::{Array1, Array2};
use ndarray_npy::{ReadNpyExt, ReadableElement, WritableElement, WriteNpyExt};
use std::path::Path;

fn file_err(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::File {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

fn open(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|e| file_err(path, format!("cannot open: {e}")))
}

fn describe(e: ndarray_npy::ReadNpyError, want: &str) -> String {
    format!("not a valid .npy of {want}: {e} (write it with numpy.save(path, arr.astype(...)))")
}

/// Reads a 1-D array of `T` (`<f4` for f32, `<f8` for f64).
pub fn read_1d<T: ReadableElement>(path: &Path, want: &str) -> Result<Vec<T>> {
    let a = Array1::<T>::read_npy(open(path)?).map_err(|e| file_err(path, describe(e, want)))?;
    Ok(a.into_raw_vec_and_offset().0)
}

/// Reads a 2-D C-order array; returns (rows, cols, data).
pub fn read_2d<T: ReadableElement + Clone>(
    path: &Path,
    want: &str,
) -> Result<(usize, usize, Vec<T>)> {
    let a = Array2::<T>::read_npy(open(path)?).map_err(|e| file_err(path, describe(e, want)))?;
    let (r, c) = a.dim();
    let a = a.as_standard_layout().to_owned();
    Ok((r, c, a.into_raw_vec_and_offset().0))
}

/// Writes a 1-D array.
pub fn write_1d<T: WritableElement + Clone>(path: &Path, data: &[T]) -> Result<()> {
    let f =
        std::fs::File::create(path).map_err(|e| file_err(path, format!("cannot create: {e}")))?;
    Array1::from(data.to_vec())
        .write_npy(f)
        .map_err(|e| file_err(path, e))
}

/// Writes a 2-D C-order array.
pub fn write_2d<T: WritableElement + Clone>(
    path: &Path,
    rows: usize,
    cols: usize,
    data: &[T],
) -> Result<()> {
    let a = Array2::from_shape_vec((rows, cols), data.to_vec()).map_err(|e| file_err(path, e))?;
    let f =
        std::fs::File::create(path).map_err(|e| file_err(path, format!("cannot create: {e}")))?;
    a.write_npy(f).map_err(|e| file_err(path, e))
}
