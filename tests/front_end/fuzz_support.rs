//! The fuzzing driver shared by tests/fuzz_*.rs (docs/fuzzing.md): draws inputs from a proptest
//! strategy until a time budget is spent, runs each on its own thread with an 8 MiB stack (as the
//! binary's main thread has) under a per-input deadline and a memory gate, and on a failure
//! (panic, hang, too much memory, a broken property) shrinks the input and fails the test with
//! it and the seed. Budget: LLMPROF_FUZZ_SECS per target (default 2: the smoke run of
//! `cargo test`); LLMPROF_FUZZ_SEED replays a run; LLMPROF_FUZZ_LOG appends a summary line.
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Debug;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Memory one input may hold at its peak before it counts as a failure.
const SOFT_LIMIT: usize = 256 << 20;
/// Past this the allocation fails and the process aborts (after printing the input).
const HARD_LIMIT: usize = 1 << 30;
const STACK: usize = 8 << 20;

thread_local! {
    static TRACKED: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
    static INPUT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The system allocator, counting the bytes held by fuzzing threads (only those).
struct Gate;

#[global_allocator]
static GATE: Gate = Gate;

fn tracked() -> bool {
    TRACKED.try_with(Cell::get).unwrap_or(false)
}

fn grow(bytes: usize) -> bool {
    let live = LIVE.with(|l| {
        l.set(l.get().saturating_add(bytes));
        l.get()
    });
    PEAK.with(|p| p.set(p.get().max(live)));
    if live <= HARD_LIMIT {
        return true;
    }
    TRACKED.with(|t| t.set(false));
    INPUT.with(|i| {
        eprintln!(
            "fuzz: one input holds more than 1 GiB; it was:\n{}",
            i.borrow()
        )
    });
    false
}

fn shrink_by(bytes: usize) {
    LIVE.with(|l| l.set(l.get().saturating_sub(bytes)));
}

unsafe impl GlobalAlloc for Gate {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if tracked() && !grow(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if tracked() {
            shrink_by(layout.size());
        }
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if tracked() {
            if new_size > layout.size() {
                if !grow(new_size - layout.size()) {
                    return std::ptr::null_mut();
                }
            } else {
                shrink_by(layout.size() - new_size);
            }
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// What one input did.
enum Outcome {
    Passed { peak: usize },
    Failed(String),
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Run `check` on one input on a fresh thread; a panic, a deadline miss, too much memory or an
/// `Err` is a failure.
fn run_one<T, F>(input: &T, check: F, deadline: Duration) -> Outcome
where
    T: Clone + Debug + Send + 'static,
    F: Fn(&T) -> Result<(), String> + Copy + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let owned = input.clone();
    let spawned = std::thread::Builder::new()
        .name("fuzz-case".into())
        .stack_size(STACK)
        .spawn(move || {
            INPUT.with(|i| *i.borrow_mut() = format!("{owned:?}"));
            LIVE.with(|l| l.set(0));
            PEAK.with(|p| p.set(0));
            TRACKED.with(|t| t.set(true));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&owned)));
            TRACKED.with(|t| t.set(false));
            let peak = PEAK.with(Cell::get);
            let _ = tx.send((r.map_err(panic_text), peak));
        });
    if let Err(e) = spawned {
        return Outcome::Failed(format!("cannot start a thread: {e}"));
    }
    match rx.recv_timeout(deadline) {
        Err(_) => Outcome::Failed(format!("no answer within {deadline:?} (hang?)")),
        Ok((Err(panic), _)) => Outcome::Failed(format!("panicked: {panic}")),
        Ok((Ok(Err(broken)), _)) => Outcome::Failed(broken),
        Ok((Ok(Ok(())), peak)) if peak > SOFT_LIMIT => {
            Outcome::Failed(format!("held {} MiB at its peak", peak >> 20))
        }
        Ok((Ok(Ok(())), peak)) => Outcome::Passed { peak },
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic)".into())
}

/// Fuzz `check` with inputs from `strategy` for the target's budget; panics with the smallest
/// failing input found.
pub fn fuzz<S, F>(target: &str, strategy: S, check: F)
where
    S: Strategy,
    S::Value: Clone + Debug + Send + 'static,
    F: Fn(&S::Value) -> Result<(), String> + Copy + Send + 'static,
{
    let secs = env_u64("LLMPROF_FUZZ_SECS").unwrap_or(2);
    let deadline = Duration::from_secs(env_u64("LLMPROF_FUZZ_CASE_SECS").unwrap_or(10));
    let seed = env_u64("LLMPROF_FUZZ_SEED").unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        t.map(|d| d.as_nanos() as u64).unwrap_or(1) ^ u64::from(std::process::id())
    });
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let start = Instant::now();
    let (mut cases, mut slowest, mut peak_max) = (0u64, Duration::ZERO, 0usize);
    while start.elapsed() < Duration::from_secs(secs) {
        let mut tree = strategy
            .new_tree(&mut runner)
            .expect("the strategies never reject");
        let t0 = Instant::now();
        let outcome = run_one(&tree.current(), check, deadline);
        slowest = slowest.max(t0.elapsed());
        cases += 1;
        match outcome {
            Outcome::Passed { peak } => peak_max = peak_max.max(peak),
            Outcome::Failed(why) => {
                let (input, why) = if why.contains("(hang?)") {
                    (tree.current(), why) // shrinking a hang would take a deadline per step
                } else {
                    shrink(&mut tree, check, deadline, why)
                };
                summary(target, seed, cases, start, slowest, peak_max, "FAILED");
                let shown = keep_input(target, &format!("{input:#?}"));
                panic!("fuzz {target}: {why}\nseed: LLMPROF_FUZZ_SEED={seed}\ninput: {shown}");
            }
        }
    }
    summary(target, seed, cases, start, slowest, peak_max, "ok");
}

/// Run one input as the fuzzer does (own thread, deadline, memory gate): for regression tests.
pub fn replay<T, F>(input: T, check: F) -> Result<(), String>
where
    T: Clone + Debug + Send + 'static,
    F: Fn(&T) -> Result<(), String> + Copy + Send + 'static,
{
    match run_one(&input, check, Duration::from_secs(10)) {
        Outcome::Passed { .. } => Ok(()),
        Outcome::Failed(why) => Err(why),
    }
}

/// The failing input, whole in target/fuzz-failures/<target>-<time>.txt, shortened for the
/// message.
fn keep_input(target: &str, text: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../fuzz-failures");
    let when = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let file = dir.join(format!(
        "{target}-{}.txt",
        when.map(|d| d.as_secs()).unwrap_or(0)
    ));
    let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, text));
    let mut shown: String = text.chars().take(1500).collect();
    if shown.len() < text.len() {
        shown.push_str(&format!("… ({} more bytes)", text.len() - shown.len()));
    }
    if saved.is_ok() {
        shown.push_str(&format!("\n(whole input in {})", file.display()));
    }
    shown
}

fn shrink<T: ValueTree>(
    tree: &mut T,
    check: impl Fn(&T::Value) -> Result<(), String> + Copy + Send + 'static,
    deadline: Duration,
    mut why: String,
) -> (T::Value, String)
where
    T::Value: Clone + Debug + Send + 'static,
{
    let mut best = tree.current();
    let until = Instant::now() + Duration::from_secs(60);
    let mut failing = true;
    while Instant::now() < until {
        let moved = if failing {
            tree.simplify()
        } else {
            tree.complicate()
        };
        if !moved {
            break;
        }
        match run_one(&tree.current(), check, deadline) {
            Outcome::Failed(w) => {
                best = tree.current();
                why = w;
                failing = true;
            }
            Outcome::Passed { .. } => failing = false,
        }
    }
    (best, why)
}

fn summary(
    target: &str,
    seed: u64,
    cases: u64,
    start: Instant,
    slowest: Duration,
    peak: usize,
    result: &str,
) {
    let line = format!(
        "fuzz {target}: {result}: {cases} inputs in {:.1} s (seed {seed}), slowest {:.1} ms, peak {:.1} MiB",
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1e3,
        peak as f64 / f64::from(1 << 20)
    );
    eprintln!("{line}");
    if let Ok(path) = std::env::var("LLMPROF_FUZZ_LOG") {
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// A fresh scratch folder for one input (under the target dir, removed by the caller).
pub fn scratch_dir(target: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    crate::support::remove_ended(&root, &format!("fuzz-{target}"));
    let d = root.join(format!("fuzz-{target}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}
