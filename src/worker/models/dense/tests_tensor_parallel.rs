//! Tensor-parallel ranks of the dense models on the CPU (threads over file collectives): the
//! ranks' logits and tokens against the whole model, the collectives' module marks, the splits
//! refused, and a rank's slices as drawn and as read from a checkpoint.
use super::tests::{max_diff, tiny};
use super::*;
use crate::engine::fast_path_check::prompts;
use crate::test_util::temp_dir;

/// A tensor-parallel rank reads its slices of a checkpoint as it reads each tensor
/// (`checkpoint::load_kept`): for two ranks of a dense and an MoE structure, every tensor equals
/// the slice of the whole checkpoint, and the rank holds only slices (the split ones are smaller).
#[test]
fn a_rank_reads_its_slices_of_a_checkpoint() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/released_configs");
    for name in ["llama3_1_8b", "mixtral_8x7b"] {
        let a = DenseArch::from_hf_config_json(&fixtures.join(format!("{name}.json")))
            .unwrap()
            .tiny();
        let w = checkpoint::synthetic(&a, 4, Device::Cpu, Kind::Float).unwrap();
        let dir = temp_dir(&format!("rank-slices-{name}"));
        let named: Vec<(&str, &Tensor)> = w.iter().map(|(n, t)| (n.as_str(), t)).collect();
        Tensor::write_safetensors(&named, dir.join("model.safetensors")).unwrap();
        for rank in 0..2 {
            let keep = |n: &str, t: Tensor| shard::slice_one(n, &t, &a, (rank, 2));
            let got = checkpoint::load_kept(&dir, &a, (Device::Cpu, Kind::Float), &keep).unwrap();
            let want = shard::slice(&w, &a, rank, 2).unwrap();
            assert_eq!(got.len(), want.len(), "{name}");
            for (n, t) in &want {
                assert!(got[n].equal(t), "{name} rank {rank}: {n}");
            }
            let split = |n: &str| got[n].numel() < w[n].numel();
            assert!(split("model.layers.0.self_attn.q_proj.weight"), "{name}");
            assert!(split("lm_head.weight"), "{name}");
        }
    }
}

/// Tensor parallelism on the CPU (file collectives, two ranks as threads): every rank's logits
/// and greedy tokens equal the unsharded model's, for each structure the sharding splits
/// differently (q/k/v biases and a tied head, GQA, q/k norms, packed q/k/v and gate/up, Gemma's
/// sandwich with local layers and its embedding scale, experts under both naming schemes,
/// DeepSeek's multi-head latent attention with and without the q bottleneck, its shared experts
/// and first dense layers).
#[test]
fn tensor_parallel_ranks_give_the_unsharded_logits() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/released_configs");
    for name in [
        "qwen2_5_0_5b",
        "llama3_1_8b",
        "qwen3_0_6b",
        "phi3_mini_4k",
        "gemma3_1b",
        "mixtral_8x7b",
        "qwen3_30b_a3b",
        "deepseek_v2_lite",
        "deepseek_v3",
    ] {
        let a = DenseArch::from_hf_config_json(&fixtures.join(format!("{name}.json")))
            .unwrap()
            .tiny();
        ranks_match_the_whole_model(&a, 2, name);
    }
}

/// `f` of each of `world` ranks (threads over file collectives) of `a`'s model sharded from `w`,
/// in rank order.
fn on_ranks<T: Send + 'static>(
    w: &HashMap<String, Tensor>,
    a: &DenseArch,
    world: usize,
    tag: &str,
    f: impl Fn(&DenseLm) -> T + Send + Clone + 'static,
) -> Vec<T> {
    use crate::engine::collectives::FileCollectives;
    let dir = temp_dir(&format!("tp{world}-{tag}"));
    let ranks: Vec<_> = (0..world)
        .map(|r| {
            shard::check(a, world as i64).unwrap();
            let sliced = shard::slice(w, a, r as i64, world as i64).unwrap();
            let (a, dir, f) = (a.clone(), dir.clone(), f.clone());
            std::thread::spawn(move || {
                let comm = std::sync::Arc::new(
                    FileCollectives::new(&dir, r, world, std::time::Duration::from_secs(60))
                        .unwrap(),
                );
                let m = DenseLm::load_slices(
                    sliced,
                    &a,
                    (Device::Cpu, Kind::Float),
                    &Switches::eager(),
                    comm,
                )
                .unwrap();
                f(&m)
            })
        })
        .collect();
    ranks.into_iter().map(|h| h.join().unwrap()).collect()
}

/// `world` ranks of `a`'s seeded synthetic model each give the whole model's logits (within
/// 1e-5 of the largest) and greedy tokens.
fn ranks_match_the_whole_model(a: &DenseArch, world: usize, name: &str) {
    use crate::engine::fast_path_check;
    use crate::engine::graph_decode::StepPath;
    let w = checkpoint::synthetic(a, 5, Device::Cpu, Kind::Float).unwrap();
    let ids = prompts(&[9], a.vocab_size, 3, &[]).remove(0);
    // The same tensors for the whole model (libtorch's generator is global: other tests running
    // at once would change a second draw).
    let whole = DenseLm::load(&w, a, Device::Cpu, Kind::Float, &Switches::eager()).unwrap();
    let (want, want_tokens) = fast_path_check::greedy(&whole, StepPath::Eager, &ids, 4).unwrap();
    let greedy = {
        let ids = ids.clone();
        move |m: &DenseLm| fast_path_check::greedy(m, StepPath::Eager, &ids, 4).unwrap()
    };
    for (r, (logits, tokens)) in on_ranks(&w, a, world, name, greedy).into_iter().enumerate() {
        let err = max_diff(&logits, &want) / want.abs().max().double_value(&[]);
        assert!(
            err < 1e-5,
            "{name}: rank {r} of {world}: logits off by {err}"
        );
        assert_eq!(tokens, want_tokens, "{name}: rank {r} of {world}");
    }
}

/// Four ranks (#46 on the CPU: the splits past two): a dense and a mixture-of-experts structure
/// with 8 heads on 4 kv heads, so that each rank holds two query heads, one kv head, a quarter
/// of the MLP and of every expert, and a quarter of the vocabulary: every rank's logits and
/// greedy tokens equal the unsharded model's.
#[test]
fn four_tensor_parallel_ranks_give_the_unsharded_logits() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/released_configs");
    for name in ["llama3_1_8b", "qwen3_30b_a3b"] {
        let mut a = DenseArch::from_hf_config_json(&fixtures.join(format!("{name}.json")))
            .unwrap()
            .tiny();
        (a.num_attention_heads, a.num_key_value_heads) = (8, 4);
        a.hidden_size = 8 * 16;
        a.intermediate_size = 8 * 16 * 3;
        ranks_match_the_whole_model(&a, 4, name);
    }
}

/// A tensor-parallel rank marks each collective as the module `communication` inside the module
/// that needs it (attention's and the MLP's all-reduce, the embedding's sum, the logits' gather),
/// and the unsharded model marks none: the breakdown's communication row is exactly the
/// collectives.
#[test]
fn tensor_parallel_collectives_are_marked_as_communication() {
    use crate::test_util::ModuleRecorder;
    let a = tiny("llama3_1_8b");
    let w = checkpoint::synthetic(&a, 5, Device::Cpu, Kind::Float).unwrap();
    let seq = prompts(&[7], a.vocab_size, 3, &[]).remove(0);
    fn marks(m: &DenseLm, seq: &[i64]) -> Vec<String> {
        let rec = ModuleRecorder::default();
        let mut cache = m.new_cache(1, 16).unwrap();
        let _prompt_logits = m.prefill_text(&[seq], &mut cache, &rec).unwrap();
        let _step_logits = m
            .decode_step(&Tensor::from_slice(&[seq[1]]), &mut cache, &rec)
            .unwrap();
        let misplaced = rec.misplaced.borrow().clone();
        assert!(misplaced.is_empty(), "{misplaced:?}");
        let paths = rec.paths.borrow().clone();
        paths
    }
    let whole = DenseLm::load(&w, &a, Device::Cpu, Kind::Float, &Switches::eager()).unwrap();
    assert!(!marks(&whole, &seq)
        .iter()
        .any(|p| p.contains("communication")));
    let per_rank = on_ranks(&w, &a, 2, "marks", move |m| marks(m, &seq));
    for paths in per_rank {
        let comm: Vec<&String> = paths
            .iter()
            .filter(|p| p.contains("communication"))
            .collect();
        for want in [
            "module:embed.communication",
            "module:layer[0].attention.communication",
            "module:layer[0].mlp.communication",
            "module:lm_head.communication",
        ] {
            assert!(comm.iter().any(|p| *p == want), "{want} in {comm:?}");
        }
        // Two passes (prefill, decode step): per pass one sum per embedding, two per layer and
        // one gather.
        let per_pass = 1 + 2 * a.num_hidden_layers as usize + 1;
        assert_eq!(comm.len(), 2 * per_pass, "{comm:?}");
    }
}

#[test]
fn tensor_parallel_refuses_what_it_cannot_split() {
    let a = tiny("qwen3_0_6b");
    let e = shard::check(&a, 3).unwrap_err().to_string();
    assert!(
        e.contains("tensor_parallel=3 does not divide num_attention_heads=4"),
        "{e}"
    );
    // Latent attention splits by its heads like the others.
    let lite = tiny("deepseek_v2_lite");
    assert!(shard::check(&lite, 2).is_ok());
    let e = shard::check(&lite, 3).unwrap_err().to_string();
    assert!(e.contains("does not divide num_attention_heads"), "{e}");
}

/// A rank's synthetic weights are cut as they are drawn: every tensor is drawn whole, in the
/// checkpoint's order and at its full shape (so the generator runs exactly as for `synthetic`,
/// which is the same function keeping everything), and the rank keeps its slice of it. (Two
/// draws are not compared: libtorch's generator is global, and tests running at once use it.)
#[test]
fn synthetic_slices_drawn_per_rank_are_cut_from_whole_tensors_in_order() {
    use std::cell::RefCell;
    let a = tiny("qwen2_5_0_5b");
    let seen: RefCell<Vec<(String, Tensor)>> = RefCell::new(Vec::new());
    let drawn = checkpoint::synthetic_kept(&a, 9, (Device::Cpu, Kind::Float), |n, t| {
        seen.borrow_mut().push((n.to_string(), t.shallow_clone()));
        shard::slice_one(n, &t, &a, (1, 2))
    })
    .unwrap();
    let seen = seen.into_inner();
    let expected = checkpoint::expected_tensors(&a);
    assert_eq!(seen.len(), expected.len());
    for ((name, whole), spec) in seen.iter().zip(&expected) {
        assert_eq!(
            (name, &whole.size()),
            (&spec.name, &spec.shape),
            "draw order and shape"
        );
        let want = shard::slice_one(name, whole, &a, (1, 2)).unwrap();
        assert!(drawn[name].equal(&want), "{name}");
    }
    // Split tensors are half as large: the rank holds less than the whole model.
    let q = "model.layers.0.self_attn.q_proj.weight";
    assert_eq!(drawn[q].size()[0] * 2, a.num_attention_heads * a.head_dim);
}
