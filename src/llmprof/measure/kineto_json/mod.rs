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

impl ProfileEvents {
    /// Reads a Chrome/Perfetto trace held in memory ([`read_trace`] reads files of any size).
    pub fn from_chrome_trace(json: &str) -> Result<Self, ReadError> {
        Ok(read_trace(json.as_bytes(), &mut |_| {})?.events)
    }
}

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

/// Events handed to a parser thread at a time (bytes of JSON).
const BATCH_BYTES: usize = 4 << 20;

/// Events scanned but not parsed yet, with where each ends in `bytes`.
struct Batch {
    seq: usize,
    /// Index in traceEvents of the first event.
    first: u64,
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

/// One batch parsed.
#[derive(Default)]
struct ParsedBatch {
    seq: usize,
    ops: Vec<crate::measure::kineto_events::OpRecord>,
    kernels: Vec<crate::measure::kineto_events::KernelRecord>,
    skipped: u64,
    /// The first event that did not parse: its index and why.
    error: Option<(u64, String)>,
}

fn parse_batch(batch: Batch, names: &mut Interner) -> ParsedBatch {
    let mut out = ParsedBatch {
        seq: batch.seq,
        ..ParsedBatch::default()
    };
    let mut start = 0;
    for (i, &end) in batch.ends.iter().enumerate() {
        match parse_event(&batch.bytes[start..end], names) {
            Ok(Parsed::Host(op)) => out.ops.push(op),
            Ok(Parsed::Device(k)) => out.kernels.push(k),
            Ok(Parsed::Skipped) => out.skipped += 1,
            Err(reason) => {
                out.error = Some((batch.first + i as u64, reason));
                break;
            }
        }
        start = end;
    }
    out
}

/// The scanner's sink on the reading thread: batches events for the parser threads and reads
/// the header values itself.
struct Batcher<'a> {
    header: TraceHeader,
    batch: Batch,
    events: u64,
    send: &'a std::sync::mpsc::SyncSender<Batch>,
}

impl Batcher<'_> {
    fn flush(&mut self) {
        if self.batch.ends.is_empty() {
            return;
        }
        let next = Batch {
            seq: self.batch.seq + 1,
            first: self.events,
            bytes: Vec::with_capacity(BATCH_BYTES + (64 << 10)),
            ends: Vec::new(),
        };
        // A parser that stopped early (it never does before the end) only loses the batch.
        let _ = self.send.send(std::mem::replace(&mut self.batch, next));
    }
}

impl ScanSink for Batcher<'_> {
    fn event(&mut self, bytes: &[u8]) {
        self.batch.bytes.extend_from_slice(bytes);
        self.batch.ends.push(self.batch.bytes.len());
        self.events += 1;
        if self.batch.bytes.len() >= BATCH_BYTES {
            self.flush();
        }
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
        let h = &mut self.header;
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

/// Parser threads beside the reading one (events parse about ten times slower than they scan).
fn parser_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
}

/// Parsed batches put back in the trace's order as they arrive: appended to the records at once
/// (large vectors grow in place on Linux, so memory stays near the records' size), later ones
/// kept until the batches before them are in.
#[derive(Default)]
struct InOrder {
    out: ReadTrace,
    next: usize,
    waiting: std::collections::BTreeMap<usize, ParsedBatch>,
    error: Option<(u64, String)>,
}

impl InOrder {
    fn take(&mut self, batch: ParsedBatch) {
        self.waiting.insert(batch.seq, batch);
        while let Some(p) = self.waiting.remove(&self.next) {
            self.next += 1;
            if self.error.is_none() {
                self.error = p.error;
            }
            self.out.skipped += p.skipped;
            self.out.events.ops.extend(p.ops);
            self.out.events.kernels.extend(p.kernels);
        }
    }
}

/// Reads and scans on this thread; parses batches of events on [`parser_threads`] others; puts
/// the records back in the trace's order.
fn read_json(mut input: impl Read, progress: &mut dyn FnMut(u64)) -> Result<ReadTrace, ReadError> {
    use std::sync::{mpsc, Mutex};
    let threads = parser_threads();
    // Set by a parser that met a bad event: reading stops there instead of going through the
    // rest of a file that will be refused anyway.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (send, receive) = mpsc::sync_channel::<Batch>(threads);
    let receive = Mutex::new(receive);
    let (send_parsed, receive_parsed) = mpsc::channel::<ParsedBatch>();
    let mut in_order = InOrder::default();
    let scanned = std::thread::scope(|scope| {
        for _ in 0..threads {
            let send_parsed = send_parsed.clone();
            let (receive, stop) = (&receive, &stop);
            scope.spawn(move || {
                let mut names = Interner::default();
                loop {
                    let next = receive.lock().map(|r| r.recv());
                    let Ok(Ok(batch)) = next else { break };
                    let parsed = parse_batch(batch, &mut names);
                    if parsed.error.is_some() {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    if send_parsed.send(parsed).is_err() {
                        break;
                    }
                }
            });
        }
        drop(send_parsed);
        let scanned = (|| -> Result<(TraceHeader, u64), ReadError> {
            let mut scanner = Scanner::new();
            let mut sink = Batcher {
                header: TraceHeader::default(),
                batch: Batch {
                    seq: 0,
                    first: 0,
                    bytes: Vec::new(),
                    ends: Vec::new(),
                },
                events: 0,
                send: &send,
            };
            let mut chunk = vec![0u8; CHUNK];
            let mut bytes = 0u64;
            loop {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return Ok((sink.header, bytes));
                }
                let n = match input.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                };
                scanner.feed(&chunk[..n], &mut sink)?;
                bytes += n as u64;
                progress(bytes);
                while let Ok(parsed) = receive_parsed.try_recv() {
                    in_order.take(parsed);
                }
            }
            scanner.finish()?;
            sink.flush();
            Ok((sink.header, bytes))
        })();
        // Closing the channel ends the parsers once they have drained it.
        drop(send);
        for parsed in receive_parsed.iter() {
            in_order.take(parsed);
        }
        scanned
    });
    // A bad event lies before anything the scanner met later: its error comes first.
    if let Some((index, reason)) = in_order.error {
        return Err(ReadError::Event { index, reason });
    }
    let (header, bytes) = scanned?;
    let mut out = in_order.out;
    out.header = header;
    out.bytes = bytes;
    Ok(out)
}
