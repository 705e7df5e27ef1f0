//! The top level of a Chrome/Perfetto trace read as a stream of bytes: each element of
//! `traceEvents` is handed over as the bytes of one JSON object, the few small top-level values
//! llmprof keeps (`distributedInfo`, `deviceProperties`, ...) as raw JSON, and nothing is held
//! as a document, so a trace of any size reads in one pass with memory for one event. Accepts
//! the object form (`{"traceEvents": [...], ...}`) and the bare array form (`[{...}, ...]`).
//! Strings are skipped with their escapes; numbers and literals are not validated here (the
//! event parser and the value parser do that). Pure.
use memchr::{memchr2, memchr3};

/// What the scanner found that is not an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    #[error("byte {offset}: {what}")]
    Syntax { offset: u64, what: String },
    #[error("the trace ends inside {inside} (after {read} bytes, {events} events): the file is truncated, probably written by a profiler that was stopped before it finished; record it again")]
    Truncated {
        inside: &'static str,
        read: u64,
        events: u64,
    },
    #[error("no traceEvents array at the top level: not a Chrome/Kineto trace (torch.profiler's export_chrome_trace writes one)")]
    NoEvents,
}

/// Receives what the scanner finds.
pub trait ScanSink {
    /// One element of `traceEvents`: the bytes of a JSON object, braces included.
    fn event(&mut self, bytes: &[u8]);
    /// A top-level value whose key [`ScanSink::keeps`] accepted, as raw JSON.
    fn top_level(&mut self, key: &str, raw: &[u8]);
    /// Whether the value of a top-level key is wanted (small values only).
    fn keeps(&self, key: &str) -> bool;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first byte that is not white space.
    Start,
    /// Inside the top-level object, before a key (or `}`).
    Key,
    /// Inside a key's string.
    KeyString,
    /// After a key, before `:`.
    Colon,
    /// After `:`, before the value.
    Value,
    /// Inside a top-level value other than `traceEvents` (strings, nesting tracked).
    OtherValue,
    /// Inside a top-level scalar (number, literal).
    Scalar,
    /// After a top-level value, before `,` or `}`.
    AfterValue,
    /// Inside the `traceEvents` array, between elements.
    Events,
    /// Inside one element of `traceEvents`.
    Event,
    /// After the top-level object or array.
    End,
}

/// A resumable scanner: feed it chunks in order, then call [`Scanner::finish`].
pub struct Scanner {
    state: State,
    /// The bare array form: `]` ends the document, not one value of it.
    bare_array: bool,
    seen_events: bool,
    /// Nesting depth inside an event or a top-level value.
    depth: u32,
    in_string: bool,
    escape: bool,
    key: Vec<u8>,
    /// The current event or kept value, when it spans chunks.
    pending: Vec<u8>,
    keep_value: bool,
    consumed: u64,
    events: u64,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl Scanner {
    pub fn new() -> Self {
        Scanner {
            state: State::Start,
            bare_array: false,
            seen_events: false,
            depth: 0,
            in_string: false,
            escape: false,
            key: Vec::new(),
            pending: Vec::new(),
            keep_value: false,
            consumed: 0,
            events: 0,
        }
    }

    fn syntax(&self, at: usize, what: impl Into<String>) -> ScanError {
        ScanError::Syntax {
            offset: self.consumed + at as u64,
            what: what.into(),
        }
    }

    /// Scans one chunk; events and kept values that end in it are handed to `sink`.
    pub fn feed(&mut self, chunk: &[u8], sink: &mut impl ScanSink) -> Result<(), ScanError> {
        let mut i = 0;
        // Start of the current event or kept value within this chunk, when it began here.
        let mut start: Option<usize> = if matches!(self.state, State::Event)
            || (self.keep_value && matches!(self.state, State::OtherValue | State::Scalar))
        {
            Some(0)
        } else {
            None
        };
        // Bytes before `start` that belong to the item were saved in `pending` by earlier chunks.
        while i < chunk.len() {
            let b = chunk[i];
            match self.state {
                State::Start => {
                    // A UTF-8 byte order mark (EF BB BF) is skipped like white space.
                    if is_ws(b)
                        || ((self.consumed + i as u64) < 3 && matches!(b, 0xEF | 0xBB | 0xBF))
                    {
                        i += 1;
                    } else if b == b'{' {
                        self.state = State::Key;
                        i += 1;
                    } else if b == b'[' {
                        self.bare_array = true;
                        self.seen_events = true;
                        self.state = State::Events;
                        i += 1;
                    } else {
                        return Err(self.syntax(
                            i,
                            format!(
                                "a trace is a JSON object (or array) but this file starts with {:?}",
                                char::from(b)
                            ),
                        ));
                    }
                }
                State::Key => {
                    if is_ws(b) || b == b',' {
                        i += 1;
                    } else if b == b'}' {
                        self.state = State::End;
                        i += 1;
                    } else if b == b'"' {
                        self.key.clear();
                        self.escape = false;
                        self.state = State::KeyString;
                        i += 1;
                    } else {
                        return Err(self.syntax(i, "expected a key in the top-level object"));
                    }
                }
                State::KeyString => {
                    if self.escape {
                        self.escape = false;
                        self.key.push(b);
                    } else if b == b'\\' {
                        self.escape = true;
                    } else if b == b'"' {
                        self.state = State::Colon;
                    } else {
                        self.key.push(b);
                    }
                    i += 1;
                }
                State::Colon => {
                    if is_ws(b) {
                        i += 1;
                    } else if b == b':' {
                        self.state = State::Value;
                        i += 1;
                    } else {
                        return Err(self.syntax(i, "expected ':' after a top-level key"));
                    }
                }
                State::Value => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if self.key == b"traceEvents" {
                        if b != b'[' {
                            return Err(self.syntax(i, "traceEvents is not an array"));
                        }
                        self.seen_events = true;
                        self.state = State::Events;
                        i += 1;
                        continue;
                    }
                    self.keep_value = std::str::from_utf8(&self.key).is_ok_and(|k| sink.keeps(k));
                    self.pending.clear();
                    start = Some(i);
                    self.depth = 0;
                    self.in_string = false;
                    self.escape = false;
                    if matches!(b, b'{' | b'[' | b'"') {
                        self.state = State::OtherValue;
                    } else {
                        self.state = State::Scalar;
                    }
                }
                State::OtherValue => {
                    // Nesting of both bracket kinds, strings skipped; a plain string is depth 0.
                    if self.in_string {
                        if self.escape {
                            self.escape = false;
                        } else if b == b'\\' {
                            self.escape = true;
                        } else if b == b'"' {
                            self.in_string = false;
                        }
                    } else {
                        match b {
                            b'"' => self.in_string = true,
                            b'{' | b'[' => self.depth += 1,
                            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                            _ => {}
                        }
                    }
                    i += 1;
                    if !self.in_string && self.depth == 0 {
                        self.finish_value(chunk, start.take(), i, sink);
                        self.state = State::AfterValue;
                    }
                }
                State::Scalar => {
                    if is_ws(b) || b == b',' || b == b'}' {
                        self.finish_value(chunk, start.take(), i, sink);
                        self.state = State::AfterValue;
                    } else {
                        i += 1;
                    }
                }
                State::AfterValue => {
                    if is_ws(b) {
                        i += 1;
                    } else if b == b',' {
                        self.state = State::Key;
                        i += 1;
                    } else if b == b'}' {
                        self.state = State::End;
                        i += 1;
                    } else {
                        return Err(self.syntax(i, "expected ',' or '}' after a top-level value"));
                    }
                }
                State::Events => {
                    if is_ws(b) || b == b',' {
                        i += 1;
                    } else if b == b']' {
                        self.state = if self.bare_array {
                            State::End
                        } else {
                            State::AfterValue
                        };
                        i += 1;
                    } else if b == b'{' {
                        self.state = State::Event;
                        self.depth = 1;
                        self.in_string = false;
                        self.escape = false;
                        self.pending.clear();
                        start = Some(i);
                        i += 1;
                    } else {
                        return Err(self.syntax(
                            i,
                            format!(
                                "traceEvents[{}] is not an object (starts with {:?})",
                                self.events,
                                char::from(b)
                            ),
                        ));
                    }
                }
                State::Event => {
                    i = self.scan_event(chunk, i);
                    if self.depth == 0 {
                        let s = start.take().unwrap_or(0);
                        if self.pending.is_empty() {
                            sink.event(&chunk[s..i]);
                        } else {
                            self.pending.extend_from_slice(&chunk[s..i]);
                            sink.event(&self.pending);
                            self.pending.clear();
                        }
                        self.events += 1;
                        self.state = State::Events;
                    }
                }
                State::End => {
                    if is_ws(b) {
                        i += 1;
                    } else {
                        return Err(self.syntax(i, "data after the end of the trace"));
                    }
                }
            }
        }
        // Keep the unfinished item's bytes for the next chunk.
        if let Some(s) = start {
            if matches!(self.state, State::Event) || self.keep_value {
                self.pending.extend_from_slice(&chunk[s..]);
            }
        }
        self.consumed += chunk.len() as u64;
        Ok(())
    }

    /// Scans inside an event from `i`; returns the index after the closing brace when the event
    /// ends in this chunk (depth 0), else the chunk's length.
    fn scan_event(&mut self, chunk: &[u8], mut i: usize) -> usize {
        while i < chunk.len() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                match memchr2(b'"', b'\\', &chunk[i..]) {
                    None => return chunk.len(),
                    Some(off) => {
                        i += off;
                        if chunk[i] == b'\\' {
                            self.escape = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
            } else {
                match memchr3(b'"', b'{', b'}', &chunk[i..]) {
                    None => return chunk.len(),
                    Some(off) => {
                        i += off;
                        match chunk[i] {
                            b'"' => self.in_string = true,
                            b'{' => self.depth += 1,
                            _ => {
                                self.depth -= 1;
                                if self.depth == 0 {
                                    return i + 1;
                                }
                            }
                        }
                        i += 1;
                    }
                }
            }
        }
        i
    }

    fn finish_value(
        &mut self,
        chunk: &[u8],
        start: Option<usize>,
        end: usize,
        sink: &mut impl ScanSink,
    ) {
        if !self.keep_value {
            return;
        }
        let key = String::from_utf8_lossy(&self.key).into_owned();
        match start {
            Some(s) if self.pending.is_empty() => sink.top_level(&key, &chunk[s..end]),
            s => {
                self.pending.extend_from_slice(&chunk[s.unwrap_or(0)..end]);
                sink.top_level(&key, &self.pending);
                self.pending.clear();
            }
        }
        self.keep_value = false;
    }

    /// Checks that the document ended where it should.
    pub fn finish(&self) -> Result<(), ScanError> {
        let truncated = |inside| ScanError::Truncated {
            inside,
            read: self.consumed,
            events: self.events,
        };
        match self.state {
            State::End if self.seen_events => Ok(()),
            State::End => Err(ScanError::NoEvents),
            State::Start => Err(ScanError::Syntax {
                offset: 0,
                what: "the file is empty".into(),
            }),
            // The Chrome trace format lets the bare array form end without its `]`.
            State::Events if self.bare_array => Ok(()),
            State::Event | State::Events => Err(truncated("traceEvents")),
            _ if !self.seen_events => Err(ScanError::NoEvents),
            _ => Err(truncated("the top-level object")),
        }
    }
}
