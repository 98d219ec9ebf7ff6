//! The benchmark's progress on stderr.
//!
//! * Default: a line per row, with the time from its start (its
//!   [`Row::new`](super::Row::new)) to the next row's start or the end of
//!   its workload, and notes such as a long peer's announcement. A GPU rung
//!   starts its row before it is measured, so its time is its own; a CPU
//!   baseline made after its measurement shows that time on the line before
//!   it (the workloads create their rows where they see fit). On a terminal
//!   a status line at the bottom names the row running and its elapsed
//!   time, redrawn four times a second; elsewhere (CI logs) each row's line
//!   is written when it starts and completed when it finishes, so a log
//!   shows what is running.
//! * Quiet ([`set_quiet`], `ptxlab bench --quiet`): one line per workload
//!   (a redrawn bar on a terminal), nothing per row.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct State {
    quiet: bool,
    tty: bool,
    /// Workload index (1-based), count, name.
    workload: Option<(usize, usize, String)>,
    /// The running row: its description and start.
    row: Option<(String, Instant)>,
    /// A non-terminal line was started and not finished.
    open_line: bool,
    /// The terminal ticker thread runs.
    ticker: bool,
    /// Where the next row's time starts, when a row was finished early.
    mark: Option<Instant>,
}

static STATE: Mutex<State> = Mutex::new(State {
    quiet: false,
    tty: false,
    workload: None,
    row: None,
    open_line: false,
    ticker: false,
    mark: None,
});

/// Quiet progress: one line per workload, nothing per row.
pub fn set_quiet(quiet: bool) {
    if let Ok(mut s) = STATE.lock() {
        s.quiet = quiet;
    }
}

/// A duration as `0.84 s`, `12.3 s`, `2 min 05 s`.
pub fn fmt_elapsed(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2} s")
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!(
            "{} min {:02} s",
            (s / 60.0).floor() as u64,
            (s % 60.0).floor() as u64
        )
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

fn status_line(s: &State) -> String {
    let head = match &s.workload {
        Some((i, n, w)) => format!("{} {w}", bar(i - 1, *n)),
        None => String::new(),
    };
    let mut line = match &s.row {
        Some((desc, t)) => format!("{head} · {desc} · {}", fmt_elapsed(t.elapsed())),
        None => head,
    };
    line.truncate(line.floor_char_boundary(150));
    line
}

fn redraw(s: &State) {
    if s.tty && !s.quiet {
        eprint!("\r\x1b[K{}", status_line(s));
        let _ = std::io::stderr().flush();
    }
}

/// Prints a finished line (above the status line on a terminal; in a log,
/// after ending a row's open line, whose time then gets a line of its own).
fn println_above(s: &mut State, line: &str) {
    if s.tty {
        eprintln!("\r\x1b[K{line}");
    } else {
        if s.open_line {
            eprintln!();
        }
        eprintln!("{line}");
    }
    s.open_line = false;
    redraw(s);
}

/// Ends the running row: its line with the time it took.
fn finish_row(s: &mut State) {
    if let Some((desc, t)) = s.row.take() {
        let took = fmt_elapsed(t.elapsed());
        if s.tty {
            println_above(s, &format!("  {took:>12}  {desc}"));
        } else if s.open_line {
            eprintln!(" {took}");
            s.open_line = false;
        } else {
            eprintln!("  {desc} ... {took}");
        }
    }
}

fn start_ticker(s: &mut State) {
    if s.ticker || !s.tty || s.quiet {
        return;
    }
    s.ticker = true;
    std::thread::spawn(|| {
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let Ok(s) = STATE.lock() else { return };
            if !s.ticker {
                return;
            }
            if s.row.is_some() {
                redraw(&s);
            }
        }
    });
}

/// Starts workload `index` (1-based) of `total`.
pub fn progress_workload(index: usize, total: usize, name: &str) {
    let Ok(mut s) = STATE.lock() else { return };
    finish_row(&mut s);
    s.tty = std::io::stderr().is_terminal();
    s.workload = Some((index, total, name.to_string()));
    if s.quiet {
        if s.tty {
            eprint!("\r\x1b[K{} {name} ...", bar(index - 1, total));
        } else {
            eprintln!("[{index}/{total}] {name} ...");
        }
    } else {
        start_ticker(&mut s);
        println_above(&mut s, &format!("[{index}/{total}] {name}"));
    }
    let _ = std::io::stderr().flush();
}

/// A row starts (called by [`Row::new`](super::Row::new)): the previous
/// row of the workload finishes.
pub(crate) fn progress_row(workload: &str, variant: &str, size: &str, precision: &str) {
    let Ok(mut s) = STATE.lock() else { return };
    if s.workload.is_none() {
        // Not inside `ptxlab bench` (a test, a CLI command): silent.
        return;
    }
    let mut desc = format!("{workload}: {variant}");
    for part in [size, precision] {
        if !part.is_empty() {
            desc.push_str(" · ");
            desc.push_str(part);
        }
    }
    if s.quiet {
        if s.tty {
            let mut line = format!("{} {desc}", status_line(&s));
            line.truncate(line.floor_char_boundary(110));
            eprint!("\r\x1b[K{line}");
            let _ = std::io::stderr().flush();
        }
        return;
    }
    finish_row(&mut s);
    if !s.tty {
        eprint!("  {desc} ...");
        s.open_line = true;
    }
    let start = s.mark.take().unwrap_or_else(Instant::now);
    s.row = Some((desc, start));
    redraw(&s);
    let _ = std::io::stderr().flush();
}

/// The running row is finished now (its work is over, more work follows
/// before the next row starts): its line gets its time, and the next row's
/// time counts from here.
pub fn progress_row_done() {
    let Ok(mut s) = STATE.lock() else { return };
    if s.quiet || s.row.is_none() {
        return;
    }
    finish_row(&mut s);
    s.mark = Some(Instant::now());
    redraw(&s);
}

/// A line of its own (a peer's announcement), unless quiet.
pub fn progress_note(line: &str) {
    let Ok(mut s) = STATE.lock() else { return };
    if s.quiet {
        return;
    }
    s.tty = std::io::stderr().is_terminal();
    println_above(&mut s, line);
}

/// A step that is not a row of ours (a peer script) starts: shown like a
/// row, finished by the next step, row or [`progress_clear`].
pub fn progress_step(desc: &str) {
    let Ok(mut s) = STATE.lock() else { return };
    if s.quiet {
        return;
    }
    finish_row(&mut s);
    s.tty = std::io::stderr().is_terminal();
    start_ticker(&mut s);
    if !s.tty {
        eprint!("  {desc} ...");
        s.open_line = true;
    }
    s.row = Some((desc.to_string(), Instant::now()));
    redraw(&s);
}

/// Ends the workload (before its table is printed): the running row's line
/// is finished and the status line erased.
pub fn progress_clear() {
    let Ok(mut s) = STATE.lock() else { return };
    finish_row(&mut s);
    if s.tty {
        eprint!("\r\x1b[K");
        let _ = std::io::stderr().flush();
    }
    s.workload = None;
    s.mark = None;
}
