//! `impl Model` for dense decoders: building from the spec (CPU fallback, synthetic or real
//! weights, tokenizer), text requests from text datasets, generation, analytic work and the
//! static report. No page reading: text models have no layout grammar.
use super::tokenizer::TextTokenizer;
use super::{checkpoint, DenseLm};
use crate::engine::device;
use crate::engine::generate::generate_with;
use crate::engine::graph_decode::{decode_notes, step_path, DecodeSession};
use anyhow::{bail, Result};
use llmprof::dataset::{InputItem, TextInput};
use llmprof::model::dense::static_report::{render_markdown, static_report, StaticInputs};
use llmprof::model::dense::{analytic, DenseArch, REGIONS};
use llmprof::model::{
    Arch, BatchWork, Family, GenerateConfig, GenerateOutput, GraphStats, Model, ModelInfo,
    RequestInfo, StaticAnalysis,
};
use llmprof::region::{RegionObserver, RegionTree};
use llmprof::spec::{RunSpec, WeightsSource};
use std::cell::RefCell;
use std::path::Path;
use tch::{Device, Tensor};

/// One text request: its ids and the output length it asks for.
pub struct TextRequest {
    pub item: InputItem,
    pub ids: Vec<i64>,
    pub output_len: Option<usize>,
}

pub struct DenseModel {
    /// Declared first, so dropped first: its CUDA graphs must be released before `model`'s
    /// collectives end. NCCL's abort waits for every graph that captured its collectives to be
    /// destroyed, so a tensor-parallel rank whose graphs outlived its communicator hung at exit.
    decode: RefCell<DecodeSession>,
    pub model: DenseLm,
    tokenizer: TextTokenizer,
    info: ModelInfo,
}

impl DenseModel {
    /// Builds the model `spec` describes on its device; without a GPU, the tiny CPU fallback of
    /// the same structure ([`DenseArch::tiny`]).
    pub fn build(spec: &RunSpec) -> Result<Self> {
        let Arch::DenseDecoder(configured) = &spec.model.arch else {
            bail!("model.arch is not a dense decoder architecture");
        };
        let device = device::device_from_spec(spec)?;
        let mut notes = Vec::new();
        let (mut arch, mut name) = (configured.clone(), spec.model.name.clone());
        let fallback = device == Device::Cpu && spec.model.name != spec.model.cpu_fallback;
        if fallback {
            let note = format!(
                "no CUDA GPU: running the CPU fallback model '{}' (the structure of '{}' at tiny dimensions) instead of '{}' (timings are for the tiny architecture)",
                spec.model.cpu_fallback, spec.model.name, spec.model.name
            );
            tracing::warn!("{note}");
            notes.push(note);
            arch = configured.tiny();
            name = spec.model.cpu_fallback.clone();
        }
        let dtype = device::dtype_for(spec.model.dtype, device);
        let kind = device::kind(dtype);
        let started = std::time::Instant::now();
        let synthetic = spec.model.weights == WeightsSource::Synthetic;
        let path = Path::new(&spec.model.path);
        let world = spec.runtime.tensor_parallel as usize;
        let comm = crate::engine::collectives::of_this_process(world, device)?;
        if let Some(c) = &comm {
            super::shard::check(&arch, world as i64)?;
            notes.push(format!(
                "tensor parallel: rank {} of {world} (this run's measurements are rank 0's; each rank's are in its folder rank<k>)",
                c.rank()
            ));
        }
        // A rank's weights are cut as they are drawn or read: it never holds the whole model.
        let rank_of = comm.as_ref().map(|c| (c.rank() as i64, world as i64));
        let keep = |name: &str, t: Tensor| match rank_of {
            Some(rw) => super::shard::slice_one(name, &t, &arch, rw),
            None => Ok(t),
        };
        let tensors = if synthetic {
            notes.push(llmprof::model::SYNTHETIC_NOTE.to_string());
            tracing::warn!("{}", llmprof::model::SYNTHETIC_NOTE);
            checkpoint::synthetic_kept(&arch, spec.model.seed as i64, (device, kind), keep)?
        } else {
            if fallback {
                bail!("model.weights=files needs a GPU for {}: the CPU fallback '{}' has other dimensions than the checkpoint\n  fix: run on a GPU, or model.weights=synthetic", spec.model.name, spec.model.cpu_fallback);
            }
            if !path.exists() {
                bail!(
                    "model.weights=files but {} does not exist\n  fix: set model.path=<folder with config.json and model*.safetensors>, or use model.weights=synthetic",
                    path.display()
                );
            }
            checkpoint::load_kept(path, &arch, (device, kind), &keep)?
        };
        let model = match comm {
            Some(comm) => {
                DenseLm::load_slices(tensors, &arch, (device, kind), &switches(spec)?, comm)?
            }
            // Handed over: the weights the model copies leave the set as it takes them.
            None => DenseLm::load_handed_over(tensors, &arch, device, kind, &switches(spec)?)?,
        };
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
        let load_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(load_ms, model = %name, ?device, %dtype, "model ready");
        let tokenizer = if fallback {
            TextTokenizer::bytes(arch.bos_token_id, arch.vocab_size)?
        } else {
            TextTokenizer::for_folder(path, arch.bos_token_id, arch.vocab_size, &mut notes)?
        };
        let decode = DecodeSession::new(&model, step_path(spec))?;
        notes.extend(decode_notes(spec, &decode));
        Ok(DenseModel {
            model,
            tokenizer,
            info: ModelInfo {
                name,
                family: Family::DenseDecoder,
                device: format!("{device:?}"),
                cuda_device: device::cuda_index(device),
                dtype,
                synthetic,
                notes,
                load_ms,
            },
            decode: RefCell::new(decode),
        })
    }

    fn arch(&self) -> &DenseArch {
        self.model.arch()
    }
}

impl Model for DenseModel {
    type Request = TextRequest;

    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn regions(&self) -> RegionTree {
        REGIONS
    }

    fn prepare(&self, item: &InputItem, _prompt: &str) -> Result<TextRequest> {
        let vocab = self.arch().vocab_size;
        let (ids, output_len) = match &item.text {
            None => bail!(
                "{} is a text model, but input {} is a file (an image dataset): use dataset=random_tokens or dataset=prompts",
                self.info.name,
                item.path.display()
            ),
            Some(TextInput::RandomTokens {
                input_len,
                output_len,
                offset,
                index,
            }) => {
                let start = (*offset as i64 + *index as i64) % vocab;
                let ids = (0..*input_len as i64).map(|j| (start + j) % vocab).collect();
                (ids, Some(*output_len))
            }
            Some(TextInput::Prompt { text, output_len }) => {
                (self.tokenizer.encode_prompt(text)?, *output_len)
            }
        };
        if ids.is_empty() {
            bail!("{}: the prompt encodes to no tokens", item.name);
        }
        Ok(TextRequest {
            item: item.clone(),
            ids,
            output_len,
        })
    }

    fn describe(&self, r: &TextRequest) -> RequestInfo {
        RequestInfo {
            name: r.item.name.clone(),
            path: r.item.path.display().to_string(),
            bytes: r.item.bytes,
            prompt_tokens: r.ids.len(),
            image: None,
            output_len: r.output_len,
        }
    }

    fn ngram_exempt_ids(&self) -> &[i64] {
        &[]
    }

    fn generate(
        &self,
        batch: &[&TextRequest],
        cfg: &GenerateConfig,
        obs: &dyn RegionObserver,
    ) -> Result<GenerateOutput> {
        let ids: Vec<&[i64]> = batch.iter().map(|r| r.ids.as_slice()).collect();
        let m = &self.model;
        generate_with(
            &mut self.decode.borrow_mut(),
            m,
            &ids,
            |cache| crate::engine::causal_lm::CausalLm::prefill_text(m, &ids, cache, obs),
            cfg,
            obs,
        )
    }

    fn work(&self, batch: &[&TextRequest], decode_steps: usize) -> BatchWork {
        let a = self.arch();
        let rows = batch.len();
        let prompt = batch.iter().map(|r| r.ids.len()).max().unwrap_or(0);
        let prefill = rows as f64 * analytic::prefill_flops(a, prompt as i64, 1).total();
        let context = |s: usize| (prompt + s + 1) as i64;
        BatchWork {
            region_flops: [("prefill".into(), prefill)].into(),
            step_flops: (0..decode_steps)
                .map(|s| rows as f64 * analytic::decode_step_flops(a, context(s)).total())
                .collect(),
            step_bytes: (0..decode_steps)
                .map(|s| {
                    analytic::decode_step_bytes(a, context(s), rows as i64, self.info.dtype.bytes())
                        .total()
                })
                .collect(),
        }
    }

    fn decode_step_modules(
        &self,
        batch: &[&TextRequest],
        decode_steps: usize,
    ) -> Vec<llmprof::model::module_work::ModuleWork> {
        let prompt = batch.iter().map(|r| r.ids.len()).max().unwrap_or(0);
        let context = (prompt + decode_steps.saturating_sub(1) / 2 + 1) as i64;
        llmprof::model::dense::analytic_modules::decode_step_work(
            self.arch(),
            context,
            batch.len() as i64,
            self.info.dtype.bytes(),
        )
    }

    fn static_analysis(
        &self,
        r: &TextRequest,
        batch: usize,
        max_new_tokens: usize,
    ) -> Result<StaticAnalysis> {
        let prompt_len = r.ids.len() as i64;
        let report = static_report(
            self.arch(),
            &StaticInputs {
                prompt_len,
                decode_context_len: prompt_len + r.output_len.unwrap_or(max_new_tokens) as i64,
                batch: batch as i64,
                dtype_bytes: self.info.dtype.bytes(),
            },
        );
        Ok(StaticAnalysis {
            json: serde_json::to_value(&report)?,
            markdown: render_markdown(&report),
        })
    }

    fn graph_stats(&self) -> Option<GraphStats> {
        self.decode
            .borrow()
            .run_graph_stats(self.model.prefill_graph_stats(), false)
    }

    fn assumptions(&self) -> Vec<String> {
        vec![
            "Analytic counts follow docs/models.md (dense decoder): projections 2·H·(q+2·kv)+2·q·H, SwiGLU 6·H·F, attention 4·q·keys per token and layer, lm_head 2·H·V per position with logits; a tied lm_head's weights counted once.".into(),
            "Prefill computes logits for the last prompt position only; left-padded rows are counted at the batch's longest prompt.".into(),
            "Decode bytes per step = every weight once + embedding rows (untied) + KV cache read (all keys attended) and written; activations are not counted.".into(),
        ]
    }

    fn decode_text(&self, tokens: &[i64]) -> String {
        self.tokenizer.decode(tokens)
    }
}

/// The switches of `spec`: `runtime.optim` and this family's `model.optim`.
pub fn switches(spec: &llmprof::spec::RunSpec) -> Result<super::Switches> {
    match spec.model.optim {
        llmprof::model::FamilyOptim::DenseDecoder(own) => Ok(super::Switches {
            engine: spec.runtime.optim,
            own,
        }),
        _ => bail!("model.optim is not the dense_decoder family's (model.family=dense_decoder)"),
    }
}
