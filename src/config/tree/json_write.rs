//! `Node` → JSON: text with Python's json spelling of non-finite floats (what `--format json`
//! prints), and serde_json values for typed deserialisation. Reads nothing.
use super::node::Node;
use super::scalar::python_float_repr;
use std::fmt::Write as _;

impl Node {
    /// JSON text. Non-finite floats are written `NaN`/`Infinity`/`-Infinity` (Python's json
    /// spelling), which serde_json cannot do. Keys are sorted when `sort_keys`.
    pub fn to_json(&self, sort_keys: bool) -> String {
        let mut out = String::new();
        write_json(self, sort_keys, 0, &mut out);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::node::Map;

    #[test]
    fn json_writes_non_finite_floats_like_python() {
        let mut m = Map::new();
        m.insert("b".into(), Node::Float(f64::INFINITY));
        m.insert("a".into(), Node::Float(f64::NAN));
        let j = Node::Map(m).to_json(true);
        assert_eq!(j, "{\n  \"a\": NaN,\n  \"b\": Infinity\n}");
    }
}
