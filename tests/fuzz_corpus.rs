//! The fuzz targets' checks (`fuzz/fuzz_targets/checks.rs`) replayed over
//! their corpora (`fuzz/corpus/<target>`, seeded from `tests/fixtures`),
//! without libFuzzer: every file, every file cut short at 16 lengths, every
//! file with one byte flipped at 16 places, and [`RANDOM_MUTANTS`] random
//! mutants of each file (seeded: the same inputs on every run). This is the
//! fuzzing smoke test of `cargo test` (CI); the fuzzing itself is `cargo
//! fuzz run <target>` (see `fuzz/README.md`). Nothing may panic, and every
//! error must name its file.

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

/// Random mutants of each corpus file per run.
const RANDOM_MUTANTS: usize = 128;

/// xorshift64*: reproducible random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values that sit on edges of the readers' arithmetic: lengths, counts and
/// sizes near 0, the sign bit and the integer limits.
const EDGES: [u64; 8] = [0, 1, 0x7f, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, u64::MAX];

/// One to four of libFuzzer's simplest mutations of `data`: a random byte,
/// an inserted or erased run, an edge value written over 1, 2, 4 or 8
/// bytes, a copied run, or a splice with `other` (another corpus file).
fn mutate(data: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] = rng.next() as u8;
            }
            1 => {
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
            2 => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 => {
                let width = [1, 2, 4, 8][rng.below(4)];
                let bytes = EDGES[rng.below(EDGES.len())].to_le_bytes();
                for (k, b) in bytes[..width].iter().enumerate() {
                    if let Some(x) = v.get_mut(at + k) {
                        *x = *b;
                    }
                }
            }
            4 if !v.is_empty() => {
                let from = rng.below(v.len());
                let end = (from + 1 + rng.below(32)).min(v.len());
                let run = v[from..end].to_vec();
                v.splice(at..at, run);
            }
            _ => {
                let cut = rng.below(other.len() + 1);
                v.truncate(at);
                v.extend_from_slice(&other[cut..]);
            }
        }
    }
    v
}

/// Runs `check` over the corpus of `target` and simple mutations of it.
/// Returns the inputs run (0 without the source tree, as in a bundle).
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!(
            "skipped: no corpus at {} (not a source tree)",
            dir.display()
        );
        return 0;
    };
    let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 4, "{}: {} files", dir.display(), files.len());
    let corpus: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut runs = 0;
    for (f, data) in files.iter().zip(&corpus) {
        let data = data.clone();
        let mut variants = vec![data.clone()];
        for k in 0..16 {
            variants.push(data[..data.len() * k / 16].to_vec());
            let mut flipped = data.clone();
            if !flipped.is_empty() {
                let i = (flipped.len() - 1) * k / 15;
                flipped[i] ^= 0x5a;
                variants.push(flipped);
            }
        }
        for _ in 0..RANDOM_MUTANTS {
            let other = &corpus[rng.below(corpus.len())];
            variants.push(mutate(&data, other, &mut rng));
        }
        for v in &variants {
            let r = std::panic::catch_unwind(|| check(v));
            if r.is_err() {
                // Keep the input that panicked, for `cargo fuzz run <target> <file>`.
                let keep = std::env::temp_dir().join(format!("ptxlab-fuzz-{target}-panic"));
                let _ = std::fs::write(&keep, v);
                panic!(
                    "{target}: a variant of {} ({} bytes; the file has {}) panicked; \
                     the input is in {}",
                    f.display(),
                    v.len(),
                    data.len(),
                    keep.display()
                );
            }
            runs += 1;
        }
    }
    runs
}

#[test]
fn npy_corpus() {
    println!("npy: {} inputs", replay("npy", checks::npy));
}

#[test]
fn npz_corpus() {
    println!("npz: {} inputs", replay("npz", checks::npz));
}

#[test]
fn lomb_batch_corpus() {
    println!(
        "lomb_batch: {} inputs",
        replay("lomb_batch", checks::lomb_batch)
    );
}

#[test]
fn cli_corpus() {
    println!("cli: {} inputs", replay("cli", checks::cli));
}

/// The replay is a test that can fail: a check that panics on the corpus's
/// own files is reported, naming the file.
#[test]
#[should_panic(expected = "panicked; the input is in")]
fn a_panicking_check_fails_the_replay() {
    replay("npy", |d| assert!(!d.starts_with(b"\x93NUMPY\x01")));
}
