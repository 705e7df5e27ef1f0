//! CPU tests of the DeepSeek-OCR model: KV-cache decode against a full rerun, left padding,
//! batched vision, image prompts end to end (tiny and real-size views).
use super::*;
use llmprof::model::deepseek_ocr::views::{PreprocessConfig, TileGrid};
use llmprof::model::deepseek_ocr::{prompt, tokenizer};
use llmprof::region::NoopObserver;

fn tiny() -> DeepseekOcr {
    DeepseekOcr::synthetic(&ArchConfig::tiny(), 11, Device::Cpu, Kind::Float).unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

fn ids(n: usize, seed: i64) -> Vec<i64> {
    let mut v = vec![0];
    v.extend((1..n as i64).map(|i| 3 + (i * 37 + seed * 11) % 250));
    v
}

#[test]
fn kv_cache_decode_equals_full_rerun() {
    let m = tiny();
    let seq = ids(12, 1);
    let obs = NoopObserver;
    // Full sequence at once.
    let mut c1 = m.new_cache(1, 16).unwrap();
    let full = m
        .prefill(
            &[PromptRow {
                ids: &seq,
                image: None,
            }],
            &mut c1,
            &obs,
        )
        .unwrap();
    // Prefix, then the last 4 tokens one at a time through the cache.
    let mut c2 = m.new_cache(1, 16).unwrap();
    let mut logits = m
        .prefill(
            &[PromptRow {
                ids: &seq[..8],
                image: None,
            }],
            &mut c2,
            &obs,
        )
        .unwrap();
    for &tok in &seq[8..] {
        logits = m
            .decode_step(&Tensor::from_slice(&[tok]), &mut c2, &obs)
            .unwrap();
    }
    assert!(
        max_diff(&full, &logits) < 1e-4,
        "{}",
        max_diff(&full, &logits)
    );
    // And it is not trivially equal to something else.
    assert!(
        max_diff(
            &full,
            &m.prefill(
                &[PromptRow {
                    ids: &seq[..11],
                    image: None
                }],
                &mut m.new_cache(1, 16).unwrap(),
                &obs
            )
            .unwrap()
        ) > 1e-3
    );
}

#[test]
fn left_padded_batch_equals_rows_alone() {
    let m = tiny();
    let obs = NoopObserver;
    let a = ids(9, 2);
    let b = ids(5, 3);
    let mut cb = m.new_cache(2, 16).unwrap();
    let lb = m
        .prefill(
            &[
                PromptRow {
                    ids: &a,
                    image: None,
                },
                PromptRow {
                    ids: &b,
                    image: None,
                },
            ],
            &mut cb,
            &obs,
        )
        .unwrap();
    let step_b = m
        .decode_step(&Tensor::from_slice(&[7i64, 9]), &mut cb, &obs)
        .unwrap();
    for (row, (p, tok)) in [(&a, 7i64), (&b, 9i64)].into_iter().enumerate() {
        let mut c = m.new_cache(1, 16).unwrap();
        let l = m
            .prefill(
                &[PromptRow {
                    ids: p,
                    image: None,
                }],
                &mut c,
                &obs,
            )
            .unwrap();
        assert!(
            max_diff(&l.get(0), &lb.get(row as i64)) < 1e-4,
            "prefill row {row}"
        );
        let s = m
            .decode_step(&Tensor::from_slice(&[tok]), &mut c, &obs)
            .unwrap();
        assert!(
            max_diff(&s.get(0), &step_b.get(row as i64)) < 1e-4,
            "decode row {row}"
        );
    }
}

/// Tiny crop mode: 128 px global view (2x2 tokens), 64 px tiles (1x1 token), 2 to 4 crops.
fn tiny_crop_mode() -> PreprocessConfig {
    PreprocessConfig {
        base_size: 128,
        image_size: 64,
        crop_mode: true,
        min_crops: 2,
        max_crops: 4,
    }
}

#[test]
fn batched_vision_equals_pages_alone() {
    let m = tiny();
    let obs = NoopObserver;
    let pc = tiny_crop_mode();
    // Three pages: two tile grids (2x1, 1x2) and one small enough for no tiles.
    let page = |w: u32, h: u32, k: u32| {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([
                ((x * k) % 256) as u8,
                ((y * 3 + k) % 256) as u8,
                (k * 40) as u8,
            ])
        });
        preprocess::preprocess(&img, &pc).unwrap()
    };
    let pages = [page(150, 70, 1), page(70, 150, 2), page(60, 50, 3)];
    assert!(pages[2].tiles.is_none() && pages[0].tiles.is_some());
    let refs: Vec<&PreparedImage> = pages.iter().collect();
    for max_views in [0, 1, 3] {
        let batched = m.encode_batch(&refs, max_views, &obs).unwrap();
        for (p, img) in pages.iter().enumerate() {
            let alone = m.encode_images(img, &obs).unwrap();
            assert_eq!(alone.size(), batched[p].size(), "page {p}");
            let scale = alone.abs().max().double_value(&[]);
            let err = max_diff(&alone, &batched[p]) / scale;
            assert!(err < 1e-5, "page {p}, max_views {max_views}: {err}");
        }
    }
}

/// A 150×70 page in the tiny crop mode: 128 px global view (2x2 tokens), 64 px tiles (1x1
/// token), grid 2 cols x 1 row; and its image-token count for `m`.
fn tiny_crop_page(m: &DeepseekOcr) -> (PreparedImage, usize) {
    let pc = tiny_crop_mode();
    let img = image::RgbImage::from_fn(150, 70, |x, y| {
        image::Rgb([(x % 256) as u8, (y * 3 % 256) as u8, 90])
    });
    let prep = preprocess::preprocess(&img, &pc).unwrap();
    assert_eq!(prep.grid, TileGrid { cols: 2, rows: 1 });
    let n = prompt::image_token_count(m.config().token_layout(), &pc, prep.grid);
    (prep, n)
}

/// Prefill of "<image>\nFree OCR." with `placeholders` image ids and `prep` as its image.
fn prefill_image_prompt(
    m: &DeepseekOcr,
    prep: &PreparedImage,
    placeholders: usize,
) -> Result<Tensor> {
    let tok = tokenizer::tiny_byte_tokenizer();
    let p = prompt::build_prompt_ids(
        &tok,
        tokenizer::TINY_SPECIAL,
        "<image>\nFree OCR.",
        &[placeholders],
    )?;
    m.prefill(
        &[PromptRow {
            ids: &p,
            image: Some(prep),
        }],
        &mut m.new_cache(1, 64)?,
        &NoopObserver,
    )
}

#[test]
fn image_prompt_runs_end_to_end() {
    let m = tiny();
    let (prep, n) = tiny_crop_page(&m);
    // Custom sizes: global 2·3+1 = 7; mosaic (1·1)(2·1+1) = 3.
    assert_eq!(n, 10);
    let feats = m.encode_images(&prep, &NoopObserver).unwrap();
    assert_eq!(feats.size(), vec![10, 64]);
    let logits = prefill_image_prompt(&m, &prep, n).unwrap();
    assert_eq!(logits.size(), vec![1, 320]);
    assert!(bool::try_from(logits.isfinite().all()).unwrap());
    // A prompt with a wrong number of placeholders is rejected.
    assert!(prefill_image_prompt(&m, &prep, n - 1).is_err());
}

#[test]
fn ocr2_image_prompt_runs_end_to_end() {
    let cfg = ArchConfig::tiny_ocr2();
    let m = DeepseekOcr::synthetic(&cfg, 4, Device::Cpu, Kind::Float).unwrap();
    let (prep, n) = tiny_crop_page(&m);
    // Queries: global 2·2 = 4, two tiles of 1, separator 1; no newlines.
    assert_eq!(n, 7);
    let feats = m.encode_images(&prep, &NoopObserver).unwrap();
    assert_eq!(feats.size(), vec![7, 64]);
    // The last row is the separator, the tiles come first.
    let sep = m.projector.as_ref().unwrap().view_seperator.shallow_clone();
    assert!(max_diff(&feats.get(6), &sep) == 0.0);
    let logits = prefill_image_prompt(&m, &prep, n).unwrap();
    assert_eq!(logits.size(), vec![1, 320]);
    assert!(bool::try_from(logits.isfinite().all()).unwrap());
}

#[test]
fn real_dims_vision_path_on_a_small_view() {
    // Released dimensions (SAM-B, CLIP-L, projector) on a 64 px view: SAM grid 4 (one padded
    // 14x14 window; global rel-pos tables 127 → 7), CLIP grid 1x1, 1·2 + 1 = 3 vectors.
    let cfg = ArchConfig::deepseek_ocr();
    let w = Weights::synthetic(
        &cfg,
        &[Part::Sam, Part::Encoder, Part::Projector],
        1,
        Device::Cpu,
        Kind::Float,
    )
    .unwrap();
    let m = DeepseekOcr::load(w, &cfg).unwrap();
    let pc = PreprocessConfig {
        base_size: 64,
        image_size: 64,
        crop_mode: false,
        min_crops: 2,
        max_crops: 9,
    };
    let prep = preprocess::preprocess(
        &image::RgbImage::from_pixel(80, 50, image::Rgb([200, 100, 0])),
        &pc,
    )
    .unwrap();
    assert_eq!(
        prompt::image_token_count(m.config().token_layout(), &pc, prep.grid),
        3
    );
    let pixels = preprocess::normalise(&prep.global).unwrap();
    let sam = m
        .sam()
        .unwrap()
        .forward(&pixels, &llmprof::region::NoopObserver)
        .unwrap();
    assert_eq!(sam.size(), vec![1, 1024, 1, 1]);
    let feats = m.encode_images(&prep, &NoopObserver).unwrap();
    assert_eq!(feats.size(), vec![3, 1280]);
    assert!(bool::try_from(feats.isfinite().all()).unwrap());
}

/// A batch of an image row, a text row and another image row of other lengths (so their left
/// padding differs): each row's logits as alone, with vision batched and page by page. A row
/// with `<image>` ids but no image is refused.
#[test]
fn mixed_image_and_text_batch_equals_rows_alone() {
    let mut m = tiny();
    let (prep, n) = tiny_crop_page(&m);
    let tok = tokenizer::tiny_byte_tokenizer();
    let sp = tokenizer::TINY_SPECIAL;
    let first = prompt::build_prompt_ids(&tok, sp, "<image>\nFree OCR.", &[n]).unwrap();
    let third = prompt::build_prompt_ids(&tok, sp, "<image>\nOCR the page, please.", &[n]).unwrap();
    let text = ids(9, 4);
    let rows = [
        PromptRow {
            ids: &first,
            image: Some(&prep),
        },
        PromptRow {
            ids: &text,
            image: None,
        },
        PromptRow {
            ids: &third,
            image: Some(&prep),
        },
    ];
    for vision_batch in [None, Some(16)] {
        m.set_vision_batch(vision_batch);
        let together = m
            .prefill(&rows, &mut m.new_cache(3, 64).unwrap(), &NoopObserver)
            .unwrap();
        for (b, row) in rows.iter().enumerate() {
            let alone = m
                .prefill(
                    std::slice::from_ref(row),
                    &mut m.new_cache(1, 64).unwrap(),
                    &NoopObserver,
                )
                .unwrap();
            let err = max_diff(&together.get(b as i64), &alone.get(0));
            assert!(err < 1e-4, "row {b}, vision batch {vision_batch:?}: {err}");
        }
    }
    let no_image = [PromptRow {
        ids: &first,
        image: None,
    }];
    let err = m
        .prefill(&no_image, &mut m.new_cache(1, 64).unwrap(), &NoopObserver)
        .unwrap_err();
    assert!(format!("{err:#}").contains("but no image"), "{err:#}");
}

/// The tiny model on CUDA device 0 in `kind`, twice over the same synthetic weights: loaded with
/// `optim(true)` (the switch under test on) and with `optim(false)`.
fn tiny_on_gpu_with_and_without(
    kind: Kind,
    optim: impl Fn(bool) -> Switches,
) -> (DeepseekOcr, DeepseekOcr) {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let cfg = ArchConfig::tiny();
    let weights = Weights::synthetic(&cfg, &Part::ALL, 5, Device::Cuda(0), kind).unwrap();
    let load =
        |on: bool| DeepseekOcr::load_with(weights.shallow_clone(), &cfg, &optim(on)).unwrap();
    (load(true), load(false))
}

/// Prefill graphs (`runtime.optim.prefill_cuda_graph`) on a GPU: the tiny model in bf16 with
/// grouped MoE, four left-padded two-row prefills with new tokens but the same lengths into
/// one reused KV cache. The first runs eagerly (a cache not seen before), the second runs
/// eagerly and is captured, the others replay; each one's logits, and a decode step after it (which reads the written slots and
/// the cache's counter), equal the same prefill with the graphs off.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn prefill_graphs_equal_eager_on_a_gpu() {
    use crate::models::deepseek_ocr::Switches;
    let dev = Device::Cuda(0);
    let (graphed, eager) = tiny_on_gpu_with_and_without(Kind::BFloat16, |graphs| {
        let (mut s, _) = Switches::eager().with_on(&["sdpa", "static_kv_cache", "grouped_moe"]);
        s.engine.prefill_cuda_graph = graphs;
        s
    });
    let obs = NoopObserver;
    let mut cache = graphed.new_cache(2, 32).unwrap();
    for round in 0..4 {
        let (a, b) = (ids(11, round), ids(6, round + 7));
        let rows = [
            PromptRow {
                ids: &a,
                image: None,
            },
            PromptRow {
                ids: &b,
                image: None,
            },
        ];
        cache.reset().unwrap();
        let got = graphed.prefill(&rows, &mut cache, &obs).unwrap();
        let mut fresh = eager.new_cache(2, 32).unwrap();
        let want = eager.prefill(&rows, &mut fresh, &obs).unwrap();
        // The same kernels in and out of the graph: equal up to reduction order.
        let close = |a: &Tensor, b: &Tensor| max_diff(a, b) <= 1e-3 * max_diff(b, &b.zeros_like());
        assert!(close(&got, &want), "round {round}: prefill logits");
        assert_eq!(cache.len(), 11, "round {round}: host counter");
        let tokens = Tensor::from_slice(&[5i64, 8]).to_device(dev);
        let step = graphed.decode_step(&tokens, &mut cache, &obs).unwrap();
        let want_step = eager.decode_step(&tokens, &mut fresh, &obs).unwrap();
        assert!(close(&step, &want_step), "round {round}: decode step");
    }
    assert_eq!(graphed.prefill_graphs.stats(), (1, 2));
    assert_eq!(eager.prefill_graphs.stats(), (0, 0));
}

/// Vision graphs with the uploads inside (`model.optim.vision_graph_uploads`) on a GPU, the
/// tiny model in fp32: a batch of pages with the same views (uploaded inside the replays), a
/// batch of other tile grids (concatenated before the graphs) and a batch holding one page
/// twice, each over rounds of new pixels in new pinned memory; every page equals the same batch
/// through eager vision.
#[test]
#[ignore = "needs a CUDA GPU: cargo test -- --ignored on the GPU machine"]
fn vision_graph_uploads_equal_eager_on_a_gpu() {
    use crate::models::deepseek_ocr::Switches;
    let (graphed, eager) = tiny_on_gpu_with_and_without(Kind::Float, |graphs| {
        let (mut s, _) =
            Switches::eager().with_on(&["sdpa", "static_kv_cache", "vision_uint8_upload"]);
        s.own.vision_graph_uploads = graphs;
        s.own.vision_cuda_graph = graphs;
        s.own.vision_streams = graphs;
        s
    });
    let obs = NoopObserver;
    let pc = tiny_crop_mode();
    let page = |m: &DeepseekOcr, w: u32, h: u32, k: u32| {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([
                ((x * k) % 256) as u8,
                ((y * 3 + k) % 256) as u8,
                (k * 40) as u8,
            ])
        });
        let mut p = preprocess::preprocess(&img, &pc).unwrap();
        m.ready_pixels(&mut p).unwrap();
        p
    };
    for round in 0..3u32 {
        let same = [
            page(&graphed, 150, 70, 1 + round),
            page(&graphed, 150, 70, 5 + round),
        ];
        let mixed = [
            page(&graphed, 150, 70, 2 + round),
            page(&graphed, 60, 50, 3 + round),
        ];
        let twice = page(&graphed, 150, 70, 9 + round);
        let batches: [Vec<&PreparedImage>; 3] = [
            same.iter().collect(),
            mixed.iter().collect(),
            vec![&twice, &twice],
        ];
        for (b, imgs) in batches.iter().enumerate() {
            let got = graphed.encode_batch(imgs, 0, &obs).unwrap();
            // The same batch op by op: the same kernels (stale or misplaced pixels would be
            // off by the pixels' scale, not by rounding).
            let want = eager.encode_batch(imgs, 0, &obs).unwrap();
            for p in 0..imgs.len() {
                let err = max_diff(&got[p], &want[p]) / want[p].abs().max().double_value(&[]);
                assert!(err < 1e-4, "round {round}, batch {b}, page {p}: {err}");
            }
        }
    }
    let stats = graphed.vision_graph_stats().unwrap();
    assert!(stats.replays >= 4, "{stats:?}");
}
