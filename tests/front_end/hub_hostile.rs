//! The Hub client against a hostile or broken server (docs/security.md): file names and commits
//! that would lead out of the cache, a redirect to another origin while a token is set, a server
//! that never answers. Each is refused with a message naming the problem, and nothing outside the
//! cache entry is created (a before/after listing of the scratch root).
use crate::front_end::fake_hub::{tiny_repo, FakeHub, COMMIT};
use crate::front_end::hub::{cache_entry, download};
use crate::support::{scratch, stderr};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Every path under `root`.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                stack.push(p.clone());
            }
            out.insert(p);
        }
    }
    out
}

/// `home` inside a scratch root, and the root's listing before the command.
fn scratch_home(name: &str) -> (PathBuf, PathBuf, BTreeSet<PathBuf>) {
    let root = scratch(name);
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let before = tree(&root);
    (root, home, before)
}

/// Whatever appeared under `root` lies in the repository's cache entry, and no snapshot exists.
fn nothing_written_outside_the_entry(root: &Path, home: &Path, before: &BTreeSet<PathBuf>) {
    let entry = cache_entry(home);
    for p in tree(root).difference(before) {
        assert!(
            p.starts_with(&entry) || entry.starts_with(p),
            "created outside the cache entry: {}",
            p.display()
        );
    }
    assert!(!entry.join("snapshots").exists(), "a snapshot was made");
}

#[test]
fn listed_file_names_that_leave_the_snapshot_are_refused() {
    for hostile in [
        "../../../../../../escape.json",
        "/tmp/escape.json",
        "a/../../b.json",
    ] {
        let hub = FakeHub::start(tiny_repo());
        hub.faults.lock().unwrap().extra_listed = vec![hostile.to_string()];
        let (root, home, before) = scratch_home("hub-traversal");
        let out = download(&hub, &home, &[]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{hostile}: {err}");
        assert!(
            err.contains("not a safe relative path") && err.contains("HF_ENDPOINT"),
            "{hostile}: {err}"
        );
        nothing_written_outside_the_entry(&root, &home, &before);
    }
}

#[test]
fn a_resolved_commit_that_is_not_a_hash_is_refused() {
    let hub = FakeHub::start(tiny_repo());
    hub.faults.lock().unwrap().listing_sha = Some("../../../../../../outside".into());
    let (root, home, before) = scratch_home("hub-bad-commit");
    let out = download(&hub, &home, &[]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not a 40-digit commit hash"), "{err}");
    nothing_written_outside_the_entry(&root, &home, &before);
}

#[test]
fn the_token_does_not_follow_a_redirect_to_another_origin() {
    // The Hub answers each file with a redirect to a second server (another port: another
    // origin), as it does to its CDN; the bytes come from there, without the token.
    let cdn = FakeHub::start(tiny_repo());
    let hub = FakeHub::start(tiny_repo());
    hub.faults.lock().unwrap().redirect_to = Some(cdn.url.clone());
    let home = scratch("hub-redirect-token");
    let out = download(&hub, &home, &[("HF_TOKEN", "hf_secret")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cache_entry(&home)
        .join("snapshots")
        .join(COMMIT)
        .join("config.json")
        .is_file());
    let at_hub = hub.seen.lock().unwrap().clone();
    assert!(
        !at_hub.is_empty()
            && at_hub
                .iter()
                .all(|s| s.auth.as_deref() == Some("Bearer hf_secret")),
        "{at_hub:?}"
    );
    let at_cdn = cdn.seen.lock().unwrap().clone();
    assert!(!at_cdn.is_empty(), "the bytes came from the second server");
    assert!(
        at_cdn.iter().all(|s| s.auth.is_none()),
        "token sent to another origin: {at_cdn:?}"
    );
}

#[test]
fn a_silent_server_ends_in_an_error_naming_the_timeout() {
    let hub = FakeHub::start(tiny_repo());
    hub.faults.lock().unwrap().stall = true;
    let home = scratch("hub-stall");
    let started = Instant::now();
    let out = download(&hub, &home, &[("LLMPROF_HUB__READ_TIMEOUT_S", "1")]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "waited {:?}",
        started.elapsed()
    );
    assert!(
        err.contains("1 s read timeout") && err.contains("hub.read_timeout_s"),
        "{err}"
    );
    assert!(err.contains(&hub.url), "names the host: {err}");
}

#[test]
fn a_timeout_setting_out_of_range_names_the_setting() {
    let hub = FakeHub::start(tiny_repo());
    let home = scratch("hub-timeout-range");
    let out = download(&hub, &home, &[("LLMPROF_HUB__CONNECT_TIMEOUT_S", "0")]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("hub.connect_timeout_s") && err.contains("out of range"),
        "{err}"
    );
}

#[test]
fn a_revision_or_repository_that_names_a_folder_outside_the_cache_is_refused() {
    let hub = FakeHub::start(tiny_repo());
    let conf = crate::support::repo_root()
        .join("conf")
        .display()
        .to_string();
    for args in [
        vec![
            "models",
            "download",
            "tiny-org/tiny-model",
            "--revision",
            "../../../../x",
        ],
        vec!["models", "download", "../../../tiny-model"],
    ] {
        let (root, home, before) = scratch_home("hub-bad-revision");
        let mut all = vec!["--config-dir", conf.as_str()];
        all.extend(args.iter().copied());
        let out = crate::front_end::hub::run(&hub, &home, &[], &all);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.contains("outside the Hub cache"), "{args:?}: {err}");
        nothing_written_outside_the_entry(&root, &home, &before);
    }
    assert!(
        hub.paths().is_empty(),
        "nothing was asked of the server: {:?}",
        hub.paths()
    );
}
