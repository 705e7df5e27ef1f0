//! report.md: setup, per-stage statistics, throughput, MFU/MBU, top operators and kernels,
//! NVML summary, overheads and notes — all read from `RunReport`.
use super::metrics::{RunReport, StageStats};
use std::fmt::Write as _;

mod modules;
mod ranks;
mod top_tables;

/// Regions of the generation loop every model shares, in the order the table ends with.
const LOOP_ORDER: [&str; 4] = ["prefill", "decode_step", "decode", "e2e"];

/// Region names in table order: the model's own regions first, shortest mean first (a region
/// never takes less than one nested in it, so children come before their parents), then the
/// generation loop's.
pub fn region_order(r: &RunReport) -> Vec<&str> {
    let mut own: Vec<(&str, f64)> = r
        .stages
        .iter()
        .filter(|(k, _)| !LOOP_ORDER.contains(&k.as_str()))
        .map(|(k, s)| (k.as_str(), s.mean_ms))
        .collect();
    own.sort_by(|a, b| a.1.total_cmp(&b.1));
    own.into_iter()
        .map(|(k, _)| k)
        .chain(LOOP_ORDER.into_iter().filter(|k| r.stages.contains_key(*k)))
        .collect()
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "n/a".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1} %", x * 100.0))
        .unwrap_or_else(|| "n/a".into())
}

/// TTFT, TPOT, ITL and e2e as serving benchmarks define them, with their distributions.
fn serving_section(s: &mut String, r: &RunReport) {
    let v = &r.serving;
    let _ = writeln!(s, "\n## Serving metrics (ms, per batch row)\n");
    let _ = writeln!(s, "TTFT = request start → first token; TPOT = (e2e − TTFT) ÷ (output tokens − 1) per request; ITL = every gap between consecutive tokens; definitions as vLLM's benchmark (docs/metrics-schema.md).\n");
    let _ = writeln!(
        s,
        "| metric | n | mean | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (name, st) in [
        ("TTFT", &v.ttft_ms),
        ("TPOT", &v.tpot_ms),
        ("ITL", &v.itl_ms),
        ("e2e", &v.e2e_ms),
    ] {
        match st {
            Some(st) => {
                let _ = writeln!(
                    s,
                    "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    st.n, st.mean_ms, st.p50_ms, st.p90_ms, st.p99_ms, st.max_ms
                );
            }
            None => {
                let _ = writeln!(s, "| {name} | 0 | n/a | n/a | n/a | n/a | n/a |");
            }
        }
    }
}

pub fn render(r: &RunReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# llmprof {} report\n", r.command);
    if r.synthetic_weights {
        let _ = writeln!(s, "> **{}**\n", super::metrics::SYNTHETIC_NOTE);
    }
    let u = &r.setup;
    let _ = writeln!(s, "## Setup\n");
    let _ = writeln!(s, "| item | value |\n|---|---|");
    for (k, v) in [
        ("model", u.model.clone()),
        ("device", u.device.clone()),
        ("GPU", u.gpu.clone().unwrap_or_else(|| "none".into())),
        ("dtype", u.dtype.clone()),
        (
            "resolution mode",
            u.mode.clone().unwrap_or_else(|| "— (text model)".into()),
        ),
        ("inputs", u.inputs.to_string()),
        ("batch size", u.batch_size_label()),
        (
            "warm-up runs / repeats",
            format!("{} / {}", u.warmup, u.repeats),
        ),
        (
            "max new tokens",
            format!(
                "{}{}",
                u.max_new_tokens,
                if u.ignore_eos { " (EOS ignored)" } else { "" }
            ),
        ),
        ("timing clock", u.clock.clone()),
        ("model load", format!("{:.0} ms", u.load_ms)),
        ("llmprof", r.llmprof_version.clone()),
    ] {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    let _ = writeln!(s, "\n## Stages (ms)\n");
    let _ = writeln!(s, "Regions as the model marks them; decode_step is the forward pass of one step only (serving metrics below). CV mixes all inputs; \"CV/input\" is the largest CV between repeats of one input (⚠ above 10 %).\n");
    let _ = writeln!(s, "| stage | n | mean | std | min | p50 | p90 | p99 | CV | CV/input |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let row =
        |s: &mut String, name: &str, st: &StageStats| {
            let cv = pct(st.cv);
            let within = r
                .cv_within_input
                .get(name)
                .map(|c| format!("{:.1} %{}", c * 100.0, if *c > 0.10 { " ⚠" } else { "" }))
                .unwrap_or_else(|| "n/a".into());
            let _ =
                writeln!(
            s,
            "| {name} | {} | {:.3} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {cv} | {within} |",
            st.n, st.mean_ms, opt(st.std_ms, 3), st.min_ms, st.p50_ms, st.p90_ms, st.p99_ms
        );
        };
    for name in region_order(r) {
        row(&mut s, name, &r.stages[name]);
    }
    serving_section(&mut s, r);
    let t = &r.throughput;
    let _ = writeln!(s, "\n## Throughput\n");
    let _ = writeln!(s, "| metric | value |\n|---|---|");
    let _ = writeln!(
        s,
        "| output tokens (timed runs) | {} |",
        t.output_tokens_total
    );
    let _ = writeln!(
        s,
        "| tokens/s per request (mean) | {} |",
        opt(t.tokens_per_s_per_request_mean, 1)
    );
    let _ = writeln!(
        s,
        "| tokens/s aggregate | {} |",
        opt(t.tokens_per_s_aggregate, 1)
    );
    let _ = writeln!(
        s,
        "| decode tokens/s per row (1000 / mean TPOT) | {} |",
        opt(t.decode_tokens_per_s, 1)
    );

    let _ = writeln!(s, "\n## Utilisation\n");
    match &r.peaks {
        Some(p) => {
            let _ = writeln!(
                s,
                "Peaks ({}): {:.1} TFLOP/s {} dense at {}, {:.0} GB/s — {}. MFU uses this datasheet figure.\n",
                p.gpu_name,
                p.peak_tflops,
                p.precision,
                p.clock_mhz
                    .map(|c| format!("{c:.0} MHz"))
                    .unwrap_or_else(|| "the overridden clock".into()),
                p.peak_bandwidth_gbs,
                p.source
            );
            for (w, at) in &p.at_window_clock {
                let _ = writeln!(
                    s,
                    "- {w}: the GPU ran at {:.0} MHz (NVML mean), where the peak is {:.1} TFLOP/s; MFU at that clock: {}.",
                    at.sm_clock_mhz,
                    at.peak_tflops,
                    pct(r.utilisation.mfu_at_window_clock.get(match w.as_str() {
                        "decode" => "decode_step",
                        other => other,
                    }).copied())
                );
            }
            if !p.at_window_clock.is_empty() {
                s.push('\n');
            }
        }
        None => {
            let _ = writeln!(
                s,
                "Peaks: n/a ({}).\n",
                r.utilisation
                    .unavailable
                    .clone()
                    .unwrap_or_else(|| "no GPU".into())
            );
        }
    }
    if let Some(f) = &r.flops {
        let _ = writeln!(
            s,
            "| stage | analytic work | MFU (mean time) | MFU (p50 time) |\n|---|---|---:|---:|"
        );
        let u = &r.utilisation;
        let mut row = |label: &str, work: String, key: &str| {
            let _ = writeln!(
                s,
                "| {label} | {work} | {} | {} |",
                pct(u.mfu.get(key).copied()),
                pct(u.mfu_p50.get(key).copied())
            );
        };
        if f.vision_gflop > 0.0 {
            row("vision", format!("{:.1} GFLOP", f.vision_gflop), "vision");
        }
        row(
            "prefill (incl. input encoders)",
            format!("{:.1} GFLOP", f.prefill_gflop),
            "prefill",
        );
        row(
            "decode step",
            format!(
                "{:.3} GFLOP, {:.3} GB",
                f.decode_step_gflop_mean,
                f.decode_step_bytes_mean / 1e9
            ),
            "decode_step",
        );
        row("end to end", format!("{:.1} GFLOP", f.e2e_gflop), "e2e");
        let _ = writeln!(
            s,
            "\nMBU of the decode step: {} (mean time), {} (p50 time).",
            pct(u.mbu_decode),
            pct(u.mbu_decode_p50)
        );
        // With a module breakdown, Kineto's count is set against each module's FLOPs there.
        if let Some(ratio) = f.kineto_matmul_ratio.filter(|_| r.modules.is_none()) {
            let _ = writeln!(
                s,
                "\nKineto matmul FLOPs ÷ analytic matmul FLOPs (profiled pass): {ratio:.3}"
            );
        }
    }
    if let Some(m) = &r.modules {
        modules::render(&mut s, m);
    }
    if let Some(t) = &r.tensor_parallel {
        ranks::render(&mut s, t);
    }
    if let Some(k) = &r.kineto {
        top_tables::render(&mut s, r, k);
        let _ = writeln!(s, "\nFull tables: operators.md, kernels.md; timeline: trace.json (open in https://ui.perfetto.dev).");
    }
    let n = &r.nvml;
    let _ = writeln!(s, "\n## NVML telemetry\n");
    if !n.available {
        let _ = writeln!(
            s,
            "NVML unavailable: {}",
            n.note.clone().unwrap_or_default()
        );
    } else {
        let _ = writeln!(
            s,
            "{} samples (nvml.csv). Energy per output token: {} J; per decode token: {} J (the energy counter interpolated at each window's edges; n/a when a window could not be measured).\n",
            n.samples,
            opt(n.energy_j_per_output_token, 3),
            opt(n.energy_j_per_decode_token, 3)
        );
        let _ = writeln!(s, "| window | power W | SM MHz | mem MHz | GPU util % | mem util % | mem used GiB | temp °C | throttle |\n|---|---:|---:|---:|---:|---:|---:|---:|---|");
        for (name, w) in &n.windows {
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
                opt(w.power_w, 1),
                opt(w.sm_clock_mhz, 0),
                opt(w.mem_clock_mhz, 0),
                opt(w.gpu_util_pct, 1),
                opt(w.mem_util_pct, 1),
                opt(w.mem_used_gib, 2),
                opt(w.temperature_c, 0),
                w.throttle_reasons
                    .map(|t| format!("{t:#x}"))
                    .unwrap_or_else(|| "n/a".into())
            );
        }
    }
    let _ = writeln!(s, "\n## Overheads\n");
    match &r.kineto {
        Some(k) => {
            let _ = writeln!(s, "Kineto profiled pass: {:.1} ms vs timed mean {:.1} ms ({:+.1} %). The tables above come from that separate pass; the stage timings come from unprofiled runs.", k.profiled_e2e_ms, k.timed_e2e_mean_ms, k.overhead_pct);
        }
        None => {
            let _ = writeln!(
                s,
                "Kineto pass disabled (pipeline.torch_profiler.enable=false)."
            );
        }
    }
    if let Some(m) = &r.memory {
        let _ = writeln!(s, "\n## GPU memory (caching allocator)\n");
        let _ = writeln!(
            s,
            "Peak over the run: {:.2} GiB allocated, {:.2} GiB reserved. Per region of the timed requests (a region includes the regions nested in it):\n",
            m.peak_allocated_gib, m.peak_reserved_gib
        );
        let _ = writeln!(
            s,
            "| region | peak allocated GiB | peak reserved GiB |\n|---|---:|---:|"
        );
        for (name, p) in &m.stages {
            let _ = writeln!(
                s,
                "| {name} | {:.2} | {:.2} |",
                p.peak_allocated_gib, p.peak_reserved_gib
            );
        }
    }
    optim_section(&mut s, &r.optim);
    if !r.notes.is_empty() {
        let _ = writeln!(s, "\n## Notes\n");
        for note in &r.notes {
            let _ = writeln!(s, "- {note}");
        }
    }
    s
}

/// The fast-path switches (`runtime.optim`, then the model family's `model.optim`) and what the
/// CUDA-graph path did.
fn optim_section(s: &mut String, o: &super::metrics::OptimInfo) {
    let value = |v: &serde_json::Value| match v {
        serde_json::Value::Bool(true) => "on".to_string(),
        serde_json::Value::Bool(false) => "off".to_string(),
        other => other.to_string(),
    };
    let _ = writeln!(s, "\n## Fast path (runtime.optim, model.optim)\n");
    let _ = writeln!(s, "| switch | value |\n|---|---|");
    for (prefix, switches) in [
        ("runtime.optim", &o.switches),
        ("model.optim", &o.model_switches),
    ] {
        for (k, v) in switches {
            let _ = writeln!(s, "| {prefix}.{k} | {} |", value(v));
        }
    }
    if let Some(g) = &o.graphs {
        if g.graphs_captured > 0 || g.replays > 0 {
            let windows: Vec<String> = g
                .windows
                .iter()
                .map(|(b, ws)| format!("batch {b}: {ws:?}"))
                .collect();
            let _ = writeln!(
                s,
                "\nCUDA graphs: {} captured in {:.1} ms (KV windows {}), {} steps replayed, {} fixed-shape steps run eagerly (the first of each window). Kineto sees each replay as one `cudaGraphLaunch` with its kernels; NVTX ranges enclose the replays.",
                g.graphs_captured,
                g.capture_ms_total,
                windows.join("; "),
                g.replays,
                g.eager_steps
            );
        }
        if g.vision_graphs_captured > 0 {
            let _ = writeln!(
                s,
                "\nVision CUDA graphs: {} captured (one per stage and input shape, or one per pass with vision_streams) in {:.1} ms, {} calls replayed; the first call of each shape ran eagerly. The Kineto operator table has no vision operators for replayed calls, only their kernels.",
                g.vision_graphs_captured, g.vision_capture_ms_total, g.vision_replays
            );
        }
        if g.prefill_graphs_captured > 0 {
            let _ = writeln!(
                s,
                "\nPrefill CUDA graphs: {} captured (one per prompt shape, left padding and KV cache), {} prefills replayed; each shape ran eagerly the first time and was captured the second (a shape met once, or over 16,384 tokens, runs op by op).",
                g.prefill_graphs_captured, g.prefill_replays
            );
        }
    }
}
