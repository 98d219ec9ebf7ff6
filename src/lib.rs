//! Owner of the workspace-level `tests/` and `benches/`; see the README.
