//! `report.html`: the run in one self-contained page. The summary (one line
//! per workload, linking its section and its problem's chart), the
//! environment block, then a section per workload: its problems (best rung
//! against best peer, each), its charts (inline SVG) and one table of its
//! rows and its peers' (sortable by any column, peers marked); links to the
//! JSON, CSV and Markdown beside it. Its fonts are embedded (`@font-face` from
//! base64 data) and its script is inline: the page fetches nothing.

use super::charts::Chart;
use super::compare::{Comparison, comparisons};
use super::font::{BOLD_TTF, REGULAR_TTF};
use super::group::{Kind, kind};
use super::markdown::{
    Line, SUMMARY_NOTE, checks, html_anchor as anchor, line, section_workloads, summary_lines,
};
use super::row::{Row, Status};
use super::run::{Run, Section};
use super::units::{fmt_throughput, fmt_time};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        s.push(A[(n >> 18) as usize & 63] as char);
        s.push(A[(n >> 12) as usize & 63] as char);
        s.push(if c.len() > 1 {
            A[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        s.push(if c.len() > 2 {
            A[n as usize & 63] as char
        } else {
            '='
        });
    }
    s
}

const STYLE: &str = r#"
:root { --ink: #222; --muted: #606060; --line: #dcdcdc; --peer: #fff3e2; --cpu: #f4f4f4; }
* { box-sizing: border-box; }
body { font-family: 'DejaVu Sans Condensed', 'DejaVu Sans', 'Arial Narrow', sans-serif; color: var(--ink);
  margin: 0 auto; padding: 0 20px 60px; max-width: 1080px; line-height: 1.45; }
h1 { font-size: 26px; margin: 24px 0 4px; }
h2 { font-size: 21px; margin: 40px 0 6px; padding-top: 12px; border-top: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p.about, p.meta { color: var(--muted); margin: 0 0 10px; }
nav { margin: 10px 0 0; font-size: 14px; }
nav a { margin-right: 10px; }
a { color: #1f5fa8; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
table.results td.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; background: #f7f7f7; position: sticky; top: 0; }
table.sortable th::after { content: " \2195"; color: #aaa; }
table.sortable th[aria-sort=ascending]::after { content: " \2191"; color: var(--ink); }
table.sortable th[aria-sort=descending]::after { content: " \2193"; color: var(--ink); }
tr.peer td { background: var(--peer); }
tr.cpu td { background: var(--cpu); }
span.tag { display: inline-block; font-size: 11px; padding: 0 5px; border-radius: 3px; background: #e9e9e9; }
span.tag.peer { background: #f5a34a; color: #fff; font-weight: bold; }
span.tag.gpu { background: #3182bd; color: #fff; }
td.failed { color: #c62828; font-weight: bold; }
td.inaccurate { color: #b35c00; font-weight: bold; }
td.skipped { color: var(--muted); }
figure.chart { margin: 18px 0 26px; }
figure.chart svg { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figure.chart figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }
div.scroll { overflow-x: auto; }
table.env td:first-child { color: var(--muted); white-space: nowrap; }
table.summary td.n, table.problems td.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
"#;

const SCRIPT: &str = r#"
(function () {
  function key(row, col) {
    var c = row.cells[col];
    var v = c.getAttribute('data-v');
    if (v === null) { return c.textContent.trim().toLowerCase(); }
    return v === '' ? NaN : parseFloat(v);
  }
  function empty(x) { return x === '' || (typeof x === 'number' && isNaN(x)); }
  function sortBy(table, th, col) {
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, col), y = key(b, col);
      if (empty(x) || empty(y)) { return (empty(x) ? 1 : 0) - (empty(y) ? 1 : 0); }
      return (x < y ? -1 : x > y ? 1 : 0) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.title = 'sort by this column';
      th.addEventListener('click', function () { sortBy(table, th, col); });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(table, th, col); }
      });
    });
  });
})();
"#;

fn num_cell(v: Option<f64>, text: String) -> String {
    match v.filter(|x| x.is_finite()) {
        Some(x) => format!("<td class=\"n\" data-v=\"{x}\">{}</td>", esc(&text)),
        None => "<td class=\"n\" data-v=\"\"></td>".to_string(),
    }
}

fn row_html(n: usize, r: &Row) -> String {
    let k = kind(r);
    let class = match k {
        Kind::Peer => "peer",
        Kind::Cpu => "cpu",
        Kind::Gpu => "gpu",
        Kind::Sim => "sim",
    };
    let tag = match k {
        Kind::Peer => format!("<span class=\"tag peer\">peer</span> {}", esc(&r.backend)),
        Kind::Gpu => "<span class=\"tag gpu\">gpu</span>".to_string(),
        _ => format!("<span class=\"tag\">{}</span>", esc(&r.backend)),
    };
    let t = r.timing.as_ref();
    let (status_class, status) = match &r.status {
        Status::Ok => ("ok", "ok".to_string()),
        Status::Failed(d) => ("failed", format!("FAILED: {d}")),
        Status::Skipped(d) => ("skipped", format!("skipped: {d}")),
        Status::Inaccurate(d) => ("inaccurate", format!("INACCURATE: {d}")),
    };
    format!(
        "<tr class=\"{class}\">{}<td>{}</td><td>{tag}</td><td data-v=\"{}\">{}</td><td>{}</td>{}{}{}{}{}{}{}{}{}<td class=\"{status_class}\">{}</td><td>{}</td></tr>\n",
        num_cell(Some(n as f64), n.to_string()),
        esc(&r.variant),
        super::problem::size_magnitude(&r.size),
        esc(&r.size),
        esc(&r.precision),
        num_cell(
            r.registers.map(f64::from),
            r.registers.map(|v| v.to_string()).unwrap_or_default()
        ),
        num_cell(
            r.spills.map(f64::from),
            r.spills.map(|v| v.to_string()).unwrap_or_default()
        ),
        num_cell(r.first_ms, r.first_ms.map(fmt_time).unwrap_or_default()),
        num_cell(
            t.map(|t| t.median_ms),
            t.map(|t| fmt_time(t.median_ms)).unwrap_or_default()
        ),
        num_cell(
            t.map(|t| t.max_ms - t.min_ms),
            t.map(|t| format!("{} – {}", fmt_time(t.min_ms), fmt_time(t.max_ms)))
                .unwrap_or_default()
        ),
        num_cell(
            r.speedup,
            r.speedup.map(|v| format!("{v:.1}")).unwrap_or_default()
        ),
        num_cell(
            r.throughput,
            r.throughput
                .map(|v| fmt_throughput(v, &r.unit))
                .unwrap_or_default()
        ),
        num_cell(
            r.pct_of_ceiling,
            r.pct_of_ceiling
                .map(|v| format!("{v:.1}"))
                .unwrap_or_default()
        ),
        num_cell(
            r.rel_err,
            r.rel_err.map(|e| format!("{e:.1e}")).unwrap_or_default()
        ),
        esc(&status),
        esc(&r.note),
    )
}

const HEAD: &str = "<tr><th>#</th><th>variant</th><th>backend</th><th>size</th><th>prec</th><th>regs</th><th>spills</th><th>first call</th><th>median</th><th>min – max</th><th>speed-up vs CPU 1T</th><th>throughput</th><th>% of ceiling</th><th>rel err</th><th>status</th><th>notes</th></tr>";

fn table(rows: &[&Row]) -> String {
    let mut s = format!(
        "<div class=\"scroll\"><table class=\"results sortable\"><thead>{HEAD}</thead><tbody>\n"
    );
    for (n, r) in rows.iter().enumerate() {
        s.push_str(&row_html(n + 1, r));
    }
    s.push_str("</tbody></table></div>\n");
    s
}

fn chart_html(c: &Chart) -> String {
    format!(
        "<figure class=\"chart\" id=\"chart-{n}\">\n{}<figcaption>{} <a href=\"{n}.png\">PNG</a> · <a href=\"{n}.svg\">SVG</a></figcaption></figure>\n",
        c.figure.svg(),
        esc(&c.caption),
        n = c.name
    )
}

/// The cells of a comparison line, the chart linked inside the page.
fn line_cells(l: &Line) -> String {
    let chart = l
        .chart
        .as_ref()
        .map(|c| {
            let n = c.trim_end_matches(".png");
            format!("<a href=\"#chart-{n}\">ladder</a>")
        })
        .unwrap_or_default();
    format!(
        "<td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
        esc(&l.problem),
        esc(&l.rung),
        esc(&l.rung_figure),
        esc(&l.peer),
        esc(&l.peer_figure),
        esc(&l.ratio),
    ) + &format!("<td>{chart}</td>")
}

const LINE_HEAD: &str = "<th>problem</th><th>best Rust rung</th><th>its median</th><th>best peer on this problem</th><th>its median</th><th>speed-up over the peer</th><th>chart</th>";

fn summary_html(run: &Run, rows: &[Row], cs: &[Comparison], charts: &[Chart]) -> String {
    let mut s = format!(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"scroll\"><table class=\"summary\"><thead><tr><th>workload</th>{LINE_HEAD}<th>checks</th></tr></thead><tbody>\n"
    );
    for (name, l, checks) in summary_lines(run, rows, cs, charts) {
        let w = format!("<td><a href=\"#{}\">{}</a></td>", anchor(&name), esc(&name));
        let cells = match l {
            Some(l) => line_cells(&l),
            None => "<td></td><td>no checked Rust GPU rung</td><td></td><td></td><td></td><td></td><td></td>".into(),
        };
        let class = if checks == "all passed" {
            ""
        } else {
            " class=\"failed\""
        };
        s.push_str(&format!(
            "<tr>{w}{cells}<td{class}>{}</td></tr>\n",
            esc(&checks)
        ));
    }
    s.push_str(&format!(
        "</tbody></table></div>\n<p class=\"about\">{}</p>\n</section>\n",
        esc(SUMMARY_NOTE)
    ));
    s
}

fn section_html(
    run: &Run,
    s: &Section,
    rows_all: &[Row],
    cs: &[Comparison],
    charts: &[Chart],
) -> String {
    let mut out = format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n",
        anchor(&s.name),
        esc(&s.name)
    );
    if !s.about.is_empty() {
        out.push_str(&format!("<p class=\"about\">{}</p>\n", esc(&s.about)));
    }
    let workloads = section_workloads(s);
    out.push_str(&format!(
        "<p class=\"meta\">checks: {}</p>\n",
        esc(&checks(&s.rows, &workloads))
    ));
    let mine: Vec<&Comparison> = cs
        .iter()
        .filter(|c| workloads.contains(&c.group.workload()))
        .collect();
    if !mine.is_empty() {
        out.push_str(&format!(
            "<h3>Problems</h3>\n<div class=\"scroll\"><table class=\"problems\"><thead><tr>{LINE_HEAD}</tr></thead><tbody>\n"
        ));
        for c in mine {
            out.push_str(&format!(
                "<tr>{}</tr>\n",
                line_cells(&line(rows_all, c, charts))
            ));
        }
        out.push_str("</tbody></table></div>\n");
    }
    for c in charts
        .iter()
        .filter(|c| workloads.contains(&c.workload.as_str()))
    {
        out.push_str(&chart_html(c));
    }
    let peers = run.peers_of(s);
    let rows: Vec<&Row> = s.rows.iter().chain(peers).collect();
    out.push_str(&format!(
        "<h3>Every row ({} of this workload{})</h3>\n",
        s.rows.len(),
        if rows.len() > s.rows.len() {
            format!(", {} of its peers, marked", rows.len() - s.rows.len())
        } else {
            String::new()
        }
    ));
    out.push_str(&table(&rows));
    out.push_str("</section>\n");
    out
}

/// The page.
pub fn html(run: &Run, charts: &[Chart]) -> String {
    let e = &run.env;
    let title = format!(
        "ptxlab benchmark — {}{}",
        if e.gpu.is_empty() { "no GPU" } else { &e.gpu },
        if e.date.is_empty() {
            String::new()
        } else {
            format!(", {}", e.date)
        }
    );
    let mut s = String::with_capacity(1 << 20);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str(&format!("<title>{}</title>\n<style>\n", esc(&title)));
    for (data, weight) in [(REGULAR_TTF, "normal"), (BOLD_TTF, "bold")] {
        s.push_str(&format!(
            "@font-face {{ font-family: 'DejaVu Sans Condensed'; font-weight: {weight}; src: url(data:font/ttf;base64,{}) format('truetype'); }}\n",
            base64(data)
        ));
    }
    s.push_str(STYLE);
    s.push_str("</style>\n</head>\n<body>\n");
    s.push_str(&format!("<header>\n<h1>{}</h1>\n", esc(&title)));
    s.push_str(&format!(
        "<p class=\"meta\">git {} · <code>{}</code></p>\n",
        esc(&e.git_sha),
        esc(&e.command)
    ));
    s.push_str("<nav><a href=\"results.json\">results.json</a><a href=\"results.csv\">results.csv</a><a href=\"report.md\">report.md</a> | <a href=\"#summary\">summary</a>");
    for sec in &run.sections {
        s.push_str(&format!(
            "<a href=\"#{}\">{}</a>",
            anchor(&sec.name),
            esc(&sec.name)
        ));
    }
    if charts.iter().any(|c| c.workload.is_empty()) {
        s.push_str("<a href=\"#whole-run\">roofline</a>");
    }
    s.push_str("</nav>\n</header>\n");
    let rows = run.rows();
    let cs = comparisons(&rows);
    s.push_str(&summary_html(run, &rows, &cs, charts));
    s.push_str(
        "<section id=\"environment\">\n<h2>Environment</h2>\n<table class=\"env\"><tbody>\n",
    );
    let cc = &run.ceilings;
    for (k, v) in [
        ("GPU", e.gpu.clone()),
        ("compute capability", e.compute_capability.clone()),
        ("SMs", e.sm_count.to_string()),
        ("SM clock (max)", format!("{} MHz", e.clock_mhz)),
        (
            "driver",
            format!("{} (CUDA {})", e.driver_version, e.driver_cuda),
        ),
        ("PTX arch", e.ptx_arch.clone()),
        ("ptxas", e.ptxas.clone()),
        ("rustc", e.rustc.clone()),
        ("git", e.git_sha.clone()),
        ("date", e.date.clone()),
        ("command", e.command.clone()),
        ("modules loaded", e.modules_loaded.clone()),
        (
            "device copy (measured)",
            cc.copy_gbs
                .map(|c| format!("{} (read + write)", fmt_throughput(c, "GB/s")))
                .unwrap_or_default(),
        ),
        (
            "SFU rate (from spec at the max clock)",
            cc.sfu_per_s
                .map(|c| fmt_throughput(c / 1e9, "Gop/s"))
                .unwrap_or_default(),
        ),
        (
            "FP32 rate (from spec at the max clock)",
            cc.fp32_flops
                .map(|c| fmt_throughput(c / 1e9, "GFLOP/s"))
                .unwrap_or_default(),
        ),
    ] {
        s.push_str(&format!("<tr><td>{k}</td><td>{}</td></tr>\n", esc(&v)));
    }
    s.push_str("</tbody></table>\n</section>\n");
    for sec in &run.sections {
        s.push_str(&section_html(run, sec, &rows, &cs, charts));
    }
    let stray = run.stray_peers();
    if !stray.is_empty() {
        s.push_str("<section id=\"peers\">\n<h2>Peers outside this run's workloads</h2>\n");
        s.push_str(&table(&stray));
        s.push_str("</section>\n");
    }
    let whole: Vec<&Chart> = charts.iter().filter(|c| c.workload.is_empty()).collect();
    if !whole.is_empty() {
        s.push_str("<section id=\"whole-run\">\n<h2>The whole run</h2>\n");
        for c in whole {
            s.push_str(&chart_html(c));
        }
        s.push_str("</section>\n");
    }
    s.push_str(&format!("<script>{SCRIPT}</script>\n</body>\n</html>\n"));
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
    }
}
