//! The streaming reader on recorded and hand-made traces, fed whole and in every chunk size
//! down to one byte.
use super::scan::{ScanError, ScanSink, Scanner};
use super::*;

#[derive(Default)]
struct Seen {
    events: Vec<String>,
    top: Vec<(String, String)>,
}

impl ScanSink for Seen {
    fn event(&mut self, bytes: &[u8]) {
        self.events.push(String::from_utf8(bytes.to_vec()).unwrap());
    }
    fn top_level(&mut self, key: &str, raw: &[u8]) {
        self.top
            .push((key.to_string(), String::from_utf8(raw.to_vec()).unwrap()));
    }
    fn keeps(&self, key: &str) -> bool {
        key != "skipped"
    }
}

fn scan_in_chunks(text: &str, chunk: usize) -> Result<Seen, ScanError> {
    let mut scanner = Scanner::new();
    let mut seen = Seen::default();
    for piece in text.as_bytes().chunks(chunk) {
        scanner.feed(piece, &mut seen)?;
    }
    scanner.finish()?;
    Ok(seen)
}

const HAND_MADE: &str = r#" {"schemaVersion": 1, "skipped": {"a": [1, {"b": "}"}]},
  "distributedInfo": {"rank": 3, "world_size": 8}, "traceName": "x\"}{",
  "traceEvents": [ {"name": "a{b}\"}", "ph": "X", "args": {"k": [1, {"n": 2}]}},
   {"name": "\\", "ph": "i"} ,{}],
  "baseTimeNanoseconds": 17 } "#;

#[test]
fn every_chunk_size_finds_the_same_events_and_values() {
    let whole = scan_in_chunks(HAND_MADE, HAND_MADE.len()).unwrap();
    assert_eq!(
        whole.events,
        [
            r#"{"name": "a{b}\"}", "ph": "X", "args": {"k": [1, {"n": 2}]}}"#,
            r#"{"name": "\\", "ph": "i"}"#,
            "{}"
        ]
    );
    assert_eq!(
        whole.top,
        [
            ("schemaVersion".to_string(), "1".to_string()),
            (
                "distributedInfo".into(),
                r#"{"rank": 3, "world_size": 8}"#.into()
            ),
            ("traceName".into(), r#""x\"}{""#.into()),
            ("baseTimeNanoseconds".into(), "17".into()),
        ]
    );
    for chunk in 1..HAND_MADE.len() {
        let seen = scan_in_chunks(HAND_MADE, chunk).unwrap();
        assert_eq!(seen.events, whole.events, "chunk {chunk}");
        assert_eq!(seen.top, whole.top, "chunk {chunk}");
    }
}

#[test]
fn the_bare_array_form_is_a_trace_even_without_its_end() {
    let seen = scan_in_chunks(r#"[{"ph": "X"}, {"ph": "B"}]"#, 3).unwrap();
    assert_eq!(seen.events.len(), 2);
    // The Chrome trace format allows the closing bracket to be missing.
    let seen = scan_in_chunks("[{\"ph\": \"X\"},\n{\"ph\": \"B\"},\n", 3).unwrap();
    assert_eq!(seen.events.len(), 2);
    assert!(matches!(
        scan_in_chunks(r#"[{"ph": "X"}, {"ph"#, 3),
        Err(ScanError::Truncated { .. })
    ));
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let seen = scan_in_chunks("\u{feff}{\"traceEvents\": [{}]}", 1).unwrap();
    assert_eq!(seen.events, ["{}"]);
}

#[test]
fn truncated_and_foreign_files_are_refused_with_what_they_are() {
    let cut = &HAND_MADE[..HAND_MADE.find("{}]").unwrap() + 1];
    match scan_in_chunks(cut, 7) {
        Err(ScanError::Truncated { inside, events, .. }) => {
            assert_eq!((inside, events), ("traceEvents", 2))
        }
        other => panic!("{:?}", other.map(|s| s.events)),
    }
    assert!(matches!(
        scan_in_chunks(r#"{"a": 1}"#, 2),
        Err(ScanError::NoEvents)
    ));
    let err = scan_in_chunks("name,calls\nx,1\n", 4).err().unwrap();
    assert!(err.to_string().contains("starts with 'n'"), "{err}");
    assert!(matches!(
        scan_in_chunks(r#"{"traceEvents": 5}"#, 64),
        Err(ScanError::Syntax { .. })
    ));
    assert!(scan_in_chunks("", 4).is_err());
    assert!(scan_in_chunks(r#"{"traceEvents": [1]}"#, 64)
        .err()
        .unwrap()
        .to_string()
        .contains("traceEvents[0] is not an object"));
}

fn fixture() -> &'static str {
    include_str!("../../../../tests/fixtures/kineto/h100_decode_step_slice.json")
}

#[test]
fn a_recorded_trace_reads_the_same_plain_gzipped_and_in_small_chunks() {
    let plain = read_trace(fixture().as_bytes(), &mut |_| {}).unwrap();
    assert_eq!(
        (plain.events.ops.len(), plain.events.kernels.len()),
        (59, 19)
    );
    assert_eq!(plain.bytes, fixture().len() as u64);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, fixture().as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let unzipped = read_trace(gz.as_slice(), &mut |_| {}).unwrap();
    assert_eq!(unzipped.events, plain.events);
    assert_eq!(unzipped.header, plain.header);
    // A reader that hands out 5 bytes at a time exercises every chunk boundary path.
    struct Dribble<'a>(&'a [u8]);
    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(5);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut calls = 0;
    let dribbled = read_trace(Dribble(fixture().as_bytes()), &mut |_| calls += 1).unwrap();
    assert_eq!(dribbled.events, plain.events);
    assert!(calls > 100, "progress after every chunk: {calls}");
}

#[test]
fn the_header_keeps_rank_devices_and_base_time() {
    let text = r#"{"deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
        "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
        "baseTimeNanoseconds": 1790857026000000000, "traceEvents": []}"#;
    let read = read_trace(text.as_bytes(), &mut |_| {}).unwrap();
    assert_eq!(
        read.header,
        TraceHeader {
            rank: Some(1),
            world_size: Some(2),
            devices: vec!["NVIDIA H200".into()],
            base_time_ns: Some(1_790_857_026_000_000_000),
        }
    );
}

#[test]
fn a_bad_event_is_named_by_its_index() {
    let text = r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -4}]}"#;
    let err = read_trace(text.as_bytes(), &mut |_| {}).err().unwrap();
    assert!(
        err.to_string()
            .starts_with("traceEvents[1]: dur: not a non-negative time"),
        "{err}"
    );
}
