//! `.npy` input and output with errors that name the file, the expected and
//! the found dtype or shape.
//!
//! Before any data is read, the header is inspected: the number of
//! dimensions, the dtype and the data size the shape promises are checked
//! against what is wanted and against the file's real length, so a truncated
//! file or a hostile header (a shape of 10^12 elements in a 100-byte file) is
//! an error that says so, never an attempt to allocate the promised size.
//! Both byte orders are read (`<f4` and `>f4`); Fortran-order arrays are
//! converted to C order.

use crate::error::{Error, Result};
use ndarray::{Array1, Array2, ArrayD, IxDyn};
use ndarray_npy::{ReadNpyError, ReadNpyExt, ReadableElement, WritableElement, WriteNpyExt};
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

const HOW_TO_WRITE: &str = "write it with numpy.save(path, arr.astype(...))";

fn invalid(path: &Path, want: &str, detail: impl std::fmt::Display) -> Error {
    file_err(
        path,
        format!("not a valid .npy of {want}: {detail} ({HOW_TO_WRITE})"),
    )
}

/// What the header of a `.npy` file says, and how many data bytes follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The dtype descriptor, e.g. `<f4`, `>f8`, `|u1`.
    pub descr: String,
    /// Column-major data.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<usize>,
    /// Where the data starts: the bytes of the preamble and the header.
    pub data_offset: u64,
    /// Bytes after the header in the file.
    pub data_bytes: u64,
}

impl NpyHeader {
    /// Bytes per element from the descriptor (`<f4` -> 4), when it is a
    /// simple numeric one of a size NumPy writes (1, 2, 4, 8 or 16 bytes).
    /// A size of 0 (`<f0`) is refused here: the data check multiplies the
    /// shape by it, so any shape would pass and the decoder would allocate
    /// what the header asks.
    pub fn item_size(&self) -> Option<usize> {
        let d = self.descr.trim_start_matches(['<', '>', '|', '=']);
        let kind = d.chars().next()?;
        if !"fiucbc".contains(kind) {
            return None;
        }
        d[1..]
            .parse()
            .ok()
            .filter(|n| matches!(n, 1 | 2 | 4 | 8 | 16))
    }
    /// Elements the shape describes (`None` on overflow).
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }
    /// `(5, 7)` / `(5,)`, as NumPy prints a shape.
    pub fn shape_text(&self) -> String {
        shape_text(&self.shape)
    }
}

fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// NumPy's name for a descriptor, for messages.
fn dtype_name(descr: &str) -> String {
    let d = descr.trim_start_matches(['<', '>', '|', '=']);
    let name = match d {
        "f2" => "float16",
        "f4" => "float32",
        "f8" => "float64",
        "i1" => "int8",
        "i2" => "int16",
        "i4" => "int32",
        "i8" => "int64",
        "u1" => "uint8",
        "u2" => "uint16",
        "u4" => "uint32",
        "u8" => "uint64",
        "b1" => "bool",
        "c8" => "complex64",
        "c16" => "complex128",
        _ => return format!("'{descr}'"),
    };
    format!("'{descr}' ({name})")
}

/// The value of `key` in the header dict text (`'descr': '<f4'`), as the raw
/// text up to the next top-level comma.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = &header[at + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(tuple) = rest.strip_prefix('(') {
        return Some(&tuple[..tuple.find(')')?]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// The preamble (magic string, version, header length) of `.npy` bytes
/// `pre` (the first 12 bytes, or fewer in a short file) of a file of `len`
/// bytes: `(header length, header start)`.
fn preamble(pre: &[u8], len: u64) -> std::result::Result<(u64, u64), String> {
    if pre.len() < 10 || &pre[..6] != b"\x93NUMPY" {
        return Err(format!(
            "it does not start with the .npy magic string (the file has {len} bytes)"
        ));
    }
    let (hlen, start) = match pre[6] {
        1 => (u16::from_le_bytes([pre[8], pre[9]]) as u64, 10u64),
        2 | 3 if pre.len() >= 12 => (
            u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]) as u64,
            12,
        ),
        2 | 3 => return Err(format!("truncated preamble: the file has {len} bytes")),
        v => return Err(format!("unsupported format version {v}")),
    };
    if start + hlen > len {
        return Err(format!(
            "truncated header: it announces {hlen} header bytes, the file has {len} bytes in all"
        ));
    }
    Ok((hlen, start))
}

/// The fields of the header dict `header` (bytes `start..start + hlen` of a
/// file of `len` bytes).
fn fields(header: &[u8], start: u64, len: u64) -> std::result::Result<NpyHeader, String> {
    let hlen = header.len() as u64;
    let header = String::from_utf8_lossy(header);
    let descr = dict_value(&header, "descr")
        .ok_or("the header has no 'descr'")?
        .trim_matches(['\'', '"'])
        .to_string();
    let fortran_order = dict_value(&header, "fortran_order").is_some_and(|v| v == "True");
    let shape_raw = dict_value(&header, "shape").ok_or("the header has no 'shape'")?;
    let shape = shape_raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| format!("the shape ({shape_raw}) is not a tuple of sizes"))?;
    Ok(NpyHeader {
        descr,
        fortran_order,
        shape,
        data_offset: start + hlen,
        data_bytes: len - start - hlen,
    })
}

/// Reads and parses the header of a `.npy` file (versions 1, 2 and 3).
/// Errors name the file and what is wrong with it.
pub fn inspect(path: &Path) -> Result<NpyHeader> {
    use std::io::Read;
    let mut f = open(path)?;
    let len = f
        .metadata()
        .map_err(|e| file_err(path, format!("cannot stat: {e}")))?
        .len();
    let bad = |d: &str| file_err(path, format!("not a valid .npy file: {d} ({HOW_TO_WRITE})"));
    let mut pre = Vec::with_capacity(12);
    (&mut f)
        .take(12)
        .read_to_end(&mut pre)
        .map_err(|e| file_err(path, format!("cannot read: {e}")))?;
    let (hlen, start) = preamble(&pre, len).map_err(|d| bad(&d))?;
    let mut header = vec![0u8; hlen as usize];
    let mut f = open(path)?;
    let mut skip = vec![0u8; start as usize];
    f.read_exact(&mut skip)
        .and_then(|_| f.read_exact(&mut header))
        .map_err(|e| file_err(path, format!("cannot read the header: {e}")))?;
    fields(&header, start, len).map_err(|d| bad(&d))
}

/// [`inspect`] on the bytes of a `.npy` file held in memory; the error is
/// the detail (what is wrong), for the caller to name the source.
pub fn inspect_bytes(b: &[u8]) -> std::result::Result<NpyHeader, String> {
    let len = b.len() as u64;
    let (hlen, start) = preamble(&b[..b.len().min(12)], len)?;
    fields(&b[start as usize..(start + hlen) as usize], start, len)
}

/// Checks a header against the number of dimensions wanted, a plain
/// numeric dtype and the data the file holds; returns the data bytes the
/// shape needs. Nothing is allocated from the header's numbers before this.
fn check_layout(h: &NpyHeader, want: &str, ndim: usize) -> std::result::Result<usize, String> {
    if h.shape.len() != ndim {
        return Err(format!(
            "its shape {} has {} dimension(s); a {ndim}-D array is required",
            h.shape_text(),
            h.shape.len()
        ));
    }
    let Some(item) = h.item_size() else {
        return Err(format!(
            "its dtype is {}, but {want} is required",
            dtype_name(&h.descr)
        ));
    };
    match h.elements().and_then(|n| n.checked_mul(item)) {
        None => Err(format!("its shape {} overflows a size", h.shape_text())),
        Some(need) if need as u64 > h.data_bytes => Err(format!(
            "the file is truncated: shape {} of {} needs {need} bytes of data, but the file \
             holds {}",
            h.shape_text(),
            dtype_name(&h.descr),
            h.data_bytes
        )),
        Some(need) => Ok(need),
    }
}

/// A version-1 `.npy` header that says exactly what `h` says (the dtype,
/// the order and the shape checked by [`check_layout`]): the decoder reads
/// this header, then the file's data, so it never sees a header text that
/// was parsed differently from the checks.
fn canonical_header(h: &NpyHeader) -> Vec<u8> {
    let dims: Vec<String> = h.shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': {}, 'shape': {shape}, }}",
        h.descr,
        if h.fortran_order { "True" } else { "False" }
    );
    // Magic (6) + version (2) + length (2) + dict + '\n', a multiple of 64.
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Checks a file's header against the number of dimensions wanted and the
/// file's length, and the data against the host memory, before anything is
/// read; returns the header and a reader of the canonical header then the
/// file's data.
fn precheck(
    path: &Path,
    want: &str,
    ndim: usize,
) -> Result<(NpyHeader, impl std::io::Read + use<>)> {
    use std::io::{Read, Seek, SeekFrom};
    let h = inspect(path)?;
    let need = check_layout(&h, want, ndim).map_err(|d| invalid(path, want, d))?;
    crate::runtime::host_mem::check_host_alloc(
        &path.display().to_string(),
        need as u128,
        "use a smaller array",
    )?;
    let mut f = open(path)?;
    f.seek(SeekFrom::Start(h.data_offset))
        .map_err(|e| file_err(path, format!("cannot read the data: {e}")))?;
    let reader = std::io::Cursor::new(canonical_header(&h)).chain(std::io::BufReader::new(f));
    Ok((h, reader))
}

fn describe(e: ReadNpyError, want: &str, h: &NpyHeader) -> String {
    match e {
        ReadNpyError::WrongDescriptor(_) => format!(
            "its dtype is {}, but {want} is required",
            dtype_name(&h.descr)
        ),
        ReadNpyError::WrongNdim(want_nd, got) => format!(
            "its shape {} has {got} dimension(s); {} required",
            h.shape_text(),
            want_nd.map_or("another number is".to_string(), |n| format!(
                "a {n}-D array is"
            ))
        ),
        ReadNpyError::MissingData => format!(
            "the file is truncated: shape {} needs more data than the file holds",
            h.shape_text()
        ),
        ReadNpyError::ExtraBytes(n) => format!(
            "the file has {n} bytes after the data of shape {}; it is not one array",
            h.shape_text()
        ),
        other => other.to_string(),
    }
}

/// Reads a 1-D array of `T` (`<f4` or `>f4` for f32, `<f8`/`>f8` for f64,
/// `|u1` for u8, `<i4`/`<u4` for i32/u32). `want` names the type for messages.
pub fn read_1d<T: ReadableElement>(path: &Path, want: &str) -> Result<Vec<T>> {
    let (h, r) = precheck(path, want, 1)?;
    let a = Array1::<T>::read_npy(r).map_err(|e| invalid(path, want, describe(e, want, &h)))?;
    Ok(a.into_raw_vec_and_offset().0)
}

/// Reads a 2-D array (C or Fortran order); returns (rows, cols, data in C order).
pub fn read_2d<T: ReadableElement + Clone>(
    path: &Path,
    want: &str,
) -> Result<(usize, usize, Vec<T>)> {
    let (h, r) = precheck(path, want, 2)?;
    let a = Array2::<T>::read_npy(r).map_err(|e| invalid(path, want, describe(e, want, &h)))?;
    let (r, c) = a.dim();
    let a = a.as_standard_layout().to_owned();
    Ok((r, c, a.into_raw_vec_and_offset().0))
}

/// Reads an `ndim`-D array (C or Fortran order); returns (shape, data in C
/// order).
pub fn read_nd<T: ReadableElement + Clone>(
    path: &Path,
    want: &str,
    ndim: usize,
) -> Result<(Vec<usize>, Vec<T>)> {
    let (h, r) = precheck(path, want, ndim)?;
    let a = ArrayD::<T>::read_npy(r).map_err(|e| invalid(path, want, describe(e, want, &h)))?;
    let shape = a.shape().to_vec();
    let a = a.as_standard_layout().to_owned();
    Ok((shape, a.into_raw_vec_and_offset().0))
}

/// [`write_nd`] of f32 values, then one line on standard output naming
/// the file and its shape (what the CLIs print for each array they write).
pub fn write_reported(path: &Path, shape: &[usize], data: &[f32]) -> Result<()> {
    write_nd(path, shape, data)?;
    println!("wrote {} (float32, shape {shape:?})", path.display());
    Ok(())
}

/// Writes a C-order array of any shape.
pub fn write_nd<T: WritableElement + Clone>(
    path: &Path,
    shape: &[usize],
    data: &[T],
) -> Result<()> {
    let a = ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).map_err(|e| file_err(path, e))?;
    let f =
        std::fs::File::create(path).map_err(|e| file_err(path, format!("cannot create: {e}")))?;
    a.write_npy(f).map_err(|e| file_err(path, e))
}

/// Reads an `ndim`-D complex array (`<c8` complex64 or `<c16` complex128,
/// C or Fortran order); returns (shape, values interleaved `re, im` in C
/// order, widened to f64 exactly, `true` for complex64).
pub fn read_complex(path: &Path, ndim: usize) -> Result<(Vec<usize>, Vec<f64>, bool)> {
    use std::io::Read;
    let want = "complex64 or complex128";
    let h = inspect(path)?;
    let need = check_layout(&h, want, ndim).map_err(|d| invalid(path, want, d))?;
    let single = match h.descr.as_str() {
        "<c8" | "=c8" => true,
        "<c16" | "=c16" => false,
        _ => {
            return Err(invalid(
                path,
                want,
                format!(
                    "its dtype is {}, but little-endian {want} is required",
                    dtype_name(&h.descr)
                ),
            ));
        }
    };
    crate::runtime::host_mem::check_host_alloc(
        &path.display().to_string(),
        need as u128 * if single { 2 } else { 1 },
        "use a smaller array",
    )?;
    let mut f = open(path)?;
    let mut bytes = vec![0u8; h.data_offset as usize];
    f.read_exact(&mut bytes)
        .map_err(|e| file_err(path, format!("cannot read the header: {e}")))?;
    let mut bytes = vec![0u8; need];
    f.read_exact(&mut bytes)
        .map_err(|e| file_err(path, format!("cannot read the data: {e}")))?;
    let vals: Vec<f64> = if single {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            .collect()
    } else {
        bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect()
    };
    let vals = if h.fortran_order && h.shape.len() > 1 {
        // Column-major: reverse the axes' strides into C order.
        let shape = &h.shape;
        let count = vals.len() / 2;
        let mut out = vec![0.0; vals.len()];
        for (c_index, pair) in out.chunks_exact_mut(2).enumerate().take(count) {
            let (mut rem, mut f_index, mut stride) = (c_index, 0, 1);
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rem % shape[d];
                rem /= shape[d];
            }
            for d in 0..shape.len() {
                f_index += idx[d] * stride;
                stride *= shape[d];
            }
            pair.copy_from_slice(&vals[2 * f_index..2 * f_index + 2]);
        }
        out
    } else {
        vals
    };
    Ok((h.shape.clone(), vals, single))
}

/// Writes a C-order complex array of `shape` from interleaved `re, im`
/// values: complex64 (`<c8`) when `single`, complex128 (`<c16`) otherwise.
pub fn write_complex(path: &Path, shape: &[usize], data: &[f64], single: bool) -> Result<()> {
    use std::io::Write;
    let h = NpyHeader {
        descr: if single { "<c8" } else { "<c16" }.into(),
        fortran_order: false,
        shape: shape.to_vec(),
        data_offset: 0,
        data_bytes: 0,
    };
    let mut out = canonical_header(&h);
    for v in data {
        if single {
            out.extend_from_slice(&(*v as f32).to_le_bytes());
        } else {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut f =
        std::fs::File::create(path).map_err(|e| file_err(path, format!("cannot create: {e}")))?;
    f.write_all(&out).map_err(|e| file_err(path, e))
}

/// The checks of [`precheck`] on bytes in memory: the header, and a reader
/// of the canonical header then the data.
fn precheck_bytes<'b>(
    bytes: &'b [u8],
    what: &str,
    ndim: usize,
) -> Result<(NpyHeader, impl std::io::Read + 'b)> {
    use std::io::Read;
    let bad = |d: String| Error::input(what, format!("not a valid .npy: {d}"));
    let h = inspect_bytes(bytes).map_err(bad)?;
    check_layout(&h, "a numeric dtype", ndim).map_err(bad)?;
    let data = &bytes[h.data_offset as usize..];
    Ok((
        h.clone(),
        std::io::Cursor::new(canonical_header(&h)).chain(data),
    ))
}

/// Parses a 1-D array from the bytes of a `.npy` file held in memory (for
/// example embedded with `include_bytes!`, so a binary needs no data files).
/// `what` names the source in errors.
pub fn parse_1d<T: ReadableElement>(bytes: &[u8], what: &str) -> Result<Vec<T>> {
    let (h, r) = precheck_bytes(bytes, what, 1)?;
    let a = Array1::<T>::read_npy(r).map_err(|e| {
        Error::input(
            what,
            format!("not a valid .npy: {}", describe(e, "another dtype", &h)),
        )
    })?;
    Ok(a.into_raw_vec_and_offset().0)
}

/// Parses a 2-D array (C or Fortran order) from the bytes of a `.npy` file
/// held in memory; returns (rows, cols, data in C order).
pub fn parse_2d<T: ReadableElement + Clone>(
    bytes: &[u8],
    what: &str,
) -> Result<(usize, usize, Vec<T>)> {
    let (h, r) = precheck_bytes(bytes, what, 2)?;
    let a = Array2::<T>::read_npy(r).map_err(|e| {
        Error::input(
            what,
            format!("not a valid .npy: {}", describe(e, "another dtype", &h)),
        )
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dict_values_are_found_in_numpy_headers() {
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 7), }";
        assert_eq!(dict_value(h, "descr"), Some("'<f4'"));
        assert_eq!(dict_value(h, "fortran_order"), Some("False"));
        assert_eq!(dict_value(h, "shape"), Some("5, 7"));
        let h = "{'descr': '|u1', 'fortran_order': True, 'shape': (3,), }";
        assert_eq!(dict_value(h, "shape"), Some("3,"));
        assert_eq!(dict_value(h, "fortran_order"), Some("True"));
        assert_eq!(shape_text(&[3]), "(3,)");
        assert_eq!(shape_text(&[5, 7]), "(5, 7)");
        assert_eq!(shape_text(&[]), "()");
        assert_eq!(dtype_name(">f8"), "'>f8' (float64)");
    }

    /// Complex arrays round-trip in both widths, and a real array is
    /// refused by name.
    #[test]
    fn complex_arrays_round_trip() {
        let dir = std::env::temp_dir().join(format!("ptxlab-npy-c-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = [1.0, -2.0, 0.5, 0.25, 3.0, 4.0];
        for single in [true, false] {
            let p = dir.join(format!("c{single}.npy"));
            write_complex(&p, &[1, 3], &data, single).unwrap();
            assert_eq!(
                inspect(&p).unwrap().descr,
                if single { "<c8" } else { "<c16" }
            );
            let (shape, v, s) = read_complex(&p, 2).unwrap();
            assert_eq!((shape, v.as_slice(), s), (vec![1, 3], &data[..], single));
        }
        let p = dir.join("r.npy");
        write_1d(&p, &[1.0f32, 2.0]).unwrap();
        let e = read_complex(&p, 1).unwrap_err().to_string();
        assert!(e.contains("float32") && e.contains("complex128"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `.npy` bytes with header dict `dict` and `data` after it.
    fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut h = dict.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
        b.extend_from_slice(h.as_bytes());
        b.extend_from_slice(data);
        b
    }

    /// Hostile headers are errors that say what is wrong, before anything
    /// the header claims is allocated (the decoder allocates the shape's
    /// elements before it checks the dtype, so nothing unchecked reaches it).
    #[test]
    fn hostile_headers_are_refused_before_any_allocation() {
        let err = |b: &[u8]| parse_1d::<f64>(b, "x.npy").unwrap_err().to_string();
        // A dtype that is not a plain number, with a shape of 10^12 elements.
        let b = npy_bytes(
            "{'descr': '|O', 'fortran_order': False, 'shape': (1000000000000,), }",
            &[],
        );
        let e = err(&b);
        assert!(
            e.contains("x.npy") && e.contains("its dtype is '|O'"),
            "{e}"
        );
        // A numeric dtype whose shape the data does not hold.
        let b = npy_bytes(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }",
            &[0; 16],
        );
        let e = err(&b);
        assert!(e.contains("truncated") && e.contains("holds 16"), "{e}");
        // Two shapes: the decoder reads the canonical header of what was
        // checked (one element), never the other.
        let b = npy_bytes(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), \"shape\": (1000000000000,), }",
            &1.5f64.to_le_bytes(),
        );
        assert_eq!(parse_1d::<f64>(&b, "x.npy").unwrap(), [1.5]);
        // A zero-size dtype: shape x 0 bytes fits any file, so it must be
        // refused by its size (found by the `npy` fuzz target: the decoder
        // allocated the 2.2e18 f32 elements the header asked for).
        let b = npy_bytes(
            "{'descr': '<f0', 'fortran_order': False, 'shape': (2234688169579526369,), }",
            &[],
        );
        let e = parse_1d::<f32>(&b, "x.npy").unwrap_err().to_string();
        assert!(
            e.contains("x.npy") && e.contains("its dtype is '<f0'"),
            "{e}"
        );
        // A shape whose product overflows.
        let b = npy_bytes(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
            &[],
        );
        let e = parse_2d::<f32>(&b, "x.npy").unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
        // A header that announces more than the file holds.
        let e = err(b"\x93NUMPY\x01\x00\xff\xff{");
        assert!(e.contains("truncated header"), "{e}");
        // The reader of a canonical header takes what numpy writes: both
        // byte orders, Fortran order.
        let b = npy_bytes(
            "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }",
            &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect::<Vec<u8>>(),
        );
        let (r, c, v) = parse_2d::<f32>(&b, "x.npy").unwrap();
        assert_eq!((r, c), (2, 3));
        assert_eq!(v, [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    }
}
