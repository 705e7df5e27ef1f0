//! Decoder LLMs of the dense_decoder family (docs/models.md): Qwen2/2.5, Qwen3, Llama 3, Mistral,
//! Phi-3, Gemma 3, Mixtral, Qwen3-MoE and DeepSeek-V2/V3 from HF config.json fields, on the
//! shared decoder stack (`models::layers`). `interface.rs`
//! implements `Model`; the tokenizer, checkpoint layout, presets and the fast-path check live
//! beside it.
pub mod checkpoint;
pub mod debug;
pub mod fast_path;
pub mod interface;
pub mod presets;
pub mod shard;
pub mod tokenizer;

use crate::engine::causal_lm::{left_pad, CausalLm};
use crate::engine::kv_cache::KvCache;
use crate::engine::prefill_graphs::PrefillGraphs;
use crate::models::layers::attention::AttnShape;
use crate::models::layers::basic::SwiGlu;
use crate::models::layers::decoder::{Decoder, DecoderDims, FeedForward, Sandwich};
use crate::models::layers::moe::{ExpertNames, Moe, MoeDispatch, MoeShape};

use crate::checkpoint::tensors::WeightPath;
/// The switches a dense model is built with (`runtime.optim`, and `model.optim`, empty).
pub type Switches = crate::engine::switches::Switches<llmprof::model::dense::DenseOptim>;
use anyhow::{ensure, Result};
use llmprof::model::dense::gemma::MlpActivation;
use llmprof::model::dense::DenseArch;
use llmprof::region::{RegionObserver, DECODE_STEP, PREFILL};
use std::collections::HashMap;
use tch::{Device, Kind, Tensor};

/// The shared stack's dimensions of `a`.
pub fn dims(a: &DenseArch) -> DecoderDims {
    DecoderDims {
        layers: a.num_hidden_layers,
        attn: AttnShape {
            qk_norm: a.qk_norm.then_some(a.rms_norm_eps),
            packed_qkv: a.packed_projections,
            norm_offset: if a.sandwich.is_some() { 1.0 } else { 0.0 },
            q_factor: a
                .sandwich
                .as_ref()
                .map_or(1.0, |s| s.query_factor(a.head_dim)),
            ..AttnShape::gqa(
                a.num_attention_heads,
                a.num_key_value_heads,
                a.head_dim,
                a.attention_bias,
            )
        },
        rms_norm_eps: a.rms_norm_eps,
        rope_theta: a.rope_theta,
        rope_scaling: a.rope_scaling.clone(),
        max_positions: a.max_position_embeddings,
        tie_word_embeddings: a.tie_word_embeddings,
        sandwich: a.sandwich.as_ref().map(|s| Sandwich {
            embed_scale: (a.hidden_size as f64).sqrt(),
            local_rope_theta: s.local_rope_theta,
            local_layers: s.local_layers.clone(),
            global_rope_factor: s.global_rope_factor,
        }),
        mla: a.mla.clone(),
        sliding: a.sliding_window.map(|w| (w, a.sliding_layers())),
    }
}

/// A dense decoder LLM with its weights.
#[derive(Debug)]
pub struct DenseLm {
    /// The text prefill captured per shape (`runtime.optim.prefill_cuda_graph`). Declared before
    /// `decoder`, so dropped first: graphs must be released before the collectives they may have
    /// captured end (interface.rs, DenseModel).
    prefill_graphs: PrefillGraphs,
    arch: DenseArch,
    /// The KV cache's shape: the heads this process holds (all but under tensor parallelism).
    kv: crate::engine::kv_cache::KvDims,
    decoder: Decoder,
    device: Device,
    kind: Kind,
}

impl DenseLm {
    /// Builds the model from tensors under the official names (all on `device` as `kind`).
    pub fn load(
        tensors: &HashMap<String, Tensor>,
        arch: &DenseArch,
        device: Device,
        kind: Kind,
        optim: &Switches,
    ) -> Result<Self> {
        Self::build(&WeightPath::root(tensors, device, kind), arch, optim)
    }

    /// [`DenseLm::load`] from tensors handed over: each weight the model copies (experts stacked
    /// per layer, q/k/v and gate/up concatenated) leaves the set as it is taken, so the copies
    /// never sit beside the whole set (Mixtral-8x7B in bf16, 87 GiB, held two copies of its
    /// experts at the peak and did not load on a 141 GB GPU).
    pub fn load_handed_over(
        tensors: HashMap<String, Tensor>,
        arch: &DenseArch,
        device: Device,
        kind: Kind,
        optim: &Switches,
    ) -> Result<Self> {
        let tensors = std::cell::RefCell::new(tensors);
        Self::build(
            &WeightPath::handed_over(&tensors, device, kind),
            arch,
            optim,
        )
    }

    fn build(vs: &WeightPath, arch: &DenseArch, optim: &Switches) -> Result<Self> {
        arch.validate()?;
        let (device, kind) = (vs.device(), vs.kind());
        let fused = optim.engine.fused_projections;
        let decoder = Decoder::load(vs, &dims(arch), &optim.engine, |mlp, i| {
            Ok(match &arch.moe {
                Some(m) if m.in_layer(i) => {
                    let (at, [gate, up, down]) = checkpoint::moe_names(m.names);
                    let names = ExpertNames {
                        router: "gate.weight",
                        gate,
                        up,
                        down,
                    };
                    let shape = MoeShape {
                        scoring: m.scoring,
                        group_limit: m.group_limit,
                        ..MoeShape::greedy(
                            m.num_experts,
                            m.num_experts_per_tok,
                            m.norm_topk_prob,
                            m.routed_scaling_factor,
                            m.shared_intermediate_size > 0,
                        )
                    };
                    let at = vs.sub("model.layers").sub(i).sub(at);
                    let mut moe = Moe::load(&at, shape, names, fused)?
                        .with_swiglu_kernel(optim.engine.swiglu_kernel)
                        .with_gemv(optim.engine.gemv_kernel)
                        .with_gemv_swiglu(optim.engine.gemv_swiglu);
                    // Grouped GEMMs keep the group sizes on the device (no host sync, so decode
                    // steps can be captured); where _grouped_mm cannot run it falls back itself.
                    moe.dispatch = MoeDispatch::Grouped;
                    Box::new(moe) as Box<dyn FeedForward>
                }
                _ => Box::new(
                    match arch.packed_projections {
                        true => SwiGlu::load_packed(mlp, fused)?,
                        false => SwiGlu::load(mlp, fused)?,
                    }
                    .with_kernel(optim.engine.swiglu_kernel)
                    .with_gemv(optim.engine.gemv_kernel)
                    .with_gemv_swiglu(optim.engine.gemv_swiglu)
                    .with_gelu_tanh(arch.mlp_activation == MlpActivation::GeluTanh),
                ) as Box<dyn FeedForward>,
            })
        })?;
        Ok(DenseLm {
            arch: arch.clone(),
            kv: dims(arch).kv(),
            decoder,
            prefill_graphs: PrefillGraphs::for_model(
                &optim.engine,
                device.is_cuda(),
                arch.moe.is_none() || kind == Kind::BFloat16,
            ),
            device,
            kind,
        })
    }

    /// One rank of a tensor-parallel model over `comm`'s world from its slices of the checkpoint
    /// (`shard::slice_one`, applied as each tensor is read or drawn), handed over as
    /// [`DenseLm::load_handed_over`] takes them (the copies the model makes never sit beside the
    /// whole set of slices); the row-parallel outputs, embedding and logits are joined through
    /// `comm`, so logits and tokens are the whole model's on every rank.
    pub fn load_slices(
        sliced: HashMap<String, Tensor>,
        arch: &DenseArch,
        (device, kind): (Device, Kind),
        optim: &Switches,
        comm: std::sync::Arc<dyn crate::engine::collectives::Collectives>,
    ) -> Result<Self> {
        let (rank, world) = (comm.rank() as i64, comm.world() as i64);
        shard::check(arch, world)?;
        let local = shard::arch_of_rank(arch, world);
        let m = DenseLm::load_handed_over(sliced, &local, device, kind, optim)?;
        if m.prefill_graphs.enabled() {
            tracing::info!(
                "runtime.optim.prefill_cuda_graph: a tensor-parallel rank's prefill runs op by op \
                 (its collectives inside a prefill graph are not verified yet)"
            );
        }
        Ok(DenseLm {
            arch: arch.clone(),
            decoder: m
                .decoder
                .with_tensor_parallel(comm, rank * arch.vocab_size / world),
            prefill_graphs: PrefillGraphs::new(false, 0),
            ..m
        })
    }

    /// (prefill graphs captured, prefills replayed) (`runtime.optim.prefill_cuda_graph`).
    pub fn prefill_graph_stats(&self) -> (usize, u64) {
        self.prefill_graphs.stats()
    }

    pub fn arch(&self) -> &DenseArch {
        &self.arch
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The last hidden state of each row → fp32 logits [B, vocab].
    fn last_logits(&self, hidden: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let t = hidden.size()[1];
        self.decoder.logits(&hidden.f_select(1, t - 1)?, obs)
    }
}

impl CausalLm for DenseLm {
    fn device(&self) -> Device {
        self.device
    }

    fn eos_token_id(&self) -> i64 {
        self.arch.eos_token_id
    }

    fn max_positions(&self) -> i64 {
        self.arch.max_position_embeddings
    }

    fn static_kv_cache(&self) -> bool {
        self.decoder.optim().static_kv_cache
    }

    fn new_cache(&self, batch: i64, capacity: i64) -> Result<KvCache> {
        KvCache::new(
            self.kv,
            batch,
            capacity,
            self.device,
            self.kind,
            !self.decoder.optim().static_kv_cache,
        )
    }

    fn decode_step(
        &self,
        tokens: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let _s = obs.enter(DECODE_STEP);
        self.decoder.step_logits(tokens, cache, obs)
    }

    fn decode_step_device(
        &self,
        tokens: &Tensor,
        cache: &KvCache,
        window: i64,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        self.decoder
            .device_step_logits(tokens, (cache, window), obs)
    }

    /// Left-padded prompts into an empty cache (pad = EOS; padded keys are masked).
    fn prefill_text(
        &self,
        prompts: &[&[i64]],
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        ensure!(!prompts.is_empty(), "prefill needs at least one prompt");
        ensure!(cache.is_empty(), "prefill needs an empty KV cache");
        ensure!(
            cache.batch() == prompts.len() as i64,
            "{} prompts for a KV cache of batch {}",
            prompts.len(),
            cache.batch()
        );
        let _p = obs.enter(PREFILL);
        let (flat, t, pads) = left_pad(prompts, self.arch.eos_token_id);
        ensure!(t > 0, "empty prompt");
        let ids = Tensor::f_from_slice(&flat)?
            .f_view([prompts.len() as i64, t])?
            .f_to_device(self.device)?;
        cache.set_left_padding(&pads)?;
        let emb = self.decoder.embed(&ids, obs)?;
        self.prefill_graphs.run(&emb, cache, obs, &|x, cache, obs| {
            let hidden = self.decoder.forward(x, cache, obs)?;
            self.last_logits(&hidden, obs)
        })
    }
}

#[cfg(test)]
mod gpu_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tensor_parallel;
