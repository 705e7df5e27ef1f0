//! Short kernel names for the tables people read (kernels.md, report.md, stakeholder_summary.md,
//! stage 2's markdown): the function name plus the head of its template arguments, in the spirit
//! of Nsight Systems' `base` name style and HTA's shortened names. `void`, the parameter list,
//! anonymous namespaces and `(int)` casts go; template arguments are kept from the left while
//! they fit, nested ones shortened (`ReduceOp<float, …>`), lambdas named by their enclosing
//! function (`silu_kernel::lambda`), the rest elided with `…`; Itanium-mangled names Kineto could
//! not demangle are read as far as they go. Full names stay in kernels.json,
//! metrics.json and trace.json. Pure and deterministic.

mod mangled;

/// Width of a short name in the tables of a run directory.
pub const MAX_CHARS: usize = 80;

/// `full` written as C++ where it is an Itanium-mangled name (`_ZN7cutlass13device_kernelI…` →
/// `cutlass::device_kernel<…>`), else `full` unchanged.
pub fn demangled(full: &str) -> String {
    mangled::demangle_head(full).unwrap_or_else(|| full.to_string())
}

/// Kernel names for ncu: the function name without namespace, template or parameters, which is
/// what `--kernel-name-base function` matches (e.g. `indexSelectSmallIndex`).
pub fn base_name(full: &str) -> String {
    // Kineto reports kernels it could not demangle (deep CUTLASS templates such as
    // torch._grouped_mm's) mangled, while ncu matches demangled function names.
    let full = demangled(full);
    // Anonymous namespaces: `(anonymous namespace)` in Kineto's names, `<unnamed>` in ncu's.
    let s = full
        .trim_start_matches("void ")
        .replace("(anonymous namespace)", "")
        .replace("<unnamed>", "");
    // The demangler ends a name it stopped reading with `…`.
    let cut = s.find(['<', '(', '…']).unwrap_or(s.len());
    let head = s[..cut].trim_end_matches("::");
    head.rsplit("::").next().unwrap_or(head).trim().to_string()
}

/// [`short_name_within`] at [`MAX_CHARS`].
pub fn short_name(full: &str) -> String {
    short_name_within(full, MAX_CHARS)
}

/// Short names for `full` names that stay distinct: where different kernels shorten alike, each
/// gets ` (variant k)` in the order given, so a table never shows two rows that look the same.
pub fn distinct_short_names<'a>(full: impl Iterator<Item = &'a str>) -> Vec<String> {
    let full: Vec<&str> = full.collect();
    let short: Vec<String> = full.iter().map(|f| short_name(f)).collect();
    let mut kinds: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    for (s, f) in short.iter().zip(&full) {
        let v = kinds.entry(s.as_str()).or_default();
        if !v.contains(f) {
            v.push(f);
        }
    }
    short
        .iter()
        .zip(&full)
        .map(
            |(s, f)| match kinds[s.as_str()].iter().position(|g| g == f) {
                Some(k) if kinds[s.as_str()].len() > 1 => format!("{s} (variant {})", k + 1),
                _ => s.clone(),
            },
        )
        .collect()
}

/// A readable name of at most `max` characters (8 at least) for a demangled kernel name; never
/// empty. Names that are not C++ signatures (`nvjet_…`, `Memset (Device)`) are only truncated.
pub fn short_name_within(full: &str, max: usize) -> String {
    let max = max.max(8);
    let full = full.trim();
    let text = normalise(&demangled(full));
    if text.is_empty() {
        return "(unnamed kernel)".into();
    }
    let body = strip_return_type(text.strip_prefix("void ").unwrap_or(&text).trim());
    // A C++ signature has no space before its first bracket (`Memset (Device)` is a label).
    let name_end = body.find(['<', '(']).unwrap_or(body.len());
    let signature = !body[..name_end].contains(char::is_whitespace);
    let Some(head) = parse_head(body).filter(|h| signature && !h.name.is_empty()) else {
        return truncate(body, max);
    };
    let Some(template) = head.template else {
        return fitting([head.name, unqualified(head.name)], max);
    };
    let args: Vec<Vec<String>> = split_top(template).map(|a| forms(a, 1)).collect();
    let qualified = greedy(head.name, &args, max);
    let plain = greedy(unqualified(head.name), &args, max);
    // The namespace names the library (`cublasLt::`, `flash::`): it goes only when the
    // qualified name leaves no room for a whole argument (`cutlass::Kernel2<configuration>`).
    let whole = |g: &Greedy| g.shown > 0 && !g.cut;
    let chosen = if whole(&qualified) {
        qualified
    } else if plain.shown > 0 {
        plain
    } else if qualified.shown > 0 || count(&qualified.text) <= max {
        qualified
    } else if count(&plain.text) <= max {
        plain
    } else {
        return truncate(unqualified(head.name), max);
    };
    chosen.text
}

fn count(s: &str) -> usize {
    s.chars().count()
}

/// The first candidate of at most `max` characters, else the last one truncated.
fn fitting<const N: usize>(candidates: [&str; N], max: usize) -> String {
    candidates
        .iter()
        .find(|c| count(c) <= max)
        .map(|c| c.to_string())
        .unwrap_or_else(|| truncate(candidates[N - 1], max))
}

/// A name with the head of its template arguments.
struct Greedy {
    text: String,
    /// Arguments shown (the rest is `…`).
    shown: usize,
    /// The first argument is shown cut short.
    cut: bool,
}

/// `name<` plus, from the left, the most detailed form of each argument that still leaves room
/// for `, …>`; stops at the first argument with no fitting form.
fn greedy(name: &str, args: &[Vec<String>], max: usize) -> Greedy {
    let mut text = format!("{name}<");
    let mut cut = false;
    for (i, arg_forms) in args.iter().enumerate() {
        let last = i + 1 == args.len();
        let sep = if i == 0 { "" } else { ", " };
        let close = if last { 1 } else { 4 };
        let room = |form: &str| count(&text) + count(sep) + count(form) + close <= max;
        let mut pick = arg_forms.iter().find(|f| room(f)).cloned();
        if pick.is_none() && i == 0 {
            // A single long identifier (a CUTLASS configuration) as the first argument: keep
            // as much of it as fits rather than nothing.
            let left = max.saturating_sub(count(&text) + close);
            pick = arg_forms
                .first()
                .filter(|f| is_identifier(f) && left >= 12)
                .map(|f| truncate(f, left));
            cut = pick.is_some();
        }
        text.push_str(sep);
        match pick {
            Some(form) => text.push_str(&form),
            None => {
                text.push_str("…>");
                return Greedy {
                    text,
                    shown: i,
                    cut,
                };
            }
        }
    }
    text.push('>');
    Greedy {
        text,
        shown: args.len(),
        cut,
    }
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Display forms of one template argument, most detailed first; empty when it has none (a
/// function type, a member of a specialisation): the caller then elides it and what follows.
/// `level` 1 = an argument of the kernel itself.
fn forms(arg: &str, level: usize) -> Vec<String> {
    let Some(h) = parse_head(arg.trim()) else {
        return vec![];
    };
    let name = unqualified(h.name);
    if name.is_empty() {
        return vec![];
    }
    if h.tail.contains("lambda") {
        // A lambda is named by the function that encloses it.
        let mut out = Vec::new();
        if let Some(t) = h.template {
            if let Some(first) = split_top(t).next().and_then(|a| forms(a, 3).pop()) {
                out.push(format!("{name}<{first}>::lambda"));
            }
        }
        out.push(format!("{name}::lambda"));
        return out;
    }
    if h.params || !h.tail.is_empty() {
        return vec![];
    }
    let Some(t) = h.template else {
        return vec![name.to_string()];
    };
    if t.trim().is_empty() {
        return vec![format!("{name}<>")];
    }
    let shallow = format!("{name}<…>");
    if level >= 3 {
        return vec![shallow];
    }
    // Heads of the nested list, longest first: the first k−1 nested arguments in full, the
    // k-th in each of its forms, `…` for the rest.
    let nested: Vec<Vec<String>> = split_top(t).map(|a| forms(a, level + 1)).collect();
    let known = nested.iter().take_while(|f| !f.is_empty()).count();
    let mut out = Vec::new();
    for k in (1..=known).rev() {
        let before: Vec<&str> = nested[..k - 1].iter().map(|f| f[0].as_str()).collect();
        for last in &nested[k - 1] {
            let mut items = before.clone();
            items.push(last);
            if k < nested.len() {
                items.push("…");
            }
            out.push(format!("{name}<{}>", items.join(", ")));
        }
    }
    out.push(shallow);
    out.dedup();
    out
}

/// A name with an optional template argument list, parameter list and what follows them
/// (`::operator ()() const::[lambda(int) (instance 1)]`).
struct Head<'a> {
    name: &'a str,
    template: Option<&'a str>,
    params: bool,
    tail: &'a str,
}

/// Drops a return type before the function name, as nsys prints it
/// (`std::enable_if<!T7, void>::type internal::gemvx::kernel<…>(T13)` → `internal::gemvx::kernel<…>(T13)`):
/// the part after the last space outside brackets before the parameter list. A label such as
/// `Memset (Device)` is left alone.
fn strip_return_type(body: &str) -> &str {
    let mut depth = 0i32;
    let mut last_space = None;
    for (i, c) in body.char_indices() {
        match c {
            '<' | '[' | '{' => depth += 1,
            '>' | ']' | '}' => depth -= 1,
            '(' if depth == 0 => break,
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c.is_whitespace() && depth == 0 => last_space = Some(i),
            _ => {}
        }
    }
    match last_space {
        Some(i) => {
            let rest = body[i..].trim_start();
            if rest.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                rest
            } else {
                body
            }
        }
        None => body,
    }
}

/// `None` when brackets do not balance.
fn parse_head(s: &str) -> Option<Head<'_>> {
    let s = s.trim();
    let end = s.find(['<', '(']).unwrap_or(s.len());
    let name = s[..end].trim();
    let name = name.strip_prefix("void ").unwrap_or(name).trim();
    let mut rest = &s[end..];
    let mut template = None;
    if rest.starts_with('<') {
        let close = matching_close(rest)?;
        template = Some(&rest[1..close]);
        rest = &rest[close + 1..];
    }
    let mut params = false;
    if rest.starts_with('(') {
        let close = matching_close(rest)?;
        params = true;
        rest = &rest[close + 1..];
    }
    Some(Head {
        name,
        template,
        params,
        tail: rest.trim(),
    })
}

/// Byte index of the bracket that closes the one `s` starts with (all four kinds nest).
fn matching_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The comma-separated items of a list, split outside brackets.
fn split_top(s: &str) -> impl Iterator<Item = &str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().map(str::trim).filter(|p| !p.is_empty())
}

/// The last `::` component (`at::native::FillFunctor` → `FillFunctor`).
fn unqualified(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name).trim()
}

/// Drops anonymous namespaces and integral casts (`(int)128` → `128`, `(bool)0` → `false`).
fn normalise(s: &str) -> String {
    let s = s
        .replace("(anonymous namespace)::", "")
        .replace("<unnamed>::", "")
        // ncu's CSV exports write the anonymous namespace without its opening bracket.
        .replace("unnamed>::", "")
        .replace("`anonymous namespace'::", "");
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let cast = after.find(')').and_then(|close| {
            let ty = &after[..close];
            let value = &after[close + 1..];
            let digits = value.strip_prefix('-').unwrap_or(value);
            let is_type = !ty.is_empty() && ty.chars().all(|c| c.is_ascii_lowercase() || c == ' ');
            (is_type && digits.starts_with(|c: char| c.is_ascii_digit())).then_some((ty, close))
        });
        match cast {
            Some((ty, close)) => {
                let value = &after[close + 1..];
                let len = value
                    .char_indices()
                    .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
                    .map_or(value.len(), |(i, _)| i);
                match (ty, &value[..len]) {
                    ("bool", "0") => out.push_str("false"),
                    ("bool", "1") => out.push_str("true"),
                    (_, v) => out.push_str(v),
                }
                rest = &value[len..];
            }
            None => {
                out.push('(');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// At most `max` characters: cut at an `_` in the second half when there is one, then `…`.
fn truncate(s: &str, max: usize) -> String {
    if count(s) <= max {
        return s.to_string();
    }
    let keep: String = s.chars().take(max.saturating_sub(1)).collect();
    let cut = keep
        .rfind('_')
        .filter(|&i| count(&keep[..i]) >= max / 2)
        .map_or(keep.as_str(), |i| &keep[..i]);
    format!("{cut}…")
}

#[cfg(test)]
mod tests;
