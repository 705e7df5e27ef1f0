//! `llmprof infer` end to end on the CPU (tiny synthetic model): predictions.jsonl, markdown,
//! box images and README.md in the run directory, and status.json succeeded.
use crate::support::{repo_root, run_in, scratch, stderr};
use std::path::Path;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn infer_writes_predictions_markdown_and_box_images() {
    let dir = scratch("infer");
    let conf = repo_root().join("conf").display().to_string();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "infer",
            "model=deepseek_ocr_tiny",
            "dataset.sampling.num_samples_per_epoch=2",
            "infer.max_new_tokens=8",
            "hydra.run.dir=out/run",
        ],
    );
    let run = dir.join("out/run");
    let log = std::fs::read_to_string(run.join("llmprof.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "infer failed\n{}\n{log}",
        stderr(&out)
    );
    let status: serde_json::Value =
        serde_json::from_str(&read(&run.join("status.json"))).expect("status.json is JSON");
    assert_eq!(status["state"], "succeeded", "{status}");

    let lines: Vec<String> = read(&run.join("predictions.jsonl"))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        let p: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for key in [
            "image",
            "prompt",
            "prompt_tokens",
            "output_tokens",
            "text",
            "elements",
            "synthetic_weights",
            "hit_eos",
        ] {
            assert!(p.get(key).is_some(), "{key} missing in {line}");
        }
        assert_eq!(p["synthetic_weights"], true, "{line}");
        assert!(p["elements"].is_array() && p["text"].is_string(), "{line}");
        assert!(p["prompt_tokens"].as_u64().is_some_and(|n| n > 0), "{line}");
        assert!(
            p["output_tokens"].as_u64().is_some_and(|n| n <= 8),
            "{line}"
        );
        let image = p["image"].as_str().expect("image is a string");
        let name = Path::new(image)
            .file_stem()
            .expect("has a stem")
            .to_string_lossy()
            .to_string();
        assert!(
            run.join(format!("{name}.mmd")).is_file(),
            "{name}.mmd missing"
        );
        let png = run.join(format!("{name}.boxes.png"));
        let drawn = image::open(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        let original = image::open(image).expect("the input page opens");
        assert_eq!(
            (drawn.width(), drawn.height()),
            (original.width(), original.height()),
            "{name}"
        );
    }
    let readme = read(&run.join("README.md"));
    assert!(
        readme.contains("synthetic weights: timings valid, text meaningless"),
        "{readme}"
    );
    assert!(readme.contains("noise"), "{readme}");
    // The end of the run writes report.html: one predictions row per input, its files linked.
    let page = read(&run.join("report.html"));
    assert!(
        page.contains("<section id=\"predictions\">"),
        "no predictions section"
    );
    assert_eq!(
        page.matches("<tr data-search=").count(),
        lines.len(),
        "one row per prediction"
    );
    assert!(page.contains(".boxes.png\">boxes</a>"), "box images linked");
}

#[test]
fn a_run_on_a_dataset_variant_records_it_in_inputs_yaml() {
    let dir = scratch("infer-variant");
    let dst = dir.join("datasets/samples");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(repo_root().join("datasets/samples"))
        .unwrap()
        .flatten()
    {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
    let conf = repo_root().join("conf").display().to_string();
    let made = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "dataset",
            "make-variant",
            "samples",
            "--variant",
            "two",
            "--num-samples",
            "2",
            "--seed",
            "3",
        ],
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "infer",
            "model=deepseek_ocr_tiny",
            "dataset.variant=two",
            "infer.max_new_tokens=2",
            "hydra.run.dir=run",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let inputs = read(&dir.join("run/inputs.yaml"));
    let meta = llmprof::dataset::variant::VariantMetadata::read(&dst.join("two")).unwrap();
    let items = meta.selection.items;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        inputs.contains("variant: two")
            && inputs.contains("variant_metadata:")
            && inputs.contains("parent: samples"),
        "{inputs}"
    );
    for item in items {
        assert!(
            inputs.contains(&format!("two/{item}")),
            "inputs.yaml does not read {item}:\n{inputs}"
        );
    }
}
