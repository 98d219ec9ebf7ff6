//! The report files: `results.json` validates against
//! `docs/results-schema.json` and records every row's problem, the CSV has
//! one line per row, `report.md` is the summary (one line per workload)
//! with a page per workload behind it, every chart is a valid SVG and PNG,
//! and `report.html` is self-contained. The charts of the recorded H100
//! runs (`docs/results/`) are drawn again and checked: every label inside
//! its figure, no two labels on top of each other, every glyph in the font,
//! every charted row's full name present, the peers of a problem in its
//! ladder, and no chart group, ratio or summary line pairing two problems
//! (the causal and non-causal attention of the 2026-11-28 run).
//! `report.html` is loaded in headless Chromium where one is installed
//! (otherwise the test says why it did not run).

use ptxlab::report::figure::Shape;
use ptxlab::report::font::missing_glyphs;
use ptxlab::report::problem::without_tolerance;
use ptxlab::report::{
    Ceilings, Chart, Environment, Kind, Problem, Row, Run, Section, Status, charts, comparisons,
    decode_png, groups, kind, page_file, problems, write_outputs,
};
use ptxlab::runtime::Timing;
use serde_json::Value;

/// A small JSON-Schema subset: type (with unions), required, properties, items, enum.
fn validate(v: &Value, s: &Value, path: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(x) => vec![x.as_str()],
            Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "integer" => v.is_i64() || v.is_u64(),
            "null" => v.is_null(),
            "boolean" => v.is_boolean(),
            _ => false,
        });
        if !ok {
            errs.push(format!("{path}: expected {types:?}, found {v}"));
            return errs;
        }
    }
    if let (Some(e), Some(_)) = (s.get("enum").and_then(|e| e.as_array()), v.as_str())
        && !e.contains(v)
    {
        errs.push(format!("{path}: {v} not in {e:?}"));
    }
    if let Some(obj) = v.as_object() {
        for r in s
            .get("required")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
        {
            let k = r.as_str().unwrap();
            if !obj.contains_key(k) {
                errs.push(format!("{path}: missing `{k}`"));
            }
        }
        if let Some(props) = s.get("properties").and_then(|p| p.as_object()) {
            for (k, ps) in props {
                if let Some(x) = obj.get(k) {
                    errs.extend(validate(x, ps, &format!("{path}.{k}")));
                }
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), s.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            errs.extend(validate(x, items, &format!("{path}[{i}]")));
        }
    }
    errs
}

fn timed(w: &str, v: &str, backend: &str, size: &str, prec: &str, ms: f64) -> Row {
    let mut r = Row::plain(w, v, backend, size, prec);
    r.timing = Some(Timing::from_samples(vec![ms, ms * 1.1, ms * 0.95]));
    r
}

fn sample_run() -> Run {
    let mut poisson = Vec::new();
    for t in [1, 2] {
        let mut r = timed(
            "poisson",
            &format!("CPU rayon {t} threads"),
            "cpu",
            "2000x2000",
            "f32",
            10.0 / t as f64,
        );
        r.throughput = Some(0.4 * t as f64);
        r.unit = "GCells/s".into();
        poisson.push(r);
    }
    for (i, v) in ["1 naive", "2 tiled", "3 register strips"]
        .iter()
        .enumerate()
    {
        for size in ["2000x2000", "4096^2"] {
            let mut r = timed("poisson", v, "gpu", size, "f32", 0.03 - i as f64 * 0.008);
            r.throughput = Some(200.0 + i as f64 * 40.0);
            r.unit = "GCells/s".into();
            r.registers = Some(20);
            poisson.push(r);
        }
    }
    poisson.push(Row::skipped(
        "poisson",
        "GPU variants",
        "gpu",
        "no NVIDIA driver",
    ));
    let mut matmul = Vec::new();
    let mut r = timed("matmul", "4 register blocking", "gpu", "4096^3", "f32", 3.0);
    r.throughput = Some(45000.0);
    r.unit = "GFLOP/s".into();
    matmul.push(r);
    let mut f = Row::plain("matmul", "x4", "gpu", "4096^3", "f32");
    f.status = Status::Failed("3 elements differ".into());
    matmul.push(f);
    let mut peer = timed("poisson", "torch.compile", "torch", "2000^2", "f32", 0.04);
    peer.throughput = Some(100.0);
    peer.unit = "GCells/s".into();
    Run {
        env: Environment::collect(None),
        ceilings: Ceilings {
            copy_gbs: Some(3000.0),
            sfu_per_s: Some(4e12),
            fp32_flops: Some(60e12),
            clock_mhz: Some(1980.0),
        },
        sections: vec![
            Section {
                name: "poisson".into(),
                about: "2D Poisson".into(),
                rows: poisson,
            },
            Section {
                name: "matmul".into(),
                about: String::new(),
                rows: matmul,
            },
        ],
        peers: vec![peer],
    }
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ptxlab-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn results_json_matches_the_documented_schema_and_charts_are_valid() {
    let dir = temp_dir("files");
    let run = sample_run();
    let written = write_outputs(&dir, &run, true).unwrap();
    let rows = run.rows();

    // Embedded, so the test binary runs without the source tree (bundles).
    let schema: Value = serde_json::from_str(include_str!("../docs/results-schema.json")).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let errs = validate(&json, &schema, "$");
    assert!(
        errs.is_empty(),
        "results.json does not match the schema:\n{}",
        errs.join("\n")
    );
    assert_eq!(json["rows"].as_array().unwrap().len(), rows.len());
    // A broken document must fail the validator (so the check can fail).
    let mut bad = json.clone();
    bad["rows"][0]["timing"]["median_ms"] = Value::String("fast".into());
    assert!(!validate(&bad, &schema, "$").is_empty());
    // Read back, the run draws the same charts.
    let back = Run::from_results(&json, &|_| None).unwrap();
    assert_eq!(back.rows().len(), rows.len());
    assert_eq!(back.peers.len(), 1);
    let names = |c: Vec<Chart>| c.into_iter().map(|c| c.name).collect::<Vec<_>>();
    assert_eq!(
        names(charts(&back.rows(), &back.ceilings)),
        names(charts(&rows, &run.ceilings))
    );

    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    assert!(csv.contains("FAILED: 3 elements differ"));

    // Every row records its problem; the causal-free sample's poisson peer
    // (`2000^2`) is the problem of the Rust rows at `2000x2000`.
    for (i, r) in json["rows"].as_array().unwrap().iter().enumerate() {
        assert!(r["problem"].is_object(), "row {i} has no problem: {r}");
    }
    let ps = problems(&back.rows());
    let peer = back.rows().len() - 1;
    assert!(ps[..peer].contains(&ps[peer]), "{:?}", ps[peer]);

    // report.md is the summary: one line per workload, linking its page;
    // summary.md is its table alone; the pages hold the tables and charts.
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        report.contains(&summary),
        "summary.md is not report.md's table"
    );
    assert_eq!(summary.lines().count(), 2 + run.sections.len(), "{summary}");
    let mut md = String::new();
    for s in &run.sections {
        let page = page_file(&s.name);
        assert!(summary.contains(&format!("]({page})")), "no link to {page}");
        assert!(written.files.contains(&page), "{page} not written");
        md.push_str(&std::fs::read_to_string(dir.join(&page)).unwrap());
    }
    assert!(report.contains("| GPU |"), "no environment block: {report}");
    // The sample's matmul has no checked rung, poisson a peer: 1.33x.
    assert!(summary.contains("FAILED"), "{summary}");
    assert!(summary.contains("| [poisson](poisson.md) | 2000x2000 · f32 | 3 register strips | 14.00 µs · 280.0 GCells/s | torch.compile | 40.00 µs · 100.0 GCells/s | 2.86× (Rust faster) | [ladder](ladder-poisson-2000x2000-f32.png) | all passed |"), "{summary}");
    md.push_str(&report);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let names: Vec<&str> = written.charts.iter().map(|c| c.0.as_str()).collect();
    for want in [
        "ladder-poisson-2000x2000-f32",
        "ladder-poisson-4096x4096-f32",
        "peers-poisson",
        "scaling-poisson-f32-gcells-per-s",
        "poisson-cpu-sweep",
        "roofline",
    ] {
        assert!(names.contains(&want), "no chart {want} in {names:?}");
    }
    for name in &names {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg")))
            .unwrap_or_else(|_| panic!("{name}.svg missing"));
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}.svg is not an SVG document"
        );
        assert!(
            md.contains(&format!("({name}.png)")),
            "no page shows {name}"
        );
        assert!(
            html.contains(&format!("id=\"chart-{name}\"")),
            "report.html does not show {name}"
        );
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        let (w, h, px) = decode_png(&png).unwrap_or_else(|| panic!("{name}.png does not decode"));
        assert!(w >= 600 && h >= 200, "{name}.png is {w}x{h}");
        let ink = px
            .chunks(3)
            .filter(|p| p[0] < 200 || p[1] < 200 || p[2] < 200)
            .count();
        assert!(
            ink > w * h / 200,
            "{name}.png is nearly blank ({ink} dark pixels)"
        );
    }
    // The peer is in its workload's ladder, the failed row in no chart.
    let ladder = std::fs::read_to_string(dir.join("ladder-poisson-2000x2000-f32.svg")).unwrap();
    assert!(ladder.contains("torch.compile"), "{ladder}");
    assert!(!html.contains("ladder-matmul"), "a failed row was charted");
    assert!(std::fs::read_link(dir.parent().unwrap().join("latest")).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The report says where each ceiling comes from: the copy bandwidth is
/// measured in the run, the SFU and FP32 rates come from the spec sheet at
/// the driver's maximum clock.
#[test]
fn ceilings_say_which_are_measured_and_which_from_spec() {
    let ceil = Ceilings {
        copy_gbs: Some(3010.0),
        sfu_per_s: Some(4.18e12),
        fp32_flops: Some(66.9e12),
        clock_mhz: Some(1980.0),
    };
    let md = ceil.markdown().unwrap();
    assert_eq!(
        md.trim_end(),
        "Ceilings: device-to-device copy 3.010 TB/s (read + write), measured in this run; from \
         spec at the maximum SM clock, 1980 MHz: SFU 4.180 Top/s (16 per clock per SM), FP32 \
         66.90 TFLOP/s (128 FMA per clock per SM)."
    );
    assert!(Ceilings::default().markdown().is_none());
}

/// The recorded runs the charts were developed against (H100, with peers).
fn recorded() -> Vec<(&'static str, Run)> {
    let docs = [
        (
            "2026-11-23-h100-full-peers",
            include_str!("../docs/results/2026-11-23-h100-full-peers/bench/results.json"),
        ),
        (
            "2026-11-24-h100-tensor-cores",
            include_str!(
                "../docs/results/2026-11-24-h100-tensor-cores/call6-bench/bench-matmul/results.json"
            ),
        ),
        (
            "2026-11-24-h100-multigrid",
            include_str!("../docs/results/2026-11-24-h100-multigrid/results-from-log.json"),
        ),
        (
            "2026-11-24-h100-lomb-real-curves",
            include_str!("../docs/results/2026-11-24-h100-lomb-real-curves/bench/results.json"),
        ),
        (
            "2026-11-28-h100-final-bench",
            include_str!("../docs/results/2026-11-28-h100-final-bench/bench/results.json"),
        ),
    ];
    docs.into_iter()
        .map(|(name, text)| {
            let doc: Value = serde_json::from_str(text).unwrap();
            (name, Run::from_results(&doc, &|_| None).unwrap())
        })
        .collect()
}

/// The recorded run of one name, or a failure naming it.
fn recorded_run(name: &str) -> Run {
    recorded()
        .into_iter()
        .find(|r| r.0 == name)
        .unwrap_or_else(|| panic!("no recorded run {name}"))
        .1
}

fn texts(f: &ptxlab::report::Figure) -> String {
    f.shapes
        .iter()
        .filter_map(|s| match s {
            Shape::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn recorded_runs_draw_every_label_whole_and_apart() {
    for (run_name, run) in recorded() {
        let rows = run.rows();
        let all = charts(&rows, &run.ceilings);
        assert!(all.len() >= 3, "{run_name}: {} charts", all.len());
        for c in &all {
            let f = &c.figure;
            let (w, h) = (f.w as f64, f.h as f64);
            assert!(
                f.w >= 600 && f.h >= 200 && f.h < 6000,
                "{run_name}/{}: {}x{}",
                c.name,
                f.w,
                f.h
            );
            let boxes = f.text_boxes();
            for (t, b) in &boxes {
                assert!(
                    b[0] >= -0.5 && b[1] >= -0.5 && b[2] <= w + 0.5 && b[3] <= h + 0.5,
                    "{run_name}/{}: `{t}` at {b:?} leaves the {w}x{h} figure",
                    c.name
                );
                for bold in [false, true] {
                    let miss = missing_glyphs(t, bold);
                    assert!(
                        miss.is_empty(),
                        "{run_name}/{}: no glyph for {miss:?} in `{t}`",
                        c.name
                    );
                }
            }
            for (i, (ta, a)) in boxes.iter().enumerate() {
                for (tb, b) in &boxes[i + 1..] {
                    let overlap = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0)
                        * (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
                    assert!(
                        overlap < 2.0,
                        "{run_name}/{}: `{ta}` {a:?} and `{tb}` {b:?} overlap",
                        c.name
                    );
                }
            }
        }
        // Every row a ladder shows is named in full there.
        for c in all.iter().filter(|c| c.name.starts_with("ladder-")) {
            let t = texts(&c.figure);
            // A solve's chart names the tolerance once, in its title.
            let shown = rows
                .iter()
                .filter(|r| t.contains(&without_tolerance(&r.variant)))
                .count();
            let bars = c
                .figure
                .shapes
                .iter()
                .filter(|s| matches!(s, Shape::Rect { h, .. } if (*h - 14.0).abs() < 1e-9))
                .count();
            assert!(
                shown >= bars.min(2),
                "{run_name}/{}: {shown} names for {bars} bars",
                c.name
            );
        }
    }
}

/// The chart of one name, or a failure listing the names there are.
fn chart<'a>(all: &'a [Chart], name: &str) -> &'a Chart {
    all.iter().find(|c| c.name == name).unwrap_or_else(|| {
        panic!(
            "no chart {name}: {:?}",
            all.iter().map(|c| &c.name).collect::<Vec<_>>()
        )
    })
}

/// The texts of chart `name`, after failing unless each of `wants` is
/// among them (naming the chart and the missing text).
fn chart_says(all: &[Chart], name: &str, wants: &[&str]) -> String {
    let t = texts(&chart(all, name).figure);
    for want in wants {
        assert!(t.contains(want), "{name}: {want} missing: {t}");
    }
    t
}

#[test]
fn ladders_show_the_peers_of_their_size_and_the_roofline_one_colour_per_workload() {
    let runs = recorded();
    let get = |n: &str| &runs.iter().find(|r| r.0 == n).unwrap().1;

    let tc = get("2026-11-24-h100-tensor-cores");
    let all = charts(&tc.rows(), &tc.ceilings);
    let bf16 = chart_says(
        &all,
        "ladder-matmul-8192x8192x8192-bf16",
        &[
            "tc 5 warp-specialised, 128x256 tiles, persistent",
            "torch.matmul BF16 (cuBLAS)",
            "best peer: torch.matmul BF16 (cuBLAS)",
        ],
    );
    assert!(
        !bf16.contains("FP16"),
        "another precision in the bf16 ladder: {bf16}"
    );
    chart_says(
        &all,
        "peers-matmul",
        &["8192^3 · bf16 — best Rust rung: tc 5"],
    );

    let full = get("2026-11-23-h100-full-peers");
    let all = charts(&full.rows(), &full.ceilings);
    // Peers print 268435456 where the Rust rows print 2^28.0 (268435456).
    chart_says(
        &all,
        "ladder-vector-add-268435456-f32",
        &[
            "16-byte loads",
            "torch.add 1.09 ms",
            "cupy.add 1.30 ms",
            "CPU 1 thread",
            "cudaMemcpy DtoD (ceiling)",
        ],
    );
    // The f64 CPU reference is another problem than the f32 ladder's: it
    // stands in the f64 ladder only.
    let lomb = texts(&chart(&all, "ladder-lomb-scargle-114x1048576-f32").figure);
    assert!(!lomb.contains("CPU reference, 1 thread"), "{lomb}");
    let lomb64 = texts(&chart(&all, "ladder-lomb-scargle-114x1048576-f64").figure);
    assert!(
        lomb64.contains("CPU reference, 1 thread (f64, scaled)"),
        "{lomb64}"
    );
    assert!(
        lomb.contains("CuPy fast math + launch bounds 128 88.1 µs"),
        "{lomb}"
    );
    let roof = chart(&all, "roofline");
    let legend: Vec<String> = roof
        .figure
        .text_boxes()
        .into_iter()
        .map(|t| t.0)
        .filter(|t| t.contains(": best rung "))
        .collect();
    let full_rows = full.rows();
    let with_points: std::collections::BTreeSet<&str> = full_rows
        .iter()
        .filter(|r| {
            kind(r) == Kind::Gpu
                && matches!(r.status, Status::Ok)
                && ptxlab::report::charts::roofline_point(r).is_some()
        })
        .map(|r| r.workload.as_str())
        .collect();
    assert_eq!(
        legend.len(),
        with_points.len(),
        "{legend:?} / {with_points:?}"
    );

    let mg = get("2026-11-24-h100-multigrid");
    let all = charts(&mg.rows(), &mg.ceilings);
    chart_says(
        &all,
        "ladder-poisson-mg-4096x4096-to-1e-8",
        &[
            "pyamg smoothed aggregation + CG (solve)",
            "CuPy cupyx.scipy.sparse.linalg.cg",
            "PCG, V(2,2) preconditioner (rung 3), f32 cycles [f32 cycles, f64 field]",
            "CPU rayon (16 threads)",
        ],
    );
}

/// In no recorded run does a chart group, and so a ladder, a ratio or a
/// summary line, hold rows of two problems. The oracle reads the texts
/// directly: a mask or a layout word in the size (`causal`, `ragged`,
/// `shared`) is the same on every row of a group, and so is the precision
/// (a solve's field precision).
#[test]
fn no_recorded_group_pairs_two_problems() {
    for (run_name, run) in recorded() {
        let rows = run.rows();
        for g in groups(&rows) {
            let first = &rows[g.rows[0]];
            for &i in &g.rows {
                let r = &rows[i];
                for word in ["causal", "ragged", "shared"] {
                    assert_eq!(
                        r.size.contains(word),
                        first.size.contains(word),
                        "{run_name}: `{}` ({}) and `{}` ({}) in one group",
                        first.variant,
                        first.size,
                        r.variant,
                        r.size
                    );
                }
                let prec = |r: &Row| {
                    let p = r.precision.replace(',', " ");
                    let w: Vec<&str> = p.split_whitespace().collect();
                    match w.iter().position(|x| *x == "field") {
                        Some(k) if k > 0 && g.problem.tolerance.is_some() => w[k - 1].to_string(),
                        _ => w.first().unwrap_or(&"").to_string(),
                    }
                };
                assert_eq!(
                    prec(r),
                    prec(first),
                    "{run_name}: `{}` and `{}` in one group",
                    first.variant,
                    r.variant
                );
            }
        }
        // A problem a recorded row lacks is derived; the written one reads back equal.
        let ps = problems(&rows);
        let back: Vec<Problem> = ptxlab::report::problem::with_problems(&rows)
            .iter()
            .map(|r| Row::from_json(&serde_json::to_value(r).unwrap()).unwrap())
            .map(|r| r.problem.unwrap())
            .collect();
        assert_eq!(ps, back, "{run_name}");
    }
}

/// Issue 37: the attention peers chart of the 2026-11-28 run took the
/// causal rung 5 (1.71 ms) as the best Rust rung of its size and divided
/// cuDNN's non-causal time (3.31 ms) by it: 1.93x. Per problem, rung 4 is
/// the best non-causal rung (0.946x of cuDNN) and rung 5 the best causal
/// one (1.02x).
#[test]
fn final_bench_attention_ratios_are_per_problem() {
    let run = &recorded_run("2026-11-28-h100-final-bench");
    let rows = run.rows();
    let cs = comparisons(&rows);
    let median = |size: &str, prec: &str, variant: &str| {
        rows.iter()
            .find(|r| {
                r.workload == "attention"
                    && r.size == size
                    && r.precision == prec
                    && r.variant.starts_with(variant)
                    && r.status == Status::Ok
            })
            .and_then(|r| r.timing.as_ref())
            .map(|t| t.median_ms)
            .unwrap_or_else(|| panic!("no {variant} at {size} {prec}"))
    };
    let cases = [
        ("B=4 H=16 S=8192 D=128", "bf16", "4 ", "0.946×"),
        ("B=4 H=16 S=8192 D=128 causal", "bf16", "5 ", "1.02×"),
        ("B=4 H=16 S=8192 D=128", "f16", "4 ", "1.00×"),
        ("B=4 H=16 S=8192 D=128 causal", "f16", "5 ", "1.02×"),
        ("B=4 H=32 S=8192 D=64", "bf16", "4 ", "0.889×"),
        ("B=4 H=32 S=8192 D=64 causal", "bf16", "5 ", "0.896×"),
    ];
    for (size, prec, rung, shown) in cases {
        let c = cs
            .iter()
            .find(|c| {
                c.group.workload() == "attention"
                    && c.group.size == size
                    && c.group.problem.precision == prec
            })
            .unwrap_or_else(|| panic!("no comparison at {size} {prec}"));
        let (best, peer) = (&rows[c.best.unwrap()], &rows[c.peer.unwrap()]);
        assert!(
            best.variant.starts_with(rung),
            "{size} {prec}: {}",
            best.variant
        );
        assert_eq!(
            (peer.size.as_str(), peer.variant.as_str()),
            (size, "torch sdpa cuDNN")
        );
        let want = median(size, prec, "torch sdpa cuDNN") / median(size, prec, rung);
        assert!(
            (c.ratio(&rows).unwrap() - want).abs() < 1e-12,
            "{size} {prec}"
        );
        assert_eq!(
            ptxlab::report::units::fmt_factor(want),
            shown,
            "{size} {prec}"
        );
    }
    let all = charts(&rows, &run.ceilings);
    let peers = chart_says(
        &all,
        "peers-attention",
        &[
            "B=4 H=16 S=8192 D=128 · bf16 — best Rust rung: 4 warp-specialised",
            "B=4 H=16 S=8192 D=128 causal · bf16 — best Rust rung: 5 rung 4 + causal tile skipping",
            "0.946× · peer 3.31 ms",
            "1.02× · peer 1.74 ms",
            "0.889× · peer 4.42 ms",
        ],
    );
    // The cross-problem ratios of the issue (bf16 and f16 at D=128, D=64).
    for wrong in ["1.93×", "1.98×", "1.68×"] {
        assert!(!peers.contains(wrong), "{wrong} shown: {peers}");
    }
    // Two ladders at one shape, named apart; the causal one holds no
    // non-causal row.
    let causal = texts(&chart(&all, "ladder-attention-4x16x8192x128-causal-bf16").figure);
    assert!(
        causal.contains("5 rung 4 + causal tile skipping"),
        "{causal}"
    );
    let plain = texts(&chart(&all, "ladder-attention-4x16x8192x128-bf16").figure);
    assert!(!plain.contains("causal tile skipping"), "{plain}");
    // The summary line of attention: its first problem with a peer (the
    // sizes tie), non-causal.
    let summary = ptxlab::report::summary_table(run, &all);
    let line = summary
        .lines()
        .find(|l| l.starts_with("| [attention](attention.md) |"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        line.contains("| B=4 H=16 S=8192 D=128 · bf16 | 4 warp-specialised")
            && line.contains("| 0.946× (peer faster) |")
            && line.contains("[ladder](ladder-attention-4x16x8192x128-bf16.png)"),
        "{line}"
    );
    assert!(line.contains("TFLOP/s"), "throughput not scaled: {line}");
    // The reduction's atomic rung is INACCURATE: never best, and said.
    let reduce = summary
        .lines()
        .find(|l| l.starts_with("| [reduce](reduce.md) |"))
        .unwrap();
    assert!(reduce.contains("1 INACCURATE"), "{reduce}");
    assert!(!reduce.contains("atomic per thread"), "{reduce}");
}

/// The page fetches nothing, embeds its fonts, marks the peers and makes
/// every results table sortable.
#[test]
fn report_html_is_self_contained() {
    let (_, run) = recorded().into_iter().next().unwrap();
    let all = charts(&run.rows(), &run.ceilings);
    let html = ptxlab::report::html(&run, &all);
    let stripped = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for bad in [
        "http://", "https://", "<link", "<img", "<iframe", "@import", "src=\"", "fetch(",
    ] {
        assert!(!stripped.contains(bad), "report.html holds `{bad}`");
    }
    assert!(html.contains("@font-face") && html.contains("data:font/ttf;base64,"));
    assert_eq!(html.matches("<svg ").count(), all.len());
    assert_eq!(
        html.matches("<table class=\"results sortable\">").count(),
        run.sections.len() + usize::from(!run.stray_peers().is_empty())
    );
    let peer_rows = html.matches("<tr class=\"peer\">").count();
    assert_eq!(peer_rows, run.peers.len());
    for f in ["results.json", "results.csv", "report.md"] {
        assert!(html.contains(&format!("href=\"{f}\"")), "no link to {f}");
    }
}

/// A Chromium for the browser test: `PTXLAB_CHROMIUM`, else `chromium`,
/// `chromium-browser`, `google-chrome` on the `PATH`.
fn chromium() -> Result<std::path::PathBuf, String> {
    if let Ok(p) = std::env::var("PTXLAB_CHROMIUM") {
        return Ok(p.into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err("no chromium, chromium-browser or google-chrome on the PATH (Debian: apt-get install chromium; or set PTXLAB_CHROMIUM)".into())
}

/// Loads the page in headless Chromium with a check script put in front of
/// its own: console messages and errors are collected from the start, and
/// after the load the script measures every chart, sorts a table by its
/// median column and lists the resources the page loaded, writing its
/// findings into the DOM that `--dump-dom` prints.
const CHECK: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push('error: ' + e.message); });
['error', 'warn', 'log'].forEach(function (k) {
  var orig = console[k];
  console[k] = function () { window.__errors.push('console.' + k + ': ' + Array.prototype.join.call(arguments, ' ')); orig.apply(console, arguments); };
});
window.addEventListener('load', function () {
  var out = { errors: window.__errors, charts: [], resources: [], sorted: null };
  document.querySelectorAll('figure.chart svg').forEach(function (s) {
    var r = s.getBoundingClientRect();
    out.charts.push([s.getAttribute('width'), s.getAttribute('height'), r.width, r.height]);
  });
  performance.getEntriesByType('resource').forEach(function (e) {
    if (e.name.indexOf('data:') !== 0) { out.resources.push(e.name); }
  });
  var t = document.querySelector('table.sortable');
  if (t) {
    var th = t.tHead.rows[0].cells[8];
    th.click();
    var v = Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[8].getAttribute('data-v'); })
      .filter(function (x) { return x !== ''; }).map(parseFloat);
    var ok = true;
    for (var i = 1; i < v.length; i++) { if (v[i] < v[i - 1]) { ok = false; } }
    out.sorted = { header: th.textContent, ok: ok, n: v.length, aria: th.getAttribute('aria-sort') };
  }
  out.fonts = document.fonts ? document.fonts.check('12px "DejaVu Sans Condensed"') : null;
  var pre = document.createElement('pre');
  pre.id = 'ptxlab-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;

const FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

#[test]
fn report_html_loads_in_headless_chromium() {
    let browser = match chromium() {
        Ok(b) => b,
        // CI sets PTXLAB_REQUIRE_CHROMIUM=1 once it installed Debian's chromium.
        Err(why) if std::env::var("PTXLAB_REQUIRE_CHROMIUM").as_deref() == Ok("1") => {
            panic!("PTXLAB_REQUIRE_CHROMIUM=1, but {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let dir = temp_dir("browser");
    let (_, run) = recorded().into_iter().next().unwrap();
    write_outputs(&dir, &run, false).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let probe = html.replacen("<head>", &format!("<head>\n{CHECK}"), 1);
    std::fs::write(dir.join("probe.html"), probe).unwrap();
    let profile = dir.join("profile");
    let run_chrome = |extra: &[String], page: &str| {
        std::process::Command::new(&browser)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--enable-logging=stderr")
            .arg("--v=0")
            .args(extra)
            .arg(format!("file://{}", dir.join(page).display()))
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", browser.display()))
    };
    let out = run_chrome(
        &["--virtual-time-budget=10000".into(), "--dump-dom".into()],
        "probe.html",
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let at = dom
        .find("<pre id=\"ptxlab-check\">")
        .unwrap_or_else(|| panic!("the check did not run; chromium said:\n{log}"));
    let json = &dom[at + 23..dom[at..].find("</pre>").unwrap() + at];
    let json = json
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(
        v["errors"].as_array().unwrap().len(),
        0,
        "console: {}",
        v["errors"]
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert_eq!(
        v["resources"].as_array().unwrap().len(),
        0,
        "fetched: {}",
        v["resources"]
    );
    let shown = v["charts"].as_array().unwrap();
    assert_eq!(shown.len(), charts(&run.rows(), &run.ceilings).len());
    for c in shown {
        let (w, h) = (c[2].as_f64().unwrap(), c[3].as_f64().unwrap());
        let want: f64 = c[0].as_str().unwrap().parse().unwrap();
        let want_h: f64 = c[1].as_str().unwrap().parse().unwrap();
        // Drawn at its own size, or scaled down whole to the page's width.
        assert!(w > 300.0 && h > 100.0, "a chart drawn {w}x{h}");
        assert!(
            (h / w - want_h / want).abs() < 0.01,
            "chart {c} lost its aspect"
        );
    }
    assert_eq!(
        v["sorted"]["ok"],
        Value::Bool(true),
        "sorting: {}",
        v["sorted"]
    );
    assert!(v["sorted"]["n"].as_u64().unwrap() > 5);
    assert_eq!(
        v["fonts"],
        Value::Bool(true),
        "the embedded font is not in use"
    );

    let shot = dir.join("shot.png");
    let out = run_chrome(
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400".into(),
        ],
        "report.html",
    );
    let png = std::fs::read(&shot).unwrap_or_else(|_| {
        panic!(
            "no screenshot; chromium said:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let (w, h, px) = decode_png(&png).expect("a PNG screenshot");
    assert_eq!((w, h), (1200, 2400));
    let ink = px.chunks(3).filter(|p| p.iter().any(|&c| c < 160)).count();
    let colours: std::collections::BTreeSet<[u8; 3]> = px
        .chunks(3)
        .map(|p| [p[0] & 0xf0, p[1] & 0xf0, p[2] & 0xf0])
        .collect();
    assert!(
        ink > w * h / 100,
        "screenshot nearly blank: {ink} dark pixels"
    );
    assert!(
        colours.len() > 20,
        "screenshot has {} colours",
        colours.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn parts_of_one_run_join_and_parts_of_different_runs_do_not() {
    // `bench --only poisson` and `bench --only matmul`: two parts.
    let whole = sample_run();
    let part = |keep: &str| {
        let mut r = whole.clone();
        r.sections.retain(|s| s.name == keep);
        r.peers.retain(|p| p.workload == keep);
        r.env.command = format!("ptxlab bench --peers --only {keep}");
        r
    };
    let (a, b) = (part("poisson"), part("matmul"));
    let joined = Run::join(vec![
        ("a.json".into(), a.clone()),
        ("b.json".into(), b.clone()),
    ])
    .unwrap();
    let names: Vec<&str> = joined.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["poisson", "matmul"]);
    assert_eq!(joined.rows().len(), whole.rows().len());
    assert_eq!(joined.peers.len(), 1);
    assert_eq!(
        joined.env.command,
        "ptxlab bench --peers --only poisson; ptxlab bench --peers --only matmul"
    );
    // Through results.json and back, as `ptxlab report --from a --from b` does.
    let dir = temp_dir("join");
    write_outputs(&dir, &joined, false).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), whole.rows().len());

    // Another commit, another GPU, cubins from another ptxas, or the same
    // workload twice: refused.
    let mut other = b.clone();
    other.env.ptxas = "Build cuda_13.5.r13.5/compiler.39125733_0".into();
    let e = Run::join(vec![("a.json".into(), a.clone()), ("b.json".into(), other)]).unwrap_err();
    assert!(e.contains("b.json: ptxas `Build cuda_13.5"), "{e}");
    let mut other = b.clone();
    other.env.git_sha = "0123abc".into();
    let e = Run::join(vec![("a.json".into(), a.clone()), ("b.json".into(), other)]).unwrap_err();
    assert!(e.contains("b.json: git commit `0123abc`"), "{e}");
    let mut other = b.clone();
    other.env.gpu = "NVIDIA H200".into();
    let e = Run::join(vec![("a.json".into(), a.clone()), ("b.json".into(), other)]).unwrap_err();
    assert!(e.contains("GPU `NVIDIA H200`"), "{e}");
    let e = Run::join(vec![("a.json".into(), a.clone()), ("c.json".into(), a)]).unwrap_err();
    assert!(
        e.contains("c.json: workload `poisson` is in an earlier part"),
        "{e}"
    );
    assert!(Run::join(Vec::new()).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 37: a direct solve reaches every tolerance. In the 2026-11-28 run
/// the best peer of the multigrid's `4096x4096 · to 1e-8` problem is CuPy's
/// spectral solve (f64, residual 1.5e-12), not CuPy's CG; the f32 spectral
/// solve (residual 6.8e-4) is in no tolerance's group, and no direct solve
/// meets a grid other than its own.
#[test]
fn final_bench_multigrid_meets_the_direct_spectral_solve() {
    let run = &recorded_run("2026-11-28-h100-final-bench");
    let rows = run.rows();
    let cs = comparisons(&rows);
    let c = cs
        .iter()
        .find(|c| {
            c.group.workload() == "poisson-mg"
                && c.group.problem.shape == "4096x4096"
                && c.group.problem.tolerance.as_deref() == Some("1e-8")
        })
        .expect("poisson-mg 4096x4096 to 1e-8");
    let peer = &rows[c.peer.unwrap()];
    assert!(peer.variant.contains("spectral"), "{}", peer.variant);
    assert_eq!(peer.precision, "f64");
    for g in groups(&rows) {
        for &i in &g.rows {
            let r = &rows[i];
            if r.variant.contains("spectral") && g.problem.tolerance.as_deref() != Some("direct") {
                assert_eq!(r.precision, "f64", "{} in {:?}", r.variant, g.problem);
                assert_eq!(r.size, rows[g.rows[0]].size, "{:?}", g.problem);
            }
        }
    }
}
