//! `llmprof debug logits` for dense decoder checkpoints (HF parity checks): the architecture
//! from the folder's config.json, fp32 (or bf16) last-position logits and greedy tokens.
use super::Switches;
use super::{checkpoint, DenseLm};
use crate::engine::fast_path_check;
use crate::engine::graph_decode::StepPath;
use anyhow::{ensure, Result};
use llmprof::model::dense::DenseArch;
use std::path::Path;
use tch::{Device, Kind, Tensor};

/// Last-position fp32 logits [vocab] (on the CPU) of `ids` and `greedy_n` greedy tokens, with the
/// implementation choices `optim` and decode steps on `path`; CUDA when available. With `world`
/// > 1 this process is one rank of the model split over `world` (checks/debug_ranks.rs).
pub fn debug_logits(
    weights: &Path,
    ids: &[i64],
    dtype: Kind,
    greedy_n: usize,
    optim: &Switches,
    (path, world): (StepPath, usize),
) -> Result<(Tensor, Vec<i64>)> {
    ensure!(!ids.is_empty(), "debug logits needs at least one token id");
    let cfg = crate::checkpoint::config_json_beside(weights)
        .ok_or_else(|| anyhow::anyhow!("no config.json beside {}", weights.display()))?;
    let arch = DenseArch::from_hf_config_json(&cfg)?;
    let device = Device::cuda_if_available();
    let m = match crate::engine::collectives::of_this_process(world, device)? {
        // Each rank reads its slices only, as a run's ranks do.
        Some(comm) => {
            let rw = (comm.rank() as i64, comm.world() as i64);
            super::shard::check(&arch, rw.1)?;
            let keep = |name: &str, t: Tensor| super::shard::slice_one(name, &t, &arch, rw);
            let sliced = checkpoint::load_kept(weights, &arch, (device, dtype), &keep)?;
            DenseLm::load_slices(sliced, &arch, (device, dtype), optim, comm)?
        }
        None => {
            let tensors = checkpoint::load(weights, &arch, device, dtype)?;
            DenseLm::load_handed_over(tensors, &arch, device, dtype, optim)?
        }
    };
    fast_path_check::greedy(&m, path, ids, greedy_n)
}
