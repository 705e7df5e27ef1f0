//! Tensors by official checkpoint name: reading a safetensors checkpoint (one file or shards
//! with `model.safetensors.index.json`) checked against the layout a family expects (missing,
//! wrong-shaped, unexpected and unsupported-dtype tensors reported together, each by name), and
//! [`WeightPath`], the `nn::Path`-like view the layers load from.
use super::safetensors::{checkpoint_files, kind_of_safetensors_dtype, read_header, FileEntry};
use anyhow::{bail, ensure, Context, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Display;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use tch::{Device, Kind, Tensor};

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

/// Reads `wanted` from the checkpoint at `path` onto `device` as `kind`. Tensors in the files
/// that are neither wanted nor `known` (another part of the same model) are unexpected.
/// `layout` names the model in the error.
pub fn read_checked(
    path: &Path,
    wanted: &[TensorSpec],
    known: &dyn Fn(&str) -> bool,
    layout: &str,
    device: Device,
    kind: Kind,
) -> Result<HashMap<String, Tensor>> {
    read_checked_kept(path, wanted, (known, layout), (device, kind), &|_, t| Ok(t))
}

/// [`read_checked`] with `keep(name, tensor)` applied to each tensor as it is read, on the CPU
/// before it moves to `device` (a tensor-parallel rank keeps its slice): beside what is kept,
/// host memory holds one whole tensor and the read buffer (the size of the largest tensor), the
/// device nothing more than the kept slices.
pub fn read_checked_kept(
    path: &Path,
    wanted: &[TensorSpec],
    (known, layout): (&dyn Fn(&str) -> bool, &str),
    (device, kind): (Device, Kind),
    keep: &dyn Fn(&str, Tensor) -> Result<Tensor>,
) -> Result<HashMap<String, Tensor>> {
    let mut entries: HashMap<String, FileEntry> = HashMap::new();
    for file in checkpoint_files(path)? {
        for (name, e) in read_header(&file)? {
            entries.insert(name, e);
        }
    }
    let wanted_names: std::collections::HashSet<&str> =
        wanted.iter().map(|t| t.name.as_str()).collect();
    let mut unexpected: Vec<String> = entries
        .keys()
        .filter(|n| !wanted_names.contains(n.as_str()) && !known(n))
        .cloned()
        .collect();
    unexpected.sort();
    let mut wanted: Vec<&TensorSpec> = wanted.iter().collect();
    wanted.sort_by(|a, b| a.name.cmp(&b.name));
    let (mut missing, mut wrong, mut bad_dtype) = (Vec::new(), Vec::new(), Vec::new());
    for t in &wanted {
        match entries.get(&t.name) {
            None => missing.push(t.name.clone()),
            Some(e) if e.shape != t.shape => wrong.push(format!(
                "{}: file {:?}, expected {:?}",
                t.name, e.shape, t.shape
            )),
            Some(e) if kind_of_safetensors_dtype(&e.dtype).is_none() => {
                bad_dtype.push(format!("{}: {}", t.name, e.dtype))
            }
            Some(_) => {}
        }
    }
    if !(missing.is_empty() && wrong.is_empty() && unexpected.is_empty() && bad_dtype.is_empty()) {
        let mut msg = format!(
            "checkpoint {} does not match the {layout} layout:",
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
        section("unexpected", &unexpected);
        section("with an unsupported dtype", &bad_dtype);
        bail!(msg);
    }
    let mut tensors = HashMap::with_capacity(wanted.len());
    let mut open: Option<(PathBuf, std::fs::File)> = None;
    let mut buf = Vec::new();
    for t in wanted {
        let e = &entries[&t.name];
        if open.as_ref().map(|(p, _)| p != &e.file).unwrap_or(true) {
            let f = llmprof::dataset::file_kind::open_regular(&e.file)
                .with_context(|| format!("opening {}", e.file.display()))?;
            open = Some((e.file.clone(), f));
        }
        let (_, f) = open.as_mut().expect("file opened just above");
        let src_kind = kind_of_safetensors_dtype(&e.dtype).expect("dtype checked above");
        let nbytes = (e.end - e.begin) as usize;
        ensure!(
            nbytes == t.numel() as usize * src_kind.elt_size_in_bytes(),
            "{}: byte range {nbytes} does not match shape {:?} of {}",
            t.name,
            t.shape,
            e.dtype
        );
        buf.resize(nbytes, 0);
        f.seek(SeekFrom::Start(e.begin))?;
        f.read_exact(&mut buf)
            .with_context(|| format!("reading tensor {} from {}", t.name, e.file.display()))?;
        let x = Tensor::f_from_data_size(&buf, &t.shape, src_kind)
            .with_context(|| format!("building tensor {}", t.name))?;
        let x = keep(&t.name, x)?.f_to_device(device)?.f_to_kind(kind)?;
        crate::heartbeat::beat(|| format!("reading the weights ({})", t.name));
        tensors.insert(t.name.clone(), x);
    }
    Ok(tensors)
}

/// A prefix into a set of named tensors, mirroring `nn::Path`:
/// `vs.sub("layers").sub(3).get("input_layernorm.weight")`.
#[derive(Clone)]
pub struct WeightPath<'a> {
    tensors: Store<'a>,
    device: Device,
    kind: Kind,
    prefix: String,
}

/// The tensors a path reads: borrowed (every read a storage-sharing handle; the caller keeps the
/// set), or handed over, so that [`WeightPath::take`] removes a tensor as the model takes it and
/// its memory goes with the last handle (a weight the model copies, as experts stacked per layer
/// or q/k/v concatenated, is then never held twice across the whole model).
#[derive(Clone, Copy)]
enum Store<'a> {
    Shared(&'a HashMap<String, Tensor>),
    HandedOver(&'a RefCell<HashMap<String, Tensor>>),
}

impl<'a> WeightPath<'a> {
    /// The root of `tensors` (all on `device` as `kind`).
    pub fn root(tensors: &'a HashMap<String, Tensor>, device: Device, kind: Kind) -> Self {
        WeightPath {
            tensors: Store::Shared(tensors),
            device,
            kind,
            prefix: String::new(),
        }
    }

    /// The root of tensors handed over to the model being built: [`WeightPath::take`] removes
    /// what it returns.
    pub fn handed_over(
        tensors: &'a RefCell<HashMap<String, Tensor>>,
        device: Device,
        kind: Kind,
    ) -> Self {
        WeightPath {
            tensors: Store::HandedOver(tensors),
            device,
            kind,
            prefix: String::new(),
        }
    }

    /// Child path `prefix.name`.
    pub fn sub(&self, name: impl Display) -> WeightPath<'a> {
        WeightPath {
            prefix: self.full(&name.to_string()),
            ..self.clone()
        }
    }

    fn full(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }

    /// A storage-sharing handle to tensor `prefix.name`.
    pub fn get(&self, name: &str) -> Result<Tensor> {
        let full = self.full(name);
        let found = match self.tensors {
            Store::Shared(m) => m.get(&full).map(Tensor::shallow_clone),
            Store::HandedOver(m) => m.borrow().get(&full).map(Tensor::shallow_clone),
        };
        found.with_context(|| self.missing(&full))
    }

    /// Tensor `prefix.name` for a weight read once: out of a handed-over set (so the set no
    /// longer holds it), else as [`WeightPath::get`].
    pub fn take(&self, name: &str) -> Result<Tensor> {
        let full = self.full(name);
        let found = match self.tensors {
            Store::Shared(m) => m.get(&full).map(Tensor::shallow_clone),
            Store::HandedOver(m) => m.borrow_mut().remove(&full),
        };
        found.with_context(|| match self.tensors {
            Store::Shared(_) => self.missing(&full),
            Store::HandedOver(_) => format!("{} (or the model took it twice)", self.missing(&full)),
        })
    }

    fn missing(&self, full: &str) -> String {
        format!("weight `{full}` was not loaded")
    }

    /// Whether tensor `prefix.name` exists.
    pub fn has(&self, name: &str) -> bool {
        let full = self.full(name);
        match self.tensors {
            Store::Shared(m) => m.contains_key(&full),
            Store::HandedOver(m) => m.borrow().contains_key(&full),
        }
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }
}

impl<'a, T: Display> std::ops::Div<T> for &WeightPath<'a> {
    type Output = WeightPath<'a>;
    fn div(self, rhs: T) -> WeightPath<'a> {
        self.sub(rhs)
    }
}
