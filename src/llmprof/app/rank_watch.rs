//! The watchdog of a tensor-parallel run's ranks (#45): a rank whose progress mark
//! (run_files::HEARTBEAT_FILE, rewritten by the worker as it starts, reads its weights, loads
//! its model and works through its requests and decode steps) stays unchanged longer than
//! `runtime.tensor_parallel_timeout_s` is taken as hung. A rank hanging in an NCCL collective, or
//! in a kernel that never ends, never exits by itself, and its peers wait for it inside their own
//! collectives: without this the run would never end. Changes are timed on this process's
//! monotonic clock (a file's mtime is only compared with the one seen before), so a wall-clock
//! step or a file system's clock skew cannot fake or hide one.
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::run_files::HEARTBEAT_FILE;

/// Each rank's folder, what its mark looked like when last seen (mtime and length, and its
/// text, read when it changes), and since when.
pub struct RankWatch {
    dirs: Vec<PathBuf>,
    seen: Vec<Option<(SystemTime, u64)>>,
    text: Vec<Option<String>>,
    changed: Vec<Instant>,
    timeout: Duration,
}

/// One running rank as the watch last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct RankMark {
    pub rank: usize,
    /// How long its mark has been unchanged.
    pub quiet: Duration,
    /// What it says (the last thing the rank did); `None` before it wrote one.
    pub last: Option<String>,
}

/// Ranks past the timeout: the quietest and every running rank's mark.
#[derive(Debug, PartialEq)]
pub struct Stalled {
    pub rank: usize,
    pub quiet: Duration,
    pub marks: Vec<RankMark>,
}

impl RankWatch {
    pub fn new(dirs: Vec<PathBuf>, timeout: Duration) -> Self {
        let now = Instant::now();
        RankWatch {
            seen: vec![None; dirs.len()],
            text: vec![None; dirs.len()],
            changed: vec![now; dirs.len()],
            dirs,
            timeout,
        }
    }

    /// Rank `k` was started at `at` (its quiet time counts from there until it writes a mark).
    pub fn started(&mut self, k: usize, at: Instant) {
        self.changed[k] = at;
    }

    /// Looks at every `running` rank's mark at `now`: the quietest rank with every running
    /// rank's mark, if that rank is past the timeout.
    pub fn stalled(&mut self, running: &[bool], now: Instant) -> Option<Stalled> {
        let mut marks = Vec::new();
        for k in (0..self.dirs.len()).filter(|&k| running[k]) {
            let path = self.dirs[k].join(HEARTBEAT_FILE);
            let meta = std::fs::metadata(&path)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())));
            if meta.is_some() && meta != self.seen[k] {
                self.seen[k] = meta;
                self.changed[k] = now;
                self.text[k] = std::fs::read_to_string(&path)
                    .ok()
                    .map(|s| s.chars().take(200).collect());
            }
            marks.push(RankMark {
                rank: k,
                quiet: now.saturating_duration_since(self.changed[k]),
                last: self.text[k].clone(),
            });
        }
        let quietest = marks.iter().max_by_key(|m| m.quiet)?;
        (quietest.quiet > self.timeout).then(|| Stalled {
            rank: quietest.rank,
            quiet: quietest.quiet,
            marks: marks.clone(),
        })
    }
}

impl Stalled {
    /// The error's words: the rank to look at when its mark is behind the others', else every
    /// rank stopped at one point (a collective one of them never joined, or a kernel that never
    /// ended), with each rank's last mark.
    pub fn describe(&self, world: usize, timeout: Duration) -> String {
        let said = |m: &RankMark| {
            m.last
                .as_deref()
                .map_or("no mark: it never started".to_string(), |s| {
                    format!("'{s}'")
                })
        };
        let all_alike = self.marks.iter().all(|m| m.last == self.marks[0].last);
        let each = self
            .marks
            .iter()
            .map(|m| {
                format!(
                    "rank {}: {} ({:.0} s ago)",
                    m.rank,
                    said(m),
                    m.quiet.as_secs_f64()
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let head = if all_alike && self.marks.len() > 1 {
            format!(
                "every running rank of {world} stopped at the same point for {:.0} s: a collective that one of them never joined, or a kernel that never ended on one of them (which one the marks cannot tell: look at each rank's log)",
                self.quiet.as_secs_f64()
            )
        } else {
            format!(
                "tensor-parallel rank {} of {world} made no progress for {:.0} s (its last mark: {})",
                self.rank,
                self.quiet.as_secs_f64(),
                said(self.marks.iter().find(|m| m.rank == self.rank).expect("the quietest is listed"))
            )
        };
        format!(
            "{head}: taken as hung, every rank was stopped. Last marks: {each}\n  fix: find why in the ranks' logs; if a request of this size legitimately takes longer, raise runtime.tensor_parallel_timeout_s (now {})",
            timeout.as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quietest_rank_past_the_timeout_is_named_on_the_monotonic_clock() {
        let root = std::env::temp_dir().join(format!("rank-watch-{}", std::process::id()));
        let dirs: Vec<PathBuf> = (0..3).map(|k| root.join(format!("r{k}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        let mark =
            |k: usize, text: &str| std::fs::write(dirs[k].join(HEARTBEAT_FILE), text).unwrap();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut w = RankWatch::new(dirs.clone(), Duration::from_secs(10));
        for k in 0..3 {
            w.started(k, t0);
        }
        let all = [true, true, true];
        // At 2 s ranks 0 and 2 have marks, rank 1 none: nobody is past 10 s.
        mark(0, "model loaded");
        mark(2, "model loaded");
        assert_eq!(w.stalled(&all, at(2)), None);
        // Rank 2 moves on at 8 s; at 11 s rank 1 (never started) is 11 s quiet, rank 0 9 s.
        mark(2, "request 1 of 4");
        assert_eq!(w.stalled(&all, at(8)), None);
        let s = w.stalled(&all, at(11)).expect("rank 1 is past 10 s");
        assert_eq!((s.rank, s.quiet), (1, Duration::from_secs(11)));
        assert!(s.describe(3, Duration::from_secs(10)).contains(
            "rank 1 of 3 made no progress for 11 s (its last mark: no mark: it never started)"
        ));
        // Without rank 1, rank 0 is past the timeout at 13 s, with its mark; a rank that has
        // exited is not watched.
        let s = w.stalled(&[true, false, true], at(13)).unwrap();
        assert_eq!(s.rank, 0);
        assert!(s
            .describe(3, Duration::from_secs(10))
            .contains("its last mark: 'model loaded'"));
        // Every rank at the same mark: no single rank is blamed.
        mark(0, "request 1 of 4");
        assert_eq!(w.stalled(&[true, false, true], at(14)), None);
        let s = w.stalled(&[true, false, true], at(30)).unwrap();
        let text = s.describe(3, Duration::from_secs(10));
        assert!(
            text.contains("every running rank of 3 stopped at the same point"),
            "{text}"
        );
        assert!(
            text.contains("rank 0: 'request 1 of 4'") && text.contains("rank 2: 'request 1 of 4'"),
            "{text}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
