//! The watchdog of a tensor-parallel run's ranks (#45): a rank whose progress mark
//! (run_files::HEARTBEAT_FILE, rewritten by the worker as it starts, loads and finishes each
//! request) is older than `runtime.tensor_parallel_timeout_s` is taken as hung. A rank hanging in
//! an NCCL collective, or in a kernel that never ends, never exits by itself, and its peers wait
//! for it inside their own collectives: without this the run would never end.
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::run_files::HEARTBEAT_FILE;

/// Each rank's folder and start time, and how long a mark may stay unchanged.
pub struct RankWatch {
    dirs: Vec<PathBuf>,
    started: Vec<SystemTime>,
    timeout: Duration,
}

/// A rank past the timeout: how long its mark has been unchanged, and what it says (the last
/// thing the rank finished).
#[derive(Debug, PartialEq)]
pub struct Stalled {
    pub rank: usize,
    pub quiet: Duration,
    pub last: Option<String>,
}

impl RankWatch {
    pub fn new(dirs: Vec<PathBuf>, timeout: Duration) -> Self {
        let now = SystemTime::now();
        RankWatch {
            started: vec![now; dirs.len()],
            dirs,
            timeout,
        }
    }

    /// Rank `k` was started at `at` (its mark's age counts from there until it writes one).
    pub fn started(&mut self, k: usize, at: SystemTime) {
        self.started[k] = at;
    }

    /// The rank, among those still `running`, whose mark has been unchanged longest, if that is
    /// past the timeout.
    pub fn stalled(&self, running: &[bool]) -> Option<Stalled> {
        let now = SystemTime::now();
        (0..self.dirs.len())
            .filter(|&k| running[k])
            .map(|k| {
                let mark = self.dirs[k].join(HEARTBEAT_FILE);
                let since = std::fs::metadata(&mark)
                    .and_then(|m| m.modified())
                    .unwrap_or(self.started[k])
                    .max(self.started[k]);
                let quiet = now.duration_since(since).unwrap_or_default();
                (k, quiet, mark)
            })
            .filter(|(_, quiet, _)| *quiet > self.timeout)
            .max_by_key(|(_, quiet, _)| *quiet)
            .map(|(rank, quiet, mark)| Stalled {
                rank,
                quiet,
                last: std::fs::read_to_string(mark)
                    .ok()
                    .map(|s| s.chars().take(200).collect()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_quiet_longest_past_the_timeout_is_named() {
        let root = std::env::temp_dir().join(format!("rank-watch-{}", std::process::id()));
        let dirs: Vec<PathBuf> = (0..3).map(|k| root.join(format!("r{k}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        let ago = |s: u64| SystemTime::now() - Duration::from_secs(s);
        let mark = |k: usize, text: &str, age: u64| {
            let path = dirs[k].join(HEARTBEAT_FILE);
            std::fs::write(&path, text).unwrap();
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(ago(age)).unwrap();
        };
        let mut w = RankWatch::new(dirs.clone(), Duration::from_secs(10));
        for k in 0..3 {
            w.started(k, ago(100));
        }
        // Rank 0's mark is 20 s old, rank 2's 5 s; rank 1 never wrote one (started 100 s ago).
        mark(0, "model loaded", 20);
        mark(2, "request 1 of 4", 5);
        let s = w.stalled(&[true, true, true]).expect("rank 1 is past 10 s");
        assert_eq!((s.rank, s.last), (1, None));
        assert!(s.quiet >= Duration::from_secs(100));
        // A rank that has exited is not watched: then rank 0 is the stalest, with its mark.
        let s = w.stalled(&[true, false, true]).unwrap();
        assert_eq!((s.rank, s.last.as_deref()), (0, Some("model loaded")));
        // Within the timeout nobody is named; a mark older than the rank's start does not count.
        assert_eq!(w.stalled(&[false, false, true]), None);
        mark(2, "left by an earlier run", 50);
        w.started(2, ago(3));
        assert_eq!(w.stalled(&[false, false, true]), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
