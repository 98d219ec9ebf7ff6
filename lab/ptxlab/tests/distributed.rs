//! One process per device, on simulated devices: `ptxlab poisson --gpus N`
//! started N times by hand as a launcher would (torchrun's and ptxlab's
//! variable names), meeting over TCP at `MASTER_ADDR`. Every rank checks
//! its own rows against its own single-device solve bit for bit (a rank
//! that differs exits with an error), and rank 0 prints the same residual
//! history as one process driving N simulated devices.

mod common;
use common::{Run, ptxlab_env, tmp, words};
use std::net::TcpListener;

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// Starts `world` ranks of `ptxlab args` at once; `vars(rank)` gives each
/// its launcher variables. Returns their runs in rank order.
fn launch(world: usize, args: &[&str], vars: impl Fn(usize) -> Vec<(String, String)>) -> Vec<Run> {
    let handles: Vec<_> = (0..world)
        .map(|r| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let vars = vars(r);
            std::thread::spawn(move || {
                let a: Vec<&str> = args.iter().map(String::as_str).collect();
                let v: Vec<(&str, &str)> =
                    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                ptxlab_env(&a, &v)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a rank's thread"))
        .collect()
}

/// torchrun's variables: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
/// MASTER_PORT (ptxlab listens on MASTER_PORT + 1).
fn torchrun(world: usize, port: u16) -> impl Fn(usize) -> Vec<(String, String)> {
    move |r| {
        [
            ("RANK", r.to_string()),
            ("WORLD_SIZE", world.to_string()),
            ("LOCAL_RANK", r.to_string()),
            ("MASTER_ADDR", "127.0.0.1".to_string()),
            ("MASTER_PORT", (port - 1).to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec()
    }
}

/// The lines of a run that carry results, without times and without the
/// line that names the transport.
fn results(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains("||r||"))
        .map(|l| {
            l.split(", ")
                .filter(|part| !part.contains(" ms") && !part.contains("speedup"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

/// Jacobi over three processes (torchrun's variables, TCP between simulated
/// devices): rank 0 prints what one process prints, and its `--out` (the
/// field gathered from every rank's slab) is one process's file byte for
/// byte.
#[test]
fn jacobi_across_processes_matches_one_process() {
    let (out_one, out_many) = (tmp("dist-jacobi-one.npy"), tmp("dist-jacobi-three.npy"));
    let args = |out: &str| {
        [
            "poisson",
            "--gpus",
            "3",
            "--backend",
            "sim",
            "--size",
            "33x41",
            "--iters",
            "12",
            "--out",
            out,
        ]
        .map(str::to_string)
    };
    let (a1, an) = (args(&out_one), args(&out_many));
    let a1: Vec<&str> = a1.iter().map(String::as_str).collect();
    let an: Vec<&str> = an.iter().map(String::as_str).collect();
    let one = ptxlab_env(&a1, &[]);
    assert_eq!(one.code, 0, "{}", one.text());
    let runs = launch(3, &an, torchrun(3, free_port()));
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code, 0, "rank {r}: {}", run.text());
    }
    let lead = &runs[0].stdout;
    assert!(lead.contains("TCP through rank 0"), "{lead}");
    assert_eq!(lead.matches("PASS bit-identical").count(), 3, "{lead}");
    for (r, run) in runs.iter().enumerate().skip(1) {
        assert!(
            run.stdout.trim().is_empty(),
            "only rank 0 prints; rank {r}: {}",
            run.stdout
        );
    }
    assert_eq!(results(lead), results(&one.stdout));
    assert!(!results(lead).is_empty());
    let (f1, fm) = (std::fs::read(&out_one), std::fs::read(&out_many));
    let (f1, fm) = (
        f1.expect("one process's --out"),
        fm.expect("rank 0's --out"),
    );
    assert!(
        f1.len() > 33 * 41 * 4 && f1 == fm,
        "the two --out files differ"
    );
    let _ = (
        std::fs::remove_file(&out_one),
        std::fs::remove_file(&out_many),
    );
}

/// Multigrid (the tile smoother on slabs) over four processes: every rank
/// checks its rows, rank 0 gathers the whole field over TCP, checks it
/// against its single-device solve and writes `--out`, which is the file of
/// one process driving four simulated devices, byte for byte.
#[test]
fn multigrid_across_four_processes_matches_one_process() {
    let (out_one, out_four) = (tmp("dist-mg-one.npy"), tmp("dist-mg-four.npy"));
    let args = |out: &str| {
        [
            "poisson",
            "--gpus",
            "4",
            "--method",
            "multigrid",
            "--backend",
            "sim",
            "--size",
            "97x81",
            "--precision",
            "f64",
            "--out",
            out,
        ]
        .map(str::to_string)
    };
    let (a1, a4) = (args(&out_one), args(&out_four));
    let a1: Vec<&str> = a1.iter().map(String::as_str).collect();
    let a4: Vec<&str> = a4.iter().map(String::as_str).collect();
    let one = ptxlab_env(&a1, &[]);
    assert_eq!(one.code, 0, "{}", one.text());
    let port = free_port();
    // ptxlab's own variable names this time, and its own port variable.
    let runs = launch(4, &a4, |r| {
        [
            ("PTXLAB_RANK", r.to_string()),
            ("PTXLAB_WORLD_SIZE", "4".to_string()),
            ("MASTER_ADDR", "localhost".to_string()),
            ("PTXLAB_BOOTSTRAP_PORT", port.to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec()
    });
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code, 0, "rank {r}: {}", run.text());
    }
    let lead = &runs[0].stdout;
    assert!(
        lead.contains("the same field bit for bit") && !lead.contains("own rows"),
        "{lead}"
    );
    let (f1, f4) = (std::fs::read(&out_one), std::fs::read(&out_four));
    let (f1, f4) = (
        f1.expect("one process's --out"),
        f4.expect("rank 0's --out"),
    );
    assert!(
        f1.len() > 97 * 81 * 8 && f1 == f4,
        "the two --out files differ"
    );
    let _ = (
        std::fs::remove_file(&out_one),
        std::fs::remove_file(&out_four),
    );
    let history = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("by cycle"))
            .map(|l| l.split(": ").nth(1).unwrap_or("").to_string())
            .collect()
    };
    let (h, h1) = (history(lead), history(&one.stdout));
    assert_eq!(h.len(), 2, "{lead}");
    assert_eq!(h, h1, "the residual histories of 4 processes and of one");
}

#[test]
fn ranks_that_disagree_on_the_problem_all_stop() {
    // Another size on one rank stops both, naming the two problems.
    let port = free_port();
    let vars = torchrun(2, port);
    let handles: Vec<_> = (0..2)
        .map(|r| {
            let v = vars(r);
            std::thread::spawn(move || {
                let size = if r == 0 { "33x41" } else { "33x43" };
                let v: Vec<(&str, &str)> =
                    v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                ptxlab_env(
                    &[
                        "poisson",
                        "--gpus",
                        "2",
                        "--backend",
                        "sim",
                        "--iters",
                        "3",
                        "--size",
                        size,
                    ],
                    &v,
                )
            })
        })
        .collect();
    for h in handles {
        let run = h.join().expect("a rank's thread");
        assert_ne!(run.code, 0, "{}", run.text());
        assert!(
            run.text().contains("the ranks disagree on the problem"),
            "{}",
            run.text()
        );
    }
}

#[test]
fn a_rank_without_rank_zero_or_without_an_address_says_what_is_missing() {
    let port = free_port();
    let mut vars = torchrun(2, port)(1);
    vars.push(("PTXLAB_BOOTSTRAP_TIMEOUT".into(), "0.5".into()));
    let v: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = ptxlab_env(&words("poisson --gpus 2 --backend sim --iters 3"), &v);
    assert_ne!(run.code, 0);
    assert!(
        run.text().contains("no rank 0 listening at 127.0.0.1"),
        "{}",
        run.text()
    );
    let run = ptxlab_env(
        &words("poisson --gpus 2 --backend sim --iters 3"),
        &[("RANK", "1"), ("WORLD_SIZE", "2")],
    );
    assert_ne!(run.code, 0);
    assert!(run.text().contains("MASTER_ADDR"), "{}", run.text());
    let run = ptxlab_env(
        &words("poisson --gpus 3 --backend sim --iters 3"),
        &[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "1"),
        ],
    );
    assert_ne!(run.code, 0);
    assert!(
        run.text().contains("--gpus must equal the world size"),
        "{}",
        run.text()
    );
}

#[test]
fn a_batch_of_curves_split_across_processes_matches_one_process() {
    // Three curves over 2 ranks (1 + 2 curves) and over 4 (rank 0 has none).
    let npz = tmp("batch_small.npz");
    std::fs::write(
        &npz,
        include_bytes!("../../../tests/fixtures/lomb/batch_small.npz"),
    )
    .expect("write the batch");
    let run = |out: &str, per: &str| -> Vec<String> {
        [
            "lomb-scargle",
            "--backend",
            "sim",
            "--curves",
            &npz,
            "--start",
            "0.1",
            "--step",
            "0.05",
            "--n",
            "200",
            "--top",
            "2",
            "--check",
            "full",
            "--out",
            out,
            "--periods",
            per,
        ]
        .map(String::from)
        .to_vec()
    };
    let (out1, per1) = (tmp("one_out.npy"), tmp("one_per.npy"));
    let a = run(&out1, &per1);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let one = ptxlab_env(&a, &[]);
    assert_eq!(one.code, 0, "{}", one.text());
    for world in [2, 4] {
        let (out, per) = (
            tmp(&format!("out_{world}.npy")),
            tmp(&format!("per_{world}.npy")),
        );
        let a = run(&out, &per);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let runs = launch(world, &a, torchrun(world, free_port()));
        for (r, run) in runs.iter().enumerate() {
            assert_eq!(run.code, 0, "{world} ranks, rank {r}: {}", run.text());
        }
        assert!(
            runs[0].stdout.contains(&format!("{world} ranks")),
            "{}",
            runs[0].stdout
        );
        for (got, want) in [(&out, &out1), (&per, &per1)] {
            assert_eq!(
                std::fs::read(got).expect("rank 0 wrote it"),
                std::fs::read(want).expect("one process wrote it"),
                "{world} ranks: {got} differs from one process's"
            );
        }
    }
}
