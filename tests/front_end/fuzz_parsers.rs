//! Fuzz targets of the parsers of untrusted input added in round 3 (#40 item 9, docs/fuzzing.md):
//! the Hub's repository listing and its answers' headers, site settings files, prompts JSONL files
//! and a sweep's state (`.llmprof/sweep.json`). Each input is parsed or refused, never a panic, a hang or unbounded
//! memory (the driver's gates); besides, what a parser accepts must hold its promises: a listing
//! accepted has a 40-digit commit and only safe relative file names, prompts accepted are
//! non-empty strings.
use crate::front_end::fuzz_gen::noisy;
use crate::front_end::fuzz_support::{fuzz, scratch_dir};
use proptest::prelude::*;
use proptest::sample::select;

/// Strings a hostile server or file would try: traversal, absolute paths, separators, controls,
/// numbers where strings go, huge and odd values.
fn hostile_str() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        3 => select(vec![
            "config.json", "a/b.safetensors", "../x", "../../../../etc/passwd", "/abs/x", "a//b",
            "./a", "a/./b", "a\\\\b", "a\\u0000b", "\\n", "", ".", "..", "é/ü.json", "a/",
            "0123456789abcdef0123456789abcdef01234567", "main", "refs/pr/1",
        ])
        .prop_map(str::to_string),
        1 => noisy(40),
    ]
}

/// A JSON value: a hostile string (quoted), a number, or a literal.
fn json_value() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        4 => hostile_str().prop_map(|s| format!("\"{s}\"")),
        1 => select(vec!["0", "-1", "1e400", "18446744073709551616", "null", "true", "[]", "{}", "1.5"])
            .prop_map(str::to_string),
    ]
}

/// `{"sha": …, "siblings": [{"rfilename": …, "size": …, "lfs": {…}}]}`, or noise.
fn listing() -> impl Strategy<Value = String> + Clone {
    let sibling = (json_value(), json_value(), prop::option::of((json_value(), json_value())))
        .prop_map(|(name, size, lfs)| match lfs {
            Some((sha, lsize)) => {
                format!(r#"{{"rfilename": {name}, "size": {size}, "lfs": {{"sha256": {sha}, "size": {lsize}}}}}"#)
            }
            None => format!(r#"{{"rfilename": {name}, "size": {size}}}"#),
        });
    prop_oneof![
        4 => (json_value(), prop::collection::vec(sibling, 0..6))
            .prop_map(|(sha, sib)| format!(r#"{{"sha": {sha}, "siblings": [{}]}}"#, sib.join(", "))),
        1 => noisy(300),
    ]
}

#[allow(clippy::ptr_arg)]
fn check_listing(body: &String) -> Result<(), String> {
    let repo = llmprof::hub::RepoRef::model("org/m", "main");
    let Ok(listing) = llmprof::hub::parse_listing(&repo, "http://127.0.0.1:9/api", body.as_bytes())
    else {
        return Ok(());
    };
    if listing.commit.len() != 40 || !listing.commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("accepted the commit {:?}", listing.commit));
    }
    for f in &listing.files {
        if llmprof::untrusted::relative_path(&f.name).is_err() {
            return Err(format!("accepted the file name {:?}", f.name));
        }
    }
    Ok(())
}

#[test]
fn fuzz_hub_listing() {
    fuzz("hub_listing", listing(), check_listing);
}

/// A TOML settings file: sections and keys llmprof knows and does not, values of every kind.
fn settings_file() -> impl Strategy<Value = String> + Clone {
    let key = select(vec![
        "partition",
        "account",
        "qos",
        "setup",
        "env",
        "nsys",
        "ncu",
        "cache_dir",
        "connect_timeout_s",
        "read_timeout_s",
        "device",
        "x",
    ]);
    let value = prop_oneof![
        json_value(),
        select(vec![
            "[\"a\", 1]",
            "{ a = 1 }",
            "1979-05-27T07:32:00Z",
            "inf",
            "nan",
            "0x10",
            "'lit'"
        ])
        .prop_map(str::to_string),
    ];
    let line = (key, value).prop_map(|(k, v)| format!("{k} = {v}"));
    let section = (
        select(vec![
            "slurm",
            "tools",
            "hub",
            "defaults",
            "slurm.env",
            "other",
            "hub.x",
        ]),
        prop::collection::vec(line, 0..4),
    )
        .prop_map(|(s, lines)| format!("[{s}]\n{}\n", lines.join("\n")));
    prop_oneof![
        4 => prop::collection::vec(section, 0..4).prop_map(|s| s.concat()),
        1 => noisy(300),
    ]
}

#[allow(clippy::ptr_arg)]
fn check_settings(text: &String) -> Result<(), String> {
    let dir = scratch_dir("settings");
    let project_file = dir.join("llmprof.toml");
    std::fs::write(&project_file, text).map_err(|e| e.to_string())?;
    let origins = llmprof::settings::Origins {
        user_file: None,
        project_file,
        env_prefix: "LLMPROF_FUZZ_NONE_".into(),
    };
    let loaded = llmprof::settings::Settings::load_from(&origins);
    if let Ok(s) = &loaded {
        let _ = llmprof::hub::HubEnv::from_vars(|_| None).apply(&s.hub);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn fuzz_settings_file() {
    fuzz("settings", settings_file(), check_settings);
}

/// A prompts JSONL file: lines of objects with `prompt` of every kind, and noise.
fn prompts_file() -> impl Strategy<Value = String> + Clone {
    let line = prop_oneof![
        4 => json_value().prop_map(|v| format!(r#"{{"prompt": {v}}}"#)),
        1 => json_value().prop_map(|v| format!(r#"{{"text": {v}, "prompt": "ok"}}"#)),
        1 => noisy(60),
    ];
    prop::collection::vec(line, 0..8).prop_map(|l| l.join("\n"))
}

#[allow(clippy::ptr_arg)]
fn check_prompts(text: &String) -> Result<(), String> {
    let dir = scratch_dir("prompts");
    std::fs::write(dir.join("p.jsonl"), text).map_err(|e| e.to_string())?;
    let spec: llmprof::spec::DatasetSpec = serde_json::from_value(serde_json::json!({
        "name": "prompts", "root": dir.display().to_string(), "subset_filelist": null,
        "variant": null,
        "sampling": {"num_epochs": 1, "num_samples_per_epoch": null, "randomize": false, "seed": 0},
        "max_image_pixels": 1, "max_image_bytes": 1, "input_len": null, "output_len": 8,
        "range_ratio": null, "num_prompts": null, "seed": null, "file": "p.jsonl",
    }))
    .map_err(|e| format!("the test's spec: {e}"))?;
    let result = llmprof::dataset::text::prompts(&spec, std::path::Path::new("/"));
    let _ = std::fs::remove_dir_all(&dir);
    if let Ok(items) = result {
        for i in &items {
            match &i.text {
                Some(llmprof::dataset::TextInput::Prompt { text, .. }) if !text.is_empty() => {}
                other => return Err(format!("accepted an item without a prompt: {other:?}")),
            }
        }
    }
    Ok(())
}

#[test]
fn fuzz_prompts_jsonl() {
    fuzz("prompts", prompts_file(), check_prompts);
}

/// `.llmprof/sweep.json`: the plan's fields with values of every kind, and noise.
fn sweep_state() -> impl Strategy<Value = String> + Clone {
    let job = (json_value(), prop::collection::vec(json_value(), 0..3))
        .prop_map(|(num, o)| format!(r#"{{"num": {num}, "overrides": [{}]}}"#, o.join(", ")));
    prop_oneof![
        4 => (
            json_value(),
            json_value(),
            prop::collection::vec(json_value(), 0..3),
            prop::collection::vec(job, 0..4),
        )
            .prop_map(|(cmd, dir, overrides, jobs)| {
                format!(
                    r#"{{"command": {cmd}, "config_dir": {dir}, "config_name": "config", "job_name": "j", "overrides": [{}], "now": "2026-01-01T00:00:00Z", "cwd": "/", "launcher": "basic", "jobs": [{}]}}"#,
                    overrides.join(", "),
                    jobs.join(", ")
                )
            }),
        1 => noisy(300),
    ]
}

#[allow(clippy::ptr_arg)]
fn check_sweep_state(text: &String) -> Result<(), String> {
    let dir = scratch_dir("sweep_state");
    let plan_dir = dir.join(llmprof::launcher::plan::PLAN_DIR);
    std::fs::create_dir_all(&plan_dir).map_err(|e| e.to_string())?;
    std::fs::write(plan_dir.join(llmprof::launcher::plan::PLAN_FILE), text)
        .map_err(|e| e.to_string())?;
    let _ = llmprof::launcher::plan::SweepPlan::read(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn fuzz_sweep_state() {
    fuzz("sweep_state", sweep_state(), check_sweep_state);
}

/// The first answer for a Hub file: status, endpoint, and each header llmprof reads (absent, a
/// hostile string, or a number), as (endpoint, status, headers).
type HubAnswer = (String, u16, Vec<(String, String)>);

fn hub_answer() -> impl Strategy<Value = HubAnswer> + Clone {
    let header_value = prop_oneof![
        3 => hostile_str(),
        1 => select(vec![
            "\"0123abcd\"", "W/\"etag\"", "bytes 0-0/1234", "bytes 0-0/", "18446744073709551616",
            "-5", "https://cdn.example/x", "http://evil.example/x", "/relative/x", "javascript:1",
        ])
        .prop_map(str::to_string),
    ];
    let names = select(vec![
        "x-linked-etag",
        "etag",
        "x-linked-size",
        "content-range",
        "location",
    ]);
    (
        select(vec!["https://huggingface.co", "http://127.0.0.1:9"]).prop_map(str::to_string),
        select(vec![200u16, 206, 301, 302, 307, 308, 404]),
        prop::collection::vec((names.prop_map(str::to_string), header_value), 0..6),
    )
}

fn check_hub_answer(answer: &HubAnswer) -> Result<(), String> {
    let (endpoint, status, headers) = answer;
    let url = format!("{endpoint}/org/m/resolve/main/config.json");
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let Ok(head) = llmprof::hub::file_head(endpoint, &url, *status, header) else {
        return Ok(());
    };
    if head.etag.is_empty()
        || head.etag.contains(['/', '\\'])
        || head.etag == "."
        || head.etag == ".."
    {
        return Err(format!(
            "accepted the etag {:?} (it names a cache file)",
            head.etag
        ));
    }
    if endpoint.starts_with("https://") && !head.data_url.starts_with("https://") {
        return Err(format!(
            "an https endpoint's bytes would come from {}",
            head.data_url
        ));
    }
    Ok(())
}

#[test]
fn fuzz_hub_headers() {
    fuzz("hub_headers", hub_answer(), check_hub_answer);
}
