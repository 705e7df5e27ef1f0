//! stakeholder_summary.md: plain-language findings, each sentence derived from a number in the
//! report (which stage dominates, whether decode is bandwidth-bound, variability, energy).
use super::metrics::RunReport;
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
            let verdict = if mbu >= 0.5 {
                "decode is limited by memory bandwidth, as expected for one token at a time"
            } else {
                "decode uses neither the memory bandwidth nor the compute well: it is bound by kernel launches and synchronisation, so fusing kernels or CUDA graphs would help most"
            };
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
            let _ = writeln!(s, "- The single most expensive GPU kernel is `{}` ({:.1} % of GPU time in the profiled pass).", top.name, top.share_pct.unwrap_or(0.0));
        }
    }
    s
}
