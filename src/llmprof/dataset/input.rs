//! One input a run reads, as the workload hands it to a model, and decoding a page image
//! (EXIF orientation applied, RGB).
use anyhow::{ensure, Context, Result};
use image::{DynamicImage, ImageDecoder, ImageReader, RgbImage};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct InputItem {
    pub path: PathBuf,
    /// File stem, naming per-input outputs.
    pub name: String,
    pub bytes: u64,
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
        Ok(InputItem { path, name, bytes })
    }
}

/// Decodes an image file, applies its EXIF orientation and converts it to RGB.
pub fn load_rgb(path: &Path) -> Result<RgbImage> {
    let ctx = || format!("cannot read image {}", path.display());
    let mut decoder = ImageReader::open(path)
        .with_context(ctx)?
        .with_guessed_format()
        .with_context(ctx)?
        .into_decoder()
        .with_context(ctx)?;
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
