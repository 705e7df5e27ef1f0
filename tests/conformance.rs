//! The public Hydra conformance cases (tests/fixtures/hydra/public, copied from
//! shared/conformance/hydra): llmprof must print the JSON real Hydra 1.3.2 printed, and fail
//! where Hydra failed.
use crate::support::{llmprof, repo_root};
use std::path::Path;
use std::process::Command;

fn shell_words(line: &str) -> Vec<String> {
    // POSIX-like split: quotes group, backslash escapes outside single quotes.
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            cur.push(chars.next().unwrap())
                        }
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(d) = chars.next() {
                    cur.push(d);
                }
            }
            ' ' | '\t' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            _ => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

fn command_lines(path: &Path) -> Vec<Vec<String>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return vec![];
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| if l == "-" { vec![] } else { shell_words(l) })
        .collect()
}

/// Python's json allows NaN/Infinity; make them strings so serde_json can compare.
fn normalise_json(text: &str) -> serde_json::Value {
    let fixed = text
        .replace(": NaN", ": \"NaN\"")
        .replace(": -Infinity", ": \"-Infinity\"")
        .replace(": Infinity", ": \"Infinity\"");
    serde_json::from_str(&fixed).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{text}"))
}

fn expand_placeholders(expected: &str, cwd: &Path) -> String {
    let mut out = expected.replace("<CWD>", &cwd.display().to_string());
    while let Some(start) = out.find("<NOW:") {
        let end = start + out[start..].find('>').expect("closing >");
        let fmt = &out[start + 5..end];
        let now = chrono::Local::now().format(fmt).to_string();
        out.replace_range(start..=end, &now);
    }
    out
}

#[test]
fn public_hydra_cases_match_real_hydra() {
    let root = repo_root().join("tests/fixtures/hydra/public");
    let cwd = repo_root();
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for case in cases {
        for (prefix, file) in [("", "cases.txt"), ("r", "resolve_only.txt")] {
            for (i, argv) in command_lines(&case.join(file)).into_iter().enumerate() {
                count += 1;
                let id = format!(
                    "{}#{prefix}{:02}",
                    case.file_name().unwrap().to_string_lossy(),
                    i + 1
                );
                let expected = std::fs::read_to_string(
                    case.join(format!("expected/{prefix}{:02}.json", i + 1)),
                )
                .unwrap();
                let out = Command::new(llmprof())
                    .args([
                        "--config-dir",
                        &case.join("conf").display().to_string(),
                        "--config-name",
                        "config",
                        "--cfg",
                        "job",
                        "--resolve",
                        "--format",
                        "json",
                    ])
                    .args(&argv)
                    .current_dir(&cwd)
                    .env("LLMPROF_CONF_TEST_STR", "from_env")
                    .env("LLMPROF_CONF_TEST_INT", "42")
                    .env("LLMPROF_CONF_TEST_PATH", "/mnt/models")
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(!stderr.contains("panicked"), "{id}: panic\n{stderr}");
                if expected.starts_with("ERROR:") {
                    if out.status.success() {
                        failures.push(format!("{id}: expected failure, got success"));
                    }
                    continue;
                }
                if !out.status.success() {
                    failures.push(format!("{id}: failed: {stderr}"));
                    continue;
                }
                let got = normalise_json(&String::from_utf8_lossy(&out.stdout));
                let want = normalise_json(&expand_placeholders(&expected, &cwd));
                if got != want {
                    failures.push(format!("{id}: {argv:?}\n got: {got}\nwant: {want}"));
                }
            }
        }
    }
    assert!(count >= 98, "only {count} conformance commands found");
    assert!(
        failures.is_empty(),
        "{} of {count} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
