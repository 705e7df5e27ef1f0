//! Parses `nsys stats --format csv` reports (cuda_gpu_kern_sum, nvtx_sum, nvtx_gpu_proj_sum,
//! cuda_api_sum, cuda_gpu_mem_time_sum) from `impl Read` into typed rows, times in ns.
//!
//! The report is recognised from its header, so files named `summary_cuda_gpu_kern_sum.csv` or
//! `run_cuda_gpu_kern_sum.csv` both work. Time columns carry their unit in the header
//! (`Total Time (ns)`, or `(us)` with `--timeunit`); each is converted to nanoseconds here.

use std::collections::HashMap;
use std::io::{BufReader, Read};

use serde::Serialize;

use crate::nsight::csv_input::CsvBlock;
use crate::nsight::units::{parse_number, split_header_unit, time_unit_ns};

/// Errors a caller may match on when a file is not a usable nsys report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no nsys stats header found (expected a line like `Time (%),Total Time (ns),...`)")]
    NoHeader,
    #[error("{report}: column `{column}` missing from header")]
    MissingColumn {
        report: &'static str,
        column: &'static str,
    },
    #[error("{report}: column `{column}` has unit `{unit}`, which is not a time unit")]
    BadUnit {
        report: &'static str,
        column: &'static str,
        unit: String,
    },
    #[error("{report}: row {row}: column `{column}`: `{value}` is not a number")]
    BadNumber {
        report: &'static str,
        row: usize,
        column: &'static str,
        value: String,
    },
    #[error("reading the report: {0}")]
    Io(#[from] std::io::Error),
    #[error("CSV syntax: {0}")]
    Csv(#[from] csv::Error),
}

/// Which `nsys stats` report a CSV holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    CudaGpuKernSum,
    NvtxSum,
    NvtxGpuProjSum,
    CudaApiSum,
    CudaGpuMemTimeSum,
}

impl ReportKind {
    /// The report name as `nsys stats --report` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::CudaGpuKernSum => "cuda_gpu_kern_sum",
            Self::NvtxSum => "nvtx_sum",
            Self::NvtxGpuProjSum => "nvtx_gpu_proj_sum",
            Self::CudaApiSum => "cuda_api_sum",
            Self::CudaGpuMemTimeSum => "cuda_gpu_mem_time_sum",
        }
    }

    /// All reports this parser reads, in the order stage 2 asks `nsys stats` for them.
    pub const ALL: [ReportKind; 5] = [
        Self::CudaGpuKernSum,
        Self::NvtxSum,
        Self::NvtxGpuProjSum,
        Self::CudaApiSum,
        Self::CudaGpuMemTimeSum,
    ];

    fn detect(columns: &[&str]) -> Option<Self> {
        let has = |c: &str| columns.contains(&c);
        if has("Total Proj Time") {
            Some(Self::NvtxGpuProjSum)
        } else if has("Range") && has("Instances") {
            Some(Self::NvtxSum)
        } else if has("Num Calls") && has("Name") {
            Some(Self::CudaApiSum)
        } else if has("Count") && has("Operation") && has("Total Time") {
            Some(Self::CudaGpuMemTimeSum)
        } else if has("Instances") && has("Name") && has("Total Time") {
            Some(Self::CudaGpuKernSum)
        } else {
            None
        }
    }
}

/// Time statistics shared by the summary reports, all in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeStats {
    pub total_ns: f64,
    /// Instances, calls or operations, depending on the report.
    pub count: u64,
    pub avg_ns: f64,
    pub median_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub stddev_ns: Option<f64>,
    /// `Time (%)`: this row's share of the report's total time.
    pub share_pct: Option<f64>,
}

/// One `cuda_gpu_kern_sum` row; serialises to the kernel JSON object of `llmprof analyze nsys`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelSum {
    pub kernel_name: String,
    pub total_ns: f64,
    pub instances: u64,
    pub avg_ns: f64,
    pub median_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub share_pct: Option<f64>,
}

/// One `nvtx_sum` row (CPU-side push/pop or start/end range durations).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvtxSum {
    pub range: String,
    pub style: Option<String>,
    #[serde(flatten)]
    pub stats: TimeStats,
}

/// One `nvtx_gpu_proj_sum` row: GPU time projected onto an NVTX range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvtxGpuProj {
    pub range: String,
    pub style: Option<String>,
    pub total_proj_ns: f64,
    pub total_range_ns: Option<f64>,
    pub range_instances: u64,
    pub total_gpu_ops: Option<u64>,
}

/// One `cuda_api_sum` row (host-side CUDA API calls).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiSum {
    pub name: String,
    #[serde(flatten)]
    pub stats: TimeStats,
}

/// One `cuda_gpu_mem_time_sum` row (memcpy/memset on the GPU).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemTimeSum {
    pub operation: String,
    #[serde(flatten)]
    pub stats: TimeStats,
}

/// A parsed report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "report", content = "rows", rename_all = "snake_case")]
pub enum Report {
    CudaGpuKernSum(Vec<KernelSum>),
    NvtxSum(Vec<NvtxSum>),
    NvtxGpuProjSum(Vec<NvtxGpuProj>),
    CudaApiSum(Vec<ApiSum>),
    CudaGpuMemTimeSum(Vec<MemTimeSum>),
}

impl Report {
    pub fn kind(&self) -> ReportKind {
        match self {
            Self::CudaGpuKernSum(_) => ReportKind::CudaGpuKernSum,
            Self::NvtxSum(_) => ReportKind::NvtxSum,
            Self::NvtxGpuProjSum(_) => ReportKind::NvtxGpuProjSum,
            Self::CudaApiSum(_) => ReportKind::CudaApiSum,
            Self::CudaGpuMemTimeSum(_) => ReportKind::CudaGpuMemTimeSum,
        }
    }
}

/// Parses any supported report, recognised from its header line.
pub fn parse_report(reader: impl Read) -> Result<Report, Error> {
    let block = CsvBlock::plain(BufReader::new(reader), |line: &str| {
        header_kind(line).is_some()
    });
    let mut csv = csv::ReaderBuilder::new().flexible(true).from_reader(block);
    let header: Vec<String> = csv.headers()?.iter().map(str::to_string).collect();
    if !csv.get_ref().found_header() {
        return Err(Error::NoHeader);
    }
    let names: Vec<&str> = header.iter().map(|h| split_header_unit(h).0).collect();
    let kind = ReportKind::detect(&names).ok_or(Error::NoHeader)?;
    let table = Table {
        report: kind.name(),
        header: &header,
    };
    let mut records = Vec::new();
    for record in csv.records() {
        records.push(record?);
    }
    let rows = records.iter().enumerate().map(|(i, r)| Row {
        table: &table,
        record: r,
        index: i + 1,
    });
    Ok(match kind {
        ReportKind::CudaGpuKernSum => {
            Report::CudaGpuKernSum(rows.map(|r| r.kernel()).collect::<Result<_, _>>()?)
        }
        ReportKind::NvtxSum => Report::NvtxSum(rows.map(|r| r.nvtx()).collect::<Result<_, _>>()?),
        ReportKind::NvtxGpuProjSum => {
            Report::NvtxGpuProjSum(rows.map(|r| r.proj()).collect::<Result<_, _>>()?)
        }
        ReportKind::CudaApiSum => {
            Report::CudaApiSum(rows.map(|r| r.api()).collect::<Result<_, _>>()?)
        }
        ReportKind::CudaGpuMemTimeSum => {
            Report::CudaGpuMemTimeSum(rows.map(|r| r.mem()).collect::<Result<_, _>>()?)
        }
    })
}

/// Parses a `cuda_gpu_kern_sum` report; any other report is [`Error::NoHeader`].
pub fn parse_kern_sum(reader: impl Read) -> Result<Vec<KernelSum>, Error> {
    match parse_report(reader)? {
        Report::CudaGpuKernSum(rows) => Ok(rows),
        _ => Err(Error::NoHeader),
    }
}

fn header_kind(line: &str) -> Option<ReportKind> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes());
    let record = reader.records().next()?.ok()?;
    let names: Vec<&str> = record.iter().map(|h| split_header_unit(h).0).collect();
    ReportKind::detect(&names)
}

struct Table<'a> {
    report: &'static str,
    header: &'a [String],
}

impl Table<'_> {
    fn column(&self, name: &'static str) -> Option<(usize, Option<&str>)> {
        self.header.iter().enumerate().find_map(|(i, h)| {
            let (base, unit) = split_header_unit(h);
            (base == name).then_some((i, unit))
        })
    }
}

struct Row<'a> {
    table: &'a Table<'a>,
    record: &'a csv::StringRecord,
    index: usize,
}

impl Row<'_> {
    fn text(&self, column: &'static str) -> Result<String, Error> {
        let (i, _) = self.table.column(column).ok_or(Error::MissingColumn {
            report: self.table.report,
            column,
        })?;
        Ok(self.record.get(i).unwrap_or("").trim().to_string())
    }

    fn opt_text(&self, column: &'static str) -> Option<String> {
        self.text(column).ok().filter(|s| !s.is_empty())
    }

    fn number(&self, column: &'static str) -> Result<f64, Error> {
        let value = self.text(column)?;
        parse_number(&value).ok_or(Error::BadNumber {
            report: self.table.report,
            row: self.index,
            column,
            value,
        })
    }

    fn count(&self, column: &'static str) -> Result<u64, Error> {
        let v = self.number(column)?;
        // Counts are whole and non-negative; anything else is a malformed cell.
        if v < 0.0 || v.fract() != 0.0 {
            return Err(Error::BadNumber {
                report: self.table.report,
                row: self.index,
                column,
                value: v.to_string(),
            });
        }
        Ok(v as u64)
    }

    fn ns(&self, column: &'static str) -> Result<f64, Error> {
        let (_, unit) = self.table.column(column).ok_or(Error::MissingColumn {
            report: self.table.report,
            column,
        })?;
        let unit = unit.unwrap_or("ns");
        let factor = time_unit_ns(unit).ok_or_else(|| Error::BadUnit {
            report: self.table.report,
            column,
            unit: unit.to_string(),
        })?;
        Ok(self.number(column)? * factor)
    }

    fn opt_ns(&self, column: &'static str) -> Option<f64> {
        self.table.column(column)?;
        self.ns(column).ok()
    }

    fn stats(&self, count_column: &'static str) -> Result<TimeStats, Error> {
        Ok(TimeStats {
            total_ns: self.ns("Total Time")?,
            count: self.count(count_column)?,
            avg_ns: self.ns("Avg")?,
            median_ns: self.ns("Med")?,
            min_ns: self.ns("Min")?,
            max_ns: self.ns("Max")?,
            stddev_ns: self.opt_ns("StdDev"),
            share_pct: self.number("Time").ok(),
        })
    }

    fn kernel(&self) -> Result<KernelSum, Error> {
        let s = self.stats("Instances")?;
        Ok(KernelSum {
            kernel_name: self.text("Name")?,
            total_ns: s.total_ns,
            instances: s.count,
            avg_ns: s.avg_ns,
            median_ns: s.median_ns,
            min_ns: s.min_ns,
            max_ns: s.max_ns,
            share_pct: s.share_pct,
        })
    }

    fn nvtx(&self) -> Result<NvtxSum, Error> {
        Ok(NvtxSum {
            range: self.text("Range")?,
            style: self.opt_text("Style"),
            stats: self.stats("Instances")?,
        })
    }

    fn proj(&self) -> Result<NvtxGpuProj, Error> {
        Ok(NvtxGpuProj {
            range: self.text("Range")?,
            style: self.opt_text("Style"),
            total_proj_ns: self.ns("Total Proj Time")?,
            total_range_ns: self.opt_ns("Total Range Time"),
            range_instances: self.count("Range Instances")?,
            total_gpu_ops: self.count("Total GPU Ops").ok(),
        })
    }

    fn api(&self) -> Result<ApiSum, Error> {
        Ok(ApiSum {
            name: self.text("Name")?,
            stats: self.stats("Num Calls")?,
        })
    }

    fn mem(&self) -> Result<MemTimeSum, Error> {
        Ok(MemTimeSum {
            operation: self.text("Operation")?,
            stats: self.stats("Count")?,
        })
    }
}

/// Index of rows by name, for callers that join reports (unused names are cheap).
pub fn kernels_by_name(rows: &[KernelSum]) -> HashMap<&str, &KernelSum> {
    rows.iter().map(|r| (r.kernel_name.as_str(), r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE_DIR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/stage2/nsys"
    );

    fn fixture(name: &str) -> std::fs::File {
        std::fs::File::open(format!("{FIXTURE_DIR}/{name}")).expect("fixture present")
    }

    #[test]
    fn real_kern_sum_decode() {
        // Values read by eye from llm-perf-opt-rtx5090/nsys/per-stage/decode/nsys/summary_cuda_gpu_kern_sum.csv, row 1.
        let rows = parse_kern_sum(fixture("decode_cuda_gpu_kern_sum.csv")).expect("parses");
        assert_eq!(rows.len(), 46);
        let first = &rows[0];
        assert!(first.kernel_name.starts_with(
            "std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, __nv_bfloat16"
        ));
        assert_eq!(first.total_ns, 61602133.0);
        assert_eq!(first.instances, 16448);
        assert_eq!(first.avg_ns, 3745.3);
        assert_eq!(first.median_ns, 3744.0);
        assert_eq!(first.min_ns, 2080.0);
        assert_eq!(first.max_ns, 5728.0);
        assert_eq!(first.share_pct, Some(34.4));
    }

    #[test]
    fn real_kern_sum_projector_quoted_names() {
        // llm-perf-opt-rtx5090/nsys/per-stage/projector: 2 kernels, the second with commas in its quoted name.
        let rows = parse_kern_sum(fixture("projector_cuda_gpu_kern_sum.csv")).expect("parses");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].total_ns, 33696.0);
        assert_eq!(rows[0].instances, 1);
        assert!(rows[1]
            .kernel_name
            .contains("std::array<char *, (unsigned long)2>"));
        assert_eq!(rows[1].total_ns, 1792.0);
    }

    #[test]
    fn time_unit_from_header_is_converted() {
        let csv = "NOTICE: Existing SQLite export found.\nTime (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name\n60.0,1.5,3,0.5,0.5,0.4,0.6,0.1,k\n";
        let rows = parse_kern_sum(csv.as_bytes()).expect("parses");
        assert_eq!(rows[0].total_ns, 1500.0);
        assert_eq!(rows[0].min_ns, 400.0);
    }

    #[test]
    fn other_reports_by_header() {
        let nvtx = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range\n95.0,3481709,1,3481709.0,3481709.0,3481709,3481709,0.0,PushPop,:decode\n";
        let Report::NvtxSum(rows) = parse_report(nvtx.as_bytes()).expect("parses") else {
            panic!("kind")
        };
        assert_eq!(rows[0].range, ":decode");
        assert_eq!(rows[0].stats.total_ns, 3481709.0);
        assert_eq!(rows[0].style.as_deref(), Some("PushPop"));

        let proj = "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances,Proj Avg (ns),Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),Total GPU Ops,Avg GPU Ops,Avg Range Lvl,Avg Num Child\n:timed,PushPop,8065837,8264942,20,403291.8,403000.0,400000,410000,100.0,20,1.0,0.0,0.0\n";
        let Report::NvtxGpuProjSum(rows) = parse_report(proj.as_bytes()).expect("parses") else {
            panic!("kind")
        };
        assert_eq!(rows[0].total_proj_ns, 8065837.0);
        assert_eq!(rows[0].total_range_ns, Some(8264942.0));
        assert_eq!(rows[0].range_instances, 20);
        assert_eq!(rows[0].total_gpu_ops, Some(20));

        let api = "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n67.3,335987431,2,167993715.5,167993715.5,2971823,333015608,233376198.5,cudaLaunchKernel\n";
        let Report::CudaApiSum(rows) = parse_report(api.as_bytes()).expect("parses") else {
            panic!("kind")
        };
        assert_eq!(rows[0].stats.count, 2);

        let mem = "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n80.0,1000,4,250.0,250.0,200,300,10.0,[CUDA memcpy Host-to-Device]\n";
        let Report::CudaGpuMemTimeSum(rows) = parse_report(mem.as_bytes()).expect("parses") else {
            panic!("kind")
        };
        assert_eq!(rows[0].operation, "[CUDA memcpy Host-to-Device]");
        assert_eq!(rows[0].stats.total_ns, 1000.0);
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(
            parse_report("a,b\n1,2\n".as_bytes()),
            Err(Error::NoHeader)
        ));
        let bad = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n1,abc,1,1,1,1,1,0,k\n";
        let err = parse_kern_sum(bad.as_bytes()).expect_err("bad number");
        assert!(
            matches!(
                err,
                Error::BadNumber {
                    column: "Total Time",
                    row: 1,
                    ..
                }
            ),
            "{err}"
        );
    }
}
