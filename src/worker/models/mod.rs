//! Model implementations (tensor code only: no timers, no NVTX, no reports), one folder per
//! family, each behind `llmprof::model::Model`. [`with_model`] is the one place that maps a
//! family to its implementation.
pub mod common;
pub mod deepseek_ocr;
pub mod dense;
pub mod device;
pub mod fast_path_cli;
pub mod ngram_device;

use anyhow::Result;
use llmprof::model::{Family, Model};
use llmprof::spec::RunSpec;

/// A job that runs on any model (stage 1, infer, ...): generic over the model type, because each
/// model prepares its own kind of request.
pub trait ModelJob {
    type Output;
    fn run<M: Model>(self, model: &M) -> Result<Self::Output>;
}

/// Builds the model `spec` names and runs `job` on it.
pub fn with_model<J: ModelJob>(spec: &RunSpec, job: J) -> Result<J::Output> {
    match spec.model.family {
        Family::DeepseekOcr => job.run(&deepseek_ocr::interface::DeepseekOcrModel::build(spec)?),
        Family::DenseDecoder => job.run(&dense::interface::DenseModel::build(spec)?),
    }
}
