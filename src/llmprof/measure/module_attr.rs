//! The module each piece of GPU work ran in, for work launched eagerly: the innermost module
//! scope (`module:layer[3].attention.qkv`, region/modules.rs) above the host event the work is
//! charged to, else the innermost GPU annotation of a module scope that contains it. Stages are
//! unaffected: `Attribution` skips module scopes when it names a kernel's stage. Work replayed
//! from a CUDA graph has no module scope above it (its launch is the graph's); its modules come
//! from the capture's record (#41). Pure.
use super::kineto_events::{HostKind, ProfileEvents};
use super::op_tables::{innermost_gpu_scopes, Attribution};
use crate::region::{is_module_scope, ModulePath};

/// For each device event of `events`: its module path, or `None` outside every module (and for
/// annotations themselves).
/// The innermost module scope at or above host event `op` (on `Attribution::op_parent`), as
/// its path; `None` outside every module.
pub fn host_module(
    events: &ProfileEvents,
    attribution: &Attribution,
    op: usize,
) -> Option<ModulePath> {
    let ops = &events.ops;
    let mut cur = Some(op);
    while let Some(i) = cur {
        if ops[i].kind == HostKind::UserScope && is_module_scope(&ops[i].name) {
            return ModulePath::parse_scope(&ops[i].name);
        }
        cur = attribution.op_parent[i];
    }
    None
}

pub fn kernel_modules(
    events: &ProfileEvents,
    attribution: &Attribution,
) -> Vec<Option<ModulePath>> {
    let gpu_module = innermost_gpu_scopes(events, |k| is_module_scope(&k.name));
    events
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            if !k.is_gpu_work() {
                return None;
            }
            attribution.kernel_owner[i]
                .and_then(|owner| host_module(events, attribution, owner))
                .or_else(|| {
                    gpu_module[i].and_then(|s| ModulePath::parse_scope(&events.kernels[s].name))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::kineto_events::{DeviceKind, KernelRecord, Name};
    use crate::measure::op_tables::tests::host;

    fn device(
        name: &str,
        kind: DeviceKind,
        start: u64,
        dur: u64,
        corr: u64,
        op: u64,
    ) -> KernelRecord {
        KernelRecord {
            name: name.into(),
            kind,
            device_index: 0,
            stream: 7,
            start_ns: start,
            duration_ns: dur,
            correlation_id: corr,
            op_correlation_id: op,
        }
    }

    /// decode_step ⊃ module:layer[3] ⊃ module:layer[3].attention.qkv ⊃ aten::mm → cudaLaunchKernel
    /// (an ATen kernel), then module:layer[3].mlp ⊃ cudaLaunchKernel of llmprof's own kernel (no
    /// op), then a kernel outside every module; one kernel whose launch was not recorded but lies
    /// inside a module's GPU annotation.
    fn step() -> ProfileEvents {
        ProfileEvents {
            ops: vec![
                host("decode_step", HostKind::UserScope, 0, 1000, 1),
                host("module:layer[3]", HostKind::UserScope, 10, 800, 2),
                host(
                    "module:layer[3].attention.qkv",
                    HostKind::UserScope,
                    20,
                    100,
                    3,
                ),
                host("aten::mm", HostKind::Op, 30, 50, 4),
                host("cudaLaunchKernel", HostKind::Runtime, 40, 10, 100),
                host("module:layer[3].mlp", HostKind::UserScope, 200, 100, 5),
                host("cudaLaunchKernel", HostKind::Runtime, 210, 10, 101),
                host("cudaLaunchKernel", HostKind::Runtime, 900, 10, 102),
            ],
            kernels: vec![
                device("sm90_gemm", DeviceKind::Kernel, 300, 40, 100, 4),
                device("llmprof_swiglu", DeviceKind::Kernel, 350, 20, 101, 0),
                device("argmax", DeviceKind::Kernel, 950, 5, 102, 0),
                device(
                    "module:layer[4].attention.core",
                    DeviceKind::UserScope,
                    960,
                    30,
                    0,
                    0,
                ),
                device("attn_split", DeviceKind::Kernel, 965, 10, 999, 0),
            ],
        }
    }

    #[test]
    fn eager_kernels_take_the_innermost_module_above_their_launch() {
        let ev = step();
        let att = Attribution::new(&ev);
        let m = kernel_modules(&ev, &att);
        let kinds: Vec<Option<(String, Option<u32>)>> = m
            .into_iter()
            .map(|p| p.map(|p| (p.kind, p.index)))
            .collect();
        assert_eq!(
            kinds,
            [
                Some(("layer.attention.qkv".to_string(), Some(3))),
                Some(("layer.mlp".to_string(), Some(3))),
                None,
                None,
                Some(("layer.attention.core".to_string(), Some(4))),
            ]
        );
    }

    #[test]
    fn module_scopes_are_not_stages() {
        let ev = step();
        let att = Attribution::new(&ev);
        let stage = Some(Name::from("decode_step"));
        assert_eq!(att.kernel_stage[..3], [stage.clone(), stage.clone(), stage]);
        // The kernel known only by its GPU annotation has no stage: its annotation is a module's.
        assert_eq!(att.kernel_stage[4], None);
    }
}
