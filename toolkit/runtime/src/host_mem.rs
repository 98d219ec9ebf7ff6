//! Host memory: what the OS says is available, so a size too large for the
//! host is refused with the limit instead of the process being OOM-killed.

use crate::error::{Error, Result};

/// Host memory, bytes: what the kernel reports as available now (Linux
/// `MemAvailable`, lowered to the cgroup's `memory.max` headroom when a
/// container limits it) and the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    /// Bytes that can be allocated without swapping (or being OOM-killed).
    pub available: u64,
    /// Physical memory (or the cgroup limit), bytes.
    pub total: u64,
}

/// Host memory as the OS reports it; `None` where it cannot be read (the
/// checks that use it are then skipped).
pub fn host_memory() -> Option<HostMemory> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb.saturating_mul(1024))
    };
    let mut m = HostMemory {
        available: field("MemAvailable:").or_else(|| field("MemFree:"))?,
        total: field("MemTotal:")?,
    };
    let read_u64 =
        |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    if let Some(limit) = read_u64("/sys/fs/cgroup/memory.max") {
        let used = read_u64("/sys/fs/cgroup/memory.current").unwrap_or(0);
        m.total = m.total.min(limit);
        m.available = m.available.min(limit.saturating_sub(used));
    }
    Some(m)
}

/// `bytes` as "N bytes (X.Y GiB)".
pub fn fmt_bytes(bytes: u128) -> String {
    format!(
        "{bytes} bytes ({:.1} GiB)",
        bytes as f64 / (1u64 << 30) as f64
    )
}

/// Checks that `bytes` of host memory (the inputs and outputs of a run, held
/// at once) fit in what the host has available, so an absurd size is refused
/// with the limit instead of the process being aborted or OOM-killed.
/// `what` names the input (`--n`), `hint` says what to do.
pub fn check_host_alloc(what: &str, bytes: u128, hint: &str) -> Result<()> {
    let m = host_memory().unwrap_or(HostMemory {
        available: isize::MAX as u64,
        total: isize::MAX as u64,
    });
    if bytes > m.available as u128 || bytes > isize::MAX as u128 {
        return Err(Error::input(
            what,
            format!(
                "needs {} of host memory, but {} are available (of {}); {hint}",
                fmt_bytes(bytes),
                fmt_bytes(m.available as u128),
                fmt_bytes(m.total as u128)
            ),
        ));
    }
    Ok(())
}
