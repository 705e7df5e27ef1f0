//! Image → model views (docs/deepseek-ocr.md §4): EXIF transpose, RGB, resolution modes (tiny/small/base/large/
//! gundam), PIL-style pad/stretch, Gundam dynamic tiling, normalisation to [−1, 1].

use anyhow::{ensure, Context, Result};
use image::{
    imageops, imageops::FilterType, DynamicImage, ImageDecoder, ImageReader, Rgb, RgbImage,
};
use serde::{Deserialize, Serialize};
use std::path::Path;
use tch::{Kind, Tensor};

/// Resolution modes of the official demos (docs/deepseek-ocr.md §4 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Tiny,
    Small,
    Base,
    Large,
    Gundam,
}

/// Resolved preprocessing parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessConfig {
    /// Global-view side in crop mode (1024 in Gundam).
    pub base_size: u32,
    /// Side of the single view (non-crop) or of each tile (crop mode).
    pub image_size: u32,
    /// Dynamic tiling on (Gundam).
    pub crop_mode: bool,
    /// Tile-count bounds for dynamic tiling (HF `infer()`: 2..9; vLLM scripts: max 6).
    pub min_crops: u32,
    pub max_crops: u32,
}

impl PreprocessConfig {
    pub fn from_mode(mode: Mode) -> Self {
        let (base_size, image_size, crop_mode) = match mode {
            Mode::Tiny => (512, 512, false),
            Mode::Small => (640, 640, false),
            Mode::Base => (1024, 1024, false),
            Mode::Large => (1280, 1280, false),
            Mode::Gundam => (1024, 640, true),
        };
        PreprocessConfig {
            base_size,
            image_size,
            crop_mode,
            min_crops: 2,
            max_crops: 9,
        }
    }
}

/// Pad colour: int(0.5·255) per channel (docs/deepseek-ocr.md §4).
pub const PAD_RGB: [u8; 3] = [127, 127, 127];
/// Stretching threshold of the HF code (non-crop mode stretches when image_size ≤ 640) and the
/// "no tiles" bound of Gundam mode is `image_size` itself.
pub const STRETCH_MAX: u32 = 640;

/// Tile grid of a Gundam image: `cols` (i) × `rows` (j); 1×1 means no tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileGrid {
    pub cols: u32,
    pub rows: u32,
}

impl TileGrid {
    pub fn has_tiles(&self) -> bool {
        self.cols > 1 || self.rows > 1
    }
}

/// Views of one image, normalised, fp32 on the CPU.
#[derive(Debug)]
pub struct PreparedImage {
    /// [1,3,S,S]: the single view (non-crop) or the padded global view (crop mode).
    pub global: Tensor,
    /// [rows·cols,3,Si,Si], tiles row-major; None without tiles.
    pub tiles: Option<Tensor>,
    pub grid: TileGrid,
    /// Width and height of the image after EXIF transpose.
    pub original_size: (u32, u32),
}

/// Decodes an image file, applies its EXIF orientation and converts it to RGB.
pub fn load_image(path: &Path) -> Result<RgbImage> {
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

/// Python's round() (half to even), as used by PIL `ImageOps.pad`.
fn py_round(x: f64) -> i64 {
    x.round_ties_even() as i64
}

/// Bicubic resize (Catmull-Rom, a = −0.5, antialiased on downscale like PIL; not bit-exact).
fn resize(img: &RgbImage, w: u32, h: u32) -> RgbImage {
    if img.width() == w && img.height() == h {
        return img.clone();
    }
    imageops::resize(img, w, h, FilterType::CatmullRom)
}

/// PIL `ImageOps.pad(img, (size, size), color=PAD)`: fit with aspect ratio kept, centred.
pub fn pad_to_square(img: &RgbImage, size: u32) -> RgbImage {
    let (w, h) = (img.width() as f64, img.height() as f64);
    if img.width() == img.height() {
        return resize(img, size, size);
    }
    let mut out = RgbImage::from_pixel(size, size, Rgb(PAD_RGB));
    if w > h {
        let nh = py_round(h / w * size as f64).max(1) as u32;
        let r = resize(img, size, nh);
        let y = py_round((size as f64 - nh as f64) * 0.5);
        imageops::replace(&mut out, &r, 0, y);
    } else {
        let nw = py_round(w / h * size as f64).max(1) as u32;
        let r = resize(img, nw, size);
        let x = py_round((size as f64 - nw as f64) * 0.5);
        imageops::replace(&mut out, &r, x, 0);
    }
    out
}

/// Gundam grid choice (`dynamic_preprocess` / `find_closest_aspect_ratio`): grids (i cols, j rows)
/// with min ≤ i·j ≤ max sorted by i·j, closest i/j to W/H wins; on an exact tie a later grid wins
/// only if W·H > 0.5·tile²·i·j. UNCERTAIN: Python sorts a *set*, so the order among grids of the
/// same product follows set iteration; we use (i, j) ascending. It only matters on exact ties.
pub fn select_grid(width: u32, height: u32, tile: u32, min_num: u32, max_num: u32) -> TileGrid {
    let aspect = width as f64 / height as f64;
    let mut ratios: Vec<(u32, u32)> = Vec::new();
    for i in 1..=max_num {
        for j in 1..=max_num {
            if i * j >= min_num && i * j <= max_num {
                ratios.push((i, j));
            }
        }
    }
    ratios.sort_by_key(|&(i, j)| (i * j, i, j));
    let area = width as f64 * height as f64;
    let mut best = (1, 1);
    let mut best_diff = f64::INFINITY;
    for (i, j) in ratios {
        let diff = (aspect - i as f64 / j as f64).abs();
        if diff < best_diff {
            best_diff = diff;
            best = (i, j);
        } else if diff == best_diff && area > 0.5 * (tile as f64) * (tile as f64) * (i * j) as f64 {
            best = (i, j);
        }
    }
    TileGrid {
        cols: best.0,
        rows: best.1,
    }
}

/// RGB image → [1,3,H,W] fp32, (x/255 − 0.5)/0.5.
pub fn to_tensor(img: &RgbImage) -> Result<Tensor> {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let t = Tensor::f_from_slice(img.as_raw())?
        .f_view([h, w, 3])?
        .f_permute([2, 0, 1])?; // (3, h, w) u8
    Ok(t.f_to_kind(Kind::Float)?
        .f_div_scalar(255.0)?
        .f_sub_scalar(0.5)?
        .f_div_scalar(0.5)?
        .f_unsqueeze(0)?)
}

/// Builds the views of one image for `cfg` (docs/deepseek-ocr.md §4).
pub fn preprocess(img: &RgbImage, cfg: &PreprocessConfig) -> Result<PreparedImage> {
    let (w, h) = (img.width(), img.height());
    ensure!(w > 0 && h > 0, "image has zero size");
    if !cfg.crop_mode {
        let s = cfg.image_size;
        let view = if s <= STRETCH_MAX {
            resize(img, s, s)
        } else {
            pad_to_square(img, s)
        };
        return Ok(PreparedImage {
            global: to_tensor(&view)?,
            tiles: None,
            grid: TileGrid { cols: 1, rows: 1 },
            original_size: (w, h),
        });
    }
    let global = to_tensor(&pad_to_square(img, cfg.base_size))?;
    let t = cfg.image_size;
    // HF hard-codes 640 here; with the released configs it equals image_size.
    let grid = if w <= t && h <= t {
        TileGrid { cols: 1, rows: 1 }
    } else {
        select_grid(w, h, t, cfg.min_crops, cfg.max_crops)
    };
    let tiles = if grid.has_tiles() {
        let big = resize(img, t * grid.cols, t * grid.rows);
        let mut v = Vec::new();
        for r in 0..grid.rows {
            for c in 0..grid.cols {
                let tile = imageops::crop_imm(&big, c * t, r * t, t, t).to_image();
                v.push(to_tensor(&tile)?);
            }
        }
        Some(Tensor::f_cat(&v, 0)?)
    } else {
        None
    };
    Ok(PreparedImage {
        global,
        tiles,
        grid,
        original_size: (w, h),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_from_spec_examples() {
        // Portrait page 1240x1754 (A4 at 150 dpi, aspect 0.707) → 2 wide × 3 tall.
        assert_eq!(
            select_grid(1240, 1754, 640, 2, 9),
            TileGrid { cols: 2, rows: 3 }
        );
        assert_eq!(
            select_grid(1300, 650, 640, 2, 9),
            TileGrid { cols: 2, rows: 1 }
        );
        assert_eq!(
            select_grid(650, 1300, 640, 2, 9),
            TileGrid { cols: 1, rows: 2 }
        );
        // Exact tie 2:1 vs 4:2: the larger grid wins when W·H > 0.5·640²·8.
        assert_eq!(
            select_grid(2000, 1000, 640, 2, 9),
            TileGrid { cols: 4, rows: 2 }
        );
        // Square: (1,1) not allowed (min 2); 2x2 ties with nothing closer; big area picks 3x3.
        assert_eq!(
            select_grid(700, 700, 640, 2, 9),
            TileGrid { cols: 2, rows: 2 }
        );
        assert_eq!(
            select_grid(3000, 3000, 640, 2, 9),
            TileGrid { cols: 3, rows: 3 }
        );
        // vLLM's max 6 caps it.
        assert_eq!(
            select_grid(3000, 3000, 640, 2, 6),
            TileGrid { cols: 2, rows: 2 }
        );
    }

    #[test]
    fn pad_centres_with_grey() {
        let img = RgbImage::from_pixel(40, 20, Rgb([255, 0, 0]));
        let out = pad_to_square(&img, 64);
        // new height round(20/40·64) = 32, offset round(16) = 16.
        assert_eq!(out.get_pixel(0, 0).0, PAD_RGB);
        assert_eq!(out.get_pixel(0, 15).0, PAD_RGB);
        assert_eq!(out.get_pixel(32, 16).0, [255, 0, 0]);
        assert_eq!(out.get_pixel(32, 47).0, [255, 0, 0]);
        assert_eq!(out.get_pixel(32, 48).0, PAD_RGB);
        let t = to_tensor(&out).unwrap();
        let v = t.double_value(&[0, 0, 0, 0]);
        assert!((v - (127.0 / 255.0 - 0.5) / 0.5).abs() < 1e-6 && v < 0.0);
    }

    #[test]
    fn modes_produce_expected_views() {
        let img = RgbImage::from_pixel(1300, 1800, Rgb([10, 20, 30]));
        let p = preprocess(&img, &PreprocessConfig::from_mode(Mode::Gundam)).unwrap();
        assert_eq!(p.global.size(), vec![1, 3, 1024, 1024]);
        assert_eq!(p.grid, TileGrid { cols: 2, rows: 3 });
        assert_eq!(p.tiles.as_ref().unwrap().size(), vec![6, 3, 640, 640]);
        let small = RgbImage::from_pixel(600, 300, Rgb([10, 20, 30]));
        let p = preprocess(&small, &PreprocessConfig::from_mode(Mode::Gundam)).unwrap();
        assert!(p.tiles.is_none() && !p.grid.has_tiles());
        let p = preprocess(&small, &PreprocessConfig::from_mode(Mode::Tiny)).unwrap();
        assert_eq!(p.global.size(), vec![1, 3, 512, 512]); // stretched, no pad
        assert!((p.global.double_value(&[0, 0, 0, 0]) - (10.0 / 255.0 - 0.5) / 0.5).abs() < 1e-6);
        let p = preprocess(&small, &PreprocessConfig::from_mode(Mode::Large)).unwrap();
        assert_eq!(p.global.size(), vec![1, 3, 1280, 1280]);
    }

    #[test]
    fn unreadable_image_names_the_file() {
        let dir = crate::models::deepseek_ocr::test_util::temp_dir("img");
        let p = dir.join("broken.png");
        std::fs::write(&p, b"not an image").unwrap();
        let e = format!("{:#}", load_image(&p).unwrap_err());
        assert!(e.contains("broken.png"), "{e}");
        let e = format!("{:#}", load_image(&dir.join("absent.jpg")).unwrap_err());
        assert!(e.contains("absent.jpg"), "{e}");
    }

    #[test]
    fn png_round_trip_loads_rgb() {
        let dir = crate::models::deepseek_ocr::test_util::temp_dir("png");
        let p = dir.join("a.png");
        image::GrayImage::from_pixel(3, 2, image::Luma([200]))
            .save(&p)
            .unwrap();
        let img = load_image(&p).unwrap();
        assert_eq!((img.width(), img.height()), (3, 2));
        assert_eq!(img.get_pixel(0, 0).0, [200, 200, 200]);
    }
}
