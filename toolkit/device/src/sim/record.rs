//! A record of what a program reads back from the simulator, for `ptxlab
//! sim-fuzz`: when the environment variable `PTXLAB_SIM_RECORD` names a
//! file, every download from a simulated device appends the kernel
//! launched last, the element size and the bytes to it. Two runs of the
//! same command under two schedules then compare download by download.

use std::io::{Read, Write};
use std::string::String;
use std::sync::{Mutex, OnceLock};
use std::vec::Vec;

/// One download: the kernel launched before it, the element size, the
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// The last kernel launched on the simulator before the download.
    pub after: String,
    /// Bytes per element of the buffer.
    pub elem_bytes: usize,
    /// The buffer's bytes.
    pub bytes: Vec<u8>,
}

static LAST: Mutex<&'static str> = Mutex::new("");

/// Notes the kernel of a launch (for the records that follow).
pub(crate) fn launched(kernel: &'static str) {
    *super::spec::lock(&LAST) = kernel;
}

fn file() -> Option<&'static Mutex<std::fs::File>> {
    static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::var_os("PTXLAB_SIM_RECORD")?;
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(f) => Some(Mutex::new(f)),
            Err(e) => {
                std::eprintln!(
                    "warning: PTXLAB_SIM_RECORD={}: {e}; downloads are not recorded",
                    path.to_string_lossy()
                );
                None
            }
        }
    })
    .as_ref()
}

/// Whether downloads are being recorded (`PTXLAB_SIM_RECORD` is set).
pub fn recording() -> bool {
    file().is_some()
}

/// Appends a download of `bytes` (elements of `elem_bytes`) to the record.
pub fn record_download(bytes: &[u8], elem_bytes: usize) {
    let Some(f) = file() else {
        return;
    };
    let after = *super::spec::lock(&LAST);
    let mut buf = Vec::with_capacity(bytes.len() + after.len() + 24);
    buf.extend_from_slice(&(after.len() as u64).to_le_bytes());
    buf.extend_from_slice(after.as_bytes());
    buf.extend_from_slice(&(elem_bytes as u64).to_le_bytes());
    buf.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    buf.extend_from_slice(bytes);
    let mut f = super::spec::lock(f);
    if let Err(e) = f.write_all(&buf) {
        std::eprintln!("warning: PTXLAB_SIM_RECORD: {e}");
    }
}

/// Reads a record file written by [`record_download`].
pub fn read_record(path: &std::path::Path) -> std::io::Result<Vec<Download>> {
    let mut data = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut data)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "truncated record");
    let mut at = 0usize;
    let mut take = |n: usize| -> std::io::Result<&[u8]> {
        let s = data.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let mut out = Vec::new();
    while let Ok(len) = take(8) {
        let len = u64::from_le_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let after = String::from_utf8_lossy(take(len)?).into_owned();
        let elem_bytes = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad())?) as usize;
        let n = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad())?) as usize;
        let bytes = take(n)?.to_vec();
        out.push(Download {
            after,
            elem_bytes,
            bytes,
        });
    }
    Ok(out)
}
