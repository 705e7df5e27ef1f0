//! Text datasets for text-only models: `random_tokens` (vLLM's random dataset: lengths drawn
//! uniformly around a mean, random token ids) and `prompts` (a JSONL file with a `prompt` field
//! per line). Each request becomes an [`InputItem`] carrying a [`TextInput`]; the model turns it
//! into token ids (it knows its vocabulary and tokenizer).
use super::input::{InputItem, TextInput};
use super::sampling::SplitMix64;
use crate::dataset::DatasetSpec;
use anyhow::{bail, ensure, Context, Result};
use std::path::{Path, PathBuf};

/// Dataset names served by this module.
pub const RANDOM_TOKENS: &str = "random_tokens";
pub const PROMPTS: &str = "prompts";

/// The sampling interval vLLM's `RandomDataset.get_sampling_params` uses: floor(len·(1 − r)) to
/// ceil(len·(1 + r)), inclusive (outputs at least 1 token).
pub fn length_range(len: u32, range_ratio: f64) -> (u64, u64) {
    let l = len as f64;
    (
        (l * (1.0 - range_ratio)).floor() as u64,
        (l * (1.0 + range_ratio)).ceil() as u64,
    )
}

fn required<T: Copy>(v: Option<T>, key: &str) -> Result<T> {
    v.with_context(|| format!("dataset=random_tokens needs dataset.{key}"))
}

/// `num_prompts` requests: input lengths, then output lengths, then id offsets, drawn from one
/// seeded stream in vLLM's order (the distributions match vLLM's; the numbers do not, numpy's
/// generator is not reproduced).
pub fn random_tokens(spec: &DatasetSpec) -> Result<Vec<InputItem>> {
    let input_len = required(spec.input_len, "input_len")?;
    let output_len = required(spec.output_len, "output_len")?;
    let r = spec.range_ratio.unwrap_or(0.0);
    let n = required(spec.num_prompts, "num_prompts")? as usize;
    ensure!(
        (0.0..1.0).contains(&r),
        "dataset.range_ratio={r} must be in [0, 1) (as vLLM's --random-range-ratio)"
    );
    ensure!(n > 0, "dataset.num_prompts must be at least 1");
    let (in_lo, in_hi) = length_range(input_len, r);
    let (out_lo, out_hi) = length_range(output_len, r);
    let (out_lo, out_hi) = (out_lo.max(1), out_hi.max(1));
    ensure!(
        in_lo >= 1,
        "dataset.input_len={input_len} with range_ratio={r} allows empty prompts: use input_len >= 1 (and a smaller range_ratio)"
    );
    let mut rng = SplitMix64::for_epoch(spec.seed.unwrap_or(0), 0);
    let mut draw = |lo: u64, hi: u64, n: usize| -> Vec<u64> {
        (0..n).map(|_| lo + rng.below(hi - lo + 1)).collect()
    };
    let inputs = draw(in_lo, in_hi, n);
    let outputs = draw(out_lo, out_hi, n);
    let offsets = draw(0, u32::MAX as u64, n);
    Ok((0..n)
        .map(|i| InputItem {
            path: PathBuf::from(format!("{RANDOM_TOKENS}#{i}")),
            name: format!("random-{i:04}"),
            bytes: 0,
            text: Some(TextInput::RandomTokens {
                input_len: inputs[i] as usize,
                output_len: outputs[i] as usize,
                offset: offsets[i],
                index: i,
            }),
        })
        .collect())
}

/// Every line of the JSONL file `dataset.file` under `root` (blank lines skipped): an object
/// with a non-empty string `prompt`.
pub fn prompts(spec: &DatasetSpec, base_dir: &Path) -> Result<Vec<InputItem>> {
    let file = spec
        .file
        .as_deref()
        .context("dataset=prompts needs dataset.file: a JSONL file under dataset.root")?;
    let path = base_dir.join(&spec.root).join(file);
    let text = crate::dataset::file_kind::read_to_string(&path).with_context(|| {
        format!(
            "reading the prompts file {} (dataset.root + dataset.file)",
            path.display()
        )
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a JSON object", path.display(), n + 1))?;
        let Some(prompt) = v.get("prompt").and_then(|p| p.as_str()) else {
            bail!(
                "{}:{}: no string field `prompt` (each line must be {{\"prompt\": \"...\"}})",
                path.display(),
                n + 1
            );
        };
        ensure!(
            !prompt.is_empty(),
            "{}:{}: empty prompt",
            path.display(),
            n + 1
        );
        items.push(InputItem {
            path: PathBuf::from(format!("{}#{}", path.display(), n + 1)),
            name: format!("{stem}-{:04}", n + 1),
            bytes: prompt.len() as u64,
            text: Some(TextInput::Prompt {
                text: prompt.to_string(),
                output_len: spec.output_len.map(|o| o as usize),
            }),
        });
    }
    ensure!(!items.is_empty(), "{} holds no prompts", path.display());
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: serde_json::Value) -> DatasetSpec {
        let mut v = serde_json::json!({
            "name": "random_tokens", "root": ".", "subset_filelist": null,
            "sampling": {"num_epochs": 1, "num_samples_per_epoch": null, "randomize": false, "seed": 0}
        });
        for (k, x) in yaml.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn vllm_length_intervals() {
        // vLLM: floor(1024·0.5) = 512, ceil(1024·1.5) = 1536; r = 0 is the fixed length.
        assert_eq!(length_range(1024, 0.5), (512, 1536));
        assert_eq!(length_range(100, 0.0), (100, 100));
        assert_eq!(length_range(7, 0.25), (5, 9)); // floor(5.25), ceil(8.75)
    }

    #[test]
    fn random_tokens_lengths_stay_in_range_and_are_seeded() {
        let s = spec(
            serde_json::json!({"input_len": 40, "output_len": 10, "range_ratio": 0.5, "num_prompts": 200, "seed": 3}),
        );
        let a = random_tokens(&s).unwrap();
        assert_eq!(a.len(), 200);
        let lens: Vec<(usize, usize)> = a
            .iter()
            .map(|i| match i.text.as_ref().unwrap() {
                TextInput::RandomTokens {
                    input_len,
                    output_len,
                    ..
                } => (*input_len, *output_len),
                t => panic!("{t:?}"),
            })
            .collect();
        assert!(lens
            .iter()
            .all(|&(i, o)| (20..=60).contains(&i) && (5..=15).contains(&o)));
        // Both ends are reached (uniform over the closed interval) and lengths vary.
        assert!(lens.iter().any(|l| l.0 == 20) && lens.iter().any(|l| l.0 == 60));
        assert_eq!(random_tokens(&s).unwrap(), a);
        let other = random_tokens(&spec(serde_json::json!({"input_len": 40, "output_len": 10, "range_ratio": 0.5, "num_prompts": 200, "seed": 4}))).unwrap();
        assert_ne!(other, a);
        // range_ratio 0: every request has exactly the asked lengths.
        let fixed = random_tokens(&spec(
            serde_json::json!({"input_len": 8, "output_len": 3, "num_prompts": 5}),
        ))
        .unwrap();
        assert!(fixed
            .iter()
            .all(|i| i.text.as_ref().unwrap().output_len() == Some(3)));
        let err = random_tokens(&spec(serde_json::json!({"input_len": 8, "output_len": 3, "range_ratio": 1.0, "num_prompts": 5}))).unwrap_err();
        assert!(format!("{err}").contains("range_ratio"), "{err}");
        let err = random_tokens(&spec(
            serde_json::json!({"output_len": 3, "num_prompts": 5}),
        ))
        .unwrap_err();
        assert!(format!("{err}").contains("dataset.input_len"), "{err}");
    }

    #[test]
    fn prompts_file_lines_and_errors() {
        let dir = super::super::test_util::temp_dir("prompts");
        std::fs::write(
            dir.join("p.jsonl"),
            "{\"prompt\": \"hi\"}\n\n{\"prompt\": \"there\", \"x\": 1}\n",
        )
        .unwrap();
        let mut s = spec(serde_json::json!({"file": "p.jsonl", "output_len": 4}));
        s.root = dir.display().to_string();
        let items = prompts(&s, Path::new("/")).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].name, "p-0003");
        assert_eq!(
            items[1].text,
            Some(TextInput::Prompt {
                text: "there".into(),
                output_len: Some(4)
            })
        );
        std::fs::write(dir.join("p.jsonl"), "{\"text\": \"hi\"}\n").unwrap();
        let err = format!("{:#}", prompts(&s, Path::new("/")).unwrap_err());
        assert!(
            err.contains("p.jsonl:1") && err.contains("`prompt`"),
            "{err}"
        );
    }
}
