//! The writers of a run directory's files (their names are defined once, in `run_files`): the
//! worker's (measurements.json, env.json, inputs.yaml, nvml.csv, static analysis) and the front
//! end's reports built from them (metrics.json, report.md, the stakeholder summary,
//! assumptions.md).
use super::measurements::Stage1Measurements;
use super::metrics::{RunReport, SYNTHETIC_NOTE};
use crate::config::{Map, Node};
use crate::measure::nvml::NvmlTrace;
use crate::model::{RequestInfo, StaticAnalysis};
use crate::spec::RunSpec;
use anyhow::{Context, Result};
use std::path::Path;

pub use crate::run_files::*;

/// Writes `text` to `run_dir/name`, naming the file in the error.
pub fn write(run_dir: &Path, name: &str, text: &str) -> Result<()> {
    let p = run_dir.join(name);
    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
}

/// `value` as pretty JSON with a final newline.
pub fn write_json(run_dir: &Path, name: &str, value: &impl serde::Serialize) -> Result<()> {
    let text =
        serde_json::to_string_pretty(value).with_context(|| format!("serialising {name}"))?;
    write(run_dir, name, &(text + "\n"))
}

/// What the worker writes at the end of stage 1, besides the Kineto tables and the raw outputs:
/// measurements.json (every report's input), env.json and, when given, the static analysis.
pub struct Stage1Files<'a> {
    pub measurements: &'a Stage1Measurements,
    /// What the worker knows of its own runtime (libtorch, CUDA): merged into env.json.
    pub runtime_env: serde_json::Value,
    pub static_analysis: Option<&'a StaticAnalysis>,
}

/// The worker's end of stage 1: the measurements and the environment they were taken in.
pub fn write_stage1_measurements(run_dir: &Path, f: &Stage1Files) -> Result<()> {
    write(run_dir, MEASUREMENTS_JSON, &f.measurements.to_json())?;
    write_json(run_dir, ENV_JSON, &env_json(f.measurements, &f.runtime_env))?;
    if let Some(s) = f.static_analysis {
        write_json(run_dir, STATIC_JSON, &s.json)?;
        write(run_dir, STATIC_MD, &s.markdown)?;
    }
    Ok(())
}

/// The reports built from a run's measurements (the front end, after the run and in
/// `llmprof report`): metrics.json, report.md, the stakeholder summary and assumptions.md.
pub fn write_stage1_reports(
    run_dir: &Path,
    spec: &RunSpec,
    m: &Stage1Measurements,
    report: &RunReport,
) -> Result<()> {
    write_json(run_dir, METRICS_JSON, report)?;
    write_report_renderings(run_dir, report)?;
    if let Some(modules) = &report.modules {
        write(run_dir, MODULES_MD, &super::modules_md::render(modules))?;
    }
    write(run_dir, ASSUMPTIONS_MD, &assumptions_md(spec, m))
}

/// report.md and the stakeholder summary of `report`.
pub fn write_report_renderings(run_dir: &Path, report: &RunReport) -> Result<()> {
    write(run_dir, REPORT_MD, &super::markdown::render(report))?;
    write(run_dir, SUMMARY_MD, &super::summary::render(report))
}

fn env_json(m: &Stage1Measurements, runtime: &serde_json::Value) -> serde_json::Value {
    let mut env = serde_json::json!({
        "llmprof_version": crate::VERSION,
        "git_commit": crate::GIT_COMMIT,
        "device": m.model.device,
        "gpu": m.gpu.as_ref().ok(),
        // The machine's index of the GPU (NVML), and the launcher's pinning (multi-GPU sweeps).
        "gpu_index": m.gpu.as_ref().ok().and_then(|g| g.index),
        "cuda_visible_devices": std::env::var_os("CUDA_VISIBLE_DEVICES").map(|v| v.to_string_lossy().into_owned()),
        "host": {
            "hostname": std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_string()).unwrap_or_default(),
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "os": std::env::consts::OS,
            "arch": std::env::consts::ARCH,
        },
        "time": chrono::Local::now().to_rfc3339(),
    });
    if let (Some(env), Some(rt)) = (env.as_object_mut(), runtime.as_object()) {
        env.extend(rt.clone());
    }
    env
}

fn assumptions_md(spec: &RunSpec, m: &Stage1Measurements) -> String {
    let mut lines = vec!["FLOP = 2 × multiply-accumulate everywhere.".to_string()];
    lines.extend(m.model_assumptions.iter().cloned());
    lines.extend([
        "MFU = analytic FLOPs ÷ (mean stage time × peak dense FLOP/s of the run's precision); MBU = decode bytes per step ÷ mean step time ÷ peak DRAM bandwidth. Peaks come from the detected GPU (NVML/CUDA properties × the per-architecture table in src/llmprof/measure/peaks.rs) unless hardware.peak_* override them.".to_string(),
        format!("Stage times: {} timers at region boundaries, read after one synchronisation per request; decode steps are timed without host syncs. Prefill = time to first token, the model's input encoders included.", m.clock),
        "NVML windows: the prefill and decode stages are bracketed by one stream synchronisation each, and the sampler's rows falling inside are averaged; energy comes from the total-energy counter.".to_string(),
        format!("The Kineto pass is a separate run of the first batch with decode capped at {} steps, after {} discarded profiled warm-up pass(es); its times are reported only as tables and overhead.", spec.pipeline.torch_profiler.max_decode_steps, spec.pipeline.torch_profiler.warmup),
        format!("Weights: {}.", if m.model.synthetic { SYNTHETIC_NOTE } else { "loaded from safetensors" }),
    ]);
    let mut s = String::from("# Assumptions\n\n");
    for l in lines {
        s.push_str(&format!("- {l}\n"));
    }
    s
}

/// `inputs.yaml`: `dataset` (name, root, variant and, with a variant, its metadata.yaml as
/// `variant_metadata`) and `inputs`: per input, path, bytes, width, height, mode, crop_grid
/// [cols, rows], image_tokens (for inputs with an image), prompt_tokens.
pub fn inputs_yaml(
    dataset: &crate::spec::DatasetSpec,
    variant: Option<&crate::dataset::variant::VariantMetadata>,
    inputs: &[RequestInfo],
    plan: Option<&crate::dataset::BatchPlan>,
) -> Result<String> {
    let mut d = Map::new();
    d.insert("name".into(), Node::Str(dataset.name.clone()));
    d.insert("root".into(), Node::Str(dataset.root.clone()));
    d.insert(
        "variant".into(),
        dataset.variant.clone().map(Node::Str).unwrap_or(Node::Null),
    );
    if let Some(meta) = variant {
        let text = serde_yaml::to_string(meta).context("writing the variant metadata")?;
        let node = crate::config::yaml::parse(&text)
            .map_err(|e| anyhow::anyhow!("reading back the variant metadata: {e}"))?;
        d.insert("variant_metadata".into(), node);
    }
    let mut top = Map::new();
    top.insert("dataset".into(), Node::Map(d));
    top.insert("inputs".into(), inputs_list(inputs));
    if let Some(plan) = plan {
        top.insert("batches".into(), batches_list(plan));
    }
    Ok(Node::Map(top).to_yaml())
}

/// Per timed batch: the index (into `inputs`) of each row, and which rows repeat an earlier
/// input to fill the batch to `runtime.batch_size` (dataset/batching.rs).
fn batches_list(plan: &crate::dataset::BatchPlan) -> Node {
    let ints = |v: &[usize]| Node::List(v.iter().map(|&i| Node::Int(i as i64)).collect());
    let items = plan
        .batches
        .iter()
        .zip(plan.repeated_rows())
        .map(|(rows, repeated)| {
            let mut m = Map::new();
            m.insert("rows".into(), ints(rows));
            m.insert("repeated_rows".into(), ints(&repeated));
            Node::Map(m)
        })
        .collect();
    Node::List(items)
}

fn inputs_list(inputs: &[RequestInfo]) -> Node {
    let items: Vec<Node> = inputs
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("path".into(), Node::Str(r.path.clone()));
            m.insert("bytes".into(), Node::Int(r.bytes as i64));
            if let Some(i) = &r.image {
                m.insert("width".into(), Node::Int(i.width as i64));
                m.insert("height".into(), Node::Int(i.height as i64));
                m.insert("mode".into(), Node::Str(i.mode.clone()));
                m.insert(
                    "crop_grid".into(),
                    Node::List(i.crop_grid.iter().map(|v| Node::Int(*v as i64)).collect()),
                );
                m.insert("image_tokens".into(), Node::Int(i.image_tokens as i64));
            }
            m.insert("prompt_tokens".into(), Node::Int(r.prompt_tokens as i64));
            if let Some(n) = r.output_len {
                m.insert("output_len".into(), Node::Int(n as i64));
            }
            Node::Map(m)
        })
        .collect();
    Node::List(items)
}

/// nvml.csv is always written: the samples, or the header under a comment saying why there are
/// none (no NVIDIA driver, or the sampler disabled).
pub fn write_nvml_csv(run_dir: &Path, trace: Option<&NvmlTrace>) -> Result<()> {
    match trace {
        Some(t) if t.unavailable.is_none() => t.write_csv(&run_dir.join(NVML_CSV)),
        Some(t) => {
            let why = t
                .unavailable
                .as_ref()
                .map(|u| u.reason.as_str())
                .unwrap_or_default();
            write(
                run_dir,
                NVML_CSV,
                &format!("# NVML unavailable: {why}\n{}", t.to_csv()),
            )
        }
        None => write(
            run_dir,
            NVML_CSV,
            "# NVML sampling disabled (pipeline.nvml.enable=false)\n",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ImageInfo;

    #[test]
    fn inputs_yaml_lists_image_fields_only_for_images() {
        let text = RequestInfo {
            name: "a".into(),
            path: "/d/a.txt".into(),
            bytes: 3,
            prompt_tokens: 7,
            image: None,
            output_len: Some(5),
        };
        let page = RequestInfo {
            image: Some(ImageInfo {
                width: 640,
                height: 480,
                mode: "gundam".into(),
                crop_grid: [2, 1],
                image_tokens: 100,
            }),
            ..text.clone()
        };
        let spec = crate::spec::DatasetSpec {
            name: "samples".into(),
            root: "/d".into(),
            subset_filelist: None,
            variant: None,
            sampling: crate::spec::SamplingSpec {
                num_epochs: 1,
                num_samples_per_epoch: None,
                randomize: false,
                seed: 0,
            },
            max_image_pixels: 1,
            max_image_bytes: 1,
            input_len: None,
            output_len: None,
            range_ratio: None,
            num_prompts: None,
            seed: None,
            file: None,
        };
        let plan = crate::dataset::BatchPlan::new(2, 3);
        let y = inputs_yaml(&spec, None, &[text, page], Some(&plan)).unwrap();
        let parsed = crate::config::yaml::parse(&y).unwrap();
        assert_eq!(parsed.get_path("dataset.variant"), Some(&Node::Null));
        let Some(Node::List(items)) = parsed.child("inputs").cloned() else {
            panic!("{y}")
        };
        assert!(items[0].child("crop_grid").is_none());
        assert_eq!(items[0].child("output_len"), Some(&Node::Int(5)));
        assert_eq!(items[1].child("image_tokens"), Some(&Node::Int(100)));
        assert_eq!(items[1].child("prompt_tokens"), Some(&Node::Int(7)));
        assert_eq!(
            parsed.get_path("batches").map(|b| b.to_yaml()),
            Some(
                Node::List(vec![crate::config::yaml::parse(
                    "{rows: [0, 1, 0], repeated_rows: [2]}"
                )
                .unwrap()])
                .to_yaml()
            )
        );
    }
}
