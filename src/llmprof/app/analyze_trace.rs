//! `llmprof analyze trace PATH... [--out DIR] [--regions LIST] [--format md|json|html]`: finds the
//! trace files (a file, or the .json/.json.gz files of a folder: one per rank), reads each in one
//! streaming pass with progress on stderr, analyses it (`trace`), and prints the result or writes
//! a folder like a run's.
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::Format;
use crate::dataset::file_kind::{self, NotRegular};
use crate::measure::kineto_json::read_trace;
use crate::report::trace::{html, markdown, ANALYSIS_JSON};
use crate::trace::ranks::{Analysed, RankAnalysis};
use crate::trace::regions::RegionFilter;
use crate::trace::{analyse, Options};

/// Files at least this large get a progress bar.
const PROGRESS_BYTES: u64 = 64 << 20;

/// Runs the command; returns what goes to stdout.
pub fn run(
    paths: &[PathBuf],
    out: Option<&Path>,
    regions: &[String],
    top: usize,
    format: Option<Format>,
) -> Result<String> {
    let options = Options {
        regions: RegionFilter::new(regions).map_err(anyhow::Error::msg)?,
        ..Options::default()
    };
    let files = trace_files(paths)?;
    let mut traces = Vec::new();
    for (file, in_folder) in &files {
        let read = match read_one(file) {
            Ok(read) => read,
            // A folder may hold other JSON (an analysis.json, a config): skipped, said.
            Err(e) if *in_folder && not_a_trace(&e) => {
                tracing::warn!(file = %file.display(), "skipped: not a trace ({:#})", e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let analysis = analyse(&read, &file.display().to_string(), &options);
        let named = analysis.source.rank.or_else(|| rank_in_name(file));
        traces.push((named, analysis));
    }
    if traces.is_empty() {
        bail!("none of the files given is a trace (each was skipped above)");
    }
    let ranks: Vec<RankAnalysis> = number_ranks(traces.iter().map(|t| t.0).collect())
        .into_iter()
        .zip(traces)
        .map(|(rank, (_, analysis))| RankAnalysis { rank, analysis })
        .collect();
    let analysed = Analysed::from_ranks(ranks);
    if let Some(dir) = out {
        return write_folder(dir, &analysed, top);
    }
    Ok(match format {
        Some(Format::Json) => serde_json::to_string_pretty(&analysed)?,
        Some(Format::Html) => html::render(&analysed),
        Some(Format::Md) | None => markdown::summary(&analysed, top),
        Some(Format::Yaml) => {
            bail!("analyze trace prints md, json or html (--format yaml is for --cfg)")
        }
    })
}

/// Each trace's rank: the one it names (distributedInfo, or `rankN` in its file name) when no
/// other trace names the same, else the smallest number no trace names, in file order.
fn number_ranks(named: Vec<Option<u64>>) -> Vec<u64> {
    let mut count = std::collections::HashMap::new();
    for r in named.iter().flatten() {
        *count.entry(*r).or_insert(0) += 1;
    }
    let kept: Vec<Option<u64>> = named.iter().map(|r| r.filter(|r| count[r] == 1)).collect();
    let mut used: std::collections::HashSet<u64> = kept.iter().flatten().copied().collect();
    let mut next = 0;
    let renumbered = kept.iter().filter(|r| r.is_none()).count();
    if renumbered > 0 && named.len() > 1 {
        tracing::warn!(
            "{renumbered} trace(s) name no rank of their own (distributedInfo.rank, or 'rankN' in the file name): numbered after the others in file order"
        );
    }
    kept.into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                while used.contains(&next) {
                    next += 1;
                }
                used.insert(next);
                next
            })
        })
        .collect()
}

/// Whether reading failed because the file is not a trace at all (rather than a broken one).
fn not_a_trace(e: &anyhow::Error) -> bool {
    use crate::measure::kineto_json::{scan::ScanError, ReadError};
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ReadError>(),
            Some(ReadError::Scan(
                ScanError::NoEvents | ScanError::Syntax { offset: 0, .. }
            ))
        )
    })
}

/// The trace files named by `paths`, each with whether a folder scan found it: files as given,
/// folders' `.json`/`.json.gz` files sorted.
fn trace_files(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut files = Vec::new();
    for path in paths {
        match file_kind::regular_file(path) {
            Ok(_) => files.push((path.clone(), false)),
            Err(s) if s.kind == NotRegular::Directory => {
                let mut found = Vec::new();
                let mut skipped = Vec::new();
                let entries = std::fs::read_dir(path)
                    .with_context(|| format!("listing {}", path.display()))?;
                for entry in entries {
                    let p = entry
                        .with_context(|| format!("listing {}", path.display()))?
                        .path();
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
                        continue;
                    }
                    match file_kind::regular_file(&p) {
                        Ok(_) => found.push(p),
                        Err(s) => skipped.push(s),
                    }
                }
                file_kind::warn_skipped("trace file", &skipped);
                if found.is_empty() {
                    bail!(
                        "no trace files (.json, .json.gz) in {}: pass the files torch.profiler wrote, or their folder",
                        path.display()
                    );
                }
                found.sort();
                let found = run_dir_traces(path, found)?;
                files.extend(found.into_iter().map(|f| (f, true)));
            }
            Err(s) if s.kind == NotRegular::Missing => bail!("{} does not exist", path.display()),
            Err(s) => bail!("{s}: pass a trace file (.json, .json.gz) or a folder of them"),
        }
    }
    Ok(files)
}

/// In an llmprof run directory (its resolved config beside the files), only its traces: a
/// tensor-parallel run's `traces/trace.rank<k>.json`, else its `trace.json` (its other JSON files
/// are tables and measurements). Any other folder: all its JSON files.
fn run_dir_traces(dir: &Path, found: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    if !dir.join(crate::run_dir::RESOLVED_CONFIG).is_file() {
        return Ok(found);
    }
    let ranks: Vec<PathBuf> =
        crate::measure::rank_trace::rank_trace_paths(|p| dir.join(p).is_file())
            .into_iter()
            .map(|p| dir.join(p))
            .collect();
    if !ranks.is_empty() {
        return Ok(ranks);
    }
    let trace = dir.join(crate::run_files::TRACE_JSON);
    if !trace.is_file() {
        bail!(
            "{} is an llmprof run with no trace (no Kineto pass, or output.trace_json=false): run stage1 with pipeline.torch_profiler.enable=true",
            dir.display()
        );
    }
    Ok(vec![trace])
}

/// `rank3` / `rank_3` / `rank-3` in a file name.
fn rank_in_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let at = name.find("rank")? + 4;
    let rest = name[at..].trim_start_matches(['_', '-']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Gzip by content (its magic bytes), as the reader decides.
fn is_gzip(file: &Path) -> bool {
    let mut magic = [0u8; 2];
    file_kind::open_regular(file)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| magic == [0x1f, 0x8b])
}

fn read_one(file: &Path) -> Result<crate::measure::kineto_json::ReadTrace> {
    let f = file_kind::open_regular(file).with_context(|| format!("opening {}", file.display()))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let gz = is_gzip(file);
    let bar = (size >= PROGRESS_BYTES).then(|| {
        let bar = if gz {
            indicatif::ProgressBar::new_spinner()
        } else {
            indicatif::ProgressBar::new(size)
        };
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        let style = if gz {
            "{spinner} reading {msg}: {bytes} of JSON ({bytes_per_sec})"
        } else {
            "reading {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)"
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(style) {
            bar.set_style(style);
        }
        bar.set_message(
            file.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        bar
    });
    let started = std::time::Instant::now();
    let read = read_trace(f, &mut |bytes| {
        if let Some(bar) = &bar {
            bar.set_position(bytes);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let read = read.with_context(|| format!("reading {}", file.display()))?;
    let level_info = read.bytes >= PROGRESS_BYTES;
    let elapsed = started.elapsed().as_secs_f64();
    if level_info {
        tracing::info!(file = %file.display(), events = read.events.ops.len() + read.events.kernels.len(), mb = read.bytes as f64 / 1e6, seconds = elapsed, "trace read");
    }
    tracing::debug!(
        file = %file.display(),
        host_events = read.events.ops.len(),
        gpu_events = read.events.kernels.len(),
        mb = read.bytes as f64 / 1e6,
        seconds = elapsed,
        "trace read"
    );
    if read.events.kernels.is_empty() && read.events.ops.is_empty() {
        tracing::warn!(file = %file.display(), "the trace holds no operators and no GPU work (was the profiler given ProfilerActivity.CUDA and CPU?)");
    }
    Ok(read)
}

/// Writes the report folder; an existing folder must be empty or an earlier output.
fn write_folder(dir: &Path, analysed: &Analysed, top: usize) -> Result<String> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
        if entries.next().is_some() && !dir.join(ANALYSIS_JSON).is_file() {
            bail!(
                "{} is not empty and holds no {ANALYSIS_JSON} from an earlier `analyze trace`: choose another --out",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write(ANALYSIS_JSON, &serde_json::to_string_pretty(analysed)?)?;
    write("report.md", &markdown::summary(analysed, top))?;
    write("report.html", &html::render(analysed))?;
    let traces = analysed.traces();
    let many = traces.len() > 1;
    for (rank, a) in traces {
        let prefix = match (many, rank) {
            (true, Some(r)) => format!("rank{r}/"),
            _ => String::new(),
        };
        let n = usize::MAX;
        write(
            &format!("{prefix}kernels.md"),
            &format!("# Kernels\n\n{}", markdown::kernels_table(a, n)),
        )?;
        write(
            &format!("{prefix}operators.md"),
            &format!("# Operators\n\n{}", markdown::operators_table(a, n)),
        )?;
        write(
            &format!("{prefix}regions.md"),
            &format!(
                "# Regions\n\n{}\n## Kernels per region\n\n{}",
                markdown::regions_table(a, n),
                markdown::region_kernels_table(a)
            ),
        )?;
    }
    Ok(format!(
        "wrote {}: report.md, report.html, {ANALYSIS_JSON}, kernels.md, operators.md, regions.md{}",
        dir.display(),
        if many { " (per rank under rankN/)" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_colliding_or_missing_ranks_are_renumbered() {
        assert_eq!(
            number_ranks(vec![Some(4), Some(5), None, Some(7)]),
            [4, 5, 0, 7]
        );
        assert_eq!(number_ranks(vec![Some(1), Some(1), Some(0)]), [1, 2, 0]);
        assert_eq!(number_ranks(vec![None, None]), [0, 1]);
        assert_eq!(number_ranks(vec![Some(3)]), [3]);
    }

    #[test]
    fn ranks_are_read_from_file_names() {
        let r = |n: &str| rank_in_name(Path::new(n));
        assert_eq!(r("/t/worker-rank3.1700.pt.trace.json.gz"), Some(3));
        assert_eq!(r("RANK_12.json"), Some(12));
        assert_eq!(r("host_1234.pt.trace.json"), None);
        assert_eq!(r("rank.json"), None);
    }
}
