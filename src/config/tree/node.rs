//! The untyped config tree (what OmegaConf calls a DictConfig/ListConfig): ordered maps, lists and
//! typed scalars, dotted-path lookup and Python's `str()` of a value. Reading and writing YAML or
//! JSON is yaml_read's, yaml_write's and json_write's job.
use super::scalar::python_float_repr;
use indexmap::IndexMap;

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

impl From<&serde_json::Value> for Node {
    fn from(v: &serde_json::Value) -> Node {
        use serde_json::Value as J;
        match v {
            J::Null => Node::Null,
            J::Bool(b) => Node::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Node::Int(i),
                None => Node::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Node::Str(s.clone()),
            J::Array(a) => Node::List(a.iter().map(Node::from).collect()),
            J::Object(o) => Node::Map(o.iter().map(|(k, v)| (k.clone(), Node::from(v))).collect()),
        }
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
