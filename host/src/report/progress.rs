//! The benchmark's progress line on stderr: redrawn in place on a terminal,
//! one line per workload elsewhere (CI logs).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

/// The benchmark's progress line: `[workload i/n] bar workload: variant`.
struct Progress {
    index: usize,
    total: usize,
    tty: bool,
}

static PROGRESS: Mutex<Option<Progress>> = Mutex::new(None);

/// Starts workload `index` (1-based) of `total` on stderr. On a terminal the
/// line is then redrawn in place for every variant (each [`Row::new`](super::Row::new) names
/// the variant about to run); elsewhere (CI logs) one line per workload.
pub fn progress_workload(index: usize, total: usize, name: &str) {
    let tty = std::io::stderr().is_terminal();
    if let Ok(mut p) = PROGRESS.lock() {
        *p = Some(Progress { index, total, tty });
    }
    if tty {
        eprint!("\r\x1b[K{} {name} ...", bar(index - 1, total));
    } else {
        eprintln!("[{index}/{total}] {name} ...");
    }
    let _ = std::io::stderr().flush();
}

/// Ends the progress line (before results are printed).
pub fn progress_clear() {
    if let Ok(mut p) = PROGRESS.lock()
        && let Some(pr) = p.take()
        && pr.tty
    {
        eprint!("\r\x1b[K");
        let _ = std::io::stderr().flush();
    }
}

fn bar(done: usize, total: usize) -> String {
    const W: usize = 20;
    let filled = (done * W).checked_div(total).unwrap_or(0);
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        "-".repeat(W - filled)
    )
}

pub(crate) fn progress_variant(workload: &str, variant: &str, size: &str, precision: &str) {
    if let Ok(p) = PROGRESS.lock()
        && let Some(pr) = p.as_ref()
        && pr.tty
    {
        let mut line = format!(
            "{} {workload}: {variant} {size} {precision}",
            bar(pr.index - 1, pr.total)
        );
        line.truncate(line.floor_char_boundary(110));
        eprint!("\r\x1b[K{line}");
        let _ = std::io::stderr().flush();
    }
}
