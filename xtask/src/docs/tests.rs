//! The documentation jobs' tests.

use super::book::{heading_ids, links};
use super::results_index::{TomlValue, parse_index_toml};
use super::*;
use std::path::Path;

#[test]
fn toml_subset_parses_and_rejects() {
    let p = Path::new("index.toml");
    let m = parse_index_toml(
        "# c\nmeasured = \"a \\\"b\\\"\"\ntopics = [\"x\", \"y\"] # t\n",
        p,
    )
    .unwrap();
    assert_eq!(m["measured"], TomlValue::Str("a \"b\"".into()));
    assert_eq!(m["topics"], TomlValue::List(vec!["x".into(), "y".into()]));
    assert!(parse_index_toml("a = b", p).is_err());
    assert!(parse_index_toml("a = \"b", p).is_err());
    assert!(parse_index_toml("a = [\"b\" \"c\"]", p).is_err());
    assert!(parse_index_toml("a = \"b\"\na = \"c\"", p).is_err());
}

#[test]
fn heading_ids_follow_mdbook() {
    let ids = heading_ids(
        "# The `launch!` macro\n## matmul — SGEMM ladder\n## A\n## A\n```\n# not\n```\n## [Link](x.md) text\n",
    );
    for id in [
        "the-launch-macro",
        "matmul--sgemm-ladder",
        "a",
        "a-1",
        "link-text",
    ] {
        assert!(ids.contains(id), "{id} missing from {ids:?}");
    }
    assert!(!ids.contains("not"));
}

#[test]
fn links_skip_code() {
    let l = links(
        "a [x](y.md#z) `[no](no.md)`\n```\n[no](no.md)\n```\n![i](c.svg) <img src=\"d.png\">\n[r]: e.md\n",
    );
    let t: Vec<&str> = l.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(t, ["y.md#z", "c.svg", "d.png", "e.md"]);
}

#[test]
fn readme_lines_take_the_reports_pairs_within_tolerance() {
    let member = |backend: &str, variant: &str, ms: f64, err: f64| {
        serde_json::json!({
            "variant": variant, "backend": backend, "size": "S", "precision": "f32",
            "median_ms": ms, "rel_err": err, "status": "ok"
        })
    };
    let entry = |rows: Vec<serde_json::Value>, best: usize, peer: usize| {
        serde_json::json!({
            "workload": "lomb-scargle",
            "problem": {"workload": "lomb-scargle", "shape": "1", "precision": "f32", "measure": "Gpairs/s"},
            "page": "lomb-scargle.md", "rows": rows, "best": best, "peer": peer
        })
    };
    let rows = vec![
        member("gpu", "1 a", 2.0, 1e-6),
        member("gpu", "9 b", 1.0, 1e-6),
        member("cupy", "right", 3.0, 1e-6),
    ];
    let l = |any_of: &'static [&'static str]| readme::Line {
        label: "x",
        workload: "lomb-scargle",
        size: "S",
        precision: "f32",
        tolerance: None,
        measure: None,
        ours_any_of: any_of,
        ours_none_of: &[],
        tol: 1e-5,
    };
    let es = [entry(rows.clone(), 1, 2)];
    let (_, (o, om), (q, qm)) = readme::sides(&es, &l(&[])).unwrap();
    assert_eq!((o["variant"].as_str().unwrap(), om), ("9 b", 1.0));
    assert_eq!((q["variant"].as_str().unwrap(), qm), ("right", 3.0));
    // One family of the ladder: its fastest rung of the same problem.
    let (_, (o, _), _) = readme::sides(&es, &l(&["1 "])).unwrap();
    assert_eq!(o["variant"], "1 a");
    // The report's peer is outside the line's tolerance: no line.
    let mut wrong = rows.clone();
    wrong[2]["rel_err"] = serde_json::json!(0.36);
    assert!(readme::sides(&[entry(wrong, 1, 2)], &l(&[])).is_none());
    // Another precision is another problem.
    assert!(
        readme::sides(
            &es,
            &readme::Line {
                precision: "f64",
                ..l(&[])
            }
        )
        .is_none()
    );
}

/// The committed index is what the run folders give (and every folder
/// has its index.toml and README).
#[test]
fn results_index_is_current() {
    results_index(true).unwrap();
}

/// Every link of the book, the README and the index resolves.
#[test]
fn book_links_resolve() {
    book(&BookOpts {
        check_only: true,
        out: None,
    })
    .unwrap();
}
