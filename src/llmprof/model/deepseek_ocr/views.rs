//! The views of one page (docs/deepseek-ocr.md §4): resolution modes, the Gundam tile grid and
//! the constants of the official preprocessing. Geometry only: decoding and resampling pixels is
//! the worker's job.
use serde::{Deserialize, Serialize};

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

impl Mode {
    /// The YAML spelling (`gundam`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Tiny => "tiny",
            Mode::Small => "small",
            Mode::Base => "base",
            Mode::Large => "large",
            Mode::Gundam => "gundam",
        }
    }
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

impl PreprocessConfig {
    /// DeepSeek-OCR-2's released crop mode (docs/deepseek-ocr.md §10): a 1024 px global view,
    /// 768 px tiles, 2 to 6 tiles (conf/model/deepseek_ocr2.yaml).
    pub fn deepseek_ocr2() -> Self {
        PreprocessConfig {
            image_size: 768,
            max_crops: 6,
            ..PreprocessConfig::from_mode(Mode::Gundam)
        }
    }
}

impl PreprocessConfig {
    /// Views for a smaller vision encoder: each side scaled by `to_side / from_side` (the two
    /// SAMs' native view sizes, e.g. 1024 → 128 for the tiny CPU fallback), rounded down to a
    /// multiple of [`VIEW_QUANTUM`] and at least one quantum. Crop mode and crop bounds stay; the
    /// grid follows the new tile side. Full-size views would spend about half a second a page in
    /// the tiny SAM on a CPU, for a model whose timings only smoke-test the pipeline.
    pub fn scaled(&self, from_side: u32, to_side: u32) -> PreprocessConfig {
        let scale = |side: u32| {
            let s = (side as u64 * to_side as u64 / from_side.max(1) as u64) as u32;
            (s / VIEW_QUANTUM).max(1) * VIEW_QUANTUM
        };
        PreprocessConfig {
            base_size: scale(self.base_size),
            image_size: scale(self.image_size),
            ..self.clone()
        }
    }
}

/// The view sides a scaled preprocessing uses are multiples of this: one token of the 16 px
/// patches after the projector's 4× downsampling (docs/deepseek-ocr.md §3), and a size every
/// DeepSeek-OCR-2 architecture has queries for in its tiny form (64 and 128 px).
pub const VIEW_QUANTUM: u32 = 64;

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

/// The tile grid of a `width`×`height` page under `cfg`: 1×1 (no tiles) outside crop mode or when
/// the page fits in one tile, else [`select_grid`]. HF hard-codes 640 as the "fits" bound; with
/// the released configs it equals `image_size`.
pub fn tile_grid(width: u32, height: u32, cfg: &PreprocessConfig) -> TileGrid {
    let t = cfg.image_size;
    if !cfg.crop_mode || (width <= t && height <= t) {
        TileGrid { cols: 1, rows: 1 }
    } else {
        select_grid(width, height, t, cfg.min_crops, cfg.max_crops)
    }
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
    fn tile_grid_only_in_crop_mode_and_beyond_one_tile() {
        let gundam = PreprocessConfig::from_mode(Mode::Gundam);
        assert_eq!(
            tile_grid(1240, 1754, &gundam),
            TileGrid { cols: 2, rows: 3 }
        );
        assert!(!tile_grid(640, 640, &gundam).has_tiles());
        let base = PreprocessConfig::from_mode(Mode::Base);
        assert!(!tile_grid(1240, 1754, &base).has_tiles());
    }

    #[test]
    fn scaled_views_are_whole_quanta_with_the_same_tiling() {
        let gundam = PreprocessConfig::from_mode(Mode::Gundam);
        let tiny = gundam.scaled(1024, 128);
        // 1024 → 128; 640 → 80, rounded down to 64.
        assert_eq!((tiny.base_size, tiny.image_size), (128, 64));
        assert_eq!(
            (tiny.crop_mode, tiny.min_crops, tiny.max_crops),
            (true, 2, 9)
        );
        let ocr2 = PreprocessConfig::deepseek_ocr2().scaled(1024, 128);
        assert_eq!(
            (ocr2.base_size, ocr2.image_size, ocr2.max_crops),
            (128, 64, 6)
        );
        // Never below one quantum; the identity scale leaves quanta as they are.
        let small = PreprocessConfig::from_mode(Mode::Tiny).scaled(1024, 16);
        assert_eq!(small.image_size, VIEW_QUANTUM);
        assert_eq!(gundam.scaled(1024, 1024), gundam);
    }

    /// The sample pages' recorded grids and image tokens (datasets/samples/metadata.yaml,
    /// written by scripts/make_sample_pages.py) are what this preprocessing computes, and they
    /// cover at least 8 grids, no crops and the maximum crop count.
    #[test]
    fn sample_pages_record_this_preprocessings_grids() {
        use super::super::arch_ocr2::TokenLayout;
        use super::super::prompt::image_token_count;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/samples");
        let pages = crate::dataset::read_sample_metadata(&dir).unwrap();
        let gundam = PreprocessConfig::from_mode(Mode::Gundam);
        let mut grids = std::collections::BTreeSet::new();
        for p in &pages {
            let grid = tile_grid(p.width, p.height, &gundam);
            assert_eq!(p.gundam_grid, Some([grid.cols, grid.rows]), "{}", p.file);
            assert_eq!(
                p.image_tokens,
                Some(image_token_count(
                    TokenLayout::RowsWithNewlines,
                    &gundam,
                    grid
                )),
                "{}",
                p.file
            );
            grids.insert((grid.cols, grid.rows));
        }
        assert!(
            grids.len() >= 8,
            "{} distinct grids: {grids:?}",
            grids.len()
        );
        assert!(grids.contains(&(1, 1)), "a page without crops");
        let max = gundam.max_crops;
        assert!(
            grids.iter().any(|(c, r)| c * r == max),
            "a page at the maximum of {max} crops: {grids:?}"
        );
    }
}
