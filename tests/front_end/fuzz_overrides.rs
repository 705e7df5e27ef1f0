//! Fuzz target: Hydra's override grammar (llmprof_config::overrides) and multirun expansion.
//! Every input parses or is refused without a panic, a hang or unbounded memory; a parsed value
//! prints (Display, as sweeps write job overrides) to text that parses back to the same value.
//! Regression tests for what fuzzing found sit at the end (docs/fuzzing.md).
use crate::front_end::fuzz_gen::{deep, noisy, override_line, repeated};
use crate::front_end::fuzz_support::{fuzz, scratch_dir};
use llmprof_config::overrides::{parse_override, Element, Value};
use proptest::prelude::*;

fn inputs() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => override_line(),
        2 => noisy(48),
        1 => deep(&["[", "{a:", "str(", "choice(", "${"], &["]", "}", ")", ")", "}"])
            .prop_map(|v| format!("k={v}")),
        1 => (1usize..2000).prop_map(|n| format!("+{}=1", vec!["a"; n].join("."))),
        1 => repeated(&["${", "'\\", "[", "a,", "\\ ", " ", "${a}", "(", "{a:", "1.", "=", "\\"])
            .prop_map(|v| format!("k={v}")),
    ]
}

/// Elements equal as Hydra means them (NaN equals NaN; the quote style of a string is not part
/// of its value). An unquoted string that reads back as a number, a bool or null (`str(1)`,
/// printed `1`) is Hydra's own behaviour: its sweeper prints strings with `str()` too.
fn same(a: &Element, b: &Element) -> bool {
    let scalar = |e: &Element| {
        matches!(
            e,
            Element::Int(_) | Element::Float(_) | Element::Bool(_) | Element::Null
        )
    };
    match (a, b) {
        (Element::Str { quote: None, .. }, b) if scalar(b) => true,
        (Element::Float(x), Element::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Element::Str { text: x, .. }, Element::Str { text: y, .. }) => x == y,
        (Element::List(x), Element::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Element::Dict(x), Element::Dict(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && same(p, q))
        }
        _ => a == b,
    }
}

// The driver hands each input over as `&Strategy::Value`, here `&String`.
#[allow(clippy::ptr_arg)]
pub fn check(input: &String) -> Result<(), String> {
    let Ok(o) = parse_override(input) else {
        return Ok(());
    };
    // What the sweeper writes for each job must parse back to the same value.
    if let Some(Value::Element(e)) = &o.value {
        let text = format!("k={e}");
        match parse_override(&text) {
            Ok(back) => match back.value {
                Some(Value::Element(b)) if same(e, &b) => {}
                other => return Err(format!("{text:?} reads back as {other:?}, not {e:?}")),
            },
            Err(err) => return Err(format!("{text:?} (printed from {e:?}) fails: {err}")),
        }
    }
    if o.is_sweep() {
        let dir = scratch_dir("overrides");
        for g in ["o1", "o2", "o3"] {
            let p = dir.join(&o.key_or_group);
            if std::fs::create_dir_all(&p).is_ok() {
                let _ = std::fs::write(p.join(format!("{g}.yaml")), "a: 1\n");
            }
        }
        let jobs = llmprof_config::sweep::expand(&dir, std::slice::from_ref(&o));
        let _ = std::fs::remove_dir_all(&dir);
        if let Ok(jobs) = jobs {
            for job in jobs.iter().take(50).flatten() {
                parse_override(job).map_err(|e| format!("sweep job {job:?} fails: {e}"))?;
            }
        }
    }
    Ok(())
}

#[test]
fn fuzz_override_grammar() {
    fuzz("overrides", inputs(), check);
}

#[test]
fn regression_deep_values_and_keys_are_refused_not_overflowed() {
    for v in [
        format!("k={}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("k={}1{}", "{a:".repeat(100_000), "}".repeat(100_000)),
        format!("k={}1{}", "str(".repeat(100_000), ")".repeat(100_000)),
        format!("+{}=1", vec!["a"; 100_000].join(".")),
    ] {
        let err = parse_override(&v).expect_err("refused");
        assert!(err.to_string().contains("nested more than"), "{err}");
    }
}

#[test]
fn regression_huge_sweeps_are_refused() {
    let o = parse_override("a=range(0,1e300,1e-300)").expect_err("too many values");
    assert!(o.to_string().contains("more than"), "{o}");
    let p = llmprof_config::parse_overrides(&[
        "a=range(0,1000)".to_string(),
        "b=range(0,1000)".to_string(),
    ])
    .unwrap();
    let err = llmprof_config::sweep::expand(std::path::Path::new("/nonexistent"), &p);
    assert!(err.unwrap_err().to_string().contains("more than"));
}

#[test]
fn regression_printed_values_parse_back() {
    // Found by fuzz_override_grammar: what a sweep writes for each job did not parse back.
    for (input, printed) in [
        (r#"k="\\""#, r#""\\""#),       // a quoted string ending in a backslash
        (r#"k=str('"')"#, r#"'"'"#),    // a quote in an unquoted string
        (r#"k=str({a:""})"#, "{a:''}"), // an empty string inside a container
        ("k=str('#x')", "'#x'"),        // a character no unquoted token holds
    ] {
        let o = parse_override(input).unwrap();
        let Some(Value::Element(e)) = &o.value else {
            panic!("{input}: not an element")
        };
        assert_eq!(e.to_string(), printed, "{input}");
        assert!(check(&input.to_string()).is_ok(), "{input}");
    }
}

#[test]
fn regression_lexing_is_linear() {
    // `${${${…` searched for its `}` from every `${`: quadratic (about 1 s for 60 000 of them).
    let started = std::time::Instant::now();
    assert!(parse_override(&format!("k={}", "${".repeat(60_000))).is_err());
    assert!(started.elapsed() < std::time::Duration::from_millis(500));
}
