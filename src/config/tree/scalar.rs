//! Scalar spellings that need no config tree: Python's `repr(float)`, PyYAML's YAML 1.1 int rule
//! and OmegaConf's float rule (`omegaconf/_utils.py`), shared by the tree, the YAML reader and
//! writer and the override grammar. Knows nothing of `Node`.

/// Python's `repr(float)`: shortest round-trip digits, always with a `.` or exponent.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e16).contains(&abs) {
        // Python switches to exponent notation outside [1e-4, 1e16).
        let s = format!("{f:e}"); // e.g. 1e20, 1.5e-7
        let (mant, exp) = s.split_once('e').expect("`{:e}` always writes an exponent");
        let exp: i32 = exp.parse().expect("exponent is an integer");
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

/// PyYAML int: `[-+]?0b[01_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+
/// | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+` (the last is base 60: `1:30` is 90).
pub(super) fn parse_yaml11_int(s: &str) -> Option<i64> {
    if s.contains(':') {
        return sexagesimal(s, false).map(|v| v as i64);
    }
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() || body.starts_with('_') {
        return None;
    }
    let clean: String = body.chars().filter(|c| *c != '_').collect();
    let value = if let Some(b) = body.strip_prefix("0b") {
        if b.is_empty() || !b.chars().all(|c| c == '0' || c == '1' || c == '_') {
            return None;
        }
        i64::from_str_radix(&clean[2..], 2).ok()?
    } else if let Some(h) = body.strip_prefix("0x") {
        if h.is_empty() || !h.chars().all(|c| c.is_ascii_hexdigit() || c == '_') {
            return None;
        }
        i64::from_str_radix(&clean[2..], 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        if !body.chars().all(|c| ('0'..='7').contains(&c) || c == '_') {
            return None;
        }
        i64::from_str_radix(&clean[1..], 8).ok()?
    } else {
        if !body.chars().all(|c| c.is_ascii_digit() || c == '_') {
            return None;
        }
        clean.parse::<i64>().ok()?
    };
    Some(if neg { -value } else { value })
}

/// OmegaConf's float resolver (omegaconf/_utils.py `get_yaml_loader`):
/// `[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)? | [-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
///  | \.[0-9_]+(?:[eE][-+][0-9]+)? | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)`.
pub(super) fn parse_omegaconf_float(s: &str) -> Option<f64> {
    if s.contains(':') {
        // `[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*`: base 60, `1:30.5` is 90.5.
        return sexagesimal(s, true);
    }
    match s {
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let b = s.as_bytes();
    let mut i = 0;
    let signed = matches!(b.first(), Some(b'-' | b'+'));
    if signed {
        i += 1;
    }
    let digits = |i: &mut usize, allow_underscore: bool| {
        let start = *i;
        while *i < b.len() && (b[*i].is_ascii_digit() || (allow_underscore && b[*i] == b'_')) {
            *i += 1;
        }
        *i - start
    };
    let exponent = |i: &mut usize, sign_required: bool| -> bool {
        if *i < b.len() && (b[*i] == b'e' || b[*i] == b'E') {
            *i += 1;
            if *i < b.len() && (b[*i] == b'-' || b[*i] == b'+') {
                *i += 1;
            } else if sign_required {
                return false;
            }
            let start = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            *i > start
        } else {
            true
        }
    };
    let ok = if i < b.len() && b[i] == b'.' {
        // `.5`, `.5e+3` (no sign allowed before the dot in this branch)
        if signed {
            return None;
        }
        i += 1;
        digits(&mut i, true) > 0 && exponent(&mut i, true)
    } else {
        if i >= b.len() || !b[i].is_ascii_digit() {
            return None;
        }
        digits(&mut i, true);
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i, true);
            exponent(&mut i, false)
        } else if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            exponent(&mut i, false)
        } else {
            false
        }
    };
    if !ok || i != b.len() {
        return None;
    }
    s.replace('_', "").parse::<f64>().ok()
}

/// YAML 1.1 base-60 numbers: `[-+]?` first part `(:[0-5]?[0-9])+`, then `.[0-9_]*` for a float.
fn sexagesimal(s: &str, float: bool) -> Option<f64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (body, frac) = match (float, body.split_once('.')) {
        (true, Some((b, f))) => (b, f),
        (false, None) => (body, ""),
        _ => return None,
    };
    if !frac.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return None;
    }
    let mut parts = body.split(':');
    let first = parts.next()?;
    let first_ok = if float {
        // `[0-9]+(?:_[0-9]+)*`
        !first.is_empty()
            && first
                .split('_')
                .all(|g| !g.is_empty() && g.chars().all(|c| c.is_ascii_digit()))
    } else {
        // `[1-9][0-9_]*`
        first.starts_with(|c: char| ('1'..='9').contains(&c))
            && first.chars().all(|c| c.is_ascii_digit() || c == '_')
    };
    if !first_ok {
        return None;
    }
    let mut value: f64 = first.replace('_', "").parse().ok()?;
    let mut any = false;
    for p in parts {
        let ok = (1..=2).contains(&p.len())
            && p.chars().all(|c| c.is_ascii_digit())
            && (p.len() == 1 || p.as_bytes()[0] <= b'5');
        if !ok {
            return None;
        }
        value = value * 60.0 + p.parse::<f64>().ok()?;
        any = true;
    }
    if !any {
        return None;
    }
    if float {
        let f = frac.replace('_', "");
        if !f.is_empty() {
            value += format!("0.{f}").parse::<f64>().ok()?;
        }
    } else if value > i64::MAX as f64 {
        return None;
    }
    Some(if neg { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_spelling_matches_repr() {
        assert_eq!(python_float_repr(1000.0), "1000.0");
        assert_eq!(python_float_repr(0.25), "0.25");
        assert_eq!(python_float_repr(1e20), "1e+20");
        assert_eq!(python_float_repr(1.5e-7), "1.5e-07");
        assert_eq!(python_float_repr(-0.0), "-0.0");
    }

    #[test]
    fn base_60_numbers_follow_pyyaml() {
        assert_eq!(parse_yaml11_int("1:30"), Some(90));
        assert_eq!(parse_yaml11_int("-1:30"), Some(-90));
        assert_eq!(parse_yaml11_int("190:20:30"), Some(685_230));
        assert_eq!(parse_yaml11_int("1:60"), None);
        assert_eq!(parse_yaml11_int("01:30"), None);
        assert_eq!(parse_omegaconf_float("1:30.5"), Some(90.5));
        assert_eq!(parse_omegaconf_float("1:30"), None);
        assert_eq!(parse_omegaconf_float("cuda:0"), None);
    }
}
