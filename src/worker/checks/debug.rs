//! `llmprof debug`: numerical entry points for comparing against a reference (HF transformers'
//! logits, SAM features, vision embeddings) and the fast-path check. The front end forwards its
//! arguments here; this module owns them. Each subcommand reaches a family's code through the
//! registry runs use (`crate::models`).
use crate::engine::graph_decode::StepPath;
use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "llmprof debug")]
struct DebugArgs {
    #[command(subcommand)]
    what: DebugCommand,
}

#[derive(Debug, Subcommand, Clone)]
pub enum DebugCommand {
    /// Decoder logits for a prompt and N greedy tokens, from a safetensors file.
    Logits {
        #[arg(long)]
        weights: PathBuf,
        /// JSON list of token ids.
        #[arg(long)]
        ids: PathBuf,
        #[arg(long, value_parser = ["fp32", "bf16"], default_value = "fp32")]
        dtype: String,
        #[arg(long, default_value_t = 0)]
        greedy: usize,
        #[arg(long)]
        out: PathBuf,
        /// The presets of `runtime=eager` (every switch off, op-by-op decode steps) or
        /// `runtime=fast` (the defaults, fixed-shape decode steps captured as CUDA graphs on a
        /// GPU), engine and model switches alike (docs/fast-path.md): what the parity checks
        /// against HF transformers compare.
        #[arg(long, value_parser = ["eager", "fast"], default_value = "eager")]
        optim: String,
        /// With `--optim fast`: KV slots per captured decode window (small values make the
        /// steps cross windows).
        #[arg(long, default_value_t = 64)]
        kv_bucket: i64,
        /// A switch of the preset turned off (repeatable; runtime.optim's or the family's
        /// model.optim's, e.g. `--off sdpa`): which switch moves a result.
        #[arg(long)]
        off: Vec<String>,
        /// Split the model over this many ranks (tensor parallelism, dense decoders: one
        /// process each, GPU k each where there are GPUs): `--out` gets rank 0's logits and
        /// tokens, which a correct split makes those of one rank.
        #[arg(long, default_value_t = 1)]
        tensor_parallel: usize,
    },
    /// Fast path against eager on seeded synthetic weights: each switch (runtime.optim and the
    /// family's model.optim) alone on the eager presets and the fast presets with CUDA graphs; fp32 greedy tokens must match fp32 eager, and a bf16
    /// variant may not be less accurate than eager bf16. DeepSeek-OCR also checks its vision
    /// switches (SAM attention, batched vision) on synthetic pages: fp32 embeddings within 1e-5
    /// relative of eager. Exits non-zero on a failure; --json writes {"decoder", "vision"}.
    FastPath {
        /// Architecture: the released DeepSeek-OCR (`full`) or the tiny test one, DeepSeek-OCR-2
        /// (`deepseek_ocr2`, `deepseek_ocr2_tiny`), or a dense decoder preset (qwen2_5_0_5b,
        /// qwen2_5_7b, llama3_1_8b, qwen3_0_6b, deepseek_v2_lite, each also as `<name>_tiny`), or
        /// the path of a config.json (any model_type `model=hf` reads; synthetic weights).
        #[arg(long, value_parser = crate::checks::fast_path_cli::parse_arch, default_value = "full")]
        arch: String,
        #[arg(long, default_value_t = 64)]
        steps: usize,
        /// Prompt lengths of the (left-padded) batch rows.
        #[arg(long, value_delimiter = ',', default_value = "913,600")]
        prompt_lens: Vec<usize>,
        /// KV slots per captured window (small values make the check cross windows).
        #[arg(long, default_value_t = 64)]
        kv_bucket: i64,
        #[arg(long, default_value_t = 0)]
        seed: i64,
        /// Also write the results as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The whole vision path of DeepSeek-OCR or DeepSeek-OCR-2 (SAM, the encoder after it,
    /// projector, arrangement) from a weights file: writes `embeddings` [image tokens, hidden]
    /// (f32), `image_tokens`, `grid` [cols, rows] and the encoded pixels to --out.
    Vision {
        #[arg(long)]
        weights: PathBuf,
        #[arg(long, value_parser = ["deepseek_ocr", "deepseek_ocr2", "tiny", "tiny_ocr2"], default_value = "deepseek_ocr2")]
        arch: String,
        /// Safetensors with `global` [1,3,S,S], optional `tiles` [n,3,s,s] and `grid` [cols, rows].
        #[arg(long, conflicts_with = "image")]
        pixels: Option<PathBuf>,
        /// A page image, through llmprof's preprocessing (the released crop mode of --arch).
        #[arg(long)]
        image: Option<PathBuf>,
        #[arg(long, value_parser = ["fp32", "bf16"], default_value = "fp32")]
        dtype: String,
        /// The presets of `runtime=fast` (the defaults: fused SAM attention, llmprof's kernels,
        /// fused projections, SDPA) or `runtime=eager` (reference formulations).
        #[arg(long, value_parser = ["fast", "eager"], default_value = "fast")]
        optim: String,
        #[arg(long)]
        out: PathBuf,
    },
    /// SAM encoder features for normalised pixels, from a safetensors file.
    Sam {
        #[arg(long)]
        weights: PathBuf,
        #[arg(long)]
        pixels: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Compute dtype (the pixels are converted; features are written as f32).
        #[arg(long, value_parser = ["fp32", "bf16"], default_value = "fp32")]
        dtype: String,
        /// The presets of `runtime=eager` (the reference formulation) or `runtime=fast` (SAM's
        /// fused relative-position attention, llmprof's CUDA and Hopper kernels where they run).
        #[arg(long, value_parser = ["eager", "fast"], default_value = "eager")]
        optim: String,
    },
}

/// `llmprof debug ...`, forwarded by the front end with the same arguments (`args[0]` is
/// `debug`). `--help` prints the subcommands' help on stdout.
pub fn run(args: &[String]) -> Result<()> {
    let parsed = match DebugArgs::try_parse_from(
        std::iter::once("llmprof debug".to_string()).chain(args[1..].iter().cloned()),
    ) {
        Ok(p) => p,
        Err(e) if !e.use_stderr() => {
            llmprof::stdout::print(&e.render().to_string())?;
            return Ok(());
        }
        Err(e) => bail!("{e}"),
    };
    // clap restricts --dtype to fp32 and bf16.
    let kind = |d: &str| {
        crate::engine::device::kind(
            llmprof::dtype::Dtype::from_name(d).unwrap_or(llmprof::dtype::Dtype::F32),
        )
    };
    // `--optim`: clap restricts it to eager and fast, the presets of conf/ (runtime=eager|fast).
    use crate::models::deepseek_ocr;
    // fp32 checks compare true fp32 arithmetic: no TF32 in matmuls or convolutions.
    crate::ffi::set_allow_tf32(false, false).context("turning TF32 off")?;
    match parsed.what {
        DebugCommand::Logits {
            weights,
            ids,
            dtype,
            greedy,
            out,
            optim,
            kv_bucket,
            off,
            tensor_parallel,
        } => {
            anyhow::ensure!(
                tensor_parallel >= 1,
                "--tensor-parallel {tensor_parallel}: at least 1"
            );
            let rank = crate::engine::collectives::this_rank();
            if tensor_parallel > 1 && rank.is_none() {
                return crate::checks::debug_ranks::run_ranks(tensor_parallel, &out);
            }
            let off: Vec<&str> = off.iter().map(String::as_str).collect();
            let path = match optim.as_str() {
                "eager" => StepPath::Eager,
                _ => StepPath::Graph { kv_bucket },
            };
            let text = llmprof::dataset::file_kind::read_to_string(&ids)
                .with_context(|| format!("reading {}", ids.display()))?;
            let ids: Vec<i64> = serde_json::from_str(&text)
                .with_context(|| format!("{} must be a JSON list of token ids", ids.display()))?;
            // The family by the checkpoint's config.json, through the registry runs use.
            let family = crate::models::family_of_checkpoint(&weights);
            let (logits, greedy_ids) = crate::models::debug_logits(
                family,
                &weights,
                &ids,
                kind(&dtype),
                greedy,
                (&optim, &off),
                (path, tensor_parallel),
            )?;
            if rank.is_some_and(|r| r > 0) {
                return Ok(()); // rank 0 writes what every rank computed
            }
            let greedy_t = tch::Tensor::from_slice(&greedy_ids);
            let logits = logits
                .to_device(tch::Device::Cpu)
                .to_kind(tch::Kind::Float)
                .contiguous();
            tch::Tensor::write_safetensors(
                &[("prompt_last_logits", &logits), ("greedy_ids", &greedy_t)],
                &out,
            )
            .with_context(|| format!("writing {}", out.display()))?;
            tracing::info!(out = %out.display(), greedy = greedy_ids.len(), "logits written");
            Ok(())
        }
        DebugCommand::FastPath {
            arch,
            steps,
            prompt_lens,
            kv_bucket,
            seed,
            json,
        } => {
            let report =
                crate::checks::fast_path_cli::run(&arch, steps, &prompt_lens, kv_bucket, seed)?;
            llmprof::stdout::print(&report.tables())?;
            if let Some(path) = json {
                std::fs::write(&path, serde_json::to_string_pretty(&report)?)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            report.verdict()
        }
        DebugCommand::Vision {
            weights,
            arch,
            pixels,
            image,
            dtype,
            optim,
            out,
        } => {
            let optim = deepseek_ocr::Switches::preset(&optim)?;
            let v = crate::models::deepseek_ocr::checks::debug_vision::debug_vision(
                &arch,
                &weights,
                pixels.as_deref(),
                image.as_deref(),
                kind(&dtype),
                &optim,
            )?;
            let tokens = tch::Tensor::from_slice(&[v.image_tokens as i64]);
            let grid = tch::Tensor::from_slice(&[v.grid.cols as i64, v.grid.rows as i64]);
            let embeddings = v.embeddings.f_contiguous()?;
            let mut named: Vec<(&str, &tch::Tensor)> = vec![
                ("embeddings", &embeddings),
                ("image_tokens", &tokens),
                ("grid", &grid),
            ];
            let pixels: Vec<(String, tch::Tensor)> = v
                .pixels
                .iter()
                .map(|(n, t)| {
                    let t = t.f_to_device(tch::Device::Cpu)?;
                    Ok((n.clone(), t.f_to_kind(tch::Kind::Float)?.f_contiguous()?))
                })
                .collect::<Result<_>>()?;
            for (n, t) in &pixels {
                named.push((n.as_str(), t));
            }
            tch::Tensor::write_safetensors(&named, &out)
                .with_context(|| format!("writing {}", out.display()))?;
            tracing::info!(out = %out.display(), image_tokens = v.image_tokens, "vision embeddings written");
            Ok(())
        }
        DebugCommand::Sam {
            weights,
            pixels,
            out,
            dtype,
            optim,
        } => {
            let tensors = tch::Tensor::read_safetensors(&pixels)
                .with_context(|| format!("reading {}", pixels.display()))?;
            let px = tensors
                .into_iter()
                .find(|(n, _)| n == "pixels")
                .map(|(_, t)| t)
                .with_context(|| format!("{} has no tensor named `pixels`", pixels.display()))?;
            let px = px
                .to_device(tch::Device::cuda_if_available())
                .to_kind(kind(&dtype));
            let features = crate::models::deepseek_ocr::checks::debug::debug_sam(
                &weights,
                &px,
                &deepseek_ocr::Switches::preset(&optim)?,
            )?;
            let features = features
                .to_device(tch::Device::Cpu)
                .to_kind(tch::Kind::Float)
                .contiguous();
            tch::Tensor::write_safetensors(&[("features", &features)], &out)
                .with_context(|| format!("writing {}", out.display()))?;
            tracing::info!(out = %out.display(), shape = ?features.size(), "SAM features written");
            Ok(())
        }
    }
}
