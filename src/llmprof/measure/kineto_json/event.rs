//! One element of `traceEvents` turned into a host or device record: complete events (`"ph":
//! "X"`) of the categories the tables use, in today's Kineto names and the older ones
//! (`Operator`, `Kernel`, `Runtime`, `Memcpy`, `Memset`); everything else is counted and skipped.
//! Names and shapes are interned (a trace repeats a few thousand names millions of times). Every
//! numeric field is read from its JSON text: times exactly (microseconds with up to three
//! decimals are whole nanoseconds), ids also when a producer wrote them as strings. Pure.
use std::borrow::Cow;
use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::measure::kineto_events::{DeviceKind, HostKind, KernelRecord, Name, OpRecord};

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    ph: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct RawArgs<'a> {
    #[serde(borrow, default, rename = "External id")]
    external_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    correlation: Option<&'a RawValue>,
    #[serde(borrow, default)]
    device: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stream: Option<&'a RawValue>,
    #[serde(borrow, default)]
    flops: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Input Dims")]
    input_dims: Option<&'a RawValue>,
}

/// What one event became.
pub enum Parsed {
    Host(OpRecord),
    Device(KernelRecord),
    /// Another phase or category (flows, instant events, counters, python functions, ...).
    Skipped,
}

/// Names and shapes seen so far, each stored once.
#[derive(Default)]
pub struct Interner {
    seen: HashSet<Name>,
}

impl Interner {
    pub fn intern(&mut self, text: &str) -> Name {
        if let Some(name) = self.seen.get(text) {
            return name.clone();
        }
        let name: Name = Name::from(text);
        self.seen.insert(name.clone());
        name
    }
}

fn host_kind(cat: &str) -> Option<HostKind> {
    Some(match cat {
        "cpu_op" | "Operator" | "operator" => HostKind::Op,
        "user_annotation" => HostKind::UserScope,
        "cuda_runtime" | "Runtime" | "runtime" => HostKind::Runtime,
        "cuda_driver" => HostKind::Driver,
        _ => return None,
    })
}

fn device_kind(cat: &str) -> Option<DeviceKind> {
    Some(match cat {
        "kernel" | "Kernel" => DeviceKind::Kernel,
        "gpu_memcpy" | "Memcpy" => DeviceKind::Memcpy,
        "gpu_memset" | "Memset" => DeviceKind::Memset,
        "gpu_user_annotation" => DeviceKind::UserScope,
        _ => return None,
    })
}

/// Parses one event's bytes. Errors name the field and say what was found.
pub fn parse_event(bytes: &[u8], names: &mut Interner) -> Result<Parsed, String> {
    let ev: RawEvent =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON event: {e}"))?;
    if ev.ph.map(RawValue::get) != Some("\"X\"") {
        return Ok(Parsed::Skipped);
    }
    let cat = ev.cat.as_deref().unwrap_or("");
    let (host, device) = (host_kind(cat), device_kind(cat));
    if host.is_none() && device.is_none() {
        return Ok(Parsed::Skipped);
    }
    let start_ns = ns_of(ev.ts).map_err(|e| format!("ts: {e}"))?;
    let duration_ns = ns_of(ev.dur).map_err(|e| format!("dur: {e}"))?;
    if start_ns.checked_add(duration_ns).is_none() {
        return Err(format!(
            "ts + dur overflows: {start_ns} ns + {duration_ns} ns"
        ));
    }
    let args: RawArgs = match ev.args {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| format!("args: {e}"))?,
        None => RawArgs::default(),
    };
    let external_id = uint_of(args.external_id).unwrap_or(0);
    let correlation = uint_of(args.correlation).unwrap_or(0);
    let tid = id_of(ev.tid);
    let name = names.intern(ev.name.as_deref().unwrap_or(""));
    if let Some(kind) = host {
        let (correlation_id, linked_correlation_id) = match kind {
            HostKind::Op | HostKind::UserScope => (external_id, 0),
            HostKind::Runtime | HostKind::Driver => (correlation, external_id),
        };
        let input_shapes = match args.input_dims {
            Some(raw) => {
                let compact: String = raw.get().chars().filter(|c| !c.is_whitespace()).collect();
                names.intern(&compact.replace(',', ", "))
            }
            None => names.intern(""),
        };
        return Ok(Parsed::Host(OpRecord {
            name,
            kind,
            thread_id: tid,
            start_ns,
            duration_ns,
            correlation_id,
            linked_correlation_id,
            flops: uint_of(args.flops).unwrap_or(0),
            input_shapes,
        }));
    }
    let kind = device.expect("host or device");
    let device_index = int_of(args.device)
        .or_else(|| int_of(ev.pid))
        .and_then(|d| i32::try_from(d).ok())
        .unwrap_or(0);
    Ok(Parsed::Device(KernelRecord {
        name,
        kind,
        device_index,
        stream: int_of(args.stream).unwrap_or(tid as i64),
        start_ns,
        duration_ns,
        correlation_id: correlation,
        op_correlation_id: external_id,
    }))
}

/// The JSON text of a number, or of a string holding one.
fn number_text(raw: &RawValue) -> &str {
    let t = raw.get();
    t.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t)
}

fn uint_of(raw: Option<&RawValue>) -> Option<u64> {
    let t = number_text(raw?);
    t.parse::<u64>().ok().or_else(|| {
        t.parse::<f64>()
            .ok()
            .filter(|v| *v >= 0.0 && v.fract() == 0.0)
            .map(|v| v as u64)
    })
}

fn int_of(raw: Option<&RawValue>) -> Option<i64> {
    number_text(raw?).parse::<i64>().ok()
}

/// A thread or process id: a number, or any string (hashed, so it still tells threads apart).
fn id_of(raw: Option<&RawValue>) -> u64 {
    let Some(raw) = raw else { return 0 };
    let t = number_text(raw);
    t.parse::<u64>().unwrap_or_else(|_| {
        t.parse::<i64>().map(|v| v as u64).unwrap_or_else(|_| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            t.hash(&mut h);
            h.finish()
        })
    })
}

/// Microseconds (as written) to whole nanoseconds: digits are read, not multiplied, so
/// `4459499379117.141` is exactly 4459499379117141 ns; a fourth decimal and beyond are dropped.
fn ns_of(raw: Option<&RawValue>) -> Result<u64, String> {
    let Some(raw) = raw else {
        return Err("missing".into());
    };
    let text = number_text(raw);
    let bad = || format!("not a non-negative time in microseconds: {}", raw.get());
    if text.contains(['e', 'E']) {
        let us: f64 = text.parse().map_err(|_| bad())?;
        if !us.is_finite() || us < 0.0 || us * 1000.0 >= u64::MAX as f64 {
            return Err(bad());
        }
        return Ok((us * 1000.0).round() as u64);
    }
    let (int_part, frac_part) = text.split_once('.').unwrap_or((text, ""));
    if int_part.is_empty()
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let int: u64 = int_part.parse().map_err(|_| bad())?;
    let mut frac = 0u64;
    for b in frac_part.bytes().chain(std::iter::repeat(b'0')).take(3) {
        frac = frac * 10 + u64::from(b - b'0');
    }
    int.checked_mul(1000)
        .and_then(|v| v.checked_add(frac))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn microseconds_convert_exactly() {
        let ns = |t: &str| ns_of(Some(&raw(t)));
        assert_eq!(ns("4459499379117.141"), Ok(4_459_499_379_117_141));
        assert_eq!(ns("0.768"), Ok(768));
        assert_eq!(ns("12"), Ok(12_000));
        assert_eq!(ns("1.5"), Ok(1_500));
        assert_eq!(ns("1.23456"), Ok(1_234));
        assert_eq!(ns("\"7.5\""), Ok(7_500));
        assert_eq!(ns("1.5e3"), Ok(1_500_000));
        assert!(ns("-1").is_err());
        assert!(ns("null").is_err());
        assert!(ns("99999999999999999999").is_err());
    }

    #[test]
    fn events_of_other_phases_and_categories_are_skipped() {
        let mut names = Interner::default();
        for text in [
            r#"{"ph": "i", "cat": "cpu_op", "name": "x", "ts": 1}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "x", "ts": 1, "dur": 2}"#,
            r#"{"ph": "s", "cat": "ac2g", "id": 5, "ts": 1}"#,
        ] {
            assert!(matches!(
                parse_event(text.as_bytes(), &mut names),
                Ok(Parsed::Skipped)
            ));
        }
    }

    #[test]
    fn ids_may_be_strings_and_names_may_have_escapes() {
        let mut names = Interner::default();
        let text = r#"{"ph": "X", "cat": "Kernel", "name": "k\"q\"", "pid": "3", "tid": "stream 7",
            "ts": 10, "dur": 2.5, "args": {"correlation": "42", "External id": 7}}"#;
        let Ok(Parsed::Device(k)) = parse_event(text.as_bytes(), &mut names) else {
            panic!("a legacy Kernel event is a device record");
        };
        assert_eq!(&*k.name, "k\"q\"");
        assert_eq!(
            (k.device_index, k.correlation_id, k.op_correlation_id),
            (3, 42, 7)
        );
        assert_eq!((k.start_ns, k.duration_ns), (10_000, 2_500));
        assert_ne!(k.stream, 0, "a string stream id still names the stream");
    }

    #[test]
    fn a_bad_time_names_its_field() {
        let mut names = Interner::default();
        let text = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "soon", "dur": 1}"#;
        let err = parse_event(text.as_bytes(), &mut names).err().unwrap();
        assert!(err.starts_with("ts: not a non-negative time"), "{err}");
    }
}
