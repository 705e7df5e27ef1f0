//! End to end on the CPU: `llmprof stage1` with the tiny model writes every artifact, and
//! metrics.json deserialises into the documented schema (`RunReport`, unknown fields rejected)
//! with the numbers the run must have.
use crate::support::{repo_root, run_in, scratch, stderr};
use llmprof::report::metrics_modules::TimeSource;
use llmprof::report::{RunReport, SCHEMA, SYNTHETIC_NOTE};

#[test]
fn cpu_stage1_writes_every_artifact_and_a_valid_metrics_json() {
    let dir = scratch("stage1-cpu");
    let conf = repo_root().join("conf").display().to_string();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "stage1",
            "model=deepseek_ocr_tiny",
            "dataset.sampling.num_samples_per_epoch=2",
            "infer.max_new_tokens=4",
            "infer.ignore_eos=true",
            "runtime.repeats=2",
            "runtime.warmup=0",
            "pipeline.torch_profiler.max_decode_steps=2",
            "hydra.run.dir=run",
        ],
    );
    assert!(out.status.success(), "stage1 failed:\n{}", stderr(&out));
    let run = dir.join("run");
    let mut files = crate::support::STAGE1_FILES.to_vec();
    files.extend(["report.html", ".hydra/config.yaml"]);
    crate::support::assert_non_empty_files(&run, &files, "stage1");
    let text = std::fs::read_to_string(run.join("metrics.json")).unwrap();
    let m: RunReport = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("metrics.json does not match the schema: {e}"));
    assert_eq!(m.schema, SCHEMA);
    assert_eq!(m.setup.model, "deepseek_ocr_tiny");
    assert_eq!(m.setup.device, "Cpu");
    assert!(m.synthetic_weights && m.notes.iter().any(|n| n == SYNTHETIC_NOTE));
    // 2 pages × 2 repeats, batch 1: every stage has 4 samples, decode steps 4 × 3, less the cold
    // first repeats the report left out (flagged in `requests`).
    let cold = m.requests.iter().filter(|r| r.cold).count();
    assert!(cold <= 2, "at most one cold first repeat per page");
    for stage in [
        "sam",
        "clip",
        "projector",
        "vision",
        "prefill",
        "decode",
        "e2e",
    ] {
        let s = m
            .stages
            .get(stage)
            .unwrap_or_else(|| panic!("stage {stage} missing"));
        assert_eq!(s.n, 4 - cold, "{stage}");
        assert!(
            s.min_ms <= s.p50_ms && s.p50_ms <= s.p90_ms && s.p90_ms <= s.max_ms,
            "{stage}: {s:?}"
        );
    }
    assert_eq!(m.stages["decode_step"].n, (4 - cold) * 3);
    // The per-step samples behind it, per request (what `llmprof compare` tests on).
    for r in &m.requests {
        assert_eq!(r.decode_step_ms.len(), r.decode_steps, "{}", r.input);
    }
    assert_eq!(m.requests.len(), 4);
    assert_eq!(m.throughput.output_tokens_total, (4 - cold as u64) * 4);
    assert!(!m.nvml.available && m.nvml.note.as_deref().is_some_and(|n| !n.is_empty()));
    assert!(
        m.peaks.is_none() && m.utilisation.mfu.is_empty(),
        "no GPU: no peaks, no MFU"
    );
    let k = m.kineto.expect("the Kineto pass ran");
    assert_eq!(k.decode_steps_profiled, 2);
    assert!(!k.top_operators.is_empty());
    let f = m.flops.expect("analytic FLOPs");
    assert!(f.prefill_gflop > f.vision_gflop && f.vision_gflop > 0.0);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("NVML unavailable") && report.contains("n/a"),
        "{report}"
    );
    // Kineto's FLOPs are set against each module's, not against the whole pass (#41 item 2).
    assert!(
        report.contains("Kineto's FLOP count ÷ the analytic FLOPs, per module: ")
            && !report.contains("Kineto matmul FLOPs ÷ analytic"),
        "{report}"
    );
    // The module breakdown (#41 item 2), from host time without a GPU: every module the decoder
    // marks has time in the decode step, and the step's rows add up to its scopes' own time.
    let modules = m.modules.as_ref().expect("metrics.json modules");
    assert_eq!(modules.source, TimeSource::Host);
    let step = &modules.stages["decode_step"];
    let kinds: Vec<&str> = step.kinds.iter().map(|k| k.module.as_str()).collect();
    for module in [
        "embed",
        "layer.attention.input_norm",
        "layer.attention.qkv",
        "layer.attention.rope_kv",
        "layer.attention.core",
        "layer.attention.o_proj",
        "layer.mlp.gate_up",
        "layer.moe.router",
        "layer.moe.routing",
        "layer.moe.experts_gate_up",
        "layer.moe.experts_act",
        "layer.moe.experts_down",
        "layer.moe.combine",
        "layer.moe.shared_experts",
        "final_norm",
        "lm_head",
    ] {
        let k = step.kinds.iter().find(|k| k.module == module);
        assert!(
            k.is_some_and(|k| k.ms_per_run > 0.0),
            "{module} missing: {kinds:?}"
        );
    }
    assert_eq!(step.runs, 2);
    // Kineto's own FLOP count of the projections equals their analytic FLOPs (eager on the CPU:
    // every linear is an operator Kineto has a formula for).
    for module in [
        "layer.attention.qkv",
        "layer.attention.o_proj",
        "lm_head",
        "layer.moe.experts_gate_up",
    ] {
        let k = step.kinds.iter().find(|k| k.module == module).unwrap();
        let r = k
            .kineto_flops_ratio
            .unwrap_or_else(|| panic!("{module}: {:?}", k.kineto_flops_na));
        assert!((r - 1.0).abs() < 1e-6, "{module}: Kineto ÷ analytic = {r}");
    }
    let sum: f64 = step.kinds.iter().map(|k| k.ms_per_run).sum();
    assert!(
        (sum - step.span_ms).abs() < 1e-6 * step.span_ms,
        "{sum} vs {}",
        step.span_ms
    );
    assert!(step.timed_ms.is_some() && step.residual_pct.is_some());
    assert!(modules.stages["decode"]
        .kinds
        .iter()
        .any(|k| k.module == "sampling"));
    // The vision encoders mark their modules too: SAM's and CLIP's blocks (each block's
    // attention and feed-forward halves, every layer), patch embeddings, SAM's neck and the
    // projector's linear; almost none of those stages' operators run outside a module. (Counted
    // in operators: a CPU run's time outside its modules also holds the thread's waits between
    // them, which on a loaded machine reached 42 % of CLIP's once.)
    for (stage, want) in [
        (
            "sam",
            &["patch_embed", "block.attn", "block.ffn", "neck"][..],
        ),
        ("clip", &["patch_embed", "block.attn", "block.ffn"][..]),
        ("projector", &["projection"][..]),
    ] {
        let st = &modules.stages[stage];
        for module in want {
            assert!(
                st.kinds
                    .iter()
                    .any(|k| k.module == *module && k.ms_per_run > 0.0),
                "{stage}: {module} missing: {:?}",
                st.kinds.iter().map(|k| &k.module).collect::<Vec<_>>()
            );
        }
        let ops = |outside: bool| -> f64 {
            st.kinds
                .iter()
                .filter(|k| (k.module == "(outside modules)") == outside)
                .map(|k| k.kernels_per_run)
                .sum()
        };
        let (outside, inside) = (ops(true), ops(false));
        assert!(inside > 0.0, "{stage}: no operators in its modules");
        if stage != "projector" {
            let share = outside / (outside + inside);
            assert!(
                share < 0.05,
                "{stage}: {outside} of {} operators outside modules",
                outside + inside
            );
        }
    }
    let sam_layers = modules.stages["sam"].layers.len();
    assert!(sam_layers >= 2, "SAM's blocks by index: {sam_layers}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("id=\"chart-modules\"") && html.contains("\"type\":\"icicle\""));
    let md = std::fs::read_to_string(run.join("modules.md")).unwrap();
    assert!(
        md.starts_with("# Host time by module") && md.contains("## decode_step: 2 run(s)"),
        "{md}"
    );
    let inputs = std::fs::read_to_string(run.join("inputs.yaml")).unwrap();
    for key in [
        "path:",
        "bytes:",
        "width:",
        "height:",
        "mode:",
        "crop_grid:",
        "image_tokens:",
        "prompt_tokens:",
    ] {
        assert!(inputs.contains(key), "inputs.yaml lacks {key}:\n{inputs}");
    }
    // trace.json reads as a PyTorch trace does (#41 item 5): a rank, and one ProfilerStep#N per
    // generated token (the prefill, then the 2 profiled decode steps), each holding its work.
    let trace = run.join("trace.json");
    let out = run_in(
        &dir,
        &[
            "analyze",
            "trace",
            trace.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let a: serde_json::Value = serde_json::from_str(&crate::support::stdout(&out)).unwrap();
    assert_eq!(a["source"]["rank"], 0);
    assert_eq!(a["source"]["world_size"], 1);
    let steps = a["iterations"].as_array().expect("iterations");
    let numbers: Vec<u64> = steps.iter().map(|s| s["step"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [0, 1, 2], "{a:#}");
    let regions: Vec<&str> = a["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["region"].as_str().unwrap())
        .collect();
    assert!(
        !regions.iter().any(|r| r.starts_with("ProfilerStep")),
        "{regions:?}"
    );
    // The front end built every report from measurements.json, so `llmprof report` builds the
    // same files again, byte for byte, without the worker (#39 item 3).
    let rebuilt = [
        "metrics.json",
        "report.md",
        "stakeholder_summary.md",
        "assumptions.md",
        "report.html",
    ];
    let before: Vec<Vec<u8>> = rebuilt
        .iter()
        .map(|f| std::fs::read(run.join(f)).unwrap())
        .collect();
    for f in rebuilt {
        std::fs::remove_file(run.join(f)).unwrap();
    }
    // The directory named as the run named it: report.html shows that path.
    let out = run_in(&dir, &["report", "run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (f, bytes) in rebuilt.iter().zip(before) {
        let again = std::fs::read(run.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        // report.html embeds nothing of the moment it was written, so it too must match.
        assert!(
            again == bytes,
            "{f} differs when rebuilt from measurements.json"
        );
    }
}
