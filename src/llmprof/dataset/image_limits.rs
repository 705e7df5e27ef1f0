//! The decompression-bomb guard: an image's size is checked from its header, before any pixel
//! buffer is allocated, against `dataset.max_image_pixels` and `dataset.max_image_bytes`.
//!
//! A 1 MB PNG can declare 20000×20000 pixels (1.6 GB decoded as RGBA) and a 9 KB one 60000×60000
//! (10.8 GB): both decode in full, or abort the process, without a limit. The pixel default is
//! PIL's: `Image.MAX_IMAGE_PIXELS` = 89,478,485 warns (DecompressionBombWarning) and twice that
//! raises DecompressionBombError, so llmprof warns and refuses at the same two sizes.
use crate::dataset::DatasetSpec;
use anyhow::{bail, Result};
use std::path::Path;

/// PIL's `Image.MAX_IMAGE_PIXELS` (Pillow ≥ 5): above it PIL warns.
pub const PIL_MAX_IMAGE_PIXELS: u64 = 89_478_485;
/// Default `dataset.max_image_pixels`: PIL raises DecompressionBombError above 2 × its limit.
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = 2 * PIL_MAX_IMAGE_PIXELS;
/// Default `dataset.max_image_bytes` (1 GiB): an image at the pixel limit decoded as 8-bit RGB
/// (537 MB) plus its RGB copy fits; a 16-bit RGBA one of the same size does not.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 1 << 30;

/// serde default of `dataset.max_image_pixels` (configs written before the key existed).
pub fn default_max_image_pixels() -> u64 {
    DEFAULT_MAX_IMAGE_PIXELS
}

/// serde default of `dataset.max_image_bytes`.
pub fn default_max_image_bytes() -> u64 {
    DEFAULT_MAX_IMAGE_BYTES
}

/// Upper bounds on one decoded image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// width × height.
    pub max_pixels: u64,
    /// The decoded buffer in its native colour type plus the 8-bit RGB copy the model reads.
    pub max_bytes: u64,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            max_pixels: DEFAULT_MAX_IMAGE_PIXELS,
            max_bytes: DEFAULT_MAX_IMAGE_BYTES,
        }
    }
}

impl ImageLimits {
    /// The limits a run's `dataset.max_image_pixels` / `dataset.max_image_bytes` set.
    pub fn from_spec(spec: &DatasetSpec) -> Self {
        ImageLimits {
            max_pixels: spec.max_image_pixels,
            max_bytes: spec.max_image_bytes,
        }
    }

    /// The `image` crate's decoder limits: no side may exceed the pixel limit (the other side is
    /// at least 1) and no decoder allocation the byte limit.
    pub fn decoder_limits(&self) -> image::Limits {
        let side = u32::try_from(self.max_pixels).unwrap_or(u32::MAX);
        let mut l = image::Limits::default();
        l.max_image_width = Some(side);
        l.max_image_height = Some(side);
        l.max_alloc = Some(self.max_bytes);
        l
    }

    /// Checks a header's `width`×`height` and decoded size (`native_bytes`, as the decoder reports
    /// it) before decoding; the error names the file, its size and the key to raise.
    pub fn check(&self, path: &Path, width: u32, height: u32, native_bytes: u64) -> Result<()> {
        let pixels = u64::from(width) * u64::from(height);
        let bytes = native_bytes.saturating_add(pixels.saturating_mul(3));
        let what = || {
            format!(
                "image {} is {width}×{height} pixels ({:.1} Mpixel, {} decoded)",
                path.display(),
                pixels as f64 / 1e6,
                human_bytes(bytes)
            )
        };
        if pixels > self.max_pixels {
            bail!(
                "{}: above dataset.max_image_pixels={} (PIL refuses above {}; a decompression bomb \
                 or a scan at far too high a resolution); downscale the image, or raise \
                 dataset.max_image_pixels if it is genuine",
                what(),
                self.max_pixels,
                DEFAULT_MAX_IMAGE_PIXELS
            );
        }
        if bytes > self.max_bytes {
            bail!(
                "{}: above dataset.max_image_bytes={} ({}); downscale the image or convert it to \
                 8-bit, or raise dataset.max_image_bytes",
                what(),
                self.max_bytes,
                human_bytes(self.max_bytes)
            );
        }
        if pixels > PIL_MAX_IMAGE_PIXELS {
            tracing::warn!(
                "{}: above PIL's MAX_IMAGE_PIXELS ({PIL_MAX_IMAGE_PIXELS}), decoding anyway",
                what()
            );
        }
        Ok(())
    }
}

/// `1.6 GB`, `537.0 MB`, `12.0 kB` (decimal units).
fn human_bytes(b: u64) -> String {
    let b = b as f64;
    match b {
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pil_sizes_and_messages() {
        let l = ImageLimits::default();
        assert_eq!(l.max_pixels, 178_956_970);
        let p = Path::new("/data/bomb.png");
        // 13000 × 13000 = 169 Mpixel: below the limit, above PIL's warning size.
        l.check(p, 13_000, 13_000, 13_000 * 13_000 * 3).unwrap();
        let e = format!(
            "{:#}",
            l.check(p, 20_000, 20_000, 1_600_000_000).unwrap_err()
        );
        assert!(
            e.contains("/data/bomb.png")
                && e.contains("20000×20000")
                && e.contains("400.0 Mpixel")
                && e.contains("dataset.max_image_pixels=178956970"),
            "{e}"
        );
        // 16-bit RGBA at 12000 × 12000: 1.15 GB native + 432 MB RGB.
        let e = format!(
            "{:#}",
            l.check(p, 12_000, 12_000, 12_000 * 12_000 * 8).unwrap_err()
        );
        assert!(
            e.contains("dataset.max_image_bytes=1073741824") && e.contains("1.6 GB decoded"),
            "{e}"
        );
        let small = ImageLimits {
            max_pixels: 10,
            max_bytes: 1 << 20,
        };
        assert!(small.check(p, 3, 4, 48).is_err());
        assert_eq!(small.decoder_limits().max_image_width, Some(10));
    }
}
