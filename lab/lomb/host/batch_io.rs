//! Reading a batch of light curves: an `.npz` of ragged curves with
//! offsets, or a folder of `.npy` curves.

use super::batch::Batch;
use ptxlab_common::error::{Error, Result};
use std::path::Path;

/// How a batch is laid out, for the error messages.
pub const BATCH_FORMATS: &str = "an .npz with arrays t (or x), y, offsets (curves + 1 integers: \
     curve c is samples offsets[c]..offsets[c+1]) and optionally dy, as numpy.savez writes it; \
     or a folder of .npy files, one curve each, shape (n, 2) or (n, 3): columns t, y and \
     optionally dy";

/// A 1-D array of an `.npz` entry as f64: float64, float32 or (for
/// `offsets`) an integer dtype.
fn entry_values(bytes: &[u8], what: &str, integer: bool) -> Result<Vec<f64>> {
    use ptxlab_common::npy::parse_1d;
    // A broken header or truncated data is named as such; only a readable
    // array of another dtype gets the message below.
    let h = ptxlab_common::npy::inspect_bytes(bytes)
        .map_err(|d| Error::input(what.to_string(), format!("not a valid .npy: {d}")))?;
    if h.shape.len() != 1 {
        return Err(Error::input(
            what.to_string(),
            format!(
                "its shape {} has {} dimension(s); a 1-D array is required",
                h.shape_text(),
                h.shape.len()
            ),
        ));
    }
    if let Ok(v) = parse_1d::<f64>(bytes, what) {
        return Ok(v);
    }
    if let Ok(v) = parse_1d::<f32>(bytes, what) {
        return Ok(v.into_iter().map(f64::from).collect());
    }
    if integer {
        if let Ok(v) = parse_1d::<i64>(bytes, what) {
            return Ok(v.into_iter().map(|a| a as f64).collect());
        }
        if let Ok(v) = parse_1d::<i32>(bytes, what) {
            return Ok(v.into_iter().map(f64::from).collect());
        }
        if let Ok(v) = parse_1d::<u32>(bytes, what) {
            return Ok(v.into_iter().map(f64::from).collect());
        }
        if let Ok(v) = parse_1d::<u64>(bytes, what) {
            return Ok(v.into_iter().map(|a| a as f64).collect());
        }
    }
    Err(Error::input(
        what.to_string(),
        format!(
            "not a 1-D array of {} (C order, either byte order)",
            if integer {
                "integers (int64, int32, uint32, uint64)"
            } else {
                "float64 or float32"
            }
        ),
    ))
}

/// Reads an `.npz` batch: `t` (or `x`), `y`, `offsets`, optional `dy`.
pub fn read_npz(path: &Path) -> Result<Batch> {
    let entries = ptxlab_common::npz::read(path)?;
    batch_of_entries(entries, &path.display().to_string())
}

/// [`read_npz`] on the bytes of an `.npz` file held in memory, named `name`
/// in the errors; the batch is validated ([`Batch::validate`]).
pub fn parse_npz(bytes: &[u8], name: &str) -> Result<Batch> {
    let entries = ptxlab_common::npz::parse(bytes).map_err(|d| Error::File {
        path: name.to_string(),
        detail: format!(
            "not a valid .npz: {d} (write it with numpy.savez(path, t=..., y=..., ...))"
        ),
    })?;
    let b = batch_of_entries(entries, name)?;
    validated(b, name)
}

/// A batch that passes [`Batch::validate`], or its error naming `name`.
fn validated(b: Batch, name: &str) -> Result<Batch> {
    b.validate().map_err(|e| match e {
        Error::Runtime(ptxlab_common::runtime::Error::Input { detail, .. }) => {
            Error::input(format!("--curves {name}"), detail)
        }
        e => e,
    })?;
    Ok(b)
}

/// The batch held by the arrays of an `.npz` named `p`.
fn batch_of_entries(entries: Vec<(String, Vec<u8>)>, p: &str) -> Result<Batch> {
    let get = |keys: &[&str]| {
        entries
            .iter()
            .find(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, b)| (k.clone(), b))
    };
    let names: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    let need = |keys: &[&str]| {
        get(keys).ok_or_else(|| {
            Error::input(
                format!("--curves {p}"),
                format!(
                    "no array named {}; it holds {names:?}. Expected {BATCH_FORMATS}",
                    keys.join(" or ")
                ),
            )
        })
    };
    let (tk, tb) = need(&["t", "x"])?;
    let (_, yb) = need(&["y"])?;
    let (_, ob) = need(&["offsets"])?;
    let t = entry_values(tb, &format!("--curves {p}: {tk}"), false)?;
    let y = entry_values(yb, &format!("--curves {p}: y"), false)?;
    let dy = match get(&["dy"]) {
        Some((_, b)) => Some(entry_values(b, &format!("--curves {p}: dy"), false)?),
        None => None,
    };
    let raw = entry_values(ob, &format!("--curves {p}: offsets"), true)?;
    let mut offsets = Vec::with_capacity(raw.len());
    for (i, &o) in raw.iter().enumerate() {
        if !(o >= 0.0 && o.fract() == 0.0 && o <= t.len() as f64) {
            return Err(Error::input(
                format!("--curves {p}: offsets"),
                format!(
                    "offsets[{i}] = {o}; offsets are whole numbers in 0..={}",
                    t.len()
                ),
            ));
        }
        if i > 0 && o < raw[i - 1] {
            return Err(Error::input(
                format!("--curves {p}: offsets"),
                format!(
                    "offsets[{i}] = {o} is below offsets[{}] = {}; they must not decrease",
                    i - 1,
                    raw[i - 1]
                ),
            ));
        }
        offsets.push(o as usize);
    }
    Ok(Batch { t, y, dy, offsets })
}

/// One curve: `(t, y, dy)`.
type Curve = (Vec<f64>, Vec<f64>, Option<Vec<f64>>);

/// One curve of a folder: a 2-D `.npy` of shape (n, 2) or (n, 3).
fn read_curve(path: &Path) -> Result<Curve> {
    let h = ptxlab_common::npy::inspect(path)?;
    let want = "float64 or float32, shape (n, 2) or (n, 3)";
    let (rows, cols, data) = if h.descr.trim_start_matches(['<', '>', '=', '|']) == "f4" {
        let (r, c, d) = ptxlab_common::npy::read_2d::<f32>(path, want)?;
        (r, c, d.into_iter().map(f64::from).collect::<Vec<_>>())
    } else {
        ptxlab_common::npy::read_2d::<f64>(path, want)?
    };
    if cols != 2 && cols != 3 {
        return Err(Error::input(
            format!("--curves {}", path.display()),
            format!("shape ({rows}, {cols}); a curve is (n, 2) [t, y] or (n, 3) [t, y, dy]"),
        ));
    }
    let col = |k: usize| (0..rows).map(|i| data[i * cols + k]).collect::<Vec<f64>>();
    Ok((col(0), col(1), (cols == 3).then(|| col(2))))
}

/// Reads a folder of `.npy` curves, in file-name order.
pub fn read_dir(dir: &Path) -> Result<Batch> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::File {
            path: dir.display().to_string(),
            detail: format!("cannot list: {e}"),
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "npy"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::input(
            format!("--curves {}", dir.display()),
            format!("the folder holds no .npy files; expected {BATCH_FORMATS}"),
        ));
    }
    let mut b = Batch {
        offsets: vec![0],
        ..Default::default()
    };
    let mut with_dy = None;
    let mut dy_all = Vec::new();
    for f in &files {
        let (t, y, dy) = read_curve(f)?;
        match (with_dy, &dy) {
            (None, _) => with_dy = Some(dy.is_some()),
            (Some(w), d) if w != d.is_some() => {
                return Err(Error::input(
                    format!("--curves {}", f.display()),
                    "some curves have a dy column and some do not; give it for all or none",
                ));
            }
            _ => {}
        }
        b.t.extend(t);
        b.y.extend(y);
        if let Some(d) = dy {
            dy_all.extend(d);
        }
        b.offsets.push(b.t.len());
    }
    if with_dy == Some(true) {
        b.dy = Some(dy_all);
    }
    Ok(b)
}

/// Reads `--curves PATH`: a folder of `.npy` curves or an `.npz`, validated
/// ([`Batch::validate`]; its errors name the path).
pub fn read_batch(path: &Path) -> Result<Batch> {
    let name = path.display().to_string();
    if path.is_dir() {
        validated(read_dir(path)?, &name)
    } else if path.extension().is_some_and(|x| x == "npz") {
        validated(read_npz(path)?, &name)
    } else {
        Err(Error::input(
            format!("--curves {}", path.display()),
            format!("neither a folder nor an .npz file; expected {BATCH_FORMATS}"),
        ))
    }
}
