//! Unit normalisation for Nsight CSV values: ncu `Metric Unit` strings and nsys `(unit)` header
//! suffixes become nanoseconds, bytes, hertz, bytes per second or percent, in one place.

use serde::Serialize;

/// The canonical unit a value is stored in after [`normalise`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Nanoseconds,
    Bytes,
    Hertz,
    BytesPerSecond,
    Percent,
    Cycles,
    Instructions,
    /// `byte/cycle`, `inst/cycle`: a count per clock, kept as the numerator's name.
    PerCycle(String),
    /// No unit in the CSV.
    Dimensionless,
    /// A unit we do not convert (`warp`, `block`, `register/thread`, ...): value left as printed.
    Other(String),
}

/// Decimal SI prefixes as ncu prints them (`Kbyte` = 1000 bytes: a 32768-byte read prints as
/// `32.77 Kbyte` in shared/fixtures/llm-perf-opt-rtx5090/ncu/kernel_0004_*/ncu.metrics.csv).
fn si_prefix(unit: &str) -> Vec<(f64, &str)> {
    let mut out = vec![(1.0, unit)];
    for (p, f) in [
        ("K", 1e3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ] {
        if let Some(rest) = unit.strip_prefix(p) {
            if !rest.is_empty() {
                out.push((f, rest));
            }
        }
    }
    out
}

/// Nanoseconds in one `unit` of time, for every spelling ncu and nsys use.
pub fn time_unit_ns(unit: &str) -> Option<f64> {
    match unit.trim() {
        "ns" | "nsecond" | "nseconds" => Some(1.0),
        "us" | "usecond" | "useconds" | "µs" => Some(1e3),
        "ms" | "msecond" | "mseconds" => Some(1e6),
        "s" | "second" | "seconds" | "sec" => Some(1e9),
        _ => None,
    }
}

/// Converts `value` printed with `unit` into its canonical unit.
///
/// Unknown units are returned unchanged as [`Unit::Other`]; nothing is dropped or guessed.
pub fn normalise(value: f64, unit: &str) -> (f64, Unit) {
    let unit = unit.trim();
    if unit.is_empty() {
        return (value, Unit::Dimensionless);
    }
    if unit == "%" {
        return (value, Unit::Percent);
    }
    if let Some(ns) = time_unit_ns(unit) {
        return (value * ns, Unit::Nanoseconds);
    }
    let (num, den) = match unit.split_once('/') {
        Some((n, d)) => (n, Some(d)),
        None => (unit, None),
    };
    for (factor, base) in si_prefix(num) {
        let base_lc = base.to_ascii_lowercase();
        match (base_lc.as_str(), den) {
            ("byte" | "bytes", None) => return (value * factor, Unit::Bytes),
            ("hz", None) => return (value * factor, Unit::Hertz),
            ("cycle" | "cycles", None) => return (value * factor, Unit::Cycles),
            ("inst" | "instruction" | "instructions", None) => {
                return (value * factor, Unit::Instructions)
            }
            ("byte" | "bytes", Some(d)) => {
                if let Some(ns) = time_unit_ns(d) {
                    return (value * factor * 1e9 / ns, Unit::BytesPerSecond);
                }
                if d == "cycle" {
                    return (value * factor, Unit::PerCycle("byte".into()));
                }
            }
            ("cycle", Some(d)) => {
                if let Some(ns) = time_unit_ns(d) {
                    return (value * factor * 1e9 / ns, Unit::Hertz);
                }
            }
            ("inst", Some("cycle")) => return (value * factor, Unit::PerCycle("inst".into())),
            _ => {}
        }
    }
    (value, Unit::Other(unit.to_string()))
}

/// Parses a number as ncu/nsys print it: `1,656,768`, `9,096.60`, `20.52`.
/// Returns `None` for text (`n/a`, `no data`, an empty cell, `PolicySpread`).
pub fn parse_number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let cleaned: String = t.chars().filter(|c| *c != ',').collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Splits an nsys header like `Total Time (ns)` into (`Total Time`, `Some("ns")`).
pub fn split_header_unit(header: &str) -> (&str, Option<&str>) {
    let h = header.trim();
    if let (Some(open), true) = (h.rfind(" ("), h.ends_with(')')) {
        return (&h[..open], Some(&h[open + 2..h.len() - 1]));
    }
    (h, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn bytes_with_prefixes_are_decimal() {
        // The peer we replace added `Mbyte` values to `byte` values without converting.
        assert_eq!(normalise(2.33, "Mbyte"), (2.33e6, Unit::Bytes));
        assert_eq!(normalise(32.77, "Kbyte"), (32770.0, Unit::Bytes));
        assert_eq!(normalise(512.0, "byte"), (512.0, Unit::Bytes));
        assert_eq!(normalise(1.5, "Gbyte"), (1.5e9, Unit::Bytes));
    }

    #[test]
    fn times_become_nanoseconds() {
        for (v, u, ns) in [
            (6.46, "us", 6460.0),
            (6.46, "usecond", 6460.0),
            (1.2, "ms", 1.2e6),
            (1.2, "msecond", 1.2e6),
            (7.0, "ns", 7.0),
            (2.0, "second", 2e9),
        ] {
            let (got, unit) = normalise(v, u);
            assert_eq!(unit, Unit::Nanoseconds, "{u}");
            assert!(close(got, ns), "{u}: {got} vs {ns}");
        }
    }

    #[test]
    fn rates_frequencies_and_percent() {
        let (v, u) = normalise(360.51, "Gbyte/s");
        assert_eq!(u, Unit::BytesPerSecond);
        assert!(close(v, 360.51e9));
        let (v, u) = normalise(2.0, "Mbyte/second");
        assert_eq!(u, Unit::BytesPerSecond);
        assert!(close(v, 2e6));
        let (v, u) = normalise(1.5, "Kbyte/usecond");
        assert_eq!(u, Unit::BytesPerSecond);
        assert!(close(v, 1.5e9));
        assert_eq!(normalise(2.14, "Ghz").1, Unit::Hertz);
        assert!(close(normalise(2.14, "Ghz").0, 2.14e9));
        assert!(close(normalise(1.5, "cycle/nsecond").0, 1.5e9));
        assert_eq!(normalise(20.5, "%"), (20.5, Unit::Percent));
        assert_eq!(
            normalise(128.0, "byte/cycle").1,
            Unit::PerCycle("byte".into())
        );
        assert_eq!(
            normalise(83.0, "inst/cycle").1,
            Unit::PerCycle("inst".into())
        );
        assert_eq!(normalise(12904.0, "cycle"), (12904.0, Unit::Cycles));
        assert_eq!(normalise(3.0, "warp"), (3.0, Unit::Other("warp".into())));
        assert_eq!(normalise(3.0, ""), (3.0, Unit::Dimensionless));
    }

    #[test]
    fn numbers_with_thousands_separators() {
        assert_eq!(parse_number("1,656,768"), Some(1656768.0));
        assert_eq!(parse_number("9,096.60"), Some(9096.6));
        assert_eq!(parse_number("n/a"), None);
        assert_eq!(parse_number("no data"), None);
        assert_eq!(parse_number(""), None);
    }

    #[test]
    fn header_units() {
        assert_eq!(
            split_header_unit("Total Time (ns)"),
            ("Total Time", Some("ns"))
        );
        assert_eq!(split_header_unit("Time (%)"), ("Time", Some("%")));
        assert_eq!(split_header_unit("Name"), ("Name", None));
    }
}
