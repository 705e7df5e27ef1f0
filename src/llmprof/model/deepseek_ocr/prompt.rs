//! Prompt layout (docs/deepseek-ocr.md §3.6, §5): image-token counts per mode/grid and the "plain" template
//! BOS + N×`<image>` + encoded text.

use super::arch_ocr2::TokenLayout;
use super::tokenizer::{SpecialIds, TokenIds};
use super::views::{PreprocessConfig, TileGrid};
use anyhow::{ensure, Result};

/// Pixels per vision token side: patch 16 × downsample 4 (docs/deepseek-ocr.md §4).
pub const PIXELS_PER_TOKEN: u32 = 64;

/// Number of `<image>` ids for one image. Tokens per side = size / 64.
/// - [`TokenLayout::RowsWithNewlines`] (DeepSeek-OCR): global h(w+1) + 1 separator, plus the
///   local mosaic (rows·h2)(cols·w2+1) when there are tiles.
/// - [`TokenLayout::Queries`] (DeepSeek-OCR-2): global h·w + 1 separator, plus h2·w2 per tile.
pub fn image_token_count(layout: TokenLayout, cfg: &PreprocessConfig, grid: TileGrid) -> usize {
    let view = if cfg.crop_mode {
        cfg.base_size
    } else {
        cfg.image_size
    };
    let h = (view / PIXELS_PER_TOKEN) as usize;
    let h2 = (cfg.image_size / PIXELS_PER_TOKEN) as usize;
    let tiles = cfg.crop_mode && grid.has_tiles();
    match layout {
        TokenLayout::RowsWithNewlines => {
            let mut n = h * (h + 1) + 1;
            if tiles {
                n += (grid.rows as usize * h2) * (grid.cols as usize * h2 + 1);
            }
            n
        }
        TokenLayout::Queries => {
            let mut n = h * h + 1;
            if tiles {
                n += (grid.rows * grid.cols) as usize * h2 * h2;
            }
            n
        }
    }
}

/// HF "plain" template: the prompt is stripped, split on `<image>`, each piece encoded without
/// special tokens, `image_tokens[i]` placeholder ids inserted for the i-th image, BOS prepended,
/// no EOS.
pub fn build_prompt_ids(
    tok: &dyn TokenIds,
    sp: SpecialIds,
    prompt: &str,
    image_tokens: &[usize],
) -> Result<Vec<i64>> {
    let pieces: Vec<&str> = prompt.trim().split("<image>").collect();
    ensure!(
        pieces.len() == image_tokens.len() + 1,
        "prompt has {} `<image>` placeholders but {} images were given",
        pieces.len() - 1,
        image_tokens.len()
    );
    let mut ids = vec![sp.bos];
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            ids.extend(std::iter::repeat_n(sp.image, image_tokens[i - 1]));
        }
        ids.extend(tok.encode(piece)?);
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::super::tokenizer::{tiny_byte_tokenizer, TINY_SPECIAL};
    use super::super::views::{select_grid, Mode};
    use super::*;

    const ONE: TileGrid = TileGrid { cols: 1, rows: 1 };

    #[test]
    fn counts_per_mode_match_spec_table() {
        let c = |m| {
            image_token_count(
                TokenLayout::RowsWithNewlines,
                &PreprocessConfig::from_mode(m),
                ONE,
            )
        };
        assert_eq!(c(Mode::Tiny), 73);
        assert_eq!(c(Mode::Small), 111);
        assert_eq!(c(Mode::Base), 273);
        assert_eq!(c(Mode::Large), 421);
        assert_eq!(c(Mode::Gundam), 273); // small image, no tiles
    }

    #[test]
    fn gundam_counts_match_formula_and_examples() {
        let g = PreprocessConfig::from_mode(Mode::Gundam);
        let n = |cols, rows| {
            image_token_count(TokenLayout::RowsWithNewlines, &g, TileGrid { cols, rows })
        };
        // 273 + (10·rows)(10·cols+1), docs/deepseek-ocr.md §4 examples.
        assert_eq!(n(2, 3), 903);
        assert_eq!(n(2, 1), 483);
        assert_eq!(n(1, 2), 493);
        assert_eq!(n(2, 2), 693);
        assert_eq!(n(3, 2), 893);
        assert_eq!(n(3, 3), 1203);
        // Several aspect ratios through the grid selection.
        for (w, h) in [
            (1240u32, 1754u32),
            (1754, 1240),
            (3000, 800),
            (800, 3000),
            (2000, 2000),
            (641, 500),
        ] {
            let grid = select_grid(w, h, 640, 2, 9);
            let want = 273 + (10 * grid.rows as usize) * (10 * grid.cols as usize + 1);
            assert_eq!(n(grid.cols, grid.rows), want, "{w}x{h}");
        }
    }

    #[test]
    fn ocr2_counts_match_the_reference_table() {
        // DeepSeek-OCR-2: 1024 px global view (256 queries), 768 px tiles (144 each), 2..6 tiles;
        // 257 + 144·tiles (transformers' DeepseekOcr2 image-token expansion).
        let pc = PreprocessConfig::deepseek_ocr2();
        assert_eq!(
            (pc.base_size, pc.image_size, pc.crop_mode),
            (1024, 768, true)
        );
        assert_eq!((pc.min_crops, pc.max_crops), (2, 6));
        let n = |cols, rows| image_token_count(TokenLayout::Queries, &pc, TileGrid { cols, rows });
        assert_eq!(n(2, 3), 1121);
        assert_eq!(n(2, 1), 545);
        assert_eq!(n(1, 3), 689);
        assert_eq!(n(2, 2), 833);
        assert_eq!(n(5, 1), 977);
        assert_eq!(n(1, 1), 257);
        // The reference's examples through the grid selection: 800×600 → 3×2, 1024² → 2×2,
        // 2000×800 → 3×1, 2448×3264 → 2×3.
        for ((w, h), want) in [
            ((800u32, 600u32), 1121),
            ((1024, 1024), 833),
            ((2000, 800), 689),
            ((2448, 3264), 1121),
        ] {
            let grid = select_grid(w, h, 768, 2, 6);
            assert_eq!(n(grid.cols, grid.rows), want, "{w}x{h}");
        }
    }

    #[test]
    fn prompt_layout() {
        let tok = tiny_byte_tokenizer();
        let ids =
            build_prompt_ids(&tok, TINY_SPECIAL, "<image>\n<|grounding|>OCR. ", &[5]).unwrap();
        let mut want = vec![0];
        want.extend([300; 5]);
        want.extend([b'\n' as i64 + 3, 307]);
        want.extend("OCR.".bytes().map(|b| b as i64 + 3));
        assert_eq!(ids, want);
        assert!(build_prompt_ids(&tok, TINY_SPECIAL, "no image", &[5]).is_err());
    }
}
