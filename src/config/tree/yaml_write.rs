//! `Node` → YAML text in OmegaConf's `to_yaml` (PyYAML block) style: insertion order, and strings
//! quoted only when the reader (yaml_read) would type them otherwise. Parses nothing.
use super::node::Node;
use super::scalar::python_float_repr;
use super::yaml_read::resolve_plain_scalar;
use std::fmt::Write as _;

impl Node {
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
    // `<<` and `=` are PyYAML's merge and value tags when plain.
    if !matches!(resolve_plain_scalar(s), Node::Str(_)) || matches!(s, "???" | "<<" | "=") {
        return true;
    }
    let first = s.chars().next().expect("non-empty");
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        // `-x` and `:x` are plain-safe only when not followed by a space; keep it simple.
        if !(first == '-' || first == ':') || s.len() == 1 || s[1..].starts_with(' ') {
            return true;
        }
    }
    // `a: b`, `a:` at the end and `a:<tab>` read as a mapping; ` #` starts a comment.
    s.contains(": ")
        || s.contains(":\t")
        || s.ends_with(':')
        || s.contains(" #")
        || s.contains("\t#")
}

#[cfg(test)]
mod tests {
    use crate::tree::node::{Map, Node};

    #[test]
    fn yaml_quotes_strings_that_would_change_type() {
        let mut m = Map::new();
        m.insert("s".into(), Node::Str("42".into()));
        m.insert("t".into(), Node::Str("true".into()));
        m.insert("p".into(), Node::Str("cuda:0".into()));
        m.insert("l".into(), Node::List(vec![Node::Int(1), Node::Null]));
        let y = Node::Map(m.clone()).to_yaml();
        m.insert("nl".into(), Node::Str("a\nb: 'c'".into()));
        let back = crate::tree::yaml_read::parse(&Node::Map(m.clone()).to_yaml()).unwrap();
        assert_eq!(back, Node::Map(m));
        assert_eq!(y, "s: '42'\nt: 'true'\np: cuda:0\nl:\n- 1\n- null\n");
    }
}
