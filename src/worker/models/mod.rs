//! Model implementations (tensor code only: no timers, no NVTX, no reports): the building blocks
//! every family composes (`layers`) and one folder per family, each behind
//! `llmprof::model::Model`. [`with_model`] is the one place that maps a
//! family to its implementation.
pub mod deepseek_ocr;
pub mod dense;
pub mod layers;

use crate::engine::graph_decode::StepPath;
use anyhow::Result;
use llmprof::model::{Family, Model};
use llmprof::spec::RunSpec;
use std::path::Path;
use tch::{Kind, Tensor};

/// A job that runs on any model (stage 1, infer, ...): generic over the model type, because each
/// model prepares its own kind of request.
pub trait ModelJob {
    type Output;
    fn run<M: Model>(self, model: &M) -> Result<Self::Output>;
}

/// Builds the model `spec` names and runs `job` on it.
pub fn with_model<J: ModelJob>(spec: &RunSpec, job: J) -> Result<J::Output> {
    crate::ffi::kernels::set_programmatic_launch(spec.runtime.optim.programmatic_launch);
    match spec.model.family {
        Family::DeepseekOcr => job.run(&deepseek_ocr::interface::DeepseekOcrModel::build(spec)?),
        Family::DenseDecoder => {
            let model = dense::interface::DenseModel::build(spec)?;
            crate::heartbeat::mark("model built");
            job.run(&model)
        }
    }
}

/// The family whose code reads the checkpoint at `weights` (`llmprof debug logits`): the one that
/// the `model_type` of the config.json beside it names, DeepSeek-OCR's otherwise (its debug
/// weights files come without one).
pub fn family_of_checkpoint(weights: &Path) -> Family {
    crate::checkpoint::config_json_beside(weights)
        .and_then(|p| llmprof::dataset::file_kind::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("model_type")?
                .as_str()
                .and_then(Family::for_hf_model_type)
        })
        .unwrap_or(Family::DeepseekOcr)
}

/// `llmprof debug logits` by `family`'s code: last-position fp32 logits (on the CPU) of `ids` and
/// `greedy_n` greedy tokens, built with the presets `preset` (`fast` or `eager`) and decode steps
/// on `path`, split over `world` tensor-parallel ranks (this process one of them).
pub fn debug_logits(
    family: Family,
    weights: &Path,
    ids: &[i64],
    kind: Kind,
    greedy_n: usize,
    (preset, off): (&str, &[&str]),
    (path, world): (StepPath, usize),
) -> Result<(Tensor, Vec<i64>)> {
    match family {
        Family::DeepseekOcr if world > 1 => {
            anyhow::bail!("DeepSeek-OCR runs on one GPU only: --tensor-parallel 1")
        }
        Family::DeepseekOcr => deepseek_ocr::checks::debug::debug_logits(
            weights,
            ids,
            kind,
            greedy_n,
            &deepseek_ocr::Switches::preset(preset)?.with_off(off)?,
            path,
        ),
        Family::DenseDecoder => dense::debug::debug_logits(
            weights,
            ids,
            kind,
            greedy_n,
            &dense::Switches::preset(preset)?.with_off(off)?,
            (path, world),
        ),
    }
}
