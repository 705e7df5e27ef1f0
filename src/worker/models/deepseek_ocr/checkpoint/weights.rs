//! Official-name checkpoint tensors (docs/deepseek-ocr.md §6): load `model*.safetensors` (single file or sharded
//! through `model.safetensors.index.json`) straight to the target device/dtype, or build seeded
//! synthetic tensors with the same names and shapes. Name/shape problems → one error listing all.

use llmprof::model::deepseek_ocr::arch::ArchConfig;
use anyhow::{bail, ensure, Context, Result};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use tch::{Device, Kind, Tensor};

/// A group of tensors that can be loaded on its own (e.g. decoder-only or SAM-only files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// `model.embed_tokens`, `model.layers.*`, `model.norm`, `lm_head`.
    Decoder,
    /// `model.sam_model.*`.
    Sam,
    /// `model.vision_model.*`.
    Clip,
    /// `model.projector.*`, `model.image_newline`, `model.view_seperator`.
    Projector,
}

impl Part {
    pub const ALL: [Part; 4] = [Part::Decoder, Part::Sam, Part::Clip, Part::Projector];
}

/// Name and shape of one checkpoint tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<i64>,
}

impl TensorSpec {
    pub fn numel(&self) -> i64 {
        self.shape.iter().product()
    }
}

/// Every tensor of `part` under its official name (docs/deepseek-ocr.md §6), in checkpoint order.
pub fn expected_tensors(cfg: &ArchConfig, part: Part) -> Vec<TensorSpec> {
    let mut v = Vec::new();
    let mut add = |name: String, shape: &[i64]| {
        v.push(TensorSpec {
            name,
            shape: shape.to_vec(),
        })
    };
    match part {
        Part::Decoder => {
            let d = &cfg.decoder;
            let (h, q, kv) = (
                d.hidden_size,
                d.num_attention_heads * d.head_dim,
                d.num_key_value_heads * d.head_dim,
            );
            add("model.embed_tokens.weight".into(), &[d.vocab_size, h]);
            for i in 0..d.num_hidden_layers {
                let p = format!("model.layers.{i}");
                add(format!("{p}.input_layernorm.weight"), &[h]);
                add(format!("{p}.post_attention_layernorm.weight"), &[h]);
                add(format!("{p}.self_attn.q_proj.weight"), &[q, h]);
                add(format!("{p}.self_attn.k_proj.weight"), &[kv, h]);
                add(format!("{p}.self_attn.v_proj.weight"), &[kv, h]);
                add(format!("{p}.self_attn.o_proj.weight"), &[h, q]);
                if i < d.first_k_dense_replace {
                    let f = d.intermediate_size;
                    add(format!("{p}.mlp.gate_proj.weight"), &[f, h]);
                    add(format!("{p}.mlp.up_proj.weight"), &[f, h]);
                    add(format!("{p}.mlp.down_proj.weight"), &[h, f]);
                } else {
                    let f = d.moe_intermediate_size;
                    add(format!("{p}.mlp.gate.weight"), &[d.n_routed_experts, h]);
                    for e in 0..d.n_routed_experts {
                        add(format!("{p}.mlp.experts.{e}.gate_proj.weight"), &[f, h]);
                        add(format!("{p}.mlp.experts.{e}.up_proj.weight"), &[f, h]);
                        add(format!("{p}.mlp.experts.{e}.down_proj.weight"), &[h, f]);
                    }
                    if d.n_shared_experts > 0 {
                        let fs = cfg.shared_intermediate();
                        add(format!("{p}.mlp.shared_experts.gate_proj.weight"), &[fs, h]);
                        add(format!("{p}.mlp.shared_experts.up_proj.weight"), &[fs, h]);
                        add(format!("{p}.mlp.shared_experts.down_proj.weight"), &[h, fs]);
                    }
                }
            }
            add("model.norm.weight".into(), &[h]);
            add("lm_head.weight".into(), &[d.vocab_size, h]);
        }
        Part::Sam => {
            let s = &cfg.sam;
            let (w, g, hd) = (s.width, cfg.sam_pos_grid(), s.width / s.heads);
            let p = "model.sam_model";
            add(
                format!("{p}.patch_embed.proj.weight"),
                &[w, 3, s.patch_size, s.patch_size],
            );
            add(format!("{p}.patch_embed.proj.bias"), &[w]);
            add(format!("{p}.pos_embed"), &[1, g, g, w]);
            for i in 0..s.depth {
                let b = format!("{p}.blocks.{i}");
                let l = if s.global_attn_indexes.contains(&i) {
                    g
                } else {
                    s.window_size
                };
                for n in ["norm1", "norm2"] {
                    add(format!("{b}.{n}.weight"), &[w]);
                    add(format!("{b}.{n}.bias"), &[w]);
                }
                add(format!("{b}.attn.qkv.weight"), &[3 * w, w]);
                add(format!("{b}.attn.qkv.bias"), &[3 * w]);
                add(format!("{b}.attn.proj.weight"), &[w, w]);
                add(format!("{b}.attn.proj.bias"), &[w]);
                add(format!("{b}.attn.rel_pos_h"), &[2 * l - 1, hd]);
                add(format!("{b}.attn.rel_pos_w"), &[2 * l - 1, hd]);
                add(format!("{b}.mlp.lin1.weight"), &[s.mlp_dim, w]);
                add(format!("{b}.mlp.lin1.bias"), &[s.mlp_dim]);
                add(format!("{b}.mlp.lin2.weight"), &[w, s.mlp_dim]);
                add(format!("{b}.mlp.lin2.bias"), &[w]);
            }
            let o = s.out_chans;
            add(format!("{p}.neck.0.weight"), &[o, w, 1, 1]);
            add(format!("{p}.neck.1.weight"), &[o]);
            add(format!("{p}.neck.1.bias"), &[o]);
            add(format!("{p}.neck.2.weight"), &[o, o, 3, 3]);
            add(format!("{p}.neck.3.weight"), &[o]);
            add(format!("{p}.neck.3.bias"), &[o]);
            let mut cin = o;
            for (k, &cout) in s.downsample_channels.iter().enumerate() {
                add(format!("{p}.net_{}.weight", k + 2), &[cout, cin, 3, 3]);
                cin = cout;
            }
        }
        Part::Clip => {
            let c = &cfg.clip;
            let (w, m) = (c.width, c.mlp_dim);
            let p = "model.vision_model";
            add(format!("{p}.embeddings.class_embedding"), &[w]);
            add(
                format!("{p}.embeddings.patch_embedding.weight"),
                &[w, 3, c.patch_size, c.patch_size],
            );
            add(
                format!("{p}.embeddings.position_embedding.weight"),
                &[c.num_positions, w],
            );
            add(format!("{p}.pre_layrnorm.weight"), &[w]);
            add(format!("{p}.pre_layrnorm.bias"), &[w]);
            for i in 0..c.layers {
                let l = format!("{p}.transformer.layers.{i}");
                for n in ["layer_norm1", "layer_norm2"] {
                    add(format!("{l}.{n}.weight"), &[w]);
                    add(format!("{l}.{n}.bias"), &[w]);
                }
                add(format!("{l}.self_attn.qkv_proj.weight"), &[3 * w, w]);
                add(format!("{l}.self_attn.qkv_proj.bias"), &[3 * w]);
                add(format!("{l}.self_attn.out_proj.weight"), &[w, w]);
                add(format!("{l}.self_attn.out_proj.bias"), &[w]);
                add(format!("{l}.mlp.fc1.weight"), &[m, w]);
                add(format!("{l}.mlp.fc1.bias"), &[m]);
                add(format!("{l}.mlp.fc2.weight"), &[w, m]);
                add(format!("{l}.mlp.fc2.bias"), &[w]);
            }
        }
        Part::Projector => {
            let (n, i) = (cfg.projector.n_embed, cfg.projector.input_dim);
            add("model.projector.layers.weight".into(), &[n, i]);
            add("model.projector.layers.bias".into(), &[n]);
            add("model.image_newline".into(), &[n]);
            add("model.view_seperator".into(), &[n]);
        }
    }
    v
}

/// Loaded (or synthetic) tensors by official name, all on one device in one dtype.
pub struct Weights {
    tensors: HashMap<String, Tensor>,
    parts: Vec<Part>,
    device: Device,
    kind: Kind,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Weights({} tensors on {:?} as {:?})",
            self.tensors.len(),
            self.device,
            self.kind
        )
    }
}

/// Where one tensor lives inside a safetensors file.
#[derive(Debug, Clone)]
struct FileEntry {
    file: PathBuf,
    dtype: String,
    shape: Vec<i64>,
    /// Absolute byte range in the file.
    begin: u64,
    end: u64,
}

fn kind_of_safetensors_dtype(dtype: &str) -> Option<Kind> {
    Some(match dtype {
        "BF16" => Kind::BFloat16,
        "F16" => Kind::Half,
        "F32" => Kind::Float,
        "F64" => Kind::Double,
        "I64" => Kind::Int64,
        "I32" => Kind::Int,
        "I16" => Kind::Int16,
        "I8" => Kind::Int8,
        "U8" => Kind::Uint8,
        "BOOL" => Kind::Bool,
        _ => return None,
    })
}

/// Reads the JSON header of one safetensors file.
fn read_header(file: &Path) -> Result<Vec<(String, FileEntry)>> {
    let mut f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len)
        .with_context(|| format!("reading header length of {}", file.display()))?;
    let n = u64::from_le_bytes(len);
    ensure!(
        n < 100 << 20,
        "{}: implausible safetensors header length {n}",
        file.display()
    );
    let mut buf = vec![0u8; n as usize];
    f.read_exact(&mut buf)
        .with_context(|| format!("reading header of {}", file.display()))?;
    let header: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&buf)
        .with_context(|| format!("parsing safetensors header of {}", file.display()))?;
    let data_start = 8 + n;
    let mut out = Vec::new();
    for (name, v) in header {
        if name == "__metadata__" {
            continue;
        }
        let bad = || format!("{}: malformed header entry for `{name}`", file.display());
        let dtype = v
            .get("dtype")
            .and_then(|x| x.as_str())
            .with_context(bad)?
            .to_string();
        let shape = v
            .get("shape")
            .and_then(|x| x.as_array())
            .with_context(bad)?
            .iter()
            .map(|x| x.as_i64().with_context(bad))
            .collect::<Result<Vec<_>>>()?;
        let offs = v
            .get("data_offsets")
            .and_then(|x| x.as_array())
            .with_context(bad)?;
        ensure!(offs.len() == 2, bad());
        let b = offs[0].as_u64().with_context(bad)?;
        let e = offs[1].as_u64().with_context(bad)?;
        out.push((
            name,
            FileEntry {
                file: file.to_path_buf(),
                dtype,
                shape,
                begin: data_start + b,
                end: data_start + e,
            },
        ));
    }
    Ok(out)
}

/// The safetensors files of a checkpoint: `path` itself if it is a file; else the shards named by
/// `model.safetensors.index.json`; else every `model*.safetensors` in the folder.
pub fn checkpoint_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    ensure!(
        path.is_dir(),
        "weights path {} does not exist",
        path.display()
    );
    let index = path.join("model.safetensors.index.json");
    let mut files: Vec<PathBuf> = if index.is_file() {
        let text = std::fs::read_to_string(&index)
            .with_context(|| format!("reading {}", index.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", index.display()))?;
        let map = v
            .get("weight_map")
            .and_then(|m| m.as_object())
            .with_context(|| format!("{}: no weight_map", index.display()))?;
        let mut names: Vec<String> = map
            .values()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        names.into_iter().map(|n| path.join(n)).collect()
    } else {
        let mut v = Vec::new();
        for entry in
            std::fs::read_dir(path).with_context(|| format!("listing {}", path.display()))?
        {
            let p = entry?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("model") && name.ends_with(".safetensors") {
                v.push(p);
            }
        }
        v
    };
    files.sort();
    ensure!(
        !files.is_empty(),
        "no model*.safetensors under {}",
        path.display()
    );
    Ok(files)
}

impl Weights {
    /// Loads the tensors of `parts` from a checkpoint file or folder onto `device` as `kind`.
    /// Tensors of parts not requested are skipped (decoder-only or SAM-only files work). Missing,
    /// unexpected (not an official name of any part) and wrong-shaped tensors are reported together.
    pub fn load(
        path: &Path,
        cfg: &ArchConfig,
        parts: &[Part],
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        let mut entries: HashMap<String, FileEntry> = HashMap::new();
        for file in checkpoint_files(path)? {
            for (name, e) in read_header(&file)? {
                entries.insert(name, e);
            }
        }
        let all: HashMap<String, (Part, Vec<i64>)> = Part::ALL
            .iter()
            .flat_map(|&p| {
                expected_tensors(cfg, p)
                    .into_iter()
                    .map(move |t| (t.name, (p, t.shape)))
            })
            .collect();
        let mut missing = Vec::new();
        let mut wrong = Vec::new();
        let mut bad_dtype = Vec::new();
        let mut unexpected: Vec<&String> =
            entries.keys().filter(|n| !all.contains_key(*n)).collect();
        unexpected.sort();
        let mut wanted: Vec<(&String, &Vec<i64>)> = all
            .iter()
            .filter(|(_, (p, _))| parts.contains(p))
            .map(|(n, (_, s))| (n, s))
            .collect();
        wanted.sort();
        for (name, shape) in &wanted {
            match entries.get(*name) {
                None => missing.push(name.to_string()),
                Some(e) if &e.shape != *shape => {
                    wrong.push(format!("{name}: file {:?}, expected {:?}", e.shape, shape))
                }
                Some(e) if kind_of_safetensors_dtype(&e.dtype).is_none() => {
                    bad_dtype.push(format!("{name}: {}", e.dtype))
                }
                Some(_) => {}
            }
        }
        if !(missing.is_empty()
            && wrong.is_empty()
            && unexpected.is_empty()
            && bad_dtype.is_empty())
        {
            let mut msg = format!(
                "checkpoint {} does not match the DeepSeek-OCR layout:",
                path.display()
            );
            let mut section = |title: &str, items: &[String]| {
                if !items.is_empty() {
                    msg.push_str(&format!("\n  {} {title}:", items.len()));
                    for it in items {
                        msg.push_str(&format!("\n    {it}"));
                    }
                }
            };
            section("missing", &missing);
            section("with a wrong shape", &wrong);
            section(
                "unexpected",
                &unexpected.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            );
            section("with an unsupported dtype", &bad_dtype);
            bail!(msg);
        }
        let mut tensors = HashMap::with_capacity(wanted.len());
        let mut open: Option<(PathBuf, std::fs::File)> = None;
        let mut buf = Vec::new();
        for (name, shape) in wanted {
            let e = &entries[name];
            if open.as_ref().map(|(p, _)| p != &e.file).unwrap_or(true) {
                let f = std::fs::File::open(&e.file)
                    .with_context(|| format!("opening {}", e.file.display()))?;
                open = Some((e.file.clone(), f));
            }
            let (_, f) = open.as_mut().expect("file opened just above");
            let src_kind = kind_of_safetensors_dtype(&e.dtype).expect("dtype checked above");
            let nbytes = (e.end - e.begin) as usize;
            let numel: i64 = shape.iter().product();
            ensure!(
                nbytes == numel as usize * src_kind.elt_size_in_bytes(),
                "{name}: byte range {nbytes} does not match shape {shape:?} of {}",
                e.dtype
            );
            buf.resize(nbytes, 0);
            f.seek(SeekFrom::Start(e.begin))?;
            f.read_exact(&mut buf)
                .with_context(|| format!("reading tensor {name} from {}", e.file.display()))?;
            let t = Tensor::f_from_data_size(&buf, shape, src_kind)
                .with_context(|| format!("building tensor {name}"))?
                .f_to_device(device)?
                .f_to_kind(kind)?;
            tensors.insert(name.clone(), t);
        }
        Ok(Weights {
            tensors,
            parts: parts.to_vec(),
            device,
            kind,
        })
    }

    /// Seeded random tensors for `parts` with the official names/shapes, created on `device` as
    /// `kind` without any file. Norm weights are ≈1, linear weights have std 1/√fan_in, biases and
    /// position tables std 0.02, newline/separator std 1/√hidden (their HF init).
    pub fn synthetic(
        cfg: &ArchConfig,
        parts: &[Part],
        seed: i64,
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        tch::manual_seed(seed);
        let mut tensors = HashMap::new();
        for &p in parts {
            for t in expected_tensors(cfg, p) {
                let std = synthetic_std(&t, cfg);
                let mut x = Tensor::f_randn(&t.shape, (Kind::Float, device))?.f_mul_scalar(std)?;
                if is_norm_weight(&t.name) {
                    x = x.f_add_scalar(1.0)?;
                }
                tensors.insert(t.name, x.f_to_kind(kind)?);
            }
        }
        Ok(Weights {
            tensors,
            parts: parts.to_vec(),
            device,
            kind,
        })
    }

    /// Another handle on the same tensors (no copy), e.g. to load one set of weights into
    /// models built with different implementation choices.
    pub fn shallow_clone(&self) -> Self {
        Weights {
            tensors: self
                .tensors
                .iter()
                .map(|(n, t)| (n.clone(), t.shallow_clone()))
                .collect(),
            parts: self.parts.clone(),
            device: self.device,
            kind: self.kind,
        }
    }

    /// The same weights rounded to `kind` (e.g. bf16 copies of fp32 weights, so both dtypes run
    /// one model).
    pub fn to_kind(&self, kind: Kind) -> Result<Self> {
        Ok(Weights {
            tensors: self
                .tensors
                .iter()
                .map(|(n, t)| Ok((n.clone(), t.f_to_kind(kind)?)))
                .collect::<Result<_>>()?,
            parts: self.parts.clone(),
            device: self.device,
            kind,
        })
    }

    /// Wraps tensors that already carry official names (tests, converters).
    pub fn from_tensors(
        tensors: HashMap<String, Tensor>,
        parts: &[Part],
        device: Device,
        kind: Kind,
    ) -> Self {
        Weights {
            tensors,
            parts: parts.to_vec(),
            device,
            kind,
        }
    }

    /// The parts these weights hold.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    pub fn has_part(&self, p: Part) -> bool {
        self.parts.contains(&p)
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Sorted tensor names.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        v.sort();
        v
    }

    /// A shallow (storage-sharing) handle to tensor `name`.
    pub fn get(&self, name: &str) -> Result<Tensor> {
        self.tensors
            .get(name)
            .map(Tensor::shallow_clone)
            .with_context(|| format!("weight `{name}` was not loaded"))
    }

    /// Removes and returns `name` (lets the model free tensors it restacks).
    pub fn take(&mut self, name: &str) -> Option<Tensor> {
        self.tensors.remove(name)
    }

    /// Root of the name tree, like `nn::VarStore::root()`.
    pub fn root(&self) -> WeightPath<'_> {
        WeightPath {
            weights: self,
            prefix: String::new(),
        }
    }

    /// Writes all tensors to one safetensors file (tests, fixtures).
    pub fn write_safetensors(&self, path: &Path) -> Result<()> {
        let mut named: Vec<(&str, &Tensor)> =
            self.tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
        named.sort_by(|a, b| a.0.cmp(b.0));
        Tensor::write_safetensors(&named, path)
            .with_context(|| format!("writing {}", path.display()))
    }
}

fn is_norm_weight(name: &str) -> bool {
    name.ends_with(".weight")
        && (name.contains("norm")
            || name.ends_with("neck.1.weight")
            || name.ends_with("neck.3.weight"))
}

fn synthetic_std(t: &TensorSpec, cfg: &ArchConfig) -> f64 {
    let n = &t.name;
    if is_norm_weight(n) {
        0.02
    } else if n == "model.image_newline" || n == "model.view_seperator" {
        1.0 / (cfg.projector.n_embed as f64).sqrt()
    } else if n == "model.embed_tokens.weight" {
        1.0
    } else if t.shape.len() >= 2
        && !n.contains("rel_pos")
        && !n.contains("pos_embed")
        && !n.contains("position_embedding")
    {
        let fan_in: i64 = t.shape[1..].iter().product();
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.02
    }
}

/// A prefix into [`Weights`], mirroring `nn::Path`: `vs.sub("blocks").sub(3).get("norm1.weight")`.
#[derive(Clone)]
pub struct WeightPath<'a> {
    weights: &'a Weights,
    prefix: String,
}

impl<'a> WeightPath<'a> {
    /// Child path `prefix.name`.
    pub fn sub(&self, name: impl Display) -> WeightPath<'a> {
        let prefix = if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        };
        WeightPath {
            weights: self.weights,
            prefix,
        }
    }

    fn full(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }

    /// Tensor `prefix.name`.
    pub fn get(&self, name: &str) -> Result<Tensor> {
        self.weights.get(&self.full(name))
    }

    pub fn device(&self) -> Device {
        self.weights.device
    }

    pub fn kind(&self) -> Kind {
        self.weights.kind
    }
}

impl<'a, T: Display> std::ops::Div<T> for &WeightPath<'a> {
    type Output = WeightPath<'a>;
    fn div(self, rhs: T) -> WeightPath<'a> {
        self.sub(rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::deepseek_ocr::test_util::temp_dir;
    use llmprof::model::deepseek_ocr::analytic_bytes::params_by_module;

    fn tensor_sum(cfg: &ArchConfig, part: Part, prefix: &str) -> u64 {
        expected_tensors(cfg, part)
            .iter()
            .filter(|t| t.name.starts_with(prefix))
            .map(TensorSpec::numel)
            .sum::<i64>() as u64
    }

    /// Same sums as the checkpoint tensor list, for both constructors.
    #[test]
    fn sums_match_expected_tensors() {
        for cfg in [ArchConfig::deepseek_ocr(), ArchConfig::tiny()] {
            let p = params_by_module(&cfg);
            assert_eq!(p.sam, tensor_sum(&cfg, Part::Sam, ""));
            assert_eq!(p.clip, tensor_sum(&cfg, Part::Clip, ""));
            assert_eq!(p.projector, tensor_sum(&cfg, Part::Projector, ""));
            assert_eq!(p.decoder(), tensor_sum(&cfg, Part::Decoder, ""));
            for (i, l) in p.layers.iter().enumerate() {
                let layer = format!("model.layers.{i}.");
                assert_eq!(
                    l.total(),
                    tensor_sum(&cfg, Part::Decoder, &layer),
                    "layer {i}"
                );
                let attn = tensor_sum(&cfg, Part::Decoder, &format!("{layer}self_attn."));
                assert_eq!(l.attention, attn);
                let experts = tensor_sum(&cfg, Part::Decoder, &format!("{layer}mlp.experts."));
                assert_eq!(l.routed_experts, experts);
            }
            let rows: u64 = p.rows().iter().map(|(_, n)| n).sum();
            assert_eq!(rows, p.total());
        }
    }

    #[test]
    fn official_layout_matches_spec_counts() {
        let cfg = ArchConfig::deepseek_ocr();
        let count = |p: Part| -> (usize, i64) {
            let v = expected_tensors(&cfg, p);
            (v.len(), v.iter().map(TensorSpec::numel).sum())
        };
        let (nd, pd) = count(Part::Decoder);
        let (ns, ps) = count(Part::Sam);
        let (nc, pc) = count(Part::Clip);
        let (np, pp) = count(Part::Projector);
        // Spec §6 parameter table.
        assert_eq!(pd, 2_934_734_080);
        assert_eq!(ps, 95_569_152);
        assert_eq!(pc, 303_177_728);
        assert_eq!(pp, 2_625_280);
        assert_eq!(pd + ps + pc + pp, 3_336_106_240);
        assert_eq!(nd + ns + nc + np, 2_710);
        // Spot checks of names/shapes from §6.
        let all: HashMap<String, Vec<i64>> = Part::ALL
            .iter()
            .flat_map(|&p| expected_tensors(&cfg, p))
            .map(|t| (t.name, t.shape))
            .collect();
        assert_eq!(
            all["model.sam_model.blocks.2.attn.rel_pos_h"],
            vec![127, 64]
        );
        assert_eq!(all["model.sam_model.blocks.3.attn.rel_pos_w"], vec![27, 64]);
        assert_eq!(
            all["model.layers.11.mlp.experts.63.down_proj.weight"],
            vec![1280, 896]
        );
        assert_eq!(
            all["model.layers.1.mlp.shared_experts.gate_proj.weight"],
            vec![1792, 1280]
        );
        assert_eq!(all["model.layers.0.mlp.down_proj.weight"], vec![1280, 6848]);
        assert_eq!(all["model.sam_model.net_3.weight"], vec![1024, 512, 3, 3]);
        assert_eq!(all["model.vision_model.pre_layrnorm.bias"], vec![1024]);
        assert!(all.contains_key("model.view_seperator"));
        assert!(!all.contains_key("model.layers.0.mlp.gate.weight"));
    }

    #[test]
    fn synthetic_round_trip_and_error_listing() {
        let cfg = ArchConfig::tiny();
        let w = Weights::synthetic(&cfg, &Part::ALL, 7, Device::Cpu, Kind::Float).unwrap();
        let dir = temp_dir("weights");
        let file = dir.join("model-00001-of-000001.safetensors");
        w.write_safetensors(&file).unwrap();
        let back = Weights::load(&dir, &cfg, &Part::ALL, Device::Cpu, Kind::Float).unwrap();
        assert_eq!(back.names(), w.names());
        for n in w.names() {
            assert!(
                back.get(n).unwrap().equal(&w.get(n).unwrap()),
                "{n} differs"
            );
        }
        // Decoder-only loading ignores the other parts' tensors.
        let dec =
            Weights::load(&file, &cfg, &[Part::Decoder], Device::Cpu, Kind::BFloat16).unwrap();
        assert_eq!(dec.len(), expected_tensors(&cfg, Part::Decoder).len());
        assert_eq!(dec.get("lm_head.weight").unwrap().kind(), Kind::BFloat16);

        // Break it: drop one tensor, reshape another, add a stray one.
        let mut named: Vec<(String, Tensor)> = w
            .names()
            .into_iter()
            .map(|n| (n.to_string(), w.get(n).unwrap()))
            .collect();
        named.retain(|(n, _)| n != "model.layers.1.mlp.experts.3.up_proj.weight");
        for (n, t) in named.iter_mut() {
            if n == "model.sam_model.blocks.0.attn.rel_pos_h" {
                *t = Tensor::zeros([5, 16], (Kind::Float, Device::Cpu));
            }
        }
        named.push((
            "model.sam_model.blocks.0.attn.typo".into(),
            Tensor::zeros([2], (Kind::Float, Device::Cpu)),
        ));
        let bad = dir.join("bad.safetensors");
        Tensor::write_safetensors(&named, &bad).unwrap();
        let err = format!(
            "{:#}",
            Weights::load(&bad, &cfg, &Part::ALL, Device::Cpu, Kind::Float).unwrap_err()
        );
        assert!(
            err.contains("1 missing")
                && err.contains("model.layers.1.mlp.experts.3.up_proj.weight"),
            "{err}"
        );
        assert!(
            err.contains("1 with a wrong shape")
                && err.contains("rel_pos_h: file [5, 16], expected [7, 16]"),
            "{err}"
        );
        assert!(
            err.contains("1 unexpected") && err.contains("attn.typo"),
            "{err}"
        );
        // SAM-only load of the broken file only complains about SAM.
        let err = format!(
            "{:#}",
            Weights::load(&bad, &cfg, &[Part::Sam], Device::Cpu, Kind::Float).unwrap_err()
        );
        assert!(!err.contains("missing"), "{err}");
    }

    #[test]
    fn sharded_index_is_followed() {
        let cfg = ArchConfig::tiny();
        let w = Weights::synthetic(
            &cfg,
            &[Part::Projector, Part::Sam],
            1,
            Device::Cpu,
            Kind::Float,
        )
        .unwrap();
        let dir = temp_dir("sharded");
        let names = w.names();
        let (a, b) = names.split_at(names.len() / 2);
        let mut map = serde_json::Map::new();
        for (file, part) in [
            ("model-00001-of-00002.safetensors", a),
            ("model-00002-of-00002.safetensors", b),
        ] {
            let named: Vec<(&str, Tensor)> = part.iter().map(|n| (*n, w.get(n).unwrap())).collect();
            Tensor::write_safetensors(&named, dir.join(file)).unwrap();
            for n in part {
                map.insert(n.to_string(), file.into());
            }
        }
        let index = serde_json::json!({"metadata": {}, "weight_map": map});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
        let back = Weights::load(
            &dir,
            &cfg,
            &[Part::Projector, Part::Sam],
            Device::Cpu,
            Kind::Float,
        )
        .unwrap();
        assert_eq!(back.len(), w.len());
    }
}
