//! The report files: `results.json` validates against `docs/results-schema.json`,
//! the CSV has one line per row, and every plot is a valid SVG and PNG.

use ptxlab::report::Ceilings;
use ptxlab::report::{Environment, Row, Status, write_outputs};
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

fn sample_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, v) in ["naive", "tiled", "register"].iter().enumerate() {
        let mut r = Row::new("poisson", v, "gpu", "2000x2000", "f32");
        r.timing = Some(Timing::from_samples(vec![
            0.02 + i as f64 * 0.01,
            0.03,
            0.025,
        ]));
        r.throughput = Some(200.0 - i as f64 * 20.0);
        r.unit = "GCells/s".into();
        r.registers = Some(20);
        rows.push(r);
    }
    let mut r = Row::new("matmul", "regblock", "gpu", "4096x4096x4096", "f32");
    r.timing = Some(Timing::from_samples(vec![3.0]));
    r.throughput = Some(40000.0);
    r.unit = "GFLOP/s".into();
    rows.push(r);
    for t in [1, 2] {
        let mut r = Row::new(
            "poisson",
            &format!("CPU rayon {t} threads"),
            "cpu",
            "2000x2000",
            "f32",
        );
        r.timing = Some(Timing::from_samples(vec![10.0 / t as f64]));
        r.throughput = Some(0.4 * t as f64);
        r.unit = "GCells/s".into();
        rows.push(r);
    }
    rows.push(Row::skipped(
        "poisson",
        "GPU variants",
        "gpu",
        "no NVIDIA driver",
    ));
    let mut f = Row::new("vector-add", "x4", "gpu", "2^20", "f32");
    f.status = Status::Failed("3 elements differ".into());
    rows.push(f);
    rows
}

#[test]
fn results_json_matches_the_documented_schema_and_plots_are_valid() {
    let dir = std::env::temp_dir().join(format!("ptxlab-report-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = sample_rows();
    let ceil = Ceilings {
        copy_gbs: Some(3000.0),
        sfu_per_s: Some(4e12),
        fp32_flops: Some(60e12),
        clock_mhz: Some(1980.0),
    };
    write_outputs(&dir, &Environment::collect(None), &ceil, &rows, "# test\n").unwrap();

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

    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    assert!(csv.contains("FAILED: 3 elements differ"));

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for name in ["bars-poisson", "roofline", "poisson-cpu-sweep"] {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg")))
            .unwrap_or_else(|_| panic!("{name}.svg missing"));
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}.svg is not an SVG document"
        );
        assert!(
            svg.matches("<rect").count() + svg.matches("<circle").count() >= 3,
            "{name}.svg is empty"
        );
        assert!(
            md.contains(&format!("{name}.svg")),
            "report.md does not show {name}"
        );
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}.png signature");
        assert_eq!(&png[12..16], b"IHDR");
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap()) as usize;
        let h = u32::from_be_bytes(png[20..24].try_into().unwrap()) as usize;
        let idat = png.windows(4).position(|x| x == b"IDAT").unwrap();
        let len = u32::from_be_bytes(png[idat - 4..idat].try_into().unwrap()) as usize;
        let raw =
            miniz_oxide::inflate::decompress_to_vec_zlib(&png[idat + 4..idat + 4 + len]).unwrap();
        assert_eq!(raw.len(), h * (1 + 3 * w), "{name}.png pixel data size");
        let non_white = raw
            .chunks(3)
            .filter(|p| p.len() == 3 && p != &[255, 255, 255])
            .count();
        assert!(non_white > 100, "{name}.png is blank");
    }
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
        "Ceilings: device-to-device copy 3010 GB/s (read + write), measured in this run; from \
         spec at the maximum SM clock, 1980 MHz: SFU 4.18e12 op/s (16 per clock per SM), FP32 \
         66.9 TFLOP/s (128 FMA per clock per SM)."
    );
    assert!(Ceilings::default().markdown().is_none());
}

/// Every peer reports its timings through `peers/common.py`'s
/// `timing_stats`, which must be `Timing::from_samples`'s statistic: the
/// middle sample for an odd count, the mean of the two middle ones for an
/// even count (a peer that took `sorted[n // 2]` reported the larger of
/// two runs as the median).
#[test]
fn peers_median_is_the_runtime_median() {
    let sets: [&[f64]; 5] = [
        &[3.5],
        &[9602.1, 9165.4],
        &[5.0, 1.0, 3.0, 2.0],
        &[4.0, 1.0, 9.0, 2.5, 7.0],
        &[1.0, 1e9, 2.0, 3.0, 4.0, 5.0],
    ];
    // Embedded, so the test binary runs without the source tree (bundles).
    let script = format!(
        "{}\nimport json, sys\nprint(json.dumps([timing_stats(s) for s in json.loads(sys.argv[1])]))",
        include_str!("../peers/common.py")
    );
    let arg = serde_json::to_string(&sets).unwrap();
    let out = match std::process::Command::new("python3")
        .args(["-c", &script, &arg])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: python3 not runnable ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (s, g) in sets.iter().zip(&got) {
        let t = Timing::from_samples(s.to_vec());
        assert_eq!(g["median_ms"].as_f64().unwrap(), t.median_ms, "{s:?}");
        assert_eq!(g["min_ms"].as_f64().unwrap(), t.min_ms, "{s:?}");
        assert_eq!(g["max_ms"].as_f64().unwrap(), t.max_ms, "{s:?}");
        assert_eq!(g["reps"].as_u64().unwrap() as usize, t.reps, "{s:?}");
    }
    // The nifty-ls batched row of the 2026-11-24 run: two runs, 9384 ms.
    assert_eq!(got[1]["median_ms"].as_f64().unwrap(), 9383.75);
}

/// One median for every peer: no peer script computes a median (or picks a
/// middle sample) of its own; they all go through `timing_stats`.
#[test]
fn no_peer_computes_its_own_median() {
    let peers = [
        ("diffusion.py", include_str!("../peers/diffusion.py")),
        ("fusion.py", include_str!("../peers/fusion.py")),
        ("lomb_batch.py", include_str!("../peers/lomb_batch.py")),
        ("lomb_scargle.py", include_str!("../peers/lomb_scargle.py")),
        ("matmul.py", include_str!("../peers/matmul.py")),
        ("poisson.py", include_str!("../peers/poisson.py")),
        ("poisson_mg.py", include_str!("../peers/poisson_mg.py")),
        ("primitives.py", include_str!("../peers/primitives.py")),
        ("vector_add.py", include_str!("../peers/vector_add.py")),
    ];
    for (name, src) in peers {
        for bad in ["// 2]", "median(", "statistics."] {
            assert!(
                !src.contains(bad),
                "peers/{name} computes a median itself (`{bad}`): use common.timing_stats"
            );
        }
        for (i, line) in src.lines().enumerate() {
            if line.contains("\"median_ms\":") {
                panic!(
                    "peers/{name}:{}: sets median_ms by hand; use common.timing_stats",
                    i + 1
                );
            }
        }
    }
}
