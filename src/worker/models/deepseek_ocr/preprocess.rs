//! Image → model views (docs/deepseek-ocr.md §4): EXIF transpose, RGB, resolution modes (tiny/small/base/large/
//! gundam), PIL-style pad/stretch, Gundam dynamic tiling; views stay uint8 until [`upload`]
//! normalises them to [−1, 1] (on the CPU in fp32, or on the GPU after a uint8 copy).

use anyhow::{ensure, Result};
use image::{imageops, imageops::FilterType, Rgb, RgbImage};
use llmprof::model::deepseek_ocr::views::{
    tile_grid, PreprocessConfig, TileGrid, PAD_RGB, STRETCH_MAX,
};
use tch::{Device, Kind, Tensor};

/// Views of one image: uint8 RGB on the CPU (channels-last memory), pinned once
/// [`PreparedImage::pin`] ran; or fp32 pixels already normalised (read by `llmprof debug
/// vision --pixels`). [`upload`] takes either.
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

pub use llmprof::dataset::load_rgb as load_image;

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

/// RGB image → [1,3,H,W] uint8 over the image's HWC buffer (channels-last strides).
pub fn to_pixels(img: &RgbImage) -> Result<Tensor> {
    let (w, h) = (img.width() as i64, img.height() as i64);
    Ok(Tensor::f_from_slice(img.as_raw())?
        .f_view([h, w, 3])?
        .f_permute([2, 0, 1])? // (3, h, w)
        .f_unsqueeze(0)?)
}

/// Pixels → fp32 model input on the tensor's device, strides kept: uint8 views become
/// (x/255 − 0.5)/0.5; float pixels are taken as already normalised (`llmprof debug vision
/// --pixels` reads them from a file).
pub fn normalise(pixels: &Tensor) -> Result<Tensor> {
    if pixels.kind() != Kind::Uint8 {
        return Ok(pixels.f_to_kind(Kind::Float)?);
    }
    Ok(pixels
        .f_to_kind(Kind::Float)?
        .f_div_scalar(255.0)?
        .f_sub_scalar(0.5)?
        .f_div_scalar(0.5)?)
}

/// uint8 pixels → `device`, for [`model_input`]. With `on_device` and a CUDA `device`, the
/// uint8 tensor itself (copied without blocking the host when it is pinned), normalised later
/// on the GPU, inside the vision pass's CUDA graph where there is one; otherwise normalised in
/// fp32 on the CPU and the fp32 copied.
pub fn upload(pixels: &Tensor, device: Device, on_device: bool) -> Result<Tensor> {
    if on_device && device.is_cuda() {
        Ok(pixels.f_to_device_(device, pixels.kind(), true, false)?)
    } else {
        Ok(normalise(pixels)?.f_to_device(device)?)
    }
}

/// Uploaded pixels ([`upload`]) → the model's input in `kind`.
pub fn model_input(uploaded: &Tensor, kind: Kind) -> Result<Tensor> {
    Ok(normalise(uploaded)?.f_to_kind(kind)?)
}

impl PreparedImage {
    /// Normalises the views to fp32 on the CPU now (data-loading time), so that [`upload`] only
    /// copies them: what every run did before `model.optim.vision_uint8_upload`.
    pub fn normalise_on_cpu(&mut self) -> Result<()> {
        self.map_views(normalise)
    }

    /// Moves the views into page-locked memory so that [`upload`] copies them asynchronously
    /// (what a data loader's `pin_memory` does, outside the timed regions).
    pub fn pin(&mut self) -> Result<()> {
        self.map_views(|t| Ok(crate::ffi::host_memory::pinned(t)?))
    }

    /// Replaces the global view and the tiles by `f` of each.
    fn map_views(&mut self, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<()> {
        self.global = f(&self.global)?;
        if let Some(t) = &self.tiles {
            self.tiles = Some(f(t)?);
        }
        Ok(())
    }
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
            global: to_pixels(&view)?,
            tiles: None,
            grid: TileGrid { cols: 1, rows: 1 },
            original_size: (w, h),
        });
    }
    let global = to_pixels(&pad_to_square(img, cfg.base_size))?;
    let t = cfg.image_size;
    let grid = tile_grid(w, h, cfg);
    let tiles = if grid.has_tiles() {
        let big = resize(img, t * grid.cols, t * grid.rows);
        let mut v = Vec::new();
        for r in 0..grid.rows {
            for c in 0..grid.cols {
                let tile = imageops::crop_imm(&big, c * t, r * t, t, t).to_image();
                v.push(to_pixels(&tile)?);
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
    use llmprof::model::deepseek_ocr::views::Mode;

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
        let t = normalise(&to_pixels(&out).unwrap()).unwrap();
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
        let first = normalise(&p.global).unwrap().double_value(&[0, 0, 0, 0]);
        assert!((first - (10.0 / 255.0 - 0.5) / 0.5).abs() < 1e-6);
        let p = preprocess(&small, &PreprocessConfig::from_mode(Mode::Large)).unwrap();
        assert_eq!(p.global.size(), vec![1, 3, 1280, 1280]);
    }

    #[test]
    fn views_stay_uint8_until_upload_normalises_them() {
        let img = RgbImage::from_fn(64, 48, |x, y| Rgb([x as u8, y as u8, (x + y) as u8]));
        let p = preprocess(&img, &PreprocessConfig::from_mode(Mode::Tiny)).unwrap();
        assert_eq!(p.global.kind(), Kind::Uint8);
        // Channels-last memory: the image's own HWC order.
        assert_eq!(p.global.stride()[1], 1);
        let want = normalise(&p.global).unwrap();
        assert_eq!(want.kind(), Kind::Float);
        // Pixel 0 of the tiny view's red channel is 0 → −1.
        assert_eq!(want.double_value(&[0, 0, 0, 0]), -1.0);
        // Without a GPU the uint8 switch normalises on the CPU: same values either way.
        for on_device in [false, true] {
            let up = upload(&p.global, Device::Cpu, on_device).unwrap();
            let got = model_input(&up, Kind::Float).unwrap();
            assert!(got.equal(&want), "on_device {on_device}");
        }
        let bf = model_input(
            &upload(&p.global, Device::Cpu, true).unwrap(),
            Kind::BFloat16,
        )
        .unwrap();
        assert_eq!(bf.kind(), Kind::BFloat16);
    }

    #[test]
    fn unreadable_image_names_the_file() {
        let dir = crate::test_util::temp_dir("img");
        let p = dir.join("broken.png");
        std::fs::write(&p, b"not an image").unwrap();
        let e = format!("{:#}", load_image(&p).unwrap_err());
        assert!(e.contains("broken.png"), "{e}");
        let e = format!("{:#}", load_image(&dir.join("absent.jpg")).unwrap_err());
        assert!(e.contains("absent.jpg"), "{e}");
    }

    #[test]
    fn png_round_trip_loads_rgb() {
        let dir = crate::test_util::temp_dir("png");
        let p = dir.join("a.png");
        image::GrayImage::from_pixel(3, 2, image::Luma([200]))
            .save(&p)
            .unwrap();
        let img = load_image(&p).unwrap();
        assert_eq!((img.width(), img.height()), (3, 2));
        assert_eq!(img.get_pixel(0, 0).0, [200, 200, 200]);
    }
}
