//! Kernels of this workload (filled in by its implementation).
