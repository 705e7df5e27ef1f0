//! Fuzzing the Nsight CSV readers (issue #13): random and mutated CSV text (from the recorded
//! fixtures: truncated, columns duplicated, odd quoting, huge numbers, units removed, invalid
//! UTF-8, lines spliced between files) fed to the ncu and nsys parsers, the metric derivation and
//! the whole `analyze ncu` path. Each must return (`Ok` or an error), never panic or hang.
//!
//! A few seconds by default; `LLMPROF_FUZZ_SECS=600` runs longer, `LLMPROF_FUZZ_SEED=N` picks the
//! seed. A failing input is saved under the test's scratch folder and its seed printed.
//! Property-based in the proptest sense, but dependency-free (a seeded SplitMix64 generator):
//! the llmprof package has no dev-dependencies.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use llmprof::nsight::ncu::{analysis, metrics, parse as ncu};
use llmprof::nsight::nsys::parse as nsys;

use crate::support::{repo_root, scratch};

/// SplitMix64 (Steele, Lea and Flood 2014).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Every recorded Nsight CSV, plus small hand-written ones of each nsys report.
fn corpus() -> Vec<Vec<u8>> {
    fn walk(dir: &Path, out: &mut Vec<Vec<u8>>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("fixtures")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "csv") {
                out.push(std::fs::read(&p).expect("fixture"));
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo_root().join("tests/fixtures/stage2"), &mut out);
    for s in [
        "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances,Proj Avg (ns),Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),Total GPU Ops,Avg GPU Ops,Avg Range Lvl,Avg Num Child\n:timed,PushPop,8065837,8264942,20,403291.8,403000.0,400000,410000,100.0,20,1.0,0.0,0.0\n",
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n67.3,335987431,2,167993715.5,167993715.5,2971823,333015608,233376198.5,cudaLaunchKernel\n",
        "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n80.0,1000,4,250.0,250.0,200,300,10.0,[CUDA memcpy Host-to-Device]\n",
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range\n95.0,3481709,1,3481709.0,3481709.0,3481709,3481709,0.0,PushPop,:decode\n",
    ] {
        out.push(s.as_bytes().to_vec());
    }
    out
}

const ODD_CELLS: [&str; 16] = [
    "1e308",
    "-1e308",
    "99999999999999999999999999999",
    "18446744073709551616",
    "-0",
    "NaN",
    "inf",
    "1,2,3,,4",
    ",,,",
    "\"",
    "\"\"\"",
    "n/a",
    "",
    "no data",
    "0x1F",
    "1.7976931348623157e309",
];

const ODD_UNITS: [&str; 10] = [
    "",
    "Gbyte/nsecond",
    "Pbyte/second",
    "cycle/usecond",
    "inst/cycle",
    "%",
    "warp",
    "K",
    "byte/",
    "/cycle",
];

fn lines(b: &[u8]) -> Vec<Vec<u8>> {
    b.split_inclusive(|c| *c == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// One random mutation of `input` (`other`: a second corpus file to splice from).
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut ls = lines(input);
    let n = ls.len().max(1);
    match rng.below(12) {
        0 => input[..rng.below(input.len() + 1)].to_vec(), // truncate
        1 => {
            // duplicate a column: repeat one comma-separated cell of every line
            let k = rng.below(8);
            ls.iter()
                .flat_map(|l| {
                    let cells: Vec<&[u8]> = l.split(|c| *c == b',').collect();
                    let mut out = Vec::new();
                    for (i, c) in cells.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(c);
                        if i == k {
                            out.push(b',');
                            out.extend_from_slice(c.strip_suffix(b"\n").unwrap_or(c));
                        }
                    }
                    out
                })
                .collect()
        }
        2 => {
            // odd quoting: add or remove a quote somewhere
            let mut v = input.to_vec();
            let at = rng.below(v.len() + 1);
            if rng.below(2) == 0 || v.is_empty() {
                v.insert(at, b'"');
            } else if let Some(q) = v[at.min(v.len() - 1)..].iter().position(|c| *c == b'"') {
                v.remove(at.min(v.len() - 1) + q);
            }
            v
        }
        3 => {
            // a huge or odd number in place of a cell
            let text = String::from_utf8_lossy(input).into_owned();
            let cells: Vec<&str> = text.split(',').collect();
            let k = rng.below(cells.len());
            let mut out: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
            let odd = rng.pick(&ODD_CELLS);
            out[k] = if cells[k].starts_with('"') {
                format!("\"{odd}\"")
            } else {
                odd.to_string()
            };
            out.join(",").into_bytes()
        }
        4 => {
            // units removed or replaced: blank the units row (ncu raw) / header units (nsys)
            let text = String::from_utf8_lossy(input).into_owned();
            let unit = rng.pick(&ODD_UNITS);
            text.replace("(ns)", &format!("({unit})"))
                .replacen("\"byte\"", &format!("\"{unit}\""), rng.below(50))
                .replacen("\"nsecond\"", "\"\"", rng.below(5))
                .into_bytes()
        }
        5 => {
            // drop, duplicate or swap lines
            let i = rng.below(n);
            let j = rng.below(n);
            match rng.below(3) {
                0 if i < ls.len() => {
                    ls.remove(i);
                }
                1 if i < ls.len() => {
                    let l = ls[i].clone();
                    for _ in 0..rng.below(5) + 1 {
                        ls.insert(i, l.clone());
                    }
                }
                _ if i < ls.len() && j < ls.len() => ls.swap(i, j),
                _ => {}
            }
            ls.concat()
        }
        6 => {
            // random bytes: invalid UTF-8, NUL, CR, lone quotes, separators
            let mut v = input.to_vec();
            for _ in 0..rng.below(16) + 1 {
                let b = *rng.pick(&[0u8, 0xff, 0xc3, b'\r', b'\n', b'"', b',', b'\t', b' ']);
                let at = rng.below(v.len() + 1);
                v.insert(at, b);
            }
            v
        }
        7 => {
            // splice: the head of one file, the tail of another
            let a = rng.below(input.len() + 1);
            let b = rng.below(other.len() + 1);
            [&input[..a], &other[b..]].concat()
        }
        8 => input.iter().filter(|c| **c != b'\n').copied().collect(), // one long line
        9 => {
            // byte flips
            let mut v = input.to_vec();
            for _ in 0..rng.below(8) + 1 {
                if !v.is_empty() {
                    let at = rng.below(v.len());
                    v[at] ^= 1 << rng.below(8);
                }
            }
            v
        }
        10 => {
            // pure noise from the CSV alphabet
            let alphabet = b"\"ID,Kernel Name,Metric Name,Metric Unit,Metric Value,Time (%),Total Time (ns),Instances,Name,0123456789.e-+ \n";
            (0..rng.below(2000)).map(|_| *rng.pick(alphabet)).collect()
        }
        _ => {
            // the header kept, every data cell empty
            let text = String::from_utf8_lossy(input).into_owned();
            text.lines()
                .enumerate()
                .map(|(i, l)| {
                    if i < 3 {
                        l.to_string()
                    } else {
                        l.split(',').map(|_| "\"\"").collect::<Vec<_>>().join(",")
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        }
    }
}

/// Everything a reader of an untrusted CSV does with `bytes`; `dir` holds a file copy for the
/// `analyze ncu` path (every `deep`-th case: it writes a file).
fn exercise(bytes: &[u8], dir: &Path, deep: bool) {
    if let Ok((_, recs)) = ncu::parse(bytes) {
        for r in &recs {
            let m = metrics::derive(r);
            let _ = serde_json::to_string(&m);
        }
    }
    let _ = ncu::parse_with(bytes, metrics::is_used);
    if let Ok(report) = nsys::parse_report(bytes) {
        let _ = serde_json::to_string(&report);
    }
    if deep {
        let file = dir.join("case.csv");
        std::fs::write(&file, bytes).expect("write case");
        let _ = analysis::analyze_ncu(&file, true, None);
        let _ = analysis::analyze_ncu(&file, false, Some("H100 SXM"));
        let _ = llmprof::nsight::analyze::analyze_nsys(&file, false);
    }
}

#[test]
fn nsight_csv_readers_never_panic_or_hang() {
    let secs: f64 = std::env::var("LLMPROF_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let seed: u64 = std::env::var("LLMPROF_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1113);
    let dir = scratch("nsight-fuzz");
    let corpus = corpus();
    let corpus_len = corpus.len();
    assert!(corpus_len >= 15, "fixtures missing: {corpus_len}");
    let (tx, rx) = mpsc::channel::<Result<usize, String>>();
    let worker_dir = dir.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut cases = 0usize;
        // Every fixture unmutated first, then random mutation chains.
        while cases < corpus.len() || start.elapsed().as_secs_f64() < secs {
            let case_seed = seed.wrapping_add(cases as u64);
            let mut rng = Rng(case_seed);
            let mut bytes = corpus[cases % corpus.len()].clone();
            if cases >= corpus.len() {
                for _ in 0..rng.below(4) + 1 {
                    let other = rng.pick(&corpus).clone();
                    bytes = mutate(&mut rng, &bytes, &other);
                }
            }
            std::fs::write(worker_dir.join("last-input.csv"), &bytes).expect("save input");
            let deep = cases % 25 == 0;
            let result = catch_unwind(AssertUnwindSafe(|| exercise(&bytes, &worker_dir, deep)));
            if result.is_err() {
                let saved = worker_dir.join(format!("panic-{case_seed}.csv"));
                std::fs::write(&saved, &bytes).expect("save panic input");
                let _ = tx.send(Err(format!(
                    "fuzz nsight: FAILED: panic on case seed {case_seed}; input saved to {}",
                    saved.display()
                )));
                return;
            }
            cases += 1;
            let _ = tx.send(Ok(cases));
        }
        let _ = tx.send(Err(format!("done:{cases}")));
    });
    let start = Instant::now();
    let mut cases = 0;
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(n)) => cases = n,
            Ok(Err(msg)) if msg.starts_with("done:") => break,
            Ok(Err(msg)) => panic!("{msg}"),
            Err(_) => panic!(
                "fuzz nsight: FAILED: one input took over 30 s (hang?) after {cases} cases; it is saved as {}",
                dir.join("last-input.csv").display()
            ),
        }
    }
    // The summary line scripts/fuzz.sh looks for, in the composer targets' form.
    eprintln!(
        "fuzz nsight: ok: {cases} inputs in {:.1} s (seed {seed})",
        start.elapsed().as_secs_f64()
    );
    assert!(cases >= corpus_len);
}
