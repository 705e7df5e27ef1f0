//! The untyped config tree (what OmegaConf calls a DictConfig/ListConfig): ordered maps, lists and
//! typed scalars, plus path lookup/update and JSON/YAML rendering with OmegaConf's spellings.
use indexmap::IndexMap;
use std::fmt::Write as _;

/// Ordered mapping, as YAML files and OmegaConf keep insertion order.
pub type Map = IndexMap<String, Node>;

/// One config value. Strings holding `${...}` are interpolations, resolved later.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    /// OmegaConf's `???`: a value that must be set before it is read.
    Missing,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Node>),
    Map(Map),
}

impl Node {
    pub fn empty_map() -> Node {
        Node::Map(Map::new())
    }

    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The name OmegaConf/Python would give this value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Missing => "missing",
            Node::Bool(_) => "bool",
            Node::Int(_) => "int",
            Node::Float(_) => "float",
            Node::Str(_) => "str",
            Node::List(_) => "list",
            Node::Map(_) => "dict",
        }
    }

    /// Child by one key: a map key, or a list index written in decimal.
    pub fn child(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(m) => m.get(key),
            Node::List(l) => key.parse::<usize>().ok().and_then(|i| l.get(i)),
            _ => None,
        }
    }

    pub fn child_mut(&mut self, key: &str) -> Option<&mut Node> {
        match self {
            Node::Map(m) => m.get_mut(key),
            Node::List(l) => key.parse::<usize>().ok().and_then(move |i| l.get_mut(i)),
            _ => None,
        }
    }

    /// Node at a dotted path (`a.b.0.c`); the empty path is the node itself.
    pub fn get_path(&self, path: &str) -> Option<&Node> {
        if path.is_empty() {
            return Some(self);
        }
        path.split('.').try_fold(self, |n, k| n.child(k))
    }

    pub fn get_path_mut(&mut self, path: &str) -> Option<&mut Node> {
        if path.is_empty() {
            return Some(self);
        }
        path.split('.').try_fold(self, |n, k| n.child_mut(k))
    }

    /// Python's `str()` of the value, as used when an interpolation is embedded in a string.
    pub fn to_python_str(&self) -> String {
        match self {
            Node::Null => "None".into(),
            Node::Missing => "???".into(),
            Node::Bool(true) => "True".into(),
            Node::Bool(false) => "False".into(),
            Node::Int(i) => i.to_string(),
            Node::Float(f) => python_float_repr(*f),
            Node::Str(s) => s.clone(),
            Node::List(l) => {
                let items: Vec<String> = l.iter().map(Node::to_python_repr).collect();
                format!("[{}]", items.join(", "))
            }
            Node::Map(m) => {
                let items: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("'{}': {}", k, v.to_python_repr()))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    fn to_python_repr(&self) -> String {
        match self {
            Node::Str(s) => format!("'{s}'"),
            other => other.to_python_str(),
        }
    }

    /// JSON text. Non-finite floats are written `NaN`/`Infinity`/`-Infinity` (Python's json
    /// spelling), which serde_json cannot do. Keys are sorted when `sort_keys`.
    pub fn to_json(&self, sort_keys: bool) -> String {
        let mut out = String::new();
        write_json(self, sort_keys, 0, &mut out);
        out
    }

    /// YAML text in OmegaConf's `to_yaml` style (block style, insertion order).
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Node::Map(m) if m.is_empty() => out.push_str("{}\n"),
            Node::List(l) if l.is_empty() => out.push_str("[]\n"),
            Node::Map(_) | Node::List(_) => write_yaml_block(self, 0, &mut out),
            scalar => {
                out.push_str(&yaml_scalar(scalar));
                out.push('\n');
            }
        }
        out
    }

    /// Convert to serde_json (non-finite floats become strings; used for typed deserialisation,
    /// where such values never reach integer or bool fields).
    pub fn to_serde_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Node::Null | Node::Missing => J::Null,
            Node::Bool(b) => J::Bool(*b),
            Node::Int(i) => J::from(*i),
            Node::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or_else(|| J::String(python_float_repr(*f))),
            Node::Str(s) => J::String(s.clone()),
            Node::List(l) => J::Array(l.iter().map(Node::to_serde_json).collect()),
            Node::Map(m) => J::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), v.to_serde_json()))
                    .collect(),
            ),
        }
    }
}

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

fn write_json(node: &Node, sort: bool, indent: usize, out: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match node {
        Node::Null => out.push_str("null"),
        Node::Missing => out.push_str("\"???\""),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Node::Float(f) => {
            if f.is_nan() {
                out.push_str("NaN")
            } else if f.is_infinite() {
                out.push_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
            } else {
                out.push_str(&python_float_repr(*f))
            }
        }
        Node::Str(s) => out.push_str(&serde_json::to_string(s).expect("strings serialise")),
        Node::List(l) => {
            if l.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push_str("[\n");
            for (i, v) in l.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write_json(v, sort, indent + 1, out);
                if i + 1 < l.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        Node::Map(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            let mut keys: Vec<&String> = m.keys().collect();
            if sort {
                keys.sort();
            }
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&serde_json::to_string(k).expect("strings serialise"));
                out.push_str(": ");
                write_json(&m[*k], sort, indent + 1, out);
                if i + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
    }
}

fn write_yaml_block(node: &Node, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    match node {
        Node::Map(m) => {
            for (k, v) in m {
                let key = yaml_scalar(&Node::Str(k.clone()));
                match v {
                    Node::Map(c) if !c.is_empty() => {
                        let _ = writeln!(out, "{pad}{key}:");
                        write_yaml_block(v, indent + 1, out);
                    }
                    Node::List(c) if !c.is_empty() => {
                        // PyYAML (and so OmegaConf) does not indent a sequence under its key.
                        let _ = writeln!(out, "{pad}{key}:");
                        write_yaml_block(v, indent, out);
                    }
                    other => {
                        let _ = writeln!(out, "{pad}{key}: {}", yaml_inline(other));
                    }
                }
            }
        }
        Node::List(l) => {
            for v in l {
                match v {
                    Node::Map(c) if !c.is_empty() => {
                        // First key on the dash line, the rest indented under it.
                        let mut first = String::new();
                        write_yaml_block(v, indent + 1, &mut first);
                        let trimmed = first.trim_start_matches(' ');
                        let _ = write!(out, "{pad}- {trimmed}");
                    }
                    Node::List(c) if !c.is_empty() => {
                        let _ = writeln!(out, "{pad}-");
                        write_yaml_block(v, indent + 1, out);
                    }
                    other => {
                        let _ = writeln!(out, "{pad}- {}", yaml_inline(other));
                    }
                }
            }
        }
        scalar => {
            let _ = writeln!(out, "{pad}{}", yaml_inline(scalar));
        }
    }
}

fn yaml_inline(node: &Node) -> String {
    match node {
        Node::Map(m) if m.is_empty() => "{}".into(),
        Node::List(l) if l.is_empty() => "[]".into(),
        other => yaml_scalar(other),
    }
}

/// A scalar as PyYAML would write it: strings quoted only when they would read back as
/// something else.
fn yaml_scalar(node: &Node) -> String {
    match node {
        Node::Null => "null".into(),
        Node::Missing => "???".into(),
        Node::Bool(b) => if *b { "true" } else { "false" }.into(),
        Node::Int(i) => i.to_string(),
        Node::Float(f) => {
            if f.is_nan() {
                ".nan".into()
            } else if f.is_infinite() {
                if *f > 0.0 { ".inf" } else { "-.inf" }.into()
            } else {
                // PyYAML writes `1.0e-06`, never `1e-06` (which YAML 1.1 reads as a string).
                let r = python_float_repr(*f);
                match r.find('e') {
                    Some(i) if !r.contains('.') => format!("{}.0{}", &r[..i], &r[i..]),
                    _ => r,
                }
            }
        }
        Node::Str(s) if s.chars().any(|c| c.is_control()) => {
            // A JSON string is a valid YAML double-quoted scalar, escapes included.
            serde_json::to_string(s).expect("strings serialise")
        }
        Node::Str(s) => {
            if needs_quotes(s) {
                format!("'{}'", s.replace('\'', "''"))
            } else {
                s.clone()
            }
        }
        Node::List(_) | Node::Map(_) => unreachable!("containers are written in block style"),
    }
}

fn needs_quotes(s: &str) -> bool {
    if s.is_empty() || s != s.trim() || s.contains('\n') {
        return true;
    }
    if !matches!(crate::yaml::resolve_plain_scalar(s), Node::Str(_)) || s == "???" {
        return true;
    }
    let first = s.chars().next().expect("non-empty");
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        // `-x` and `:x` are plain-safe only when not followed by a space; keep it simple.
        if !(first == '-' || first == ':') || s.len() == 1 || s[1..].starts_with(' ') {
            return true;
        }
    }
    s.contains(": ") || s.contains(" #")
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
    fn json_writes_non_finite_floats_like_python() {
        let mut m = Map::new();
        m.insert("b".into(), Node::Float(f64::INFINITY));
        m.insert("a".into(), Node::Float(f64::NAN));
        let j = Node::Map(m).to_json(true);
        assert_eq!(j, "{\n  \"a\": NaN,\n  \"b\": Infinity\n}");
    }

    #[test]
    fn yaml_quotes_strings_that_would_change_type() {
        let mut m = Map::new();
        m.insert("s".into(), Node::Str("42".into()));
        m.insert("t".into(), Node::Str("true".into()));
        m.insert("p".into(), Node::Str("cuda:0".into()));
        m.insert("l".into(), Node::List(vec![Node::Int(1), Node::Null]));
        let y = Node::Map(m.clone()).to_yaml();
        m.insert("nl".into(), Node::Str("a\nb: 'c'".into()));
        let back = crate::yaml::parse(&Node::Map(m.clone()).to_yaml()).unwrap();
        assert_eq!(back, Node::Map(m));
        assert_eq!(y, "s: '42'\nt: 'true'\np: cuda:0\nl:\n- 1\n- null\n");
    }

    #[test]
    fn path_lookup_reaches_list_items() {
        let n = Node::Map(Map::from_iter([(
            "a".to_string(),
            Node::List(vec![Node::Int(1), Node::Int(2)]),
        )]));
        assert_eq!(n.get_path("a.1"), Some(&Node::Int(2)));
        assert_eq!(n.get_path("a.2"), None);
    }
}
