//! YAML text → `Node` as OmegaConf's loader reads it (PyYAML's YAML 1.1 rules, OmegaConf's float
//! fix) and Hydra's `# @package` header. yaml-rust2, not serde_yaml: its events keep the scalar
//! style (`yes` is a bool, `'yes'` a string) and each error's line. Writing is yaml_write's job.
use super::limits::{too_deep, MAX_NESTING, MAX_YAML_NODES};
use super::node::{Map, Node};
use super::scalar::{parse_omegaconf_float, parse_yaml11_int, python_float_repr};
use std::collections::HashMap;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A YAML file that could not be read as a config.
#[derive(Debug, thiserror::Error)]
#[error("{message} (line {line}, column {column})")]
pub struct YamlError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

/// Parse one YAML document. An empty document is `Node::Null`.
pub fn parse(text: &str) -> Result<Node, YamlError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    let mut documents = 0;
    // The events one by one (yaml-rust2's `load` recurses once per nesting level, which a deep
    // block document turns into a stack overflow); the builder keeps its own stack, bounded.
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| YamlError {
            message: e.info().to_string(),
            line: e.marker().line(),
            column: e.marker().col() + 1,
        })?;
        match ev {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    builder.fail(
                        mark,
                        "expected a single document in the stream, but found another document"
                            .into(),
                    );
                }
            }
            ev => builder.on_event(ev, mark),
        }
        if let Some(err) = builder.error.take() {
            return Err(err);
        }
    }
    Ok(builder.root.unwrap_or(Node::Null))
}

/// Hydra's header: leading `# @key value` comment lines (blank lines allowed), stopping at the
/// first other line. Returns the `@package` value if present.
pub fn package_header(text: &str) -> Result<Option<String>, String> {
    let mut package = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(rest) = line.strip_prefix('#') else {
            break;
        };
        let rest = rest.trim_start();
        if !rest.starts_with('@') {
            break;
        }
        let parts: Vec<&str> = rest.split(' ').filter(|p| !p.is_empty()).collect();
        if parts.len() < 2 {
            return Err(format!("Expected header format: KEY VALUE, got '{rest}'"));
        }
        if parts.len() > 2 {
            return Err(format!("Too many components in '{rest}'"));
        }
        if parts[0] == "@package" {
            package = Some(parts[1].to_string());
        }
    }
    Ok(package)
}

/// Type of an unquoted scalar under PyYAML's resolvers as OmegaConf configures them.
pub fn resolve_plain_scalar(s: &str) -> Node {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Node::Null,
        "???" => return Node::Missing,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Node::Bool(true)
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Node::Bool(false)
        }
        _ => {}
    }
    if let Some(i) = parse_yaml11_int(s) {
        return Node::Int(i);
    }
    if let Some(f) = parse_omegaconf_float(s) {
        return Node::Float(f);
    }
    Node::Str(s.to_string())
}

/// The key of a mapping entry whose value is still to come.
enum Pending {
    Key(String),
    /// PyYAML's merge key `<<` (a plain scalar): its value's entries are merged in.
    Merge,
}

enum Frame {
    Seq {
        items: Vec<Node>,
        anchor: usize,
        size: usize,
    },
    Map {
        map: Map,
        /// Entries from `<<` merge keys, in PyYAML's order (later ones win, own keys win last).
        merged: Vec<(String, Node)>,
        pending: Option<Pending>,
        anchor: usize,
        start: Marker,
        size: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
    /// Anchored nodes with their size in nodes (an alias costs that much again).
    anchors: HashMap<usize, (Node, usize)>,
    /// Nodes built so far, aliases counted at full size.
    nodes: usize,
    error: Option<YamlError>,
}

impl Builder {
    fn fail(&mut self, mark: Marker, message: String) {
        if self.error.is_none() {
            self.error = Some(YamlError {
                message,
                line: mark.line(),
                column: mark.col() + 1,
            });
        }
    }

    /// True when the next scalar is a mapping key.
    fn key_expected(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { pending: None, .. }))
    }

    /// Count `n` more nodes against the document's budget.
    fn spend(&mut self, n: usize, mark: Marker) {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_YAML_NODES {
            self.fail(
                mark,
                format!("the document expands to more than {MAX_YAML_NODES} values (aliases of large anchors?)"),
            );
        }
    }

    fn open(&mut self, frame: Frame, mark: Marker) {
        if self.stack.len() >= MAX_NESTING {
            self.fail(mark, too_deep("the document", MAX_NESTING));
            return;
        }
        self.stack.push(frame);
    }

    fn push_value(&mut self, node: Node, size: usize, anchor: usize, mark: Marker, plain: bool) {
        if anchor > 0 {
            self.anchors.insert(anchor, (node.clone(), size));
        }
        let frame = match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                return;
            }
            Some(f) => f,
        };
        let result = match frame {
            Frame::Seq { items, size: s, .. } => {
                *s += size;
                items.push(node);
                Ok(())
            }
            Frame::Map {
                map,
                merged,
                pending,
                size: s,
                ..
            } => {
                *s += size;
                match pending.take() {
                    None => map_key(node, plain).and_then(|(k, checked)| {
                        // OmegaConf refuses a repeated string key; other keys: the last wins.
                        match &k {
                            Pending::Key(key) if checked && map.contains_key(key) => {
                                return Err(format!("duplicate key '{key}'"))
                            }
                            _ => {}
                        }
                        *pending = Some(k);
                        Ok(())
                    }),
                    Some(Pending::Key(key)) => {
                        map.insert(key, node);
                        Ok(())
                    }
                    Some(Pending::Merge) => merge_key_value(merged, node),
                }
            }
        };
        if let Err(msg) = result {
            self.fail(mark, msg);
        }
    }
}

/// A scalar with a core tag (`!!int "5"`), built as PyYAML's constructor for the tag builds it.
fn tagged_scalar(suffix: &str, value: &str) -> Result<Node, String> {
    let bad = || format!("'{value}' is not a valid !!{suffix}");
    Ok(match suffix {
        "int" => Node::Int(parse_yaml11_int(&value.replace('_', "")).ok_or_else(bad)?),
        "float" => match resolve_plain_scalar(value) {
            Node::Int(i) => Node::Float(i as f64),
            f @ Node::Float(_) => f,
            _ => Node::Float(value.replace('_', "").parse().map_err(|_| bad())?),
        },
        "bool" => match resolve_plain_scalar(value) {
            b @ Node::Bool(_) => b,
            _ => return Err(bad()),
        },
        "null" => Node::Null,
        _ => Node::Str(value.to_string()),
    })
}

/// A mapping key as OmegaConf keeps it (a string), or the merge key; `true` when the key was a
/// string, which OmegaConf checks for duplicates.
fn map_key(node: Node, plain: bool) -> Result<(Pending, bool), String> {
    let key = match node {
        Node::Str(s) if plain && s == "<<" => return Ok((Pending::Merge, false)),
        Node::Str(s) => return Ok((Pending::Key(s), true)),
        Node::Missing => return Ok((Pending::Key("???".to_string()), true)),
        Node::Int(i) => i.to_string(),
        // A bool key stays a bool in OmegaConf: JSON and YAML print it `true`.
        Node::Bool(b) => if b { "true" } else { "false" }.to_string(),
        Node::Null => {
            return Err(
                "a null mapping key is not supported (OmegaConf: KeyValidationError)".into(),
            )
        }
        Node::Float(f) => python_float_repr(f),
        other => {
            return Err(format!(
                "unsupported mapping key of type {}",
                other.type_name()
            ))
        }
    };
    Ok((Pending::Key(key), false))
}

/// PyYAML's `flatten_mapping` for one `<<: value`: a mapping, or a list of mappings of which
/// the first wins.
fn merge_key_value(merged: &mut Vec<(String, Node)>, value: Node) -> Result<(), String> {
    match value {
        Node::Map(m) => merged.extend(m),
        Node::List(items) => {
            let mut maps = Vec::new();
            for item in items {
                match item {
                    Node::Map(m) => maps.push(m),
                    other => {
                        return Err(format!(
                            "expected a mapping for merging, but found {}",
                            other.type_name()
                        ))
                    }
                }
            }
            for m in maps.into_iter().rev() {
                merged.extend(m);
            }
        }
        other => {
            return Err(format!(
                "expected a mapping or list of mappings for merging, but found {}",
                other.type_name()
            ))
        }
    }
    Ok(())
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return; // the document is refused; the rest of it is not built
        }
        match ev {
            Event::Scalar(value, style, anchor, tag) => {
                let plain = style == TScalarStyle::Plain && tag.is_none();
                let core_tag = tag
                    .as_ref()
                    .filter(|t| t.handle == "!!" || t.handle == "tag:yaml.org,2002:")
                    .map(|t| t.suffix.as_str());
                let node = match (style, core_tag) {
                    // OmegaConf reads the string `???` as a missing value, however it is quoted.
                    _ if value == "???" => Node::Missing,
                    (_, Some(suffix)) => match tagged_scalar(suffix, &value) {
                        Ok(n) => n,
                        Err(msg) => return self.fail(mark, msg),
                    },
                    (TScalarStyle::Plain, None) if tag.is_none() => {
                        // `<<` and `=` are PyYAML's merge and value tags: no value of their own.
                        if (value == "<<" || value == "=") && !self.key_expected() {
                            return self.fail(
                                mark,
                                format!("could not determine a constructor for '{value}'"),
                            );
                        }
                        resolve_plain_scalar(&value)
                    }
                    _ => Node::Str(value),
                };
                self.spend(1, mark);
                self.push_value(node, 1, anchor, mark, plain);
            }
            Event::SequenceStart(anchor, _) => self.open(
                Frame::Seq {
                    items: Vec::new(),
                    anchor,
                    size: 1,
                },
                mark,
            ),
            Event::SequenceEnd => {
                if let Some(Frame::Seq {
                    items,
                    anchor,
                    size,
                }) = self.stack.pop()
                {
                    self.spend(1, mark);
                    self.push_value(Node::List(items), size, anchor, mark, false);
                }
            }
            Event::MappingStart(anchor, _) => self.open(
                Frame::Map {
                    map: Map::new(),
                    merged: Vec::new(),
                    pending: None,
                    anchor,
                    start: mark,
                    size: 1,
                },
                mark,
            ),
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    map,
                    merged,
                    anchor,
                    start,
                    size,
                    ..
                }) = self.stack.pop()
                {
                    let map = if merged.is_empty() {
                        map
                    } else {
                        merged.into_iter().chain(map).collect()
                    };
                    self.spend(1, mark);
                    self.push_value(Node::Map(map), size, anchor, start, false);
                }
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some((node, size)) => {
                    self.spend(size, mark);
                    if self.error.is_none() {
                        self.push_value(node, size, 0, mark, false);
                    }
                }
                None => self.fail(mark, format!("unknown alias {id}")),
            },
            _ => {}
        }
    }
}
