//! `ptxlab reduce`, `ptxlab histogram`, `ptxlab monte-carlo-pi`.

use crate::common::*;
use crate::{CPU, SIM, on, refused};

// ---------------------------------------------------------------- reduce

#[test]
fn reduce_hostile_inputs_and_valid_edges() {
    let seven: Vec<f32> = (0..7).map(|i| i as f32).collect();
    let mut with_nan = seven.clone();
    with_nan[2] = f32::NAN;
    let mut with_inf = seven.clone();
    with_inf[4] = -f32::INFINITY;
    let f_nan = npy("rd_nan.npy", "<f4", "(7,)", &f32_bytes(&with_nan, false));
    let f_inf = npy("rd_inf.npy", "<f4", "(7,)", &f32_bytes(&with_inf, false));
    let f_big = npy("rd_big.npy", "<f4", "(4,)", &f32_bytes(&[3e38; 4], false));
    let f_f8 = npy("rd_f8.npy", "<f8", "(7,)", &f64_bytes(&[1.0; 7], false));
    let f_empty = npy("rd_empty.npy", "<f4", "(0,)", &[]);
    let f_2d = npy("rd_2d.npy", "<f4", "(7, 1)", &f32_bytes(&seven, false));
    let f_ok = npy("rd_ok.npy", ">f4", "(7,)", &f32_bytes(&seven, true));
    let i_be = npy(
        "rd_i_be.npy",
        ">i4",
        "(5,)",
        &i32_bytes(&[i32::MAX, 1, 2, 3, 4], true),
    );
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["reduce", "--n", "0"]),
            &["--n", "0 elements", "give at least one element"],
        );
        fails_with(
            &on(be, &["reduce", "--n", "-1"]),
            &["--n", "`-1` is negative"],
        );
        refused(
            be,
            "reduce --n 5 --precision f16",
            &["'f16'", "possible values: f32, f64, i32"],
        );
        refused(
            be,
            "reduce --n 5 --variant foo",
            &[
                "'foo'",
                "possible values: all, tree, shuffle, atomic-thread, atomic-warp, gridstride",
            ],
        );
        refused(
            be,
            "reduce --n 5 --reps 10001",
            &["--reps", "10001 timed repetitions; allowed 1..=10000"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_nan), "--variant", "tree"]),
            &[
                "reduce input",
                "element 2 is NaN",
                "every value must be finite",
            ],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_inf)]),
            &["element 4 is -inf", "finite"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_big)]),
            &[
                "sum |x| = 1.200e39 is beyond the largest f32",
                "--precision f64",
            ],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_f8)]),
            &["its dtype is '<f8' (float64), but f32 is required"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_2d)]),
            &["(7, 1) has 2 dimension(s)"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_empty)]),
            &["the input is empty (n = 0)"],
        );
        fails_with(
            &on(be, &["reduce", "--input", "/nonexistent/x.npy"]),
            &["cannot open"],
        );
    }
    fails_with(
        &on(CPU, &["reduce", "--n", "1e12"]),
        &["--n: needs", "of host memory", "use a smaller --n"],
    );
    refused(
        SIM,
        "reduce --n 1e12 --variant gridstride",
        &["--n", "on the simulator; at most 8388608", "--backend cpu"],
    );
    fails_with(
        &on(SIM, &["reduce", "--n", "1e12"]),
        &[
            "--n",
            "with --variant all on the simulator; at most 4194304",
        ],
    );
    refused(
        SIM,
        "reduce --n 4194305 --variant atomic-thread",
        &["4194305 elements with --variant atomic-thread on the simulator; at most 4194304"],
    );
    // Valid: a big-endian file summed exactly by every rung; size 1; the
    // i32 sum wraps as documented.
    let text = succeeds(&on(
        SIM,
        &[
            "reduce",
            "--input",
            &s(&f_ok),
            "--variant",
            "all",
            "--reps",
            "1",
        ],
    ));
    assert_eq!(text.matches("PASS reduce f32").count(), 5, "{text}");
    assert!(text.contains("n=7 on CPU simulator: sum 21 "), "{text}");
    let text = succeeds(&on(CPU, &["reduce", "--input", &s(&f_ok)]));
    assert!(text.contains("f64 reference sum 21 "), "{text}");
    let text = succeeds(&on(
        SIM,
        &[
            "reduce",
            "--input",
            &s(&i_be),
            "--precision",
            "i32",
            "--reps",
            "1",
        ],
    ));
    assert!(text.contains("sum -2147483639"), "{text}");
    for p in ["f32", "f64", "i32"] {
        let text = succeeds(&on(
            SIM,
            &[
                "reduce",
                "--n",
                "1",
                "--precision",
                p,
                "--variant",
                "all",
                "--reps",
                "1",
            ],
        ));
        assert_eq!(text.matches("PASS reduce").count(), 5, "{text}");
    }
}

// ---------------------------------------------------------------- histogram

#[test]
fn histogram_hostile_inputs_and_valid_edges() {
    let keys: Vec<u8> = (0..300u32).map(|i| (i * 7 % 256) as u8).collect();
    let k_u8 = npy("hg_u8.npy", "|u1", "(300,)", &keys);
    let k32: Vec<u32> = (0..300u32).map(|i| i * 13).collect();
    let k_u32_be = npy("hg_u32_be.npy", ">u4", "(300,)", &u32_bytes(&k32, true));
    let k_i8 = npy("hg_i8.npy", "<i8", "(2,)", &[0u8; 16]);
    let k_empty = npy("hg_empty.npy", "|u1", "(0,)", &[]);
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    for be in [CPU, SIM] {
        for bins in ["0", "3", "512"] {
            fails_with(
                &on(be, &["histogram", "--n", "5", "--bins", bins]),
                &[
                    "--bins",
                    &format!("{bins} bins"),
                    "a power of two from 1 to 256 for u8 keys",
                ],
            );
        }
        refused(
            be,
            "histogram --n 5 --keys u32 --bins 16384",
            &["--bins", "from 1 to 8192 for u32 keys"],
        );
        refused(
            be,
            "histogram --n 5 --bins -4",
            &["--bins", "`-4` is negative"],
        );
        refused(
            be,
            "histogram --n 5 --bins 4294967296",
            &[
                "--bins",
                "larger than the largest value this option takes (4294967295)",
            ],
        );
        refused(
            be,
            "histogram --n 5 --keys i8",
            &["--keys", "'i8'", "possible values: u8, u32"],
        );
        refused(
            be,
            "histogram --n 5 --variant foo",
            &["'foo'", "possible values: all, global, shared"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "0"]),
            &["the input is empty (0 keys)"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "1e12"]),
            &[
                "--n",
                "1000000000000 keys; at most 4294967295",
                "counters are u32",
            ],
        );
        fails_with(
            &on(be, &["histogram", "--input", &s(&k_empty)]),
            &["the input is empty (0 keys)"],
        );
        fails_with(
            &on(be, &["histogram", "--input", &s(&k_u32_be)]),
            &[
                "--input",
                "its dtype is '>u4' (uint32), but u8 is required",
                "--keys u32",
            ],
        );
        fails_with(
            &on(be, &["histogram", "--input", &s(&k_i8), "--keys", "u32"]),
            &["its dtype is '<i8' (int64), but u32 is required"],
        );
    }
    fails_with(
        &on(SIM, &["histogram", "--n", "9000000"]),
        &["--n", "9000000 keys on the simulator; at most 8388608"],
    );
    // Valid: exact counts for uint8 keys and for big-endian uint32 keys, on
    // both backends and both rungs; a single key.
    let mut want8 = vec![0u32; 4];
    for k in &keys {
        want8[(*k & 3) as usize] += 1;
    }
    let mut want32 = vec![0u32; 16];
    for k in &k32 {
        want32[(*k & 15) as usize] += 1;
    }
    for be in [CPU, SIM] {
        let out = tmp(&format!("hg_out8_{be}.npy"));
        succeeds(&on(
            be,
            &[
                "histogram",
                "--input",
                &s(&k_u8),
                "--bins",
                "4",
                "--variant",
                "all",
                "--out",
                &out,
                "--reps",
                "1",
            ],
        ));
        assert_eq!(read_u32_npy(&out, 4), want8);
        let out = tmp(&format!("hg_out32_{be}.npy"));
        succeeds(&on(
            be,
            &[
                "histogram",
                "--input",
                &s(&k_u32_be),
                "--keys",
                "u32",
                "--bins",
                "16",
                "--out",
                &out,
                "--reps",
                "1",
            ],
        ));
        assert_eq!(read_u32_npy(&out, 16), want32);
        let out = tmp(&format!("hg_out1_{be}.npy"));
        succeeds(&on(
            be,
            &[
                "histogram",
                "--n",
                "1",
                "--bins",
                "1",
                "--out",
                &out,
                "--reps",
                "1",
            ],
        ));
        assert_eq!(read_u32_npy(&out, 1), vec![1]);
    }
}

// ---------------------------------------------------------------- monte-carlo-pi

#[test]
fn monte_carlo_pi_hostile_options_and_valid_edges() {
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["monte-carlo-pi", "--n", "0"]),
            &["--n", "0 samples; give at least 1"],
        );
        fails_with(
            &on(be, &["monte-carlo-pi", "--n", "-5"]),
            &["--n", "`-5` is negative"],
        );
        for bad in ["nan", "1.5", "1e30", "many"] {
            fails_with(
                &on(be, &["monte-carlo-pi", "--n", bad]),
                &[
                    "--n",
                    &format!("`{bad}` is not a whole non-negative number"),
                ],
            );
        }
        refused(
            be,
            "monte-carlo-pi --n 1000 --blocks 0",
            &["thread layout", "0 blocks", "need at least one block"],
        );
        refused(
            be,
            "monte-carlo-pi --n 1000 --blocks -1",
            &["--blocks", "`-1` is negative"],
        );
        refused(
            be,
            "monte-carlo-pi --n 1000 --blocks 1 --reps 0",
            &["--reps", "allowed 1..=10000"],
        );
    }
    refused(
        CPU,
        "monte-carlo-pi --n 1000 --blocks 4294967295",
        &["--blocks", "4294967295 blocks; at most 1048576"],
    );
    refused(
        CPU,
        "monte-carlo-pi --n 1e18 --blocks 1",
        &["--n", "per thread; at most 4294967295 per thread"],
    );
    refused(
        SIM,
        "monte-carlo-pi --n 1000 --blocks 20000",
        &["--blocks", "20000 blocks on the simulator; at most 16384"],
    );
    refused(
        SIM,
        "monte-carlo-pi --n 2e9 --blocks 1",
        &["--n", "on the simulator; at most 1e9"],
    );
    // Valid: one sample; a small layout on the simulator; many idle streams
    // (more threads than samples) on the CPU.
    for be in [CPU, SIM] {
        let text = succeeds(&on(be, &words("monte-carlo-pi --n 1 --blocks 1 --reps 1")));
        assert!(text.contains(" hits of 1:"), "{text}");
    }
    let text = succeeds(&on(
        SIM,
        &words("monte-carlo-pi --n 1000 --blocks 8 --reps 1"),
    ));
    assert!(
        text.contains("PASS monte-carlo-pi on CPU simulator"),
        "{text}"
    );
    // One default layout on every backend: a seed gives the same count on
    // the simulator and the CPU, and the layout is printed.
    let hits = |be: &str| {
        let text = succeeds(&on(be, &words("monte-carlo-pi --n 1e6 --seed 7 --reps 1")));
        assert!(
            text.contains("layout: 4224 blocks x 256 threads = 1081344 streams, seed 7"),
            "{text}"
        );
        let i = text.find(" hits of 1000000").expect("a count");
        let start = text[..i].rfind(' ').map_or(0, |j| j + 1);
        text[start..i].to_string()
    };
    assert_eq!(hits(SIM), hits(CPU));
    let text = succeeds(&on(
        CPU,
        &words("monte-carlo-pi --n 10 --blocks 1048576 --reps 1"),
    ));
    assert!(
        text.contains("268435456 streams") && text.contains("hits of 10:"),
        "{text}"
    );
}
