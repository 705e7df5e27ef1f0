//! Helpers for the crate's unit tests.
/// A fresh, empty temporary directory unique to this process and tag.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("llmprof-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Milliseconds per call of `f` on CUDA device 0: the mean of 20 calls after 3 warm-ups,
/// host wall time between device syncs (for the GPU tests that print timings).
pub fn gpu_ms_per_call(f: &dyn Fn() -> tch::Tensor) -> f64 {
    for _ in 0..3 {
        let _ = f();
    }
    tch::Cuda::synchronize(0);
    let t = std::time::Instant::now();
    for _ in 0..20 {
        let _ = f();
    }
    tch::Cuda::synchronize(0);
    t.elapsed().as_secs_f64() * 1e3 / 20.0
}

/// How many elements of `got` differ from `want` (same shape): 0 for bit-equal tensors.
pub fn values_differing(got: &tch::Tensor, want: &tch::Tensor) -> i64 {
    got.ne_tensor(want).sum(tch::Kind::Int64).int64_value(&[])
}
