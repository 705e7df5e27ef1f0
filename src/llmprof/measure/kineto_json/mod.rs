//! Chrome/Perfetto trace files (torch.profiler's `export_chrome_trace`, `tensorboard_trace_handler`,
//! llmprof's own trace.json, vLLM's and SGLang's profiler hooks) read into `ProfileEvents` in one
//! streaming pass: `scan` finds the events without building a document, `event` turns each into
//! a record. Gzip is recognised by its magic bytes. Memory grows with the events kept, not with
//! the file.
use std::io::Read;

use crate::measure::kineto_events::ProfileEvents;

pub mod event;
pub mod scan;
#[cfg(test)]
mod tests;

use event::{parse_event, Interner, Parsed};
use scan::{ScanError, ScanSink, Scanner};

/// Bytes read per chunk.
const CHUNK: usize = 4 << 20;

/// The top-level facts of a trace llmprof uses besides its events.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TraceHeader {
    /// `distributedInfo.rank` (torch.distributed runs).
    pub rank: Option<u64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u64>,
    /// `deviceProperties[].name`, in the trace's order.
    pub devices: Vec<String>,
    /// `baseTimeNanoseconds`, when the trace's times are relative to it.
    pub base_time_ns: Option<u64>,
}

/// A trace read back: its records, header, and how much was skipped.
#[derive(Debug, Clone, Default)]
pub struct ReadTrace {
    pub events: ProfileEvents,
    pub header: TraceHeader,
    /// Events of other phases or categories (flows, instants, counters, python functions).
    pub skipped: u64,
    /// Bytes of JSON read (after decompression).
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the trace: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error("traceEvents[{index}]: {reason}")]
    Event { index: u64, reason: String },
}

struct Collect {
    out: ReadTrace,
    names: Interner,
    index: u64,
    error: Option<ReadError>,
}

impl ScanSink for Collect {
    fn event(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        match parse_event(bytes, &mut self.names) {
            Ok(Parsed::Host(op)) => self.out.events.ops.push(op),
            Ok(Parsed::Device(k)) => self.out.events.kernels.push(k),
            Ok(Parsed::Skipped) => self.out.skipped += 1,
            Err(reason) => {
                self.error = Some(ReadError::Event {
                    index: self.index,
                    reason,
                })
            }
        }
        self.index += 1;
    }

    fn keeps(&self, key: &str) -> bool {
        matches!(
            key,
            "distributedInfo" | "deviceProperties" | "baseTimeNanoseconds"
        )
    }

    fn top_level(&mut self, key: &str, raw: &[u8]) {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(raw) else {
            return;
        };
        let h = &mut self.out.header;
        match key {
            "distributedInfo" => {
                h.rank = value.get("rank").and_then(serde_json::Value::as_u64);
                h.world_size = value.get("world_size").and_then(serde_json::Value::as_u64);
            }
            "deviceProperties" => {
                h.devices = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|d| d.get("name").and_then(|n| n.as_str()).map(String::from))
                    .collect();
            }
            "baseTimeNanoseconds" => h.base_time_ns = value.as_u64(),
            _ => {}
        }
    }
}

/// Reads a trace (plain or gzip JSON) from `input`; `progress` is called with the bytes of JSON
/// read so far after each chunk.
pub fn read_trace(input: impl Read, progress: &mut dyn FnMut(u64)) -> Result<ReadTrace, ReadError> {
    let mut input = std::io::BufReader::with_capacity(64 << 10, input);
    let head = std::io::BufRead::fill_buf(&mut input)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        read_json(flate2::bufread::MultiGzDecoder::new(input), progress)
    } else {
        read_json(input, progress)
    }
}

fn read_json(mut input: impl Read, progress: &mut dyn FnMut(u64)) -> Result<ReadTrace, ReadError> {
    let mut scanner = Scanner::new();
    let mut sink = Collect {
        out: ReadTrace::default(),
        names: Interner::default(),
        index: 0,
        error: None,
    };
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        scanner.feed(&chunk[..n], &mut sink)?;
        if let Some(err) = sink.error.take() {
            return Err(err);
        }
        sink.out.bytes += n as u64;
        progress(sink.out.bytes);
    }
    scanner.finish()?;
    Ok(sink.out)
}
