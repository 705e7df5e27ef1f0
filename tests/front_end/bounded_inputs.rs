//! Issue #13, bounded resources: decompression bombs fail from the header before any pixel
//! buffer is allocated, and FIFOs, symlink loops and other non-regular files in dataset folders
//! and Nsight export folders are skipped with a note instead of hanging or vanishing silently.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use llmprof::dataset::{self, ImageLimits, NotRegular};

use crate::support::{llmprof, repo_root, scratch};

/// CRC-32 (ISO-HDLC, as PNG chunks use).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

/// A PNG of a few dozen bytes whose header declares `width`×`height` 8-bit pixels of colour type
/// `color` (2 RGB, 6 RGBA); its image data is an empty zlib stream, so decoding it in full would
/// first reserve the whole buffer and then fail.
fn bomb_png(path: &Path, width: u32, height: u32, color: u8) {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, color, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(
        &mut png,
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    chunk(&mut png, b"IEND", &[]);
    std::fs::write(path, png).expect("write png");
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(ok.success());
}

/// Runs `f` on a thread; fails the test if it takes longer than `limit` (a hang on a FIFO).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}: hung?"))
}

#[test]
fn bomb_pngs_fail_from_the_header_naming_file_and_size() {
    let d = scratch("bomb-png");
    let big = d.join("declares-60000x60000.png");
    bomb_png(&big, 60_000, 60_000, 2);
    assert!(std::fs::metadata(&big).unwrap().len() < 100);
    let t = Instant::now();
    let e = format!("{:#}", dataset::load_rgb(&big).unwrap_err());
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(
        e.contains("declares-60000x60000.png")
            && e.contains("60000×60000")
            && e.contains("3600.0 Mpixel")
            && e.contains("dataset.max_image_pixels=178956970"),
        "{e}"
    );
    // 20000×20000 RGBA: 400 Mpixel, what a 1 MB highly compressible PNG can declare.
    let rgba = d.join("rgba-20000.png");
    bomb_png(&rgba, 20_000, 20_000, 6);
    let e = format!("{:#}", dataset::load_rgb(&rgba).unwrap_err());
    assert!(
        e.contains("20000×20000") && e.contains("2.8 GB decoded"),
        "{e}"
    );
    // Within the pixel limit but over a byte limit: the byte key is named.
    let limits = ImageLimits {
        max_pixels: u64::MAX,
        max_bytes: 1 << 30,
    };
    let e = format!(
        "{:#}",
        dataset::load_rgb_limited(&rgba, &limits).unwrap_err()
    );
    assert!(e.contains("dataset.max_image_bytes=1073741824"), "{e}");
}

/// The 60000×60000 header under a 1.5 GiB address-space limit: the old decoder reserved 10.8 GB
/// and aborted the process ("memory allocation of 10800000000 bytes failed"); now it is an error.
#[test]
fn bomb_png_under_a_memory_limit_is_an_error_not_an_abort() {
    if let Ok(path) = std::env::var("LLMPROF_TEST_BOMB_PNG") {
        let e = format!("{:#}", dataset::load_rgb(Path::new(&path)).unwrap_err());
        assert!(e.contains("60000×60000"), "{e}");
        return;
    }
    let d = scratch("bomb-png-ulimit");
    let png = d.join("bomb.png");
    bomb_png(&png, 60_000, 60_000, 2);
    let exe = std::env::current_exe().expect("test binary");
    // This test's name as libtest knows it: its module path without the crate's name.
    let name = format!(
        "{}::bomb_png_under_a_memory_limit_is_an_error_not_an_abort",
        module_path!().split_once("::").expect("a test module").1
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1572864 && exec \"$0\" \"$@\"")
        .arg(&exe)
        .args([name.as_str(), "--exact", "--test-threads=1"])
        .env("LLMPROF_TEST_BOMB_PNG", &png)
        .output()
        .expect("child test runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn images_within_limits_still_load_and_a_small_limit_names_its_key() {
    let page = repo_root().join("datasets/samples/page-01-text.png");
    let img = dataset::load_rgb(&page).expect("sample page loads");
    assert!(img.width() > 0);
    let tiny = ImageLimits {
        max_pixels: 1000,
        max_bytes: 1 << 30,
    };
    let e = format!("{:#}", dataset::load_rgb_limited(&page, &tiny).unwrap_err());
    assert!(
        e.contains("page-01-text.png") && e.contains("dataset.max_image_pixels=1000"),
        "{e}"
    );
}

#[test]
fn a_fifo_named_like_an_image_is_refused_not_opened() {
    let d = scratch("fifo-image");
    let fifo = d.join("page.png");
    mkfifo(&fifo);
    let e = within(Duration::from_secs(10), move || {
        format!("{:#}", dataset::load_rgb(&fifo).unwrap_err())
    });
    assert!(e.contains("page.png is a FIFO (named pipe)"), "{e}");
}

/// A folder dataset with a FIFO, a symlink loop and a dangling symlink among its pages.
fn odd_folder(tag: &str) -> PathBuf {
    let d = scratch(tag);
    std::fs::copy(
        repo_root().join("datasets/samples/page-01-text.png"),
        d.join("a.png"),
    )
    .unwrap();
    mkfifo(&d.join("b-fifo.png"));
    std::os::unix::fs::symlink("c-loop.png", d.join("c-loop.png")).unwrap();
    std::os::unix::fs::symlink("gone.png", d.join("d-dangling.png")).unwrap();
    std::fs::create_dir(d.join("e-folder.png")).unwrap();
    d
}

#[test]
fn dataset_listing_skips_and_reports_non_regular_entries() {
    let d = odd_folder("odd-dataset");
    let root = d.clone();
    let listing = within(Duration::from_secs(10), move || {
        dataset::list_images_entries(&root, None).expect("listing")
    });
    assert_eq!(listing.images, vec![d.join("a.png")]);
    let kinds: Vec<(String, NotRegular)> = listing
        .skipped
        .iter()
        .map(|s| {
            (
                s.path.file_name().unwrap().to_string_lossy().into_owned(),
                s.kind,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("b-fifo.png".to_string(), NotRegular::Fifo),
            ("c-loop.png".to_string(), NotRegular::SymlinkLoop),
            ("d-dangling.png".to_string(), NotRegular::BrokenSymlink),
        ]
    );
    let note = dataset::skipped_note(&listing.skipped).expect("a note");
    assert!(
        note.starts_with("skipped 3 entries that are not regular files")
            && note.contains("b-fifo.png is a FIFO"),
        "{note}"
    );
    // A subset file that lists the FIFO: skipped too, the run goes on with the rest.
    let list = d.join("subset.txt");
    std::fs::write(&list, "a.png\nb-fifo.png\n").unwrap();
    let listing = dataset::list_images_entries(&d, Some(&list)).expect("subset");
    assert_eq!(listing.images, vec![d.join("a.png")]);
    assert_eq!(listing.skipped[0].kind, NotRegular::Fifo);
}

#[test]
fn dataset_of_only_fifos_says_so() {
    let d = scratch("only-fifos");
    mkfifo(&d.join("p.png"));
    let e = format!("{:#}", dataset::list_images(&d, None).unwrap_err());
    assert!(
        e.contains("holds no images") && e.contains("p.png is a FIFO"),
        "{e}"
    );
}

/// Runs `llmprof args…`, killing it after `limit`.
fn run_bounded(args: &[&str], limit: Duration) -> (bool, String) {
    let mut child = Command::new(llmprof())
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llmprof starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            return (status.success(), text);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("llmprof {args:?} still running after {limit:?}: hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An export folder with the real CSVs, a FIFO named `*.csv` and a symlink back to the folder.
fn odd_export(tag: &str, fixtures: &str) -> PathBuf {
    let d = scratch(tag);
    let src = repo_root().join("tests/fixtures/stage2").join(fixtures);
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
        }
    }
    mkfifo(&d.join("pipe.csv"));
    std::os::unix::fs::symlink(".", d.join("again")).unwrap();
    std::os::unix::fs::symlink("self.csv", d.join("self.csv")).unwrap();
    let mut f = std::fs::File::create(d.join("notes.txt")).unwrap();
    writeln!(f, "not a csv").unwrap();
    d
}

#[test]
fn analyze_nsys_with_a_fifo_and_a_symlink_loop_finishes_and_says_so() {
    let d = odd_export("odd-nsys", "nsys");
    let (ok, text) = run_bounded(
        &["analyze", "nsys", d.to_str().unwrap(), "--format", "json"],
        Duration::from_secs(60),
    );
    assert!(ok, "{text}");
    assert!(text.contains("cuda_gpu_kern_sum"), "{text}");
    assert!(text.contains("pipe.csv (a FIFO (named pipe))"), "{text}");
    assert!(text.contains("self.csv (a symlink loop)"), "{text}");
}

#[test]
fn analyze_ncu_with_a_fifo_finishes_and_a_fifo_argument_is_named() {
    let d = odd_export("odd-ncu", "ncu-h100-llmprof");
    let (ok, text) = run_bounded(
        &["analyze", "ncu", d.to_str().unwrap(), "--format", "json"],
        Duration::from_secs(60),
    );
    assert!(ok, "{text}");
    assert!(
        text.contains("\"skipped_files\"") && text.contains("pipe.csv"),
        "{text}"
    );
    let fifo = d.join("pipe.csv");
    let (ok, text) = run_bounded(
        &["analyze", "ncu", fifo.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(!ok);
    assert!(
        text.contains("pipe.csv is a FIFO (named pipe)")
            && text.contains("pass a CSV file or a folder"),
        "{text}"
    );
}

/// Special files where `compare` expects a run's files (metrics.json, status.json): an error
/// naming the file and what it is, within seconds, never a read that waits for a writer.
#[test]
fn compare_with_a_fifo_for_a_runs_file_fails_naming_it() {
    let fixture = repo_root().join("tests/fixtures/runs/stage1_cpu");
    for file in ["metrics.json", "status.json"] {
        let d = scratch(&format!("fifo-compare-{}", file.replace('.', "-")));
        let run = d.join("run");
        let copied = Command::new("cp")
            .arg("-r")
            .arg(&fixture)
            .arg(&run)
            .status();
        assert!(
            copied.is_ok_and(|s| s.success()),
            "cp -r {}",
            fixture.display()
        );
        std::fs::remove_file(run.join(file)).unwrap();
        mkfifo(&run.join(file));
        let (ok, text) = run_bounded(
            &["compare", fixture.to_str().unwrap(), run.to_str().unwrap()],
            Duration::from_secs(30),
        );
        assert!(!ok, "{text}");
        assert!(
            text.contains(file) && text.contains("named pipe"),
            "{file}: {text}"
        );
    }
}
