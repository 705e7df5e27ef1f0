//! DeepSeek-OCR-2 end to end on the CPU: `model=deepseek_ocr2` runs as its tiny fallback on the
//! sample pages, with the query encoder's region, DeepSeek-OCR-2's image-token counts and every
//! artifact; a preprocessing without learned queries is refused before any run directory exists.
use crate::support::{run_with_repo_conf, scratch, short_stage1, stderr};

#[test]
fn deepseek_ocr2_runs_stage1_as_its_tiny_fallback() {
    let (run, m) = short_stage1(
        "ocr2",
        &[
            "model=deepseek_ocr2",
            "dataset.sampling.num_samples_per_epoch=2",
            "infer.max_new_tokens=4",
        ],
    );
    assert_eq!(m.setup.model, "deepseek_ocr2_tiny");
    assert!(
        m.notes.iter().any(|n| n.contains("CPU fallback")),
        "{:?}",
        m.notes
    );
    for stage in [
        "vision",
        "sam",
        "query_encoder",
        "projector",
        "prefill",
        "decode_step",
    ] {
        assert!(m.stages.contains_key(stage), "{stage} missing");
    }
    assert!(!m.stages.contains_key("clip"), "DeepSeek-OCR-2 has no CLIP");
    // The fallback runs DeepSeek-OCR-2's views scaled to the tiny SAM (1024 → 128 px global,
    // 768 → 64 px tiles) and says so. The sample pages are 800×1100 and 1100×800: 2×3 and 3×2
    // grids, so each has the global view's queries plus six tiles' (the counts at full size,
    // 257 + 6·144 = 1121, are prompt.rs's unit test against transformers' table).
    use llmprof::model::deepseek_ocr::arch_ocr2::TokenLayout;
    use llmprof::model::deepseek_ocr::prompt::image_token_count;
    use llmprof::model::deepseek_ocr::views::{PreprocessConfig, TileGrid};
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("128 px global, 64 px tiles")),
        "{:?}",
        m.notes
    );
    let views = PreprocessConfig::deepseek_ocr2().scaled(1024, 128);
    let want = image_token_count(TokenLayout::Queries, &views, TileGrid { cols: 2, rows: 3 });
    assert!(
        want > 1 + 6,
        "global queries and one per tile at least: {want}"
    );
    let inputs = std::fs::read_to_string(run.join("inputs.yaml")).unwrap();
    assert_eq!(
        inputs.matches(&format!("image_tokens: {want}\n")).count(),
        2,
        "{inputs}"
    );
    for r in &m.requests {
        assert!(r.ttft_ms.is_some() && r.tpot_ms.is_some(), "{r:?}");
    }
    let f = m.flops.expect("analytic FLOPs");
    assert!(f.vision_gflop > 0.0, "{f:?}");
    let stat = std::fs::read_to_string(run.join("static_compute.md")).unwrap();
    assert!(stat.contains("| query_encoder |"), "{stat}");
    for f in [
        "report.html",
        "kernels.md",
        "operators.md",
        "static_compute.json",
        "trace.json",
    ] {
        assert!(run.join(f).is_file(), "{f} missing");
    }
}

#[test]
fn a_view_size_without_queries_is_refused_before_the_run() {
    let dir = scratch("ocr2-bad-view");
    let out = run_with_repo_conf(
        &dir,
        &[
            "stage1",
            "model=deepseek_ocr2",
            "model.preprocess.image_size=640",
            "hydra.run.dir=run",
        ],
    );
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("learned queries only for views of [768, 1024] px") && e.contains("fix:"),
        "{e}"
    );
    assert!(
        !dir.join("run").exists(),
        "no run directory for a refused spec"
    );
}
