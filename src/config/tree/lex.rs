//! Token rules shared by OmegaConf's interpolation grammar and Hydra's override grammar (both copy
//! OmegaConf's FLOAT/INT/BOOL/NULL lexer rules, `OmegaConfGrammarLexer.g4` / `OverrideLexer.g4`):
//! the length of the longest match at a position, and float token text → f64. No tokenising loop.

fn digits_us(c: &[char], start: usize) -> usize {
    // DIGIT (('_')? DIGIT)*  — returns the end index (start if no digit)
    let mut i = start;
    if !c.get(i).is_some_and(char::is_ascii_digit) {
        return start;
    }
    i += 1;
    loop {
        if c.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        } else if c.get(i) == Some(&'_') && c.get(i + 1).is_some_and(char::is_ascii_digit) {
            i += 2;
        } else {
            return i;
        }
    }
}

fn int_unsigned(c: &[char], start: usize) -> usize {
    match c.get(start) {
        Some('0') => start + 1,
        Some(d) if d.is_ascii_digit() => digits_us(c, start),
        _ => start,
    }
}

fn point_float(c: &[char], start: usize) -> usize {
    // INT_UNSIGNED '.' | INT_UNSIGNED? '.' DIGIT (('_')? DIGIT)*
    let iu = int_unsigned(c, start);
    if c.get(iu) != Some(&'.') {
        return start;
    }
    let after_dot = iu + 1;
    let frac = digits_us(c, after_dot);
    if frac > after_dot {
        frac
    } else if iu > start {
        after_dot
    } else {
        start
    }
}

pub(crate) fn lex_float(c: &[char]) -> usize {
    let s = usize::from(matches!(c.first(), Some('+' | '-')));
    let pf = point_float(c, s);
    let iu = int_unsigned(c, s);
    let mantissa_end = pf.max(iu);
    let mut exp = s;
    if mantissa_end > s && matches!(c.get(mantissa_end), Some('e' | 'E')) {
        let mut i = mantissa_end + 1;
        if matches!(c.get(i), Some('+' | '-')) {
            i += 1;
        }
        let d = digits_us(c, i);
        if d > i {
            exp = d;
        }
    }
    let special = [lex_word_ci(&c[s..], "inf"), lex_word_ci(&c[s..], "nan")]
        .into_iter()
        .max()
        .unwrap_or(0);
    let special = if special > 0 { s + special } else { 0 };
    let best = if pf > s { pf } else { 0 };
    best.max(if exp > s { exp } else { 0 }).max(special)
}

pub(crate) fn lex_int(c: &[char]) -> usize {
    let s = usize::from(matches!(c.first(), Some('+' | '-')));
    let e = int_unsigned(c, s);
    if e > s {
        e
    } else {
        0
    }
}

pub(crate) fn lex_word_ci(c: &[char], w: &str) -> usize {
    let n = w.chars().count();
    if c.len() >= n
        && c[..n]
            .iter()
            .zip(w.chars())
            .all(|(a, b)| a.eq_ignore_ascii_case(&b))
    {
        n
    } else {
        0
    }
}

pub(crate) fn parse_hydra_float(t: &str) -> f64 {
    let lower = t.to_ascii_lowercase().replace('_', "");
    let (neg, body) = match lower.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, lower.trim_start_matches('+').to_string()),
    };
    let v = match body.as_str() {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        b => b.parse().expect("the lexer only accepts valid floats"),
    };
    if neg {
        -v
    } else {
        v
    }
}
