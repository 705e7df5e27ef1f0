//! The pages a run processes: dataset listing and sampling, then preprocessing and prompt ids
//! per page, and `inputs.yaml` (what each page became: size, mode, crop grid, token counts).
use crate::models::deepseek_ocr::preprocess::{load_image, preprocess, PreparedImage};
use crate::models::deepseek_ocr::prompt::{build_prompt_ids, image_token_count};
use super::setup::Workload;
use anyhow::{Context, Result};
use llmprof::config::{Map, Node};
use llmprof::spec::RunSpec;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct InputPage {
    pub path: PathBuf,
    /// File stem, used to name per-page outputs.
    pub name: String,
    pub bytes: u64,
}

pub struct Prepared {
    pub page: InputPage,
    pub image: PreparedImage,
    pub prompt_ids: Vec<i64>,
    pub image_tokens: usize,
}

/// List the dataset's images and apply the sampling keys.
pub fn sample_pages(spec: &RunSpec) -> Result<Vec<InputPage>> {
    let picked = llmprof::dataset::plan(&spec.dataset, &base_dir(&spec.dataset.root))?;
    picked
        .into_iter()
        .map(|r| {
            let bytes = std::fs::metadata(&r.path)
                .with_context(|| format!("reading {}", r.path.display()))?
                .len();
            Ok(InputPage {
                name: r
                    .path
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default(),
                path: r.path,
                bytes,
            })
        })
        .collect()
}

/// Folder that relative data paths are read from: the current directory when the path exists
/// there, else the repository that holds the config (`LLMPROF_BASE_DIR`, set by `llmprof`).
pub fn base_dir(relative: &str) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    if Path::new(relative).is_absolute() || cwd.join(relative).exists() {
        return cwd;
    }
    std::env::var_os("LLMPROF_BASE_DIR")
        .map(PathBuf::from)
        .unwrap_or(cwd)
}

pub fn prepare_all(w: &Workload, spec: &RunSpec, pages: &[InputPage]) -> Result<Vec<Prepared>> {
    pages
        .iter()
        .map(|page| {
            let img = load_image(&page.path)?;
            let image = preprocess(&img, &w.preprocess)
                .with_context(|| format!("preprocessing {}", page.path.display()))?;
            let image_tokens = image_token_count(&w.preprocess, image.grid);
            let prompt_ids =
                build_prompt_ids(w.tokenizer.as_ref(), &spec.infer.prompt, &[image_tokens])?;
            Ok(Prepared {
                page: page.clone(),
                image,
                prompt_ids,
                image_tokens,
            })
        })
        .collect()
}

/// Preprocess every page and record them in `inputs.yaml` (stage 1 and infer).
pub fn prepare_and_record(
    w: &Workload,
    spec: &RunSpec,
    pages: &[InputPage],
    run_dir: &Path,
) -> Result<Vec<Prepared>> {
    let prepared = prepare_all(w, spec, pages)?;
    write_inputs_yaml(run_dir, &prepared, spec.model.preprocess.mode.name())?;
    Ok(prepared)
}

/// `inputs.yaml`: a list with, per input, path, bytes, width, height, mode, crop_grid [cols, rows],
/// image_tokens, prompt_tokens.
pub fn write_inputs_yaml(run_dir: &Path, prepared: &[Prepared], mode: &str) -> Result<()> {
    let items: Vec<Node> = prepared
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("path".into(), Node::Str(p.page.path.display().to_string()));
            m.insert("bytes".into(), Node::Int(p.page.bytes as i64));
            m.insert("width".into(), Node::Int(p.image.original_size.0 as i64));
            m.insert("height".into(), Node::Int(p.image.original_size.1 as i64));
            m.insert("mode".into(), Node::Str(mode.to_string()));
            m.insert(
                "crop_grid".into(),
                Node::List(vec![
                    Node::Int(p.image.grid.cols as i64),
                    Node::Int(p.image.grid.rows as i64),
                ]),
            );
            m.insert("image_tokens".into(), Node::Int(p.image_tokens as i64));
            m.insert("prompt_tokens".into(), Node::Int(p.prompt_ids.len() as i64));
            Node::Map(m)
        })
        .collect();
    let path = run_dir.join("inputs.yaml");
    std::fs::write(&path, Node::List(items).to_yaml())
        .with_context(|| format!("writing {}", path.display()))
}
