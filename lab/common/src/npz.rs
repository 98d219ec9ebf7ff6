//! `.npz` input: the ZIP archive `numpy.savez` (stored entries) and
//! `numpy.savez_compressed` (deflated entries) write, one `.npy` per array.
//!
//! Only what NumPy writes is read: the central directory at the end of the
//! file, entries stored (method 0) or deflated (method 8), no encryption,
//! sizes below 4 GiB (no ZIP64). Every size and offset is checked against
//! the file's real length before anything is allocated, and the errors name
//! the file and the entry.

use crate::error::{Error, Result};
use std::path::Path;

fn bad(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::File {
        path: path.display().to_string(),
        detail: format!(
            "not a valid .npz: {detail} (write it with numpy.savez(path, t=..., y=..., ...))"
        ),
    }
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

/// The arrays of an `.npz` file: `(name without ".npy", the .npy bytes)`,
/// in the archive's order.
pub fn read(path: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let bytes = std::fs::read(path).map_err(|e| Error::File {
        path: path.display().to_string(),
        detail: format!("cannot read: {e}"),
    })?;
    parse(&bytes).map_err(|d| bad(path, d))
}

/// [`read`] on bytes in memory; the error is the detail.
pub fn parse(b: &[u8]) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
    // End of central directory: signature 0x06054b50, 22 bytes plus a
    // comment of up to 65535 bytes at the very end.
    const EOCD: u32 = 0x0605_4b50;
    let lo = b.len().saturating_sub(22 + 65_535);
    let eocd = (lo..b.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(b, i) == Some(EOCD))
        .ok_or("no ZIP end-of-directory record (the file is not a ZIP archive, or truncated)")?;
    let entries = u16_at(b, eocd + 10).ok_or("truncated directory")? as usize;
    let cd_size = u32_at(b, eocd + 12).ok_or("truncated directory")? as usize;
    let cd_off = u32_at(b, eocd + 16).ok_or("truncated directory")? as usize;
    if cd_off == 0xffff_ffff || cd_size == 0xffff_ffff {
        return Err("ZIP64 archives (arrays above 4 GiB) are not supported".into());
    }
    if cd_off.checked_add(cd_size).is_none_or(|e| e > eocd) {
        return Err("the central directory lies outside the file".into());
    }
    let mut out = Vec::with_capacity(entries.min(1024));
    let mut p = cd_off;
    for _ in 0..entries {
        if u32_at(b, p) != Some(0x0201_4b50) {
            return Err(format!("bad central directory entry at byte {p}"));
        }
        let field = |o: usize| u32_at(b, p + o).ok_or("truncated directory entry");
        let method = u16_at(b, p + 10).ok_or("truncated directory entry")?;
        let flags = u16_at(b, p + 8).ok_or("truncated directory entry")?;
        let csize = field(20)? as usize;
        let usize_ = field(24)? as usize;
        let nlen = u16_at(b, p + 28).ok_or("truncated directory entry")? as usize;
        let elen = u16_at(b, p + 30).ok_or("truncated directory entry")? as usize;
        let clen = u16_at(b, p + 32).ok_or("truncated directory entry")? as usize;
        let local = field(42)? as usize;
        let name = b.get(p + 46..p + 46 + nlen).ok_or("truncated entry name")?;
        let name = String::from_utf8_lossy(name).into_owned();
        if csize == 0xffff_ffff || usize_ == 0xffff_ffff || local == 0xffff_ffff {
            return Err(format!("{name}: ZIP64 entries are not supported"));
        }
        if flags & 1 != 0 {
            return Err(format!("{name}: encrypted entries are not supported"));
        }
        // The local header: 30 bytes, then its own name and extra field.
        if u32_at(b, local) != Some(0x0403_4b50) {
            return Err(format!("{name}: bad local header at byte {local}"));
        }
        let ln = u16_at(b, local + 26).ok_or("truncated local header")? as usize;
        let le = u16_at(b, local + 28).ok_or("truncated local header")? as usize;
        let start = local + 30 + ln + le;
        let data = b
            .get(start..start.saturating_add(csize))
            .ok_or_else(|| format!("{name}: its {csize} bytes run past the end of the file"))?;
        let data = match method {
            0 => data.to_vec(),
            8 => {
                // The directory's size is what inflating may allocate: check
                // it against the host memory first (a small file can claim
                // gigabytes).
                crate::runtime::host_mem::check_host_alloc(
                    &name,
                    usize_ as u128,
                    "use a smaller array",
                )
                .map_err(|e| e.to_string())?;
                let v = miniz_oxide::inflate::decompress_to_vec_with_limit(data, usize_)
                    .map_err(|e| format!("{name}: bad deflate data ({e:?})"))?;
                if v.len() != usize_ {
                    return Err(format!(
                        "{name}: inflates to {} bytes, the directory says {usize_}",
                        v.len()
                    ));
                }
                v
            }
            m => {
                return Err(format!(
                    "{name}: compression method {m} (only stored and deflate are read)"
                ));
            }
        };
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        out.push((key, data));
        p += 46 + nlen + elen + clen;
    }
    Ok(out)
}
