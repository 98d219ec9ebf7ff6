//! The Lomb-Scargle fixtures of `tests/fixtures/lomb` (SciPy's, made by
//! `make_fixture.py`, and astropy's, made by `make_astropy_fixture.py`),
//! embedded so a test binary runs anywhere (a bundle on a GPU machine has no
//! source tree). Shared by `tests/lomb.rs` and `tests/lomb_models.rs`.

/// The bytes of fixture file `name`.
pub fn fixture(name: &str) -> &'static [u8] {
    macro_rules! table {
        ($($f:literal),*) => {
            match name {
                $($f => include_bytes!(concat!("../fixtures/lomb/", $f)),)*
                _ => panic!("no fixture {name}"),
            }
        };
    }
    table!(
        // SciPy's (tests/lomb.rs).
        "material_x.npy",
        "material_y.npy",
        "material_freqs.npy",
        "material_pgram.npy",
        "random_x.npy",
        "random_y.npy",
        "random_freqs.npy",
        "random_pgram.npy",
        // astropy's (tests/lomb_models.rs).
        "gen_t.npy",
        "gen_y.npy",
        "gen_dy.npy",
        "gen_w_uneven.npy",
        "gen_w_even.npy",
        "gen_pgram_uneven.npy",
        "gen_pgram_even.npy",
        "long_t.npy",
        "long_y.npy",
        "long_dy.npy",
        "long_w.npy",
        "long_pgram.npy",
        "kepler_t.npy",
        "kepler_y.npy",
        "kepler_w.npy",
        "kepler_pgram.npy",
        "batch_small.npz",
        "batch_small_z.npz",
        "batch_small_pgram.npy"
    )
}

/// A 1-D f64 fixture.
pub fn npy(name: &str) -> Vec<f64> {
    ptxlab::npy::parse_1d::<f64>(fixture(name), name).expect("fixture")
}
