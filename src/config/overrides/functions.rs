//! The functions of Hydra 1.3's override grammar (`hydra/_internal/grammar/grammar_functions.py`):
//! `choice`, `range`, `glob`, `interval`, `sort` and the casts `int`/`float`/`str`/`bool`, applied
//! to already-parsed arguments. No lexing or parsing.
use super::types::{Element, Parsed, Sweep};
use crate::tree::limits::MAX_SWEEP_JOBS;
use crate::tree::scalar::python_float_repr;

pub(super) fn eval_function(
    name: &str,
    args: Vec<Parsed>,
    kwargs: Vec<(String, Parsed)>,
) -> Result<Parsed, String> {
    let elems = |v: Vec<Parsed>| -> Result<Vec<Element>, String> {
        v.into_iter().map(Parsed::into_element).collect()
    };
    let kw = |k: &str, kwargs: &[(String, Parsed)]| kwargs.iter().position(|(n, _)| n == k);
    match name {
        "choice" => {
            if !kwargs.is_empty() {
                return Err("choice() takes no keyword arguments".into());
            }
            let items = elems(args)?;
            if items.is_empty() {
                return Err("empty choice is not legal".into());
            }
            Ok(Parsed::Sweep(Sweep::Choice {
                items,
                simple: false,
            }))
        }
        "range" => {
            let mut a = elems(args)?;
            for (k, v) in kwargs {
                let idx = match k.as_str() {
                    "start" => 0,
                    "stop" => 1,
                    "step" => 2,
                    _ => return Err(format!("range() got an unexpected keyword argument '{k}'")),
                };
                while a.len() <= idx {
                    a.push(Element::Null);
                }
                a[idx] = v.into_element()?;
            }
            if a.len() == 1 {
                a.insert(0, Element::Int(0));
            }
            if a.len() == 2 {
                a.push(Element::Int(1));
            }
            if a.len() != 3 {
                return Err("range(start, stop, step=1) takes 1 to 3 arguments".into());
            }
            let all_int = a.iter().all(|e| matches!(e, Element::Int(_)));
            let nums: Vec<f64> = a
                .iter()
                .map(|e| e.number().ok_or("range() arguments must be numbers".to_string()))
                .collect::<Result<_, _>>()?;
            let (start, stop, step) = (nums[0], nums[1], nums[2]);
            if step == 0.0 {
                return Err("range() step must not be zero".into());
            }
            let mut items = Vec::new();
            let mut i = 0usize;
            loop {
                let v = start + step * i as f64;
                if (step > 0.0 && v >= stop) || (step < 0.0 && v <= stop) || v.is_nan() {
                    break;
                }
                if i >= MAX_SWEEP_JOBS {
                    return Err(format!(
                        "range() would hold more than {MAX_SWEEP_JOBS} values"
                    ));
                }
                items.push(if all_int {
                    Element::Int(v as i64)
                } else {
                    Element::Float(v)
                });
                i += 1;
            }
            Ok(Parsed::Sweep(Sweep::Range { items }))
        }
        "glob" => {
            let strs = |e: Element| -> Result<Vec<String>, String> {
                match e {
                    Element::Str { text, .. } => Ok(vec![text]),
                    Element::List(l) => l
                        .into_iter()
                        .map(|x| {
                            x.as_plain_str()
                                .map(str::to_string)
                                .ok_or_else(|| "glob patterns must be strings".to_string())
                        })
                        .collect(),
                    other => Err(format!("glob pattern must be a string, got {other}")),
                }
            };
            let mut a = elems(args)?;
            let mut kwargs = kwargs;
            if let Some(i) = kw("include", &kwargs) {
                a.insert(0, kwargs.remove(i).1.into_element()?);
            }
            let exclude = match kw("exclude", &kwargs) {
                Some(i) => strs(kwargs.remove(i).1.into_element()?)?,
                None if a.len() > 1 => strs(a.remove(1))?,
                None => Vec::new(),
            };
            if a.len() != 1 || !kwargs.is_empty() {
                return Err("glob(include, exclude=[]) takes an include pattern".into());
            }
            Ok(Parsed::Sweep(Sweep::Glob {
                include: strs(a.remove(0))?,
                exclude,
            }))
        }
        "interval" => {
            let a = elems(args)?;
            let nums: Vec<f64> = a.iter().filter_map(Element::number).collect();
            if nums.len() != 2 || a.len() != 2 {
                return Err("interval(start, end) takes two numbers".into());
            }
            Ok(Parsed::Sweep(Sweep::Interval {
                start: nums[0],
                end: nums[1],
            }))
        }
        "sort" => {
            let reverse = match kw("reverse", &kwargs) {
                Some(i) => matches!(kwargs[i].1, Parsed::Element(Element::Bool(true))),
                None => false,
            };
            let sort_items = |mut v: Vec<Element>| -> Vec<Element> {
                v.sort_by(|a, b| match (a.number(), b.number()) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    _ => a.to_string().cmp(&b.to_string()),
                });
                if reverse {
                    v.reverse();
                }
                v
            };
            let mut args = args;
            if args.len() == 1 {
                match args.remove(0) {
                    Parsed::Sweep(Sweep::Choice { items, simple }) => {
                        return Ok(Parsed::Sweep(Sweep::Choice {
                            items: sort_items(items),
                            simple,
                        }))
                    }
                    Parsed::Sweep(Sweep::Range { items }) => {
                        return Ok(Parsed::Sweep(Sweep::Range {
                            items: sort_items(items),
                        }))
                    }
                    Parsed::Element(Element::List(l)) => {
                        return Ok(Parsed::Element(Element::List(sort_items(l))))
                    }
                    other => args.push(other),
                }
            }
            Ok(Parsed::Sweep(Sweep::Choice {
                items: sort_items(elems(args)?),
                simple: false,
            }))
        }
        "int" | "float" | "str" | "bool" => {
            if args.len() != 1 || !kwargs.is_empty() {
                return Err(format!("{name}() takes exactly one argument"));
            }
            let cast = |e: Element| cast_element(name, e);
            match args.into_iter().next().expect("one argument") {
                Parsed::Element(e) => Ok(Parsed::Element(cast(e)?)),
                Parsed::Sweep(Sweep::Choice { items, simple }) => Ok(Parsed::Sweep(Sweep::Choice {
                    items: items.into_iter().map(cast).collect::<Result<_, _>>()?,
                    simple,
                })),
                Parsed::Sweep(Sweep::Range { items }) => Ok(Parsed::Sweep(Sweep::Range {
                    items: items.into_iter().map(cast).collect::<Result<_, _>>()?,
                })),
                Parsed::Sweep(other) => Err(format!("cannot cast {other:?}")),
            }
        }
        _ => Err(format!(
            "unknown function '{name}': supported are choice, range, glob, interval, sort, int, float, str, bool"
        )),
    }
}

fn cast_element(to: &str, e: Element) -> Result<Element, String> {
    let bad = |e: &Element| format!("cannot cast '{e}' to {to}");
    Ok(match (to, &e) {
        (_, Element::List(l)) => Element::List(
            l.iter()
                .cloned()
                .map(|x| cast_element(to, x))
                .collect::<Result<_, _>>()?,
        ),
        (_, Element::Dict(d)) => Element::Dict(
            d.iter()
                .map(|(k, v)| Ok((k.clone(), cast_element(to, v.clone())?)))
                .collect::<Result<_, String>>()?,
        ),
        ("int", Element::Int(_)) => e,
        ("int", Element::Float(f)) => Element::Int(f.trunc() as i64),
        ("int", Element::Bool(b)) => Element::Int(i64::from(*b)),
        ("int", Element::Str { text, .. }) => {
            Element::Int(text.trim().parse().map_err(|_| bad(&e))?)
        }
        ("float", Element::Int(i)) => Element::Float(*i as f64),
        ("float", Element::Float(_)) => e,
        ("float", Element::Bool(b)) => Element::Float(f64::from(u8::from(*b))),
        ("float", Element::Str { text, .. }) => {
            Element::Float(text.trim().parse().map_err(|_| bad(&e))?)
        }
        ("str", Element::Str { text, .. }) => Element::Str {
            text: text.clone(),
            quote: None,
        },
        ("str", Element::Null) => Element::Str {
            text: "None".into(),
            quote: None,
        },
        ("str", other) => Element::Str {
            text: match other {
                Element::Bool(b) => if *b { "True" } else { "False" }.to_string(),
                Element::Float(f) => python_float_repr(*f),
                x => x.to_string(),
            },
            quote: None,
        },
        ("bool", Element::Bool(_)) => e,
        ("bool", Element::Int(i)) => Element::Bool(*i != 0),
        ("bool", Element::Float(f)) => Element::Bool(*f != 0.0),
        ("bool", Element::Str { text, .. }) => match text.to_ascii_lowercase().as_str() {
            "true" => Element::Bool(true),
            "false" => Element::Bool(false),
            _ => return Err(bad(&e)),
        },
        _ => return Err(bad(&e)),
    })
}
