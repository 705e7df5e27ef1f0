use super::*;
use crate::engine::fast_path_check::{check, prompts, variants};
use crate::test_util::temp_dir;
use llmprof::region::NoopObserver;

pub(super) fn tiny(name: &str) -> DenseArch {
    presets::arch(&format!("{name}_tiny")).unwrap().unwrap()
}

fn build(a: &DenseArch, seed: i64) -> DenseLm {
    let w = checkpoint::synthetic(a, seed, Device::Cpu, Kind::Float).unwrap();
    DenseLm::load(&w, a, Device::Cpu, Kind::Float, &Switches::eager()).unwrap()
}

pub(super) fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[test]
fn tiny_presets_are_the_tiny_of_the_real_ones() {
    for name in presets::released() {
        let real = presets::arch(name).unwrap().unwrap();
        assert_eq!(real.tiny(), tiny(name), "{name}");
    }
}

#[test]
fn cached_decode_equals_full_prefill_and_batches_equal_rows() {
    // Decode steps attend with the GQA head fold, prefill with repeated K/V: both must agree.
    for name in presets::released() {
        let a = tiny(name);
        let m = build(&a, 3);
        let obs = NoopObserver;
        let seq = &prompts(&[12], a.vocab_size, 2, &[])[0];
        let mut c1 = m.new_cache(1, 16).unwrap();
        let full = m.prefill_text(&[seq], &mut c1, &obs).unwrap();
        let mut c2 = m.new_cache(1, 16).unwrap();
        let mut l = m.prefill_text(&[&seq[..8]], &mut c2, &obs).unwrap();
        for &tok in &seq[8..] {
            l = m
                .decode_step(&Tensor::from_slice(&[tok]), &mut c2, &obs)
                .unwrap();
        }
        assert!(
            max_diff(&full, &l) < 1e-4,
            "{name}: {}",
            max_diff(&full, &l)
        );
        let mut c3 = m.new_cache(1, 16).unwrap();
        let shorter = m.prefill_text(&[&seq[..11]], &mut c3, &obs).unwrap();
        assert!(max_diff(&full, &shorter) > 1e-3, "{name}");
        // A left-padded batch gives each row's own logits.
        let b = &prompts(&[5], a.vocab_size, 9, &[])[0];
        let mut cb = m.new_cache(2, 16).unwrap();
        let lb = m.prefill_text(&[seq, b], &mut cb, &obs).unwrap();
        let mut cs = m.new_cache(1, 16).unwrap();
        let ls = m.prefill_text(&[b], &mut cs, &obs).unwrap();
        assert!(max_diff(&lb.get(1), &ls.get(0)) < 1e-4, "{name}");
        assert!(max_diff(&lb.get(0), &full.get(0)) < 1e-4, "{name}");
    }
}

#[test]
fn llama3_rope_scaling_changes_only_low_frequencies() {
    use crate::models::layers::attention::Rope;
    let a = tiny("llama3_1_8b");
    let s = a.rope_scaling.clone().unwrap();
    let plain = Rope::new(a.head_dim, a.rope_theta, Device::Cpu).unwrap();
    let scaled = Rope::with_scaling(a.head_dim, a.rope_theta, Some(&s), Device::Cpu).unwrap();
    let pos = Tensor::from_slice(&[1i64]).view([1, 1]);
    let (c0, _) = plain.cos_sin(&pos, Kind::Double).unwrap();
    let (c1, _) = scaled.cos_sin(&pos, Kind::Double).unwrap();
    let (c0, c1) = (
        Vec::<f64>::try_from(&c0.view([-1])).unwrap(),
        Vec::<f64>::try_from(&c1.view([-1])).unwrap(),
    );
    // inv_freq_i = θ^(−2i/d): i = 0 has wavelength 2π < 64/4 (kept); the last one's wavelength
    // 2π·θ^((d−2)/d) is far above 64/1 (divided by 8): cos(f) → cos(f/8).
    let d = a.head_dim as usize;
    assert!((c0[0] - c1[0]).abs() < 1e-12);
    let f_last = a.rope_theta.powf(-((d - 2) as f64) / d as f64);
    assert!(
        (c1[d / 2 - 1] - (f_last / s.factor).cos()).abs() < 1e-6,
        "{c1:?}"
    );
    assert!((c0[d / 2 - 1] - f_last.cos()).abs() < 1e-6);
}

#[test]
fn every_fast_path_switch_matches_eager_for_each_preset() {
    for name in ["qwen2_5_0_5b", "llama3_1_8b"] {
        let a = tiny(name);
        let p = prompts(&[21, 7], a.vocab_size, 1, &[]);
        let subject = fast_path::Subject {
            arch: a,
            device: Device::Cpu,
            seed: 5,
        };
        let checks = check(&subject, &p, 24, 8).unwrap();
        let names: Vec<String> = variants::<llmprof::model::dense::DenseOptim>(8)
            .into_iter()
            .map(|(n, ..)| n)
            .collect();
        // A dense model has no experts: the MoE switches' variants are not its.
        assert!(!names.iter().any(|n| n.contains("moe")), "{names:?}");
        assert_eq!(checks.len(), 2 * names.len());
        assert!(!checks.iter().any(|c| c.variant == "grouped_moe"));
        for c in &checks {
            assert!(c.passed, "{name}: {c:?}");
        }
    }
}

#[test]
fn sharded_checkpoint_loads_and_bad_ones_name_the_tensor() {
    let a = tiny("qwen2_5_7b");
    let w = checkpoint::synthetic(&a, 4, Device::Cpu, Kind::Float).unwrap();
    let dir = temp_dir("dense-sharded");
    let mut names: Vec<&String> = w.keys().collect();
    names.sort();
    let (x, y) = names.split_at(names.len() / 2);
    let mut map = serde_json::Map::new();
    for (file, part) in [
        ("model-00001-of-00002.safetensors", x),
        ("model-00002-of-00002.safetensors", y),
    ] {
        let named: Vec<(&str, &Tensor)> = part.iter().map(|n| (n.as_str(), &w[*n])).collect();
        Tensor::write_safetensors(&named, dir.join(file)).unwrap();
        for n in part {
            map.insert(n.to_string(), file.into());
        }
    }
    let index = serde_json::json!({"metadata": {}, "weight_map": map});
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    let back = checkpoint::load(&dir, &a, Device::Cpu, Kind::Float).unwrap();
    assert_eq!(back.len(), w.len());
    for (n, t) in &w {
        assert!(back[n].equal(t), "{n}");
    }
    // The loaded model computes what the synthetic one does.
    let obs = NoopObserver;
    let p = &prompts(&[6], a.vocab_size, 3, &[])[0];
    let run = |t: &HashMap<String, Tensor>| {
        let m = DenseLm::load(t, &a, Device::Cpu, Kind::Float, &Switches::eager()).unwrap();
        let mut c = m.new_cache(1, 8).unwrap();
        m.prefill_text(&[p], &mut c, &obs).unwrap()
    };
    assert!(run(&back).equal(&run(&w)));

    // One tensor missing, one with a wrong shape: both named.
    let bad = temp_dir("dense-bad");
    let mut named: Vec<(String, Tensor)> = w
        .iter()
        .filter(|(n, _)| n.as_str() != "model.layers.1.self_attn.k_proj.bias")
        .map(|(n, t)| (n.clone(), t.shallow_clone()))
        .collect();
    for (n, t) in named.iter_mut() {
        if n == "model.layers.0.mlp.up_proj.weight" {
            *t = Tensor::zeros([7, 128], (Kind::Float, Device::Cpu));
        }
    }
    Tensor::write_safetensors(&named, bad.join("model.safetensors")).unwrap();
    let err = format!(
        "{:#}",
        checkpoint::load(&bad, &a, Device::Cpu, Kind::Float).unwrap_err()
    );
    assert!(
        err.contains("1 missing") && err.contains("model.layers.1.self_attn.k_proj.bias"),
        "{err}"
    );
    assert!(
        err.contains("model.layers.0.mlp.up_proj.weight: file [7, 128], expected [384, 128]"),
        "{err}"
    );
}

/// The module paths one pass of `layers` layers marks, in order (each layer as layer 0's, see
/// [`ModuleRecorder::leaves_of_layer_0_and_rest`]).
fn expected_decoder_paths() -> Vec<String> {
    let mut v = vec!["module:embed".to_string(), "module:embed".to_string()];
    for p in [
        "",
        ".attention",
        ".attention.input_norm",
        ".attention.qkv",
        ".attention.rope_kv",
        ".attention.core",
        ".attention.o_proj",
        ".mlp",
        ".mlp.post_norm",
        ".mlp.gate_up",
        ".mlp.act",
        ".mlp.down",
    ] {
        v.push(format!("module:layer[0]{p}"));
    }
    v.push("module:final_norm".into());
    v.push("module:lm_head".into());
    v
}

#[test]
fn decode_step_marks_every_layer_module_in_order() {
    use crate::test_util::ModuleRecorder;
    let a = tiny("llama3_1_8b");
    let eager = build(&a, 4);
    // The fixed-shape step needs the static KV cache of the fast presets.
    let w = checkpoint::synthetic(&a, 4, Device::Cpu, Kind::Float).unwrap();
    let fast = DenseLm::load(&w, &a, Device::Cpu, Kind::Float, &Switches::fast()).unwrap();
    let seq = &prompts(&[6], a.vocab_size, 2, &[])[0];
    let tok = Tensor::from_slice(&[seq[0]]);
    for pass in ["prefill", "decode_step", "decode_step_device"] {
        let m = if pass == "decode_step_device" {
            &fast
        } else {
            &eager
        };
        let rec = ModuleRecorder::default();
        let mut cache = m.new_cache(1, 16).unwrap();
        if pass != "prefill" {
            let _ = m
                .prefill_text(&[&seq[..5]], &mut cache, &NoopObserver)
                .unwrap();
        }
        match pass {
            "prefill" => m.prefill_text(&[seq], &mut cache, &rec).map(drop),
            "decode_step" => m.decode_step(&tok, &mut cache, &rec).map(drop),
            _ => m.decode_step_device(&tok, &cache, 16, &rec).map(drop),
        }
        .unwrap();
        assert!(
            rec.misplaced.borrow().is_empty(),
            "{pass}: {:?}",
            rec.misplaced.borrow()
        );
        assert_eq!(
            rec.leaves_of_layer_0_and_rest(),
            expected_decoder_paths(),
            "{pass}"
        );
        // Every layer, in order, with the same modules as layer 0.
        let paths = rec.paths.borrow();
        for i in 0..a.num_hidden_layers {
            let of_i = paths
                .iter()
                .filter(|p| p.starts_with(&format!("module:layer[{i}]")));
            assert_eq!(of_i.count(), 12, "{pass}: layer {i}");
        }
        let first = |i: i64| {
            paths
                .iter()
                .position(|p| *p == format!("module:layer[{i}]"))
        };
        assert!(
            (1..a.num_hidden_layers).all(|i| first(i) > first(i - 1)),
            "{pass}"
        );
        // The tree the family declares has exactly the modules marked (a model without experts
        // marks none of the mixture's).
        let mut declared: Vec<&str> = llmprof::model::dense::REGIONS
            .modules()
            .filter(|m| !llmprof::region::ENGINE_MODULES.contains(m))
            .filter(|m| !llmprof::model::module_work::MOE_MODULES.contains(m))
            .map(|m| m.name())
            .collect();
        let mut marked: Vec<&str> = paths
            .iter()
            .map(|p| p.rsplit('.').next().unwrap().trim_start_matches("module:"))
            .map(|n| n.split('[').next().unwrap())
            .collect();
        declared.sort_unstable();
        marked.sort_unstable();
        marked.dedup();
        assert_eq!(marked, declared, "{pass}");
    }
}

/// Tensors handed over to the model (`DenseLm::load_handed_over`, what a run does) build the
/// same model as borrowed ones, and the weights the model copies leave the set as they are
/// taken: for a structure with experts, fused q/k/v and gate/up, one with packed projections,
/// one with biases and a tied head, and DeepSeek-V3's latent attention and shared experts. Every expert and projection weight has left; the
/// embedding (read twice when tied) and the norms stay.
#[test]
fn handed_over_tensors_build_the_same_model_and_leave_the_set_as_taken() {
    use crate::checkpoint::tensors::WeightPath;
    use crate::engine::fast_path_check;
    use crate::engine::graph_decode::StepPath;
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/released_configs");
    for name in [
        "mixtral_8x7b",
        "phi3_mini_4k",
        "qwen2_5_0_5b",
        "deepseek_v3",
    ] {
        let a = DenseArch::from_hf_config_json(&fixtures.join(format!("{name}.json")))
            .unwrap()
            .tiny();
        let w = checkpoint::synthetic(&a, 5, Device::Cpu, Kind::Float).unwrap();
        let ids = prompts(&[9], a.vocab_size, 3, &[]).remove(0);
        let shared = DenseLm::load(&w, &a, Device::Cpu, Kind::Float, &Switches::fast()).unwrap();
        let copy = || -> HashMap<String, Tensor> {
            w.iter()
                .map(|(k, t)| (k.clone(), t.shallow_clone()))
                .collect()
        };
        let handed =
            DenseLm::load_handed_over(copy(), &a, Device::Cpu, Kind::Float, &Switches::fast())
                .unwrap();
        let (want, want_tokens) =
            fast_path_check::greedy(&shared, StepPath::Eager, &ids, 4).unwrap();
        let (got, tokens) = fast_path_check::greedy(&handed, StepPath::Eager, &ids, 4).unwrap();
        assert!(got.equal(&want), "{name}: logits differ");
        assert_eq!(tokens, want_tokens, "{name}");
        // What is left of a handed-over set once the model is built.
        let set = std::cell::RefCell::new(copy());
        let vs = WeightPath::handed_over(&set, Device::Cpu, Kind::Float);
        let _model = DenseLm::build(&vs, &a, &Switches::fast()).unwrap();
        let left: Vec<String> = set.borrow().keys().cloned().collect();
        let projections = ["experts.", "_proj."];
        assert!(
            !left
                .iter()
                .any(|k| projections.iter().any(|p| k.contains(p))),
            "{name}: {left:?}"
        );
        assert!(
            left.iter().any(|k| k == "model.embed_tokens.weight")
                && left.iter().any(|k| k == "model.norm.weight"),
            "{name}: {left:?}"
        );
        // A weight taken twice is named.
        let err = vs.take("model.layers.0.mlp.down_proj.weight").unwrap_err();
        assert!(err.to_string().contains("took it twice"), "{err}");
    }
}

#[test]
fn module_marks_change_no_logit() {
    use crate::test_util::ModuleRecorder;
    let a = tiny("qwen2_5_0_5b");
    let m = build(&a, 5);
    let seq = &prompts(&[7], a.vocab_size, 3, &[])[0];
    let run = |obs: &dyn llmprof::region::RegionObserver| {
        let mut cache = m.new_cache(1, 16).unwrap();
        let p = m.prefill_text(&[seq], &mut cache, obs).unwrap();
        let d = m
            .decode_step(&Tensor::from_slice(&[seq[1]]), &mut cache, obs)
            .unwrap();
        (p, d)
    };
    let (p0, d0) = run(&NoopObserver);
    let (p1, d1) = run(&ModuleRecorder::default());
    assert!(p0.equal(&p1) && d0.equal(&d1));
}
