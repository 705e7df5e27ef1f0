//! Stage 2: re-run the workload as child `llmprof stage1` processes (Kineto pass and static
//! analysis off, same config and overrides) under Nsight Systems and/or Nsight Compute, then
//! parse what they wrote into kernel tables and a roofline. Runs in the front end (no libtorch):
//! the tools profile the child, which launches the worker.
use crate::config::Composed;
use crate::measure::op_tables::KernelRow;
use crate::nsight::{self, ncu, nsys};
use crate::region::{Region, RegionTree};
use crate::report::artifacts;
use crate::roofline::KernelOps;
use crate::spec::{NcuClockControl, RunSpec};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Stage2<'a> {
    pub spec: &'a RunSpec,
    pub composed: &'a Composed,
    pub run_dir: &'a Path,
    pub config_dir: &'a Path,
    pub config_name: &'a str,
    commands: Vec<String>,
    /// Kernels the kernel-selection pass saw before the NVTX filter (for the "nothing to
    /// profile" diagnosis).
    kernels_seen: usize,
}

/// `regex:` value matching one kernel base name, tolerant of namespaces and template suffixes.
pub fn kernel_regex(base: &str) -> String {
    format!("^(.*::)?{}(<.*)?$", regex::escape(base))
}

/// The K kernel base names with the most GPU time, skipping copies/memsets, NCCL's collectives
/// and duplicates.
pub fn top_k_names(rows: &[(String, f64)], k: usize) -> Vec<String> {
    let mut sorted: Vec<&(String, f64)> = rows.iter().collect();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out: Vec<String> = Vec::new();
    for (name, _) in sorted {
        // Copies are not kernels; a collective replayed alone would wait for peers that do not
        // replay it.
        if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("nccl") {
            continue;
        }
        let base = crate::measure::kernel_names::base_name(name);
        if !base.is_empty() && !out.contains(&base) {
            out.push(base);
        }
        if out.len() == k {
            break;
        }
    }
    out
}

impl<'a> Stage2<'a> {
    pub fn new(
        spec: &'a RunSpec,
        composed: &'a Composed,
        run_dir: &'a Path,
        config_dir: &'a Path,
        config_name: &'a str,
    ) -> Self {
        Stage2 {
            spec,
            composed,
            run_dir,
            config_dir,
            config_name,
            commands: Vec::new(),
            kernels_seen: 0,
        }
    }

    /// `llmprof stage1 <the run's overrides> <profiler-off overrides> <extra>` into `dir`.
    fn child(&self, dir: &Path, extra: &[&str]) -> Result<Vec<String>> {
        let exe = std::env::current_exe().context("locating the llmprof binary")?;
        let mut argv = vec![
            exe.display().to_string(),
            "--config-dir".into(),
            self.config_dir.display().to_string(),
            "--config-name".into(),
            self.config_name.to_string(),
            "stage1".into(),
        ];
        argv.extend(
            self.composed
                .parsed_overrides
                .iter()
                .map(|o| o.input.clone()),
        );
        argv.extend(
            [
                "pipeline.torch_profiler.enable=false",
                "pipeline.static_analysis.enable=false",
                "pipeline.nsys.enable=false",
                "pipeline.ncu.enable=false",
            ]
            .map(String::from),
        );
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv.push(format!("hydra.run.dir={}", dir.display()));
        Ok(argv)
    }

    fn exec(&mut self, program: &Path, args: &[String], what: &str) -> Result<()> {
        self.exec_env(program, args, &[], what)
    }

    /// [`Stage2::exec`] with `env` added to the child's environment (and to the command line
    /// recorded, as `NAME=value` before it).
    fn exec_env(
        &mut self,
        program: &Path,
        args: &[String],
        env: &[(&str, String)],
        what: &str,
    ) -> Result<()> {
        let line = env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .chain(std::iter::once(program.display().to_string()))
            .chain(args.iter().map(|a| shell_quote(a)))
            .collect::<Vec<_>>()
            .join(" ");
        tracing::info!("{what}: {line}");
        self.commands.push(line);
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        let status = super::child::run(cmd, what)?.status;
        if let Some(sig) = super::shutdown::interrupted() {
            return Err(super::shutdown::Interrupted(sig).into());
        }
        if !status.success() {
            bail!(
                "{what} failed ({status}); command: {}",
                self.commands.last().expect("just pushed")
            );
        }
        Ok(())
    }

    pub fn run(mut self) -> Result<()> {
        let settings = crate::settings::Settings::load()?;
        let p = &self.spec.pipeline;
        let mut problems: Vec<String> = Vec::new();
        let mut ran = 0;
        let mut hot: Option<Vec<(String, f64)>> = None;
        if p.nsys.enable {
            match nsight::find_tool_configured("nsys", settings.tool_path("nsys"))
                .map_err(anyhow::Error::from)
                .and_then(|tool| self.run_nsys(&tool))
            {
                Ok(rows) => {
                    ran += 1;
                    hot = Some(rows);
                }
                Err(e) => problems.push(format!("Nsight Systems: {e:#}")),
            }
        }
        if p.ncu.enable {
            let result = nsight::find_tool_configured("ncu", settings.tool_path("ncu"))
                .map_err(anyhow::Error::from)
                .and_then(|tool| {
                    let stage1 = self.stage1_kernels()?;
                    // nsys's totals choose the kernels unless modules do (nsys knows none).
                    let rows = match hot.take() {
                        Some(rows) if p.ncu.modules.is_empty() => rows,
                        _ => stage1.rows,
                    };
                    self.run_ncu(&tool, &rows, &stage1.ops)
                });
            match result {
                Ok(()) => ran += 1,
                Err(e) => problems.push(format!("Nsight Compute: {e:#}")),
            }
        }
        let cmd_txt = self.commands.join("\n") + "\n";
        std::fs::write(self.run_dir.join(artifacts::CMD_TXT), cmd_txt)
            .with_context(|| format!("writing {}", artifacts::CMD_TXT))?;
        if !problems.is_empty() {
            let text = format!(
                "# Stage 2 problems\n\n{}\n",
                problems
                    .iter()
                    .map(|p| format!("- {p}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            std::fs::write(self.run_dir.join(artifacts::STAGE2_PROBLEMS_MD), text)?;
            for p in &problems {
                tracing::error!("{p}");
            }
        }
        if ran == 0 {
            bail!("no enabled profiler could run:\n{}", problems.join("\n"));
        }
        Ok(())
    }

    /// Profile one child run; export the summaries; return kernels by total GPU time.
    fn run_nsys(&mut self, nsys_bin: &Path) -> Result<Vec<(String, f64)>> {
        let dir = self.run_dir.join(artifacts::NSYS_DIR);
        std::fs::create_dir_all(&dir)?;
        let n = &self.spec.pipeline.nsys;
        let opts = nsys::command::ProfileOptions {
            output: dir.join("profile"),
            capture_range: n.gating_nvtx.then(|| n.capture_range.clone()),
            trace: n.trace.clone(),
            extra_args: n.extra_args.clone(),
        };
        let child = self.child(&dir.join("stage1"), &[])?;
        self.exec(
            nsys_bin,
            &nsys::command::profile_args(&opts, &child),
            "nsys profile",
        )?;
        let rep = dir.join(artifacts::NSYS_REP);
        let prefix = dir.join("stats");
        self.exec(
            nsys_bin,
            &nsys::command::stats_args(&rep, &prefix),
            "nsys stats",
        )?;
        let md = nsight::analyze::analyze_nsys(&dir, false)?;
        std::fs::write(self.run_dir.join(artifacts::KERNELS_MD), md)?;
        let json = nsight::analyze::analyze_nsys(&dir, true)?;
        std::fs::write(self.run_dir.join(artifacts::NSYS_SUMMARY_JSON), json)?;
        let csv =
            nsys::command::stats_output_path(&prefix, nsys::parse::ReportKind::CudaGpuKernSum);
        let f = std::fs::File::open(&csv).with_context(|| format!("opening {}", csv.display()))?;
        let rows =
            nsys::parse::parse_kern_sum(f).with_context(|| format!("parsing {}", csv.display()))?;
        self.kernels_seen = rows.len();
        Ok(rows
            .into_iter()
            .map(|r| (r.kernel_name, r.total_ns))
            .collect())
    }

    /// One child stage1 with the Kineto pass on: its kernel table restricted to
    /// the NVTX range ncu will filter on and to `pipeline.ncu.modules`, and its module
    /// attribution (measurements.json), which names each profiled kernel's module and gives
    /// the useful FLOPs of those whose module's FLOPs are theirs alone.
    fn stage1_kernels(&mut self) -> Result<Stage1Kernels> {
        let dir = self.run_dir.join(crate::run_files::STAGE2_KINETO_DIR);
        let child = self.child(
            &dir,
            &[
                "pipeline.torch_profiler.enable=true",
                "runtime.repeats=1",
                "dataset.sampling.num_samples_per_epoch=1",
            ],
        )?;
        // Later overrides win: the child re-enables the Kineto pass that `child` turned off.
        let exe = PathBuf::from(&child[0]);
        self.exec(
            &exe,
            &child[1..],
            "stage1 with the Kineto pass (kernel selection and modules)",
        )?;
        // measurements.json holds the kernel table (what kernels.json shows) and the module
        // attribution: one read for both.
        let path = dir.join(crate::run_files::MEASUREMENTS_JSON);
        let mut kineto = crate::report::measurements::Stage1Measurements::read(&path)?
            .kineto
            .with_context(|| format!("{} has no Kineto pass", path.display()))?;
        let rows = std::mem::take(&mut kineto.kernels);
        self.kernels_seen = rows.len();
        let regions = self.spec.model.family.regions();
        let within = self.nvtx_region(&regions);
        let inside = |stage: &str| match within {
            None => true,
            Some(outer) => regions
                .find(stage)
                .is_some_and(|s| regions.is_within(s, outer)),
        };
        let rows: Vec<KernelRow> = rows
            .into_iter()
            .filter(|r| r.stage.as_deref().is_some_and(inside) || within.is_none())
            .collect();
        let wanted = &self.spec.pipeline.ncu.modules;
        let chosen: Vec<(String, f64)> = rows
            .iter()
            .filter(|r| wanted.is_empty() || r.modules.iter().any(|m| module_within(m, wanted)))
            .map(|r| (r.name.clone(), r.total_ns as f64))
            .collect();
        if chosen.is_empty() && !wanted.is_empty() {
            let mut seen: Vec<&str> = rows
                .iter()
                .flat_map(|r| r.modules.iter().map(String::as_str))
                .collect();
            seen.sort_unstable();
            seen.dedup();
            bail!(
                "pipeline.ncu.modules={wanted:?}: no kernel of {} ran in those modules; the modules that ran kernels there are: {}",
                self.spec.pipeline.ncu.nvtx_include.as_deref().unwrap_or("the run"),
                if seen.is_empty() { "none (no module attribution in this run)".to_string() } else { seen.join(", ") }
            );
        }
        Ok(Stage1Kernels {
            rows: chosen,
            ops: kineto.kernel_ops(inside),
        })
    }

    /// The region `pipeline.ncu.nvtx_include` names, when it is one of the model's regions (any
    /// other name is passed to ncu as a plain NVTX range).
    fn nvtx_region(&self, regions: &RegionTree) -> Option<Region> {
        let name = self.spec.pipeline.ncu.nvtx_include.as_deref()?;
        regions.find(name)
    }

    /// One ncu child per top-K kernel (exact selection: a single run with a combined filter
    /// would spend its launch budget on the most frequent kernel), then the roofline.
    fn run_ncu(&mut self, ncu_bin: &Path, hot: &[(String, f64)], ops: &KernelOps) -> Result<()> {
        let c = &self.spec.pipeline.ncu;
        let names = top_k_names(hot, c.top_k as usize);
        if names.is_empty() {
            let gpu = crate::measure::nvml::query_gpu(crate::measure::nvml::nvml_index_for_cuda(0))
                .map(|g| g.name)
                .map_err(|e| e.to_string());
            bail!(
                "{}",
                ncu::diagnose::no_kernels_to_profile(
                    c.nvtx_include.as_deref(),
                    self.kernels_seen,
                    &gpu
                )
            );
        }
        let dir = self.run_dir.join(artifacts::NCU_DIR);
        std::fs::create_dir_all(&dir)?;
        let (collect, metrics) = match &c.set {
            Some(set) => (
                ncu::command::Collect::Set(set.clone()),
                ncu::command::roofline_defaults().1,
            ),
            None if c.sections.is_empty() => ncu::command::roofline_defaults(),
            None => (
                ncu::command::Collect::Sections(c.sections.clone()),
                ncu::command::roofline_defaults().1,
            ),
        };
        std::fs::write(dir.join("selected_kernels.txt"), names.join("\n") + "\n")?;
        let mut empty: Vec<String> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let csv = dir.join(format!("k{:02}_{}.csv", i + 1, sanitize(name)));
            let regex = match &c.kernel_regex {
                Some(user) => user.clone(),
                None => kernel_regex(name),
            };
            let regions = self.spec.model.family.regions();
            let clock_control = match c.clock_control {
                NcuClockControl::Base => ncu::command::ClockControl::Base,
                NcuClockControl::None => ncu::command::ClockControl::None,
            };
            let opts = ncu::command::Options {
                nvtx_includes: match c.nvtx_include.as_deref() {
                    None => vec![],
                    Some(name) => match regions.find(name) {
                        Some(r) => regions.nvtx_includes(r),
                        None => vec![format!("{name}/")],
                    },
                },
                kernel_regex: Some(regex),
                launch_skip: Some(c.launch_skip as u64),
                launch_count: Some(c.launch_count as u64),
                collect: collect.clone(),
                metrics: metrics.clone(),
                clock_control,
                output: ncu::command::Output::CsvLog(csv.clone()),
            };
            let world = self.spec.runtime.tensor_parallel;
            // A replayed kernel is slow: a profiled rank's peers wait for it far longer than in
            // a run, so the ranks' watchdog gets a day.
            let patient = "runtime.tensor_parallel_timeout_s=86400";
            let child = self.child(
                &dir.join(format!("stage1_k{:02}", i + 1)),
                &[
                    "runtime.warmup=0",
                    "runtime.repeats=1",
                    "dataset.sampling.num_samples_per_epoch=1",
                    patient,
                ],
            )?;
            let mut args = ncu::command::profile_args(&opts, &[]);
            args.extend(c.extra_args.iter().cloned());
            let what = format!("ncu kernel {} of {} ({name})", i + 1, names.len());
            if world > 1 {
                // ncu wraps the chosen rank's worker only: the child front end starts the
                // ranks and puts this command line before that rank's worker.
                let mut profiler = vec![ncu_bin.display().to_string()];
                profiler.extend(args);
                let env = [
                    (crate::run_files::TP_PROFILED_RANK_ENV, c.rank.to_string()),
                    (
                        crate::run_files::TP_PROFILER_ENV,
                        serde_json::to_string(&profiler)?,
                    ),
                ];
                let program = PathBuf::from(&child[0]);
                self.exec_env(
                    &program,
                    &child[1..],
                    &env,
                    &format!("{what}, rank {}", c.rank),
                )?;
            } else {
                args.extend(child);
                self.exec(ncu_bin, &args, &what)?;
            }
            if std::fs::read_to_string(&csv)
                .unwrap_or_default()
                .contains("No kernels were profiled")
            {
                empty.push(name.clone());
            }
            if c.kernel_regex.is_some() {
                break; // a user regex selects the kernels itself: one run
            }
        }
        if empty.len() == names.len() {
            bail!(
                "ncu profiled no kernel: none of {} ran inside the NVTX filter '{}' (see the CSV logs in {})",
                names.join(", "),
                c.nvtx_include.as_deref().unwrap_or("(none)"),
                dir.display()
            );
        }
        if !empty.is_empty() {
            tracing::warn!("ncu profiled nothing for: {}", empty.join(", "));
        }
        // Each kernel's module and, where exact, its useful FLOPs come from stage 1 (#41).
        let analysis = ncu::analysis::ncu_roofline_with(&dir, None, ops)?;
        std::fs::write(
            self.run_dir.join(artifacts::ROOFLINE_MD),
            crate::roofline::markdown::render(&analysis.roofline),
        )?;
        std::fs::write(
            self.run_dir.join(artifacts::NCU_MD),
            ncu::analysis::render(&dir, &analysis, false)?,
        )?;
        std::fs::write(
            self.run_dir.join(artifacts::NCU_KERNELS_JSON),
            ncu::analysis::render(&dir, &analysis, true)?,
        )?;
        if self.spec.output.plots {
            crate::roofline::plot::write_plots(self.run_dir, &analysis.roofline)?;
        }
        Ok(())
    }
}

/// What the Kineto child of stage 2 gives: the kernels to choose from (name, GPU ns) and what
/// stage 1 knows of each.
struct Stage1Kernels {
    rows: Vec<(String, f64)>,
    ops: KernelOps,
}

/// `module` is one of `wanted` or inside one (`layer.attention` holds `layer.attention.core`).
fn module_within(module: &str, wanted: &[String]) -> bool {
    wanted.iter().any(|w| {
        module == w
            || module
                .strip_prefix(w.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect()
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests;
