//! GPU-only tests of the dense family's engine paths; run with `cargo test -- --ignored
//! on_a_gpu` on the GPU machine.
use super::tests::{max_diff, tiny};
use super::*;
use llmprof::region::NoopObserver;

/// Token ids of a row of `len` tokens, different per `round`, below `vocab`.
fn row(len: i64, round: i64, vocab: i64) -> Vec<i64> {
    (0..len).map(|i| (i * 7 + round * 13 + 1) % vocab).collect()
}

/// Prefill graphs (`runtime.optim.prefill_cuda_graph`) on a GPU for a GQA model (Llama 3), one
/// with q/k norms (Qwen3) and one with MLA and experts (DeepSeek-V2-Lite), tiny, bf16, every
/// other fast-path switch on: six two-row prefills into one reused KV cache, alternating rows of
/// equal length (a causal mask: the fused GQA attention) and left-padded rows (an explicit mask).
/// Each shape runs eagerly the first time it is prefilled on the cache (rounds 0 and 1), is
/// captured the second time (rounds 2 and 3) and replays after; each one's logits, and a decode step
/// after it (which reads the written slots and the cache's counter), equal the same prefill
/// with the graphs off.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn prefill_graphs_equal_eager_on_a_gpu() {
    let dev = Device::Cuda(0);
    let obs = NoopObserver;
    for name in ["llama3_1_8b", "qwen3_0_6b", "deepseek_v2_lite"] {
        let a = tiny(name);
        let w = checkpoint::synthetic(&a, 3, dev, Kind::BFloat16).unwrap();
        let load = |graphs: bool| {
            let mut s = Switches::fast();
            s.engine.prefill_cuda_graph = graphs;
            DenseLm::load(&w, &a, dev, Kind::BFloat16, &s).unwrap()
        };
        let (graphed, eager) = (load(true), load(false));
        let mut cache = graphed.new_cache(2, 32).unwrap();
        for round in 0..6i64 {
            let second = if round % 2 == 0 { 11 } else { 6 };
            let (r0, r1) = (
                row(11, round, a.vocab_size),
                row(second, round + 7, a.vocab_size),
            );
            let rows = [r0.as_slice(), r1.as_slice()];
            cache.reset().unwrap();
            let got = graphed.prefill_text(&rows, &mut cache, &obs).unwrap();
            let mut fresh = eager.new_cache(2, 32).unwrap();
            let want = eager.prefill_text(&rows, &mut fresh, &obs).unwrap();
            // The same kernels in and out of the graph: equal up to reduction order.
            let close =
                |a: &Tensor, b: &Tensor| max_diff(a, b) <= 1e-3 * max_diff(b, &b.zeros_like());
            assert!(close(&got, &want), "{name}, round {round}: prefill logits");
            assert_eq!(cache.len(), 11, "{name}, round {round}: host counter");
            let tokens = Tensor::from_slice(&[5i64, 8]).to_device(dev);
            let step = graphed.decode_step(&tokens, &mut cache, &obs).unwrap();
            let want_step = eager.decode_step(&tokens, &mut fresh, &obs).unwrap();
            assert!(
                close(&step, &want_step),
                "{name}, round {round}: decode step"
            );
        }
        assert_eq!(graphed.prefill_graph_stats(), (2, 2), "{name}");
        assert_eq!(eager.prefill_graph_stats(), (0, 0), "{name}");
    }
}
