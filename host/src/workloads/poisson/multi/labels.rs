//! The labels that `poisson-scaling`'s rows share (Jacobi's and the
//! multigrid's): the device count and the scaling note.

/// `1 GPU`, `4 GPUs`.
pub fn gpus_label(n: usize) -> String {
    if n == 1 {
        "1 GPU".into()
    } else {
        format!("{n} GPUs")
    }
}

/// A scaling row's note: `strong scaling, 1.91x, efficiency 95.5%` (kind
/// `strong` or `weak`), `single-device reference` (kind `reference`).
pub fn scaling_note(kind: &str, speedup: Option<f64>, efficiency: Option<f64>) -> String {
    let mut s = match kind {
        "reference" => "single-device reference".to_string(),
        k => format!("{k} scaling"),
    };
    if let Some(v) = speedup {
        s.push_str(&format!(", {v:.2}x"));
    }
    if let Some(v) = efficiency {
        s.push_str(&format!(", efficiency {:.1}%", 100.0 * v));
    }
    s
}
