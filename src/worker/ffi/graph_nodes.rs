//! Capture records (`csrc/graph_nodes.cpp`): while a graph is captured, [`mark`] says which mark
//! the nodes added from then on belong to; after the capture, [`read_record`] copies what the
//! shim took from the graph (each node's kind, kernel name, dependencies and mark).
use super::cuda_graph::{CudaGraph, RawCudaGraph};
use super::{check, ShimError};
use llmprof::measure::capture_record::NodeKind;
use std::ffi::{c_char, c_int};

#[repr(C)]
struct RawGraphNode {
    kind: c_int,
    mark: u32,
    name: *const c_char,
    name_len: usize,
    mangled: *const c_char,
    mangled_len: usize,
    deps: *const u32,
    n_deps: usize,
}

extern "C" {
    fn llmprof_cuda_graph_serial(graph: *const RawCudaGraph) -> u64;
    fn llmprof_cuda_graph_record_len(graph: *const RawCudaGraph) -> usize;
    fn llmprof_cuda_graph_record_node(
        graph: *const RawCudaGraph,
        index: usize,
        out: *mut RawGraphNode,
    ) -> c_int;
    fn llmprof_cuda_graph_record_error(
        graph: *const RawCudaGraph,
        buf: *mut c_char,
        len: usize,
    ) -> usize;
    fn llmprof_capture_mark(mark: u32) -> c_int;
}

/// While this thread captures a graph: the nodes added from now on belong to `mark`. A no-op
/// outside a capture. A failure leaves the capture's record empty with the reason (it never
/// fails the capture).
pub fn mark(mark: u32) -> Result<(), ShimError> {
    // SAFETY: plain value; the shim keeps its state per thread.
    check(unsafe { llmprof_capture_mark(mark) })
}

/// A node as the shim recorded it, its mark not yet resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct RawNode {
    pub kind: NodeKind,
    pub mark: u32,
    pub name: String,
    /// The driver's (mangled) name: CUPTI reports some kernels in this form.
    pub mangled: String,
    pub deps: Vec<u32>,
}

/// The serial of `graph` (its replays' cpu op names it), its nodes, and why they are missing
/// when the capture could not be read.
pub fn read_record(graph: &CudaGraph) -> Result<(u64, Vec<RawNode>, Option<String>), ShimError> {
    let g = graph.raw();
    // SAFETY: a live handle.
    let (serial, len) = unsafe {
        (
            llmprof_cuda_graph_serial(g),
            llmprof_cuda_graph_record_len(g),
        )
    };
    let mut nodes = Vec::with_capacity(len);
    for i in 0..len {
        let mut raw = RawGraphNode {
            kind: 0,
            mark: 0,
            name: std::ptr::null(),
            name_len: 0,
            mangled: std::ptr::null(),
            mangled_len: 0,
            deps: std::ptr::null(),
            n_deps: 0,
        };
        // SAFETY: a live handle, an index below the length, a valid out-pointer.
        check(unsafe { llmprof_cuda_graph_record_node(g, i, &mut raw) })?;
        // SAFETY: the shim's pointers stay valid while the graph lives (we hold it) and span
        // the lengths it gave.
        let (name, mangled, deps) = unsafe {
            let text = |p: *const c_char, len: usize| match p.is_null() {
                true => String::new(),
                false => String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len))
                    .into_owned(),
            };
            let deps = match raw.deps.is_null() {
                true => &[][..],
                false => std::slice::from_raw_parts(raw.deps, raw.n_deps),
            };
            (
                text(raw.name, raw.name_len),
                text(raw.mangled, raw.mangled_len),
                deps.to_vec(),
            )
        };
        nodes.push(RawNode {
            kind: match raw.kind {
                1 => NodeKind::Kernel,
                2 => NodeKind::Memcpy,
                3 => NodeKind::Memset,
                _ => NodeKind::Other,
            },
            mark: raw.mark,
            name,
            mangled,
            deps,
        });
    }
    let mut buf = vec![0u8; 512];
    // SAFETY: a live handle and a buffer of the length given.
    let n = unsafe { llmprof_cuda_graph_record_error(g, buf.as_mut_ptr().cast(), buf.len()) };
    let error = (n > 0).then(|| String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned());
    Ok((serial, nodes, error))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_mark_outside_a_capture_does_nothing() {
        super::mark(7).unwrap();
        super::mark(0).unwrap();
    }
}
