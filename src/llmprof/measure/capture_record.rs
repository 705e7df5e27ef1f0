//! What a CUDA graph's capture recorded about its nodes (the worker's shim, csrc/graph_nodes.cpp):
//! each node's kind, kernel name, dependencies and the module (and region, when one was entered
//! inside the capture) that was open when the host added it. Replays carry no module of their
//! own: Kineto shows each replayed kernel with the launch's correlation only. The replay runs in a
//! cpu op named [`REPLAY_OP_PREFIX`]`<serial>`, which ties the replay to its record (#41,
//! docs/design/module-attribution.md §2). Pure data.
use crate::region::ModulePath;
use serde::{Deserialize, Serialize};

/// The name of the cpu op around each graph replay, followed by the graph's serial.
pub const REPLAY_OP_PREFIX: &str = "llmprof::graph_replay#";

/// The serial of the graph a replay op names, or `None` for any other op.
pub fn replay_serial(op_name: &str) -> Option<u64> {
    op_name.strip_prefix(REPLAY_OP_PREFIX)?.parse().ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Kernel,
    Memcpy,
    Memset,
    /// Event, host, child-graph and other nodes: no GPU work of their own in a trace.
    Other,
}

/// The module and region open when a node was added (both `None` outside every one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeOwner {
    /// The innermost region entered inside the capture (a whole vision pass captured as one
    /// graph enters its stages inside it), else `None`: the replay's own region applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModulePath>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphNode {
    pub kind: NodeKind,
    /// The demangled kernel name; empty for other kinds, or when the driver did not give it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The same name as the driver gives it (mangled), which CUPTI reports for some kernels.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mangled: String,
    /// Indices of the nodes this one waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<u32>,
    #[serde(default)]
    pub owner: NodeOwner,
}

/// One captured graph's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureRecord {
    pub serial: u64,
    /// What the graph is (`decode_step batch 32 window 1024`).
    pub label: String,
    pub nodes: Vec<GraphNode>,
    /// Why `nodes` is empty, when the capture could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_ops_name_their_serial_and_nothing_else_does() {
        assert_eq!(replay_serial("llmprof::graph_replay#17"), Some(17));
        assert_eq!(replay_serial("llmprof::graph_replay#"), None);
        assert_eq!(replay_serial("llmprof::graph_replay#x1"), None);
        assert_eq!(replay_serial("cudaGraphLaunch"), None);
    }

    #[test]
    fn records_round_trip_through_json_leaving_empty_fields_out() {
        let r = CaptureRecord {
            serial: 3,
            label: "decode_step batch 1 window 64".into(),
            nodes: vec![
                GraphNode {
                    kind: NodeKind::Kernel,
                    name: "void gemv<float>(float*)".into(),
                    mangled: String::new(),
                    deps: vec![],
                    owner: NodeOwner {
                        region: None,
                        module: Some(ModulePath {
                            kind: "layer.attention.qkv".into(),
                            index: Some(2),
                        }),
                    },
                },
                GraphNode {
                    kind: NodeKind::Memset,
                    name: String::new(),
                    mangled: String::new(),
                    deps: vec![0],
                    owner: NodeOwner::default(),
                },
            ],
            error: None,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            !json.contains("error") && !json.contains("region"),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<CaptureRecord>(&json).unwrap(), r);
    }
}
