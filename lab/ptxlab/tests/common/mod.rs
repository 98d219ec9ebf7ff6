//! Helpers shared by the CLI test files: run the `ptxlab` binary (with a
//! time limit, so a hang fails the test instead of stalling it), check that
//! it failed with a message that contains given text, and write `.npy`
//! files byte by byte (any dtype, shape, byte order, or a broken file).
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a single `ptxlab` run may take before it counts as a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(120);

/// Output of one run: exit code (-1 when killed by a signal), stdout, stderr.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout and stderr together.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `ptxlab args` with extra environment variables; fails the test on a
/// panic, an abort, a signal or a run over [`TIME_LIMIT`].
pub fn ptxlab_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptxlab"));
    cmd.args(args)
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start ptxlab");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for ptxlab") {
            break s;
        }
        if start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ptxlab {args:?} hung: still running after {TIME_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    };
    let text = run.text();
    assert!(
        !text.contains("panicked") && !text.contains("memory allocation of"),
        "ptxlab {args:?} panicked or aborted:\n{text}"
    );
    assert!(
        run.code >= 0,
        "ptxlab {args:?} was killed by signal {signal:?}:\n{text}"
    );
    run
}

/// Runs `ptxlab args`; see [`ptxlab_env`].
pub fn ptxlab(args: &[&str]) -> (i32, String) {
    let r = ptxlab_env(args, &[]);
    (r.code, r.text())
}

/// Asserts that `ptxlab args` fails with an error (exit code 1, or 2 for an
/// option clap refused) whose text contains every needle.
pub fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let (code, text) = ptxlab(args);
    assert!(
        code == 1 || code == 2,
        "ptxlab {args:?} should fail with exit code 1 or 2, got {code}:\n{text}"
    );
    for n in needles {
        assert!(
            text.contains(n),
            "ptxlab {args:?}: expected `{n}` in:\n{text}"
        );
    }
    text
}

/// Asserts that `ptxlab args` succeeds; returns its output.
pub fn succeeds(args: &[&str]) -> String {
    let (code, text) = ptxlab(args);
    assert_eq!(code, 0, "ptxlab {args:?} should succeed:\n{text}");
    text
}

/// A scratch folder for this test binary (one per process).
pub fn tmp_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("ptxlab-{stem}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path in [`tmp_dir`] as a `String` (for argument lists).
pub fn tmp(name: &str) -> String {
    tmp_dir().join(name).to_string_lossy().into_owned()
}

/// A .npy file with the given header dict values and raw data bytes.
pub fn npy(name: &str, descr: &str, shape: &str, data: &[u8]) -> PathBuf {
    npy_header(name, descr, "False", shape, data)
}

/// As [`npy`], with `fortran_order` given (`"True"` / `"False"`).
pub fn npy_header(name: &str, descr: &str, fortran: &str, shape: &str, data: &[u8]) -> PathBuf {
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    let p = tmp_dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Raw bytes of a file (for broken files).
pub fn raw(name: &str, bytes: &[u8]) -> PathBuf {
    let p = tmp_dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// `to_bytes(v, big_endian)` for each element type the tests write: the
/// data of an `.npy` in either byte order.
macro_rules! bytes_fns {
    ($($name:ident: $t:ty),*) => {$(
        pub fn $name(v: &[$t], big_endian: bool) -> Vec<u8> {
            v.iter()
                .flat_map(|x| if big_endian { x.to_be_bytes() } else { x.to_le_bytes() })
                .collect()
        }
    )*};
}
bytes_fns!(f32_bytes: f32, f64_bytes: f64, i32_bytes: i32, u32_bytes: u32);

/// `read(path, n)` for each element type ptxlab writes: the data of a
/// little-endian `.npy` it wrote (the last `n` elements' bytes).
macro_rules! read_fns {
    ($($name:ident: $t:ty),*) => {$(
        pub fn $name(path: &str, n: usize) -> Vec<$t> {
            const W: usize = std::mem::size_of::<$t>();
            let bytes = std::fs::read(path).unwrap();
            bytes[bytes.len() - W * n..]
                .chunks(W)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
                .collect()
        }
    )*};
}
read_fns!(read_f32_npy: f32, read_f64_npy: f64, read_u32_npy: u32);

/// A command line split at its spaces (for arguments without spaces):
/// `words("vector-add --n 10")`.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// A 1-D float32 `.npy` named `name` holding `v`, in either byte order.
pub fn f32_npy(name: &str, v: &[f32], big_endian: bool) -> PathBuf {
    let descr = if big_endian { ">f4" } else { "<f4" };
    npy(
        name,
        descr,
        &format!("({},)", v.len()),
        &f32_bytes(v, big_endian),
    )
}

/// `true` (and a note printed) where a real NVIDIA driver is installed, so a
/// test that hides the driver through the loader path cannot hide it.
pub fn real_driver_installed() -> bool {
    let yes = std::path::Path::new("/dev/nvidiactl").exists();
    if yes {
        println!("skipped: this machine has an NVIDIA driver");
    }
    yes
}

/// An empty folder to point the loader at (`LD_LIBRARY_PATH`), so no
/// `libcuda` is found there.
pub fn empty_lib_dir() -> String {
    let d = tmp_dir().join("no-driver-here");
    std::fs::create_dir_all(&d).unwrap();
    d.to_string_lossy().into_owned()
}
