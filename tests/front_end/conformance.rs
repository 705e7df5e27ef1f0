//! The public Hydra conformance cases (tests/fixtures/hydra/public, copied from
//! shared/conformance/hydra, plus p15-p20 made the same way with real Hydra 1.3.2): llmprof must
//! print the JSON real Hydra 1.3.2 printed, and fail where Hydra failed, with Hydra's words where
//! Hydra has them (`hydra_messages_are_kept`).
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
                let (part, argv) = split_cfg(&argv);
                let conf = case.join("conf");
                let out = Command::new(llmprof())
                    .args(["--config-dir", &conf.display().to_string()])
                    .args(["--config-name", "config", "--cfg", part])
                    .args(if part == "job" {
                        &["--resolve"][..]
                    } else {
                        &[]
                    })
                    .args(["--format", "json"])
                    .args(argv)
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
                let mut got = normalise_json(&String::from_utf8_lossy(&out.stdout));
                let mut want = normalise_json(&expand_placeholders(&expected, &cwd));
                if part == "hydra" {
                    let conf = std::fs::canonicalize(&conf).unwrap();
                    got = hydra_node_placeholders(got, &conf);
                    want = known_hydra_differences(want);
                }
                if got != want {
                    failures.push(format!("{id}: {argv:?}\n got: {got}\nwant: {want}"));
                }
            }
        }
    }
    assert!(count >= 155, "only {count} conformance commands found");
    assert!(
        failures.is_empty(),
        "{} of {count} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A case line's `--cfg` part (`--cfg hydra` or `--cfg job` first; job by default) and overrides.
fn split_cfg(argv: &[String]) -> (&'static str, &[String]) {
    match argv {
        [flag, part, rest @ ..] if flag == "--cfg" && part == "hydra" => ("hydra", rest),
        [flag, part, rest @ ..] if flag == "--cfg" && part == "job" => ("job", rest),
        _ => ("job", argv),
    }
}

/// `--cfg hydra` output with the config dir written `<CONF>`, as tools/gen_expected.py writes
/// Hydra's (`<CWD>` is expanded in the expected text instead).
fn hydra_node_placeholders(got: serde_json::Value, conf: &Path) -> serde_json::Value {
    let text = got
        .to_string()
        .replace(&conf.display().to_string(), "<CONF>");
    serde_json::from_str(&text).unwrap()
}

/// The one known difference in Hydra's node: Hydra names a config dir given by `--config-dir`
/// provider `command-line`, llmprof always `main` (the provider of `hydra.main(config_path=...)`).
fn known_hydra_differences(mut want: serde_json::Value) -> serde_json::Value {
    if let Some(sources) = want
        .pointer_mut("/hydra/runtime/config_sources")
        .and_then(|s| s.as_array_mut())
    {
        for s in sources {
            if s["provider"] == "command-line" {
                s["provider"] = "main".into();
            }
        }
    }
    want
}

/// Run one case line of a public case; returns (success, stderr).
fn run_case(case: &str, args: &[&str]) -> (bool, String) {
    let conf = repo_root()
        .join("tests/fixtures/hydra/public")
        .join(case)
        .join("conf");
    let out = Command::new(llmprof())
        .args(["--config-dir", &conf.display().to_string()])
        .args(["--config-name", "config", "--cfg", "job", "--resolve"])
        .args(args)
        .current_dir(repo_root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hydra_messages_are_kept() {
    // The comparer checks only that these fail; their words are Hydra's (expected/NN.msg).
    for (case, args, wanted) in [
        (
            "p15_override_struct_mode",
            "model={extra:1}",
            "Could not override 'model'.\nTo append to your config use +model={extra:1}",
        ),
        (
            "p15_override_struct_mode",
            "model.name.x={a:1}",
            "Could not override 'model.name.x'.\nTo append to your config use +model.name.x={a:1}",
        ),
        (
            "p15_override_struct_mode",
            "db=null",
            "Config group override must be a string or a list. Got NoneType",
        ),
        ("p15_override_struct_mode", "model.opts=[1]", "Error merging override model.opts=[1]"),
        (
            "p16_merge_type_errors",
            "shape=dict_over_list",
            "In 'shape/dict_over_list': ConfigTypeError raised while composing config:\nCannot merge DictConfig with ListConfig",
        ),
        (
            "p16_merge_type_errors",
            "shape=hydra_dict_over_str",
            "In 'shape/hydra_dict_over_str': ValidationError raised while composing config:\nCannot convert 'DictConfig' to string",
        ),
        (
            "p18_defaults_cycles",
            "a=x",
            "In 'b/y': Circular reference in the defaults list: config -> a/x -> b/y -> a/x",
        ),
        (
            "p18_defaults_cycles",
            "+g=self_rel",
            "Circular reference in the defaults list: config -> g/self_rel -> g/self_rel",
        ),
        (
            "p19_config_in_own_defaults",
            "x=2",
            "Circular reference in the defaults list: config -> config",
        ),
        (
            "p21_hydra_groups",
            "hydra/job_logging=nope",
            "In 'hydra/config': Could not find 'hydra/job_logging/nope'\n\nAvailable options in 'hydra/job_logging':\n\tcustom\n\tdefault\n\tdisabled\n\tnone\n\tstdout\nConfig search path:\n\tprovider=hydra, path=pkg://hydra.conf\n",
        ),
        (
            "p21_hydra_groups",
            "~hydra/job_logging=stdout",
            "Could not delete 'hydra/job_logging=stdout'. No match in the defaults list",
        ),
        (
            "p21_hydra_groups",
            "+hydra/job_logging=stdout",
            "Multiple values for hydra/job_logging. To override a value use 'override hydra/job_logging: stdout'",
        ),
        (
            "p21_hydra_groups",
            "hydra.job_logging=5",
            "Error merging override hydra.job_logging=5",
        ),
    ] {
        let (ok, err) = run_case(case, &[args]);
        assert!(!ok, "{case} {args}: should fail");
        assert!(err.contains(wanted), "{case} {args}: wanted {wanted:?} in\n{err}");
    }
    let (ok, err) = run_case("p17_missing_interpolation", &["--format", "json"]);
    assert!(ok, "{err}");
}
