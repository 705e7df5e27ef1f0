//! Timers for stage boundaries and decode steps. On a GPU they record one CUDA event per
//! boundary on the current stream and read all of them at the end (one sync in total, none per
//! token). Without CUDA they use the host monotonic clock; `HostSynced` adds an explicit stream
//! sync before each reading, for host wall-clock that includes queued GPU work.
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::ffi;

/// How boundaries are timestamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ClockKind {
    /// CUDA events recorded on the current stream; read after one final synchronize.
    CudaEvents,
    /// Synchronize the current CUDA stream, then read the host monotonic clock.
    HostSynced,
    /// Host monotonic clock only (CPU execution: work is already done when the call returns).
    Host,
}

impl ClockKind {
    /// `CudaEvents` when a CUDA device is visible, else `Host`.
    pub fn detect() -> Self {
        if ffi::cuda_device_count() > 0 {
            ClockKind::CudaEvents
        } else {
            ClockKind::Host
        }
    }
}

/// A timestamp of one boundary.
enum Stamp {
    Cuda(ffi::CudaEvent),
    Host(Instant),
}

fn stamp(clock: ClockKind) -> Result<Stamp> {
    Ok(match clock {
        ClockKind::CudaEvents => {
            let mut event = ffi::CudaEvent::new().context("creating a CUDA timing event")?;
            event.record().context("recording a CUDA timing event")?;
            Stamp::Cuda(event)
        }
        ClockKind::HostSynced => {
            ffi::cuda_stream_synchronize().context("synchronizing before a host timestamp")?;
            Stamp::Host(Instant::now())
        }
        ClockKind::Host => Stamp::Host(Instant::now()),
    })
}

/// Nanoseconds from `a` to `b`. CUDA events must be complete (the caller synchronized the
/// latest one, which completes all earlier ones on the same stream). CUDA event resolution is
/// about 0.5 µs.
fn elapsed_ns(a: &Stamp, b: &Stamp) -> Result<u64> {
    match (a, b) {
        (Stamp::Cuda(a), Stamp::Cuda(b)) => {
            let ms = a.elapsed_ms(b).context("reading CUDA event times")?;
            Ok((f64::from(ms) * 1e6).round().max(0.0) as u64)
        }
        (Stamp::Host(a), Stamp::Host(b)) => Ok(b.saturating_duration_since(*a).as_nanos() as u64),
        _ => bail!("timer mixes CUDA-event and host timestamps"),
    }
}

fn sync_last(stamps: &mut [Stamp]) -> Result<()> {
    if let Some(Stamp::Cuda(last)) = stamps.last_mut() {
        last.synchronize()
            .context("waiting for the last CUDA timing event")?;
    }
    Ok(())
}

/// Durations of one repeated thing, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Samples {
    pub name: String,
    pub clock: ClockKind,
    pub durations_ns: Vec<u64>,
}

/// Consecutive boundaries of a repeated step: `mark()` once before the first step and once after
/// each step; N + 1 marks give N durations. Marks cost one event record, no sync.
pub struct StepTimer {
    name: String,
    clock: ClockKind,
    marks: Vec<Stamp>,
}

impl StepTimer {
    pub fn new(name: impl Into<String>, clock: ClockKind) -> Self {
        StepTimer {
            name: name.into(),
            clock,
            marks: Vec::new(),
        }
    }

    /// Pre-sizes for `steps` steps.
    pub fn with_capacity(name: impl Into<String>, clock: ClockKind, steps: usize) -> Self {
        StepTimer {
            name: name.into(),
            clock,
            marks: Vec::with_capacity(steps + 1),
        }
    }

    pub fn mark(&mut self) -> Result<()> {
        self.marks.push(stamp(self.clock)?);
        Ok(())
    }

    /// Number of complete steps so far.
    pub fn steps(&self) -> usize {
        self.marks.len().saturating_sub(1)
    }

    /// Waits for the last mark and returns the step durations.
    pub fn finish(mut self) -> Result<Samples> {
        sync_last(&mut self.marks)?;
        let durations_ns = self
            .marks
            .windows(2)
            .map(|w| elapsed_ns(&w[0], &w[1]))
            .collect::<Result<Vec<u64>>>()
            .with_context(|| format!("timer {:?}", self.name))?;
        Ok(Samples {
            name: self.name,
            clock: self.clock,
            durations_ns,
        })
    }
}

/// Named stages, each timed from `begin` to `end` (stages may repeat; order is kept).
pub struct StageTimer {
    clock: ClockKind,
    /// Taken at the first `begin`: every stage's end is also given relative to it.
    origin: Option<Stamp>,
    open: Vec<(String, Stamp)>,
    closed: Vec<(String, Stamp, Stamp)>,
}

/// One timed stage.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StageTime {
    pub name: String,
    pub duration_ns: u64,
    /// When the stage ended, from the timer's first `begin` (token emission times, inter-token
    /// gaps).
    pub end_ns: u64,
}

impl StageTimer {
    pub fn new(clock: ClockKind) -> Self {
        StageTimer {
            clock,
            origin: None,
            open: Vec::new(),
            closed: Vec::new(),
        }
    }

    pub fn begin(&mut self, name: impl Into<String>) -> Result<()> {
        if self.origin.is_none() {
            self.origin = Some(stamp(self.clock)?);
        }
        let s = stamp(self.clock)?;
        self.open.push((name.into(), s));
        Ok(())
    }

    /// Ends the most recently begun stage (stages nest like a stack).
    pub fn end(&mut self) -> Result<()> {
        let Some((name, start)) = self.open.pop() else {
            bail!("StageTimer::end without a matching begin");
        };
        let end = stamp(self.clock)?;
        self.closed.push((name, start, end));
        Ok(())
    }

    /// Waits for all stages and returns them in the order they ended.
    pub fn finish(mut self) -> Result<Vec<StageTime>> {
        if let Some((name, _)) = self.open.last() {
            bail!("stage {name:?} was begun but never ended");
        }
        for (_, _, end) in &mut self.closed {
            if let Stamp::Cuda(e) = end {
                e.synchronize().context("waiting for a CUDA timing event")?;
            }
        }
        let Some(origin) = &self.origin else {
            return Ok(Vec::new());
        };
        self.closed
            .iter()
            .map(|(name, start, end)| {
                Ok(StageTime {
                    name: name.clone(),
                    duration_ns: elapsed_ns(start, end)?,
                    end_ns: elapsed_ns(origin, end)?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn host_step_timer_measures_each_step() {
        let mut t = StepTimer::with_capacity("decode_step", ClockKind::Host, 3);
        t.mark().unwrap();
        for ms in [2u64, 5, 1] {
            std::thread::sleep(Duration::from_millis(ms));
            t.mark().unwrap();
        }
        assert_eq!(t.steps(), 3);
        let s = t.finish().unwrap();
        assert_eq!(s.durations_ns.len(), 3);
        for (d, ms) in s.durations_ns.iter().zip([2u64, 5, 1]) {
            assert!(*d >= ms * 1_000_000, "{d} ns < {ms} ms");
        }
    }

    #[test]
    fn host_stage_timer_nests_and_checks_pairs() {
        let mut t = StageTimer::new(ClockKind::Host);
        t.begin("vision").unwrap();
        t.begin("sam").unwrap();
        std::thread::sleep(Duration::from_millis(2));
        t.end().unwrap();
        t.end().unwrap();
        let stages = t.finish().unwrap();
        assert_eq!(stages[0].name, "sam");
        assert_eq!(stages[1].name, "vision");
        assert!(stages[1].duration_ns >= stages[0].duration_ns);
        assert!(stages[1].end_ns >= stages[0].end_ns && stages[0].end_ns >= 2_000_000);
        assert!(StageTimer::new(ClockKind::Host).end().is_err());
        let mut open = StageTimer::new(ClockKind::Host);
        open.begin("prefill").unwrap();
        assert!(open.finish().is_err());
    }

    #[test]
    fn cuda_clock_works_with_a_gpu_and_fails_clearly_without() {
        let marked = StepTimer::new("x", ClockKind::CudaEvents).mark();
        if ffi::cuda_device_count() > 0 {
            assert_eq!(ClockKind::detect(), ClockKind::CudaEvents);
            marked.unwrap();
        } else {
            assert_eq!(ClockKind::detect(), ClockKind::Host);
            let err = marked.unwrap_err();
            assert!(format!("{err:#}").contains("no CUDA device"), "{err:#}");
        }
    }
}
