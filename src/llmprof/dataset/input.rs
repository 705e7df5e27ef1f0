//! One input a run reads, as the workload hands it to a model, and decoding a page image
//! (EXIF orientation applied, RGB) within [`ImageLimits`] checked from the header.
use super::file_kind::regular_file;
use super::image_limits::ImageLimits;
use anyhow::{bail, ensure, Context, Result};
use image::{DynamicImage, ImageDecoder, ImageReader, RgbImage};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct InputItem {
    pub path: PathBuf,
    /// File stem, naming per-input outputs.
    pub name: String,
    pub bytes: u64,
    /// A text request (text datasets); `None` for a file the model reads (a page image).
    pub text: Option<TextInput>,
}

/// What a text dataset asks a text model to run.
#[derive(Debug, Clone, PartialEq)]
pub enum TextInput {
    /// A prompt to tokenize (with the checkpoint's chat template when it has one); the output
    /// is capped at `output_len` tokens when given, else at `infer.max_new_tokens`.
    Prompt {
        text: String,
        output_len: Option<usize>,
    },
    /// vLLM's random dataset: `input_len` ids `(offset + index + j) mod vocab`, j < input_len,
    /// and at most `output_len` new tokens.
    RandomTokens {
        input_len: usize,
        output_len: usize,
        offset: u64,
        index: usize,
    },
}

impl TextInput {
    /// The output length this request asks for, if it sets one.
    pub fn output_len(&self) -> Option<usize> {
        match self {
            TextInput::Prompt { output_len, .. } => *output_len,
            TextInput::RandomTokens { output_len, .. } => Some(*output_len),
        }
    }
}

impl InputItem {
    /// The item for an existing file.
    pub fn from_path(path: PathBuf) -> Result<Self> {
        let bytes = std::fs::metadata(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        Ok(InputItem {
            path,
            name,
            bytes,
            text: None,
        })
    }
}

/// Decodes an image file, applies its EXIF orientation and converts it to RGB, within the
/// default [`ImageLimits`] (PIL's). A run should use [`load_rgb_limited`] with
/// `ImageLimits::from_spec(&spec.dataset)`.
pub fn load_rgb(path: &Path) -> Result<RgbImage> {
    load_rgb_limited(path, &ImageLimits::default())
}

/// [`load_rgb`] within `limits`: the size is read from the header and checked before any pixel
/// buffer is allocated; a path that is not a regular file (FIFO, device, symlink loop) is refused
/// before it is opened.
pub fn load_rgb_limited(path: &Path, limits: &ImageLimits) -> Result<RgbImage> {
    if let Err(s) = regular_file(path) {
        bail!("cannot read image {s}: only regular files are decoded");
    }
    let ctx = || format!("cannot read image {}", path.display());
    let mut reader = ImageReader::open(path)
        .with_context(ctx)?
        .with_guessed_format()
        .with_context(ctx)?;
    reader.limits(limits.decoder_limits());
    let mut decoder = reader.into_decoder().with_context(|| {
        format!(
            "cannot read image {} (within dataset.max_image_pixels={}, dataset.max_image_bytes={})",
            path.display(),
            limits.max_pixels,
            limits.max_bytes
        )
    })?;
    let (width, height) = decoder.dimensions();
    limits.check(path, width, height, decoder.total_bytes())?;
    let orientation = decoder.orientation().with_context(ctx)?;
    let mut img = DynamicImage::from_decoder(decoder).with_context(ctx)?;
    img.apply_orientation(orientation);
    ensure!(
        img.width() > 0 && img.height() > 0,
        "image {} has zero size",
        path.display()
    );
    Ok(img.to_rgb8())
}
