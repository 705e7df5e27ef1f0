//! stakeholder_summary.md: plain-language findings, each sentence derived from a number in the
//! report (which stage dominates, whether decode is bandwidth-bound, variability, energy); advice
//! is derived from this run's config too (nothing it already had on is recommended).
use super::metrics::{OptimInfo, RunReport};
use crate::measure::kernel_names::short_name;
use std::fmt::Write as _;

pub fn render(r: &RunReport) -> String {
    let mut s = String::from("# What this run says\n\n");
    if r.synthetic_weights {
        let _ = writeln!(
            s,
            "*{}: the model's text output is noise; its speed is real.*\n",
            super::metrics::SYNTHETIC_NOTE
        );
    }
    let mean = |k: &str| r.stages.get(k).map(|st| st.mean_ms);
    if let (Some(prefill), Some(decode), Some(e2e)) = (mean("prefill"), mean("decode"), mean("e2e"))
    {
        let (big, big_ms) = if prefill >= decode {
            ("reading the input (prefill)", prefill)
        } else {
            ("writing the answer (decode)", decode)
        };
        let _ = writeln!(
            s,
            "- A page takes {:.0} ms end to end on {}; {:.0} % of that is {big}.",
            e2e,
            r.setup
                .gpu
                .clone()
                .unwrap_or_else(|| r.setup.device.clone()),
            100.0 * big_ms / e2e
        );
    }
    // The largest of the model's own regions inside the time to first token.
    let own = super::markdown::region_order(r)
        .into_iter()
        .filter(|k| !["prefill", "decode_step", "decode", "e2e"].contains(k))
        .filter_map(|k| Some((k, mean(k)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let (Some((region, ms)), Some(prefill)) = (own, mean("prefill")) {
        if prefill > 0.0 && ms <= prefill {
            let _ = writeln!(
                s,
                "- `{region}` is {:.0} % of the time to first token ({ms:.0} of {prefill:.0} ms).",
                100.0 * ms / prefill
            );
        }
    }
    if let Some(tpot) = mean("decode_step") {
        let _ = writeln!(
            s,
            "- Each further token takes {:.2} ms ({:.0} tokens/s per page).",
            tpot,
            1000.0 / tpot
        );
    }
    match (
        r.utilisation.mbu_decode,
        r.utilisation.mfu.get("decode_step"),
    ) {
        (Some(mbu), Some(mfu)) => {
            let verdict = decode_verdict(mbu, &r.optim, r.setup.batch_size);
            let _ = writeln!(s, "- Decode reads weights at {:.0} % of the GPU's peak bandwidth and uses {:.1} % of its compute: {verdict}.", mbu * 100.0, mfu * 100.0);
        }
        _ => {
            let _ = writeln!(
                s,
                "- Utilisation (MFU/MBU) is not available: {}.",
                r.utilisation
                    .unavailable
                    .clone()
                    .unwrap_or_else(|| "no GPU peaks".into())
            );
        }
    }
    let noisy: Vec<String> = r
        .cv_within_input
        .iter()
        .filter(|(_, cv)| **cv > 0.10)
        .map(|(k, cv)| format!("{k} ({:.0} %)", cv * 100.0))
        .collect();
    if noisy.is_empty() {
        let _ = writeln!(s, "- Timings are stable: every stage varies by less than 10 % between repeats of the same page.");
    } else {
        let _ = writeln!(s, "- Some timings vary by more than 10 % between runs: {}. Use more repeats or check clocks and other load before comparing.", noisy.join(", "));
    }
    if let Some(e) = r.nvml.energy_j_per_output_token {
        let _ = writeln!(s, "- Energy: {e:.3} J per generated token.");
    }
    if let Some(k) = &r.kineto {
        if let Some(top) = k.top_kernels.first() {
            let _ = writeln!(s, "- The single most expensive GPU kernel is `{}` ({:.1} % of GPU time in the profiled pass).", short_name(&top.name), top.share_pct.unwrap_or(0.0));
        }
    }
    s
}

/// What decode's bandwidth use says, with advice only about what this run did not do: a
/// fast-path switch is suggested only when it was off (or, for CUDA graphs, on but never
/// replayed); with everything on, the advice points at the kernels instead.
fn decode_verdict(mbu: f64, optim: &OptimInfo, batch_size: u32) -> String {
    // Runs recorded before a switch existed read it as off.
    let w = |name: &str| optim.switches.get(name).and_then(|v| v.as_bool()) == Some(true);
    if mbu >= 0.5 {
        let mut v = "decode is limited by memory bandwidth, as expected for one token at a time"
            .to_string();
        if batch_size == 1 {
            v.push_str("; batching requests (runtime.batch_size) would share each weight read between several tokens");
        }
        return v;
    }
    let replays = optim.graphs.as_ref().map_or(0, |g| g.replays);
    let mut off: Vec<&str> = Vec::new();
    if !w("cuda_graph") {
        off.push("CUDA graphs (runtime.optim.cuda_graph)");
    }
    for (on, what) in [
        (
            w("sync_free_decode"),
            "sync-free decode (runtime.optim.sync_free_decode)",
        ),
        (
            w("fused_projections"),
            "fused projections (runtime.optim.fused_projections)",
        ),
        (
            w("fused_rms_norm"),
            "fused RMSNorm (runtime.optim.fused_rms_norm)",
        ),
        (
            w("static_kv_cache"),
            "a static KV cache (runtime.optim.static_kv_cache)",
        ),
    ] {
        if !on {
            off.push(what);
        }
    }
    let mut v = "decode uses neither the memory bandwidth nor the compute well".to_string();
    if w("cuda_graph") && replays == 0 {
        v.push_str("; CUDA graphs were switched on but no decode step was replayed from one (see report.md, Fast path)");
    }
    if !off.is_empty() {
        let _ = write!(
            v,
            ": it is bound by kernel launches and synchronisation, and this run had {} off; turning {} on would help most",
            join_and(&off),
            if off.len() == 1 { "it" } else { "them" }
        );
    } else if replays > 0 {
        let _ = write!(v, ", although every fast-path switch was on ({replays} decode steps replayed from CUDA graphs): the time is in the kernels themselves, which kernels.md and stage 2 (Nsight) break down");
    }
    v
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GraphStats;

    fn optim(on: bool, replays: u64) -> OptimInfo {
        OptimInfo {
            switches: crate::optim::with_switches(
                &crate::optim::named(&crate::optim::EngineOptim::fast()),
                &[
                    "cuda_graph",
                    "fused_projections",
                    "sdpa",
                    "static_kv_cache",
                    "fused_rms_norm",
                    "sync_free_decode",
                ],
                on,
            )
            .unwrap(),
            model_switches: Default::default(),
            graphs: on.then(|| GraphStats {
                graphs_captured: 2,
                replays,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn no_advice_to_enable_cuda_graphs_when_they_were_replayed() {
        let v = decode_verdict(0.2, &optim(true, 120), 1);
        assert!(!v.contains("runtime.optim"), "{v}");
        assert!(
            v.contains("every fast-path switch was on (120 decode steps replayed"),
            "{v}"
        );
    }

    #[test]
    fn advice_names_exactly_the_switches_that_were_off() {
        let v = decode_verdict(0.2, &optim(false, 0), 1);
        assert!(v.contains("CUDA graphs (runtime.optim.cuda_graph)"), "{v}");
        assert!(v.contains("runtime.optim.sync_free_decode"), "{v}");
        assert!(v.contains("fused RMSNorm (runtime.optim.fused_rms_norm) and a static KV cache"));

        let mut partly = optim(true, 50);
        partly.switches["fused_rms_norm"] = serde_json::Value::Bool(false);
        let v = decode_verdict(0.2, &partly, 1);
        assert!(!v.contains("cuda_graph"), "{v}");
        assert!(
            v.contains("had fused RMSNorm (runtime.optim.fused_rms_norm) off; turning it on"),
            "{v}"
        );
    }

    #[test]
    fn graphs_on_but_never_replayed_is_said_not_advised() {
        let v = decode_verdict(0.2, &optim(true, 0), 1);
        assert!(
            v.contains("switched on but no decode step was replayed"),
            "{v}"
        );
        assert!(!v.contains("runtime.optim.cuda_graph)"), "{v}");
    }

    #[test]
    fn bandwidth_bound_decode_gets_batching_advice_only_at_batch_one() {
        assert!(decode_verdict(0.8, &optim(true, 9), 1).contains("runtime.batch_size"));
        let v = decode_verdict(0.8, &optim(true, 9), 8);
        assert!(!v.contains("batch"), "{v}");
        assert!(!v.contains("CUDA graphs"), "{v}");
    }
}
