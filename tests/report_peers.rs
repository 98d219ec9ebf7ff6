//! The peer scripts' side of the report: every peer takes its median
//! through `peers/common.py`'s `timing_stats`, which is the runtime's
//! statistic, and `ptxlab bench --peers` reads their JSON lines as rows,
//! progress lines and announcements.

use ptxlab::runtime::Timing;
use serde_json::Value;

/// `peers/common.py`, embedded so the tests run without the source tree.
const COMMON: &str = include_str!("../peers/common.py");

/// Runs `python3 -c script arg` in a fresh folder holding `files` (name,
/// text) and parses its standard output as a JSON array; `None` after one
/// line saying why when there is no `python3`.
fn python_json(files: &[(&str, &str)], script: &str, arg: &str) -> Option<Vec<Value>> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ptxlab-peers-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let out = std::process::Command::new("python3")
        .args(["-c", script, arg])
        .current_dir(&dir)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: python3 not runnable ({e})");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
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
    let script = "import json, sys\nfrom common import timing_stats\n\
         print(json.dumps([timing_stats(s) for s in json.loads(sys.argv[1])]))";
    let Some(got) = python_json(
        &[("common.py", COMMON)],
        script,
        &serde_json::to_string(&sets).unwrap(),
    ) else {
        return;
    };
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

#[test]
fn a_peer_row_with_a_note_is_a_row_and_an_announcement_is_a_note() {
    use ptxlab::report::PeerLine;
    // A row of peers/poisson_mg.py: its `note` belongs to the row.
    let row = r#"{"workload": "poisson-mg", "variant": "CuPy spectral (DST-I by rfft)", "backend": "cupy", "size": "4096x4096", "precision": "f64", "median_ms": 6.8, "min_ms": 6.7, "max_ms": 6.9, "reps": 5, "note": "median of 5 (CUDA events), warm-up first"}"#;
    match PeerLine::parse(row) {
        PeerLine::Row(r) => {
            assert_eq!(r.variant, "CuPy spectral (DST-I by rfft)");
            assert_eq!(r.timing.unwrap().median_ms, 6.8);
            assert_eq!(r.note, "median of 5 (CUDA events), warm-up first");
        }
        other => panic!("a row read as {other:?}"),
    }
    // common.announce: a progress line, not a row.
    let note = r#"{"note": "pyamg set-up, 4096^2", "expected_s": 96.0, "basis": "BENCHMARKS.md"}"#;
    match PeerLine::parse(note) {
        PeerLine::Note {
            text,
            expected_s,
            basis,
        } => {
            assert_eq!(text, "pyamg set-up, 4096^2");
            assert_eq!(expected_s, Some(96.0));
            assert_eq!(basis.as_deref(), Some("BENCHMARKS.md"));
        }
        other => panic!("an announcement read as {other:?}"),
    }
    assert!(matches!(
        PeerLine::parse(r#"{"step": "poisson peers: peers/poisson.py"}"#),
        PeerLine::Step(s) if s == "poisson peers: peers/poisson.py"
    ));
    assert!(matches!(
        PeerLine::parse(r#"{"done": "poisson"}"#),
        PeerLine::Done
    ));
    assert!(matches!(
        PeerLine::parse("Traceback (most recent call last):"),
        PeerLine::Other
    ));
    // A line with a workload but no variant is no row (and no progress line).
    assert!(matches!(
        PeerLine::parse(r#"{"workload": "poisson", "note": "x"}"#),
        PeerLine::Other
    ));
}

/// The attention peer names a windowed problem as the Rust rows do
/// (`Shape::label`, so the report pairs them) and counts the same
/// query-key pairs inside the band (`Shape::flops`, so TFLOP/s compare).
#[test]
fn the_attention_peer_labels_and_counts_a_window_as_the_rows_do() {
    use ptxlab::workloads::attention::Shape;
    let cases = [
        (300usize, false, 70usize),
        (300, true, 100),
        (8192, true, 1024),
        (77, false, 200),
    ];
    let script = "import json, sys\nimport attention as a\n\
         print(json.dumps([[a.size_label(4, 16, s, 128, c, window=w), a.window_pairs(s, c, w)] \
         for s, c, w in json.loads(sys.argv[1])]))";
    let files = [
        ("common.py", COMMON),
        ("attention.py", include_str!("../peers/attention.py")),
    ];
    let Some(got) = python_json(&files, script, &serde_json::to_string(&cases).unwrap()) else {
        return;
    };
    for ((s, causal, w), g) in cases.iter().zip(&got) {
        let shape = Shape::new(4, 16, *s, *s, 128, *causal, None)
            .unwrap()
            .with_window(*w)
            .unwrap();
        assert_eq!(g[0].as_str().unwrap(), shape.label());
        let pairs = shape.flops() / (4.0 * 4.0 * 16.0 * 128.0);
        assert_eq!(g[1].as_f64().unwrap(), pairs, "{s} {causal} {w}");
    }
}

/// The attention peer names the packed batch of the benchmark as the Rust
/// rows do (`Packed::label`), uses the same lengths
/// (`bench_packed_lengths`), and counts the same FLOPs (`Packed::flops`).
#[test]
fn the_attention_peer_labels_and_counts_a_packed_batch_as_the_rows_do() {
    use ptxlab::workloads::attention::{Packed, bench_packed_lengths};
    let script = "import json\nimport attention as a\n\
         out = []\n\
         for quick in (False, True):\n\
         \x20   h, d, lens = a.packed_lengths(quick)\n\
         \x20   out.append([h, d, lens, [[a.packed_label(h, d, lens, c), a.packed_flop(h, d, lens, c)] \
         for c in (False, True)]])\n\
         print(json.dumps(out))";
    let files = [
        ("common.py", COMMON),
        ("attention.py", include_str!("../peers/attention.py")),
    ];
    let Some(got) = python_json(&files, script, "") else {
        return;
    };
    for (quick, g) in [false, true].into_iter().zip(&got) {
        let (heads, d, lens) = bench_packed_lengths(quick);
        assert_eq!(g[0].as_u64().unwrap() as usize, heads);
        assert_eq!(g[1].as_u64().unwrap() as usize, d);
        let py_lens: Vec<usize> = g[2]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(py_lens, lens, "quick {quick}");
        let mut cu = vec![0];
        for l in &lens {
            cu.push(cu[cu.len() - 1] + l);
        }
        for (causal, pair) in [false, true].into_iter().zip(g[3].as_array().unwrap()) {
            let p = Packed::new(heads, d, causal, None, cu.clone(), None).unwrap();
            assert_eq!(pair[0].as_str().unwrap(), p.label());
            let (a, b) = (pair[1].as_f64().unwrap(), p.flops());
            assert!((a - b).abs() <= 1e-9 * b, "{a} {b}");
        }
    }
}
