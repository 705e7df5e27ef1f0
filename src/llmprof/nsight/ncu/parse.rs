//! Parses Nsight Compute CSV in both layouts into one record per profiled kernel, values in
//! canonical units (ns, bytes, Hz, bytes/s, %):
//! - `--page raw`: one row per kernel, metric names as columns, a units row under the header;
//! - `--page details` / metrics exports: one row per metric with `Metric Name/Unit/Value`.
//!
//! Text around the CSV (program stdout, `==PROF==` lines) is skipped. The CSV is streamed one
//! record at a time and every repeated string (metric names, units, sections, device names) is
//! shared, so memory grows with the kernels and metrics kept ([`parse_with`] keeps only those a
//! caller asks for), not with the size of the file.

use std::io::{BufReader, Read};

use indexmap::IndexMap;
use serde::Serialize;

use crate::nsight::csv_input::CsvBlock;
use crate::nsight::intern::{Interner, Sym};
use crate::nsight::units::{normalise, parse_number, Unit};

/// Errors a caller may match on when a file is not ncu CSV.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no ncu CSV header (a line starting with \"ID\",) found")]
    NoHeader,
    #[error("ncu CSV header lacks column `{0}`")]
    MissingColumn(&'static str),
    #[error("reading the CSV: {0}")]
    Io(#[from] std::io::Error),
    #[error("CSV syntax: {0}")]
    Csv(#[from] csv::Error),
}

/// Which CSV layout a file used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    Raw,
    Long,
}

/// A metric value after unit conversion.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    Number(f64),
    Text(Sym),
    /// The cell said `n/a`, `no data` or was empty: the metric is not available.
    Missing(Sym),
}

/// One metric of one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    /// Section name in the long layout (`GPU Speed Of Light Throughput`); `None` in raw.
    pub section: Option<Sym>,
    pub value: Value,
    pub unit: Unit,
    /// The unit as ncu printed it.
    pub raw_unit: Sym,
}

impl Metric {
    pub fn number(&self) -> Option<f64> {
        match self.value {
            Value::Number(v) => Some(v),
            _ => None,
        }
    }
}

/// One profiled kernel launch and its metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRecord {
    pub id: String,
    pub process_id: String,
    pub kernel_name: String,
    /// NVTX ranges around the launch, outermost first (from the `thread Domain:Push/Pop_Range...`
    /// column that `ncu --nvtx` adds).
    pub nvtx_ranges: Vec<String>,
    pub device: Option<String>,
    pub cc: Option<String>,
    pub block_size: Option<String>,
    pub grid_size: Option<String>,
    /// Keyed by the raw metric name (`dram__bytes_read.sum`), or `Section::Display Name` for the
    /// display names of `--page details` (`GPU Speed Of Light Throughput::Duration`).
    pub metrics: IndexMap<Sym, Metric>,
}

impl KernelRecord {
    /// The numeric value of `key`, if present and numeric.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.metrics.get(key).and_then(Metric::number)
    }

    /// Adds metrics from another export of the same launch; existing keys win.
    pub fn merge(&mut self, other: KernelRecord) {
        for (k, v) in other.metrics {
            self.metrics.entry(k).or_insert(v);
        }
        if self.nvtx_ranges.is_empty() {
            self.nvtx_ranges = other.nvtx_ranges;
        }
    }
}

/// Columns that identify a launch rather than measure it.
const ID_COLUMNS: [&str; 11] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];
// The long layout (`--page details --csv`) has one row per metric: Section Name, Metric Name,
// Metric Unit, Metric Value, then rule columns (Rule Name/Type/Description, Estimated Speedup
// Type, Estimated Speedup); it is detected from `Metric Name/Unit/Value`.

fn is_nvtx_column(name: &str) -> bool {
    name.starts_with("thread Domain") || name.starts_with("Id:Domain")
}

/// Parses ncu CSV of either layout, keeping every metric.
pub fn parse(reader: impl Read) -> Result<(Layout, Vec<KernelRecord>), Error> {
    parse_with(reader, |_| true)
}

/// Parses ncu CSV of either layout, keeping the metrics whose key (raw name, or
/// `Section::Display Name`) `keep` accepts.
pub fn parse_with(
    reader: impl Read,
    keep: impl Fn(&str) -> bool,
) -> Result<(Layout, Vec<KernelRecord>), Error> {
    let block = CsvBlock::quoted(BufReader::with_capacity(1 << 16, reader), |l: &str| {
        l.starts_with("\"ID\",")
    });
    let mut csv = csv::ReaderBuilder::new().flexible(true).from_reader(block);
    let header: Vec<String> = csv.headers()?.iter().map(str::to_string).collect();
    if !csv.get_ref().found_header() {
        return Err(Error::NoHeader);
    }
    let col = |name: &'static str| header.iter().position(|h| h == name);
    let ids = IdColumns {
        id: col("ID").ok_or(Error::MissingColumn("ID"))?,
        process_id: col("Process ID"),
        kernel_name: col("Kernel Name").ok_or(Error::MissingColumn("Kernel Name"))?,
        device: col("Device"),
        cc: col("CC"),
        block: col("Block Size"),
        grid: col("Grid Size"),
        nvtx: header.iter().position(|h| h.starts_with("thread Domain")),
    };
    let mut p = Parser {
        csv,
        ids,
        keep,
        interner: Interner::default(),
    };
    if let (Some(name), Some(unit), Some(value)) =
        (col("Metric Name"), col("Metric Unit"), col("Metric Value"))
    {
        let cols = LongColumns {
            section: col("Section Name"),
            name,
            unit,
            value,
        };
        Ok((Layout::Long, p.long(&cols)?))
    } else {
        Ok((Layout::Raw, p.raw(&header)?))
    }
}

struct IdColumns {
    id: usize,
    process_id: Option<usize>,
    kernel_name: usize,
    device: Option<usize>,
    cc: Option<usize>,
    block: Option<usize>,
    grid: Option<usize>,
    nvtx: Option<usize>,
}

/// The trimmed cell `i` of `row`; empty when absent.
fn cell(row: &csv::StringRecord, i: Option<usize>) -> &str {
    i.and_then(|i| row.get(i)).map(str::trim).unwrap_or("")
}

impl IdColumns {
    fn record(&self, row: &csv::StringRecord) -> KernelRecord {
        let get = |i: Option<usize>| {
            Some(cell(row, i))
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        KernelRecord {
            id: cell(row, Some(self.id)).to_string(),
            process_id: cell(row, self.process_id).to_string(),
            kernel_name: cell(row, Some(self.kernel_name)).to_string(),
            nvtx_ranges: get(self.nvtx).map(|s| nvtx_ranges(&s)).unwrap_or_default(),
            device: get(self.device),
            cc: get(self.cc),
            block_size: get(self.block),
            grid_size: get(self.grid),
            metrics: IndexMap::new(),
        }
    }

    /// True when `row` is a row of the launch `rec` describes.
    fn same_launch(&self, row: &csv::StringRecord, rec: &KernelRecord) -> bool {
        cell(row, Some(self.id)) == rec.id
            && cell(row, self.process_id) == rec.process_id
            && cell(row, Some(self.kernel_name)) == rec.kernel_name
    }
}

/// `445  "<default domain>:matmul-loop:none:none:none:none:none:none" ` → `["matmul-loop"]`:
/// each quoted entry is `domain:range:payload type:payload:color type:color:message type:message`.
/// The default domain's ranges (the workload's own: llmprof's stages and modules) when the cell
/// has any, else every domain's: libraries mark their own calls in domains of their own, and
/// ncu lists them after the default domain's, so NCCL's `ncclCommInitRank` (still listed on
/// every kernel after the communicator's creation, 2 x H200, session 35) would otherwise name the
/// stage of every kernel of a tensor-parallel rank.
fn nvtx_ranges(cell: &str) -> Vec<String> {
    let entries: Vec<(&str, &str)> = cell
        .split('"')
        .skip(1)
        .step_by(2)
        .filter_map(|entry| {
            let mut parts = entry.split(':');
            Some((parts.next()?, parts.next()?))
        })
        .filter(|(_, r)| !r.is_empty() && *r != "none")
        .collect();
    let default = entries.iter().any(|(d, _)| *d == DEFAULT_DOMAIN);
    entries
        .into_iter()
        .filter(|(d, _)| !default || *d == DEFAULT_DOMAIN)
        .map(|(_, r)| r.to_string())
        .collect()
}

/// How ncu names the NVTX domain of ranges pushed without one.
const DEFAULT_DOMAIN: &str = "<default domain>";

struct LongColumns {
    section: Option<usize>,
    name: usize,
    unit: usize,
    value: usize,
}

struct Parser<R, K> {
    csv: csv::Reader<R>,
    ids: IdColumns,
    keep: K,
    interner: Interner,
}

impl<R: Read, K: Fn(&str) -> bool> Parser<R, K> {
    fn metric(&mut self, section: Option<Sym>, raw_unit: Sym, cell: &str) -> Metric {
        let cell = cell.trim();
        let (value, unit) = match parse_number(cell) {
            Some(v) => {
                let (v, unit) = normalise(v, &raw_unit);
                (Value::Number(v), unit)
            }
            None if cell.is_empty() || cell == "n/a" || cell == "no data" => (
                Value::Missing(self.interner.get(if cell.is_empty() {
                    "empty cell"
                } else {
                    cell
                })),
                normalise(0.0, &raw_unit).1,
            ),
            None => (
                Value::Text(self.interner.get(cell)),
                Unit::Other(raw_unit.to_string()),
            ),
        };
        Metric {
            section,
            value,
            unit,
            raw_unit,
        }
    }

    /// One record per row; with `--print-units` (any units) the first row under the header has
    /// an empty ID and the unit of each metric column.
    fn raw(&mut self, header: &[String]) -> Result<Vec<KernelRecord>, Error> {
        let cols: Vec<(usize, Sym)> = (0..header.len())
            .filter(|&i| {
                let h = header[i].as_str();
                !ID_COLUMNS.contains(&h) && !is_nvtx_column(h) && (self.keep)(h)
            })
            .map(|i| (i, self.interner.get(&header[i])))
            .collect();
        let none = self.interner.get("");
        let mut units: Vec<Sym> = vec![none; cols.len()];
        let mut row = csv::StringRecord::new();
        let mut out = Vec::new();
        let mut first = true;
        while self.csv.read_record(&mut row)? {
            let units_row = row.get(self.ids.id).is_some_and(|s| s.trim().is_empty());
            if std::mem::take(&mut first) && units_row {
                units = cols
                    .iter()
                    .map(|(i, _)| self.interner.get(row.get(*i).unwrap_or("")))
                    .collect();
                continue;
            }
            let mut rec = self.ids.record(&row);
            rec.metrics.reserve_exact(cols.len());
            for ((i, key), unit) in cols.iter().zip(&units) {
                let m = self.metric(None, unit.clone(), row.get(*i).unwrap_or(""));
                rec.metrics.insert(key.clone(), m);
            }
            rec.metrics.shrink_to_fit(); // `reserve` rounds up to the hash table's capacity
            out.push(rec);
        }
        Ok(out)
    }

    /// One row per metric; rows of one launch are merged (they are usually adjacent).
    fn long(&mut self, c: &LongColumns) -> Result<Vec<KernelRecord>, Error> {
        let mut out: IndexMap<(String, String, String), KernelRecord> = IndexMap::new();
        let mut current: Option<usize> = None;
        let mut row = csv::StringRecord::new();
        while self.csv.read_record(&mut row)? {
            let idx = match current {
                Some(i) if self.ids.same_launch(&row, &out[i]) => i,
                _ => {
                    let rec = self.ids.record(&row);
                    let key = (
                        rec.id.clone(),
                        rec.process_id.clone(),
                        rec.kernel_name.clone(),
                    );
                    match out.get_index_of(&key) {
                        Some(i) => i,
                        None => out.insert_full(key, rec).0,
                    }
                }
            };
            current = Some(idx);
            let metric_name = cell(&row, Some(c.name));
            if metric_name.is_empty() {
                continue; // a rule row (SOLBottleneck, ...): advice text, no metric
            }
            let section_name = Some(cell(&row, c.section)).filter(|s| !s.is_empty());
            // Raw metric names have no spaces and a `__` or `.` (`flop_count_sp.sum`); display
            // names (`Duration`, `Compute (SM) Throughput`) are qualified by their section.
            let is_raw = !metric_name.contains(' ')
                && (metric_name.contains("__") || metric_name.contains('.'));
            let qualified;
            let metric_key = if is_raw {
                metric_name
            } else {
                qualified = format!("{}::{metric_name}", section_name.unwrap_or(""));
                qualified.as_str()
            };
            if !(self.keep)(metric_key) || out[idx].metrics.contains_key(metric_key) {
                continue;
            }
            let key = self.interner.get(metric_key);
            let section = section_name.map(|s| self.interner.get(s));
            let unit = self.interner.get(row.get(c.unit).unwrap_or(""));
            let m = self.metric(section, unit, row.get(c.value).unwrap_or(""));
            out[idx].metrics.insert(key, m);
        }
        Ok(out
            .into_values()
            .map(|mut r| {
                r.metrics.shrink_to_fit();
                r
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/stage2/ncu"
    );

    fn open(rel: &str) -> std::fs::File {
        std::fs::File::open(format!("{DIR}/{rel}")).expect("fixture present")
    }

    #[test]
    fn raw_h200_skips_program_output_and_reads_units_row() {
        // Values read from shared/fixtures/ncu-h200-tch-matmul/ncu_raw.csv (2 launches, 614 columns).
        let (layout, recs) = parse(open("h200/ncu_raw.csv")).expect("parses");
        assert_eq!(layout, Layout::Raw);
        assert_eq!(recs.len(), 2);
        let k = &recs[0];
        assert_eq!(
            k.kernel_name,
            "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"
        );
        assert_eq!(k.nvtx_ranges, vec!["matmul-loop".to_string()]);
        assert_eq!(k.cc.as_deref(), Some("9.0"));
        assert_eq!(k.number("gpu__time_duration.sum"), Some(1_656_768.0));
        assert_eq!(k.metrics["gpu__time_duration.sum"].unit, Unit::Nanoseconds);
        assert_eq!(
            k.number("dram__bytes.sum.per_second"),
            Some(847_457_024_761.46)
        );
        assert_eq!(
            k.metrics["dram__bytes.sum.per_second"].unit,
            Unit::BytesPerSecond
        );
        assert_eq!(
            k.number("device__attribute_multiprocessor_count"),
            Some(132.0)
        );
        assert_eq!(
            k.number("device__attribute_global_memory_bus_width"),
            Some(6016.0)
        );
        assert!(
            matches!(k.metrics["device__attribute_display_name"].value, Value::Text(ref s) if s == "NVIDIA H200")
        );
        assert!(
            matches!(k.metrics["derived__local_spilling_requests_pct"].value, Value::Missing(ref s) if s == "no data")
        );
        assert_eq!(recs[1].number("gpu__time_duration.sum"), Some(1_646_304.0));
    }

    #[test]
    fn long_rtx5090_converts_mbyte_and_us() {
        // kernel_0001 (a cuBLAS GEMV) of shared/fixtures/llm-perf-opt-rtx5090/ncu: 2.33 Mbyte read,
        // 0 byte written, 6.46 us.
        let (layout, recs) =
            parse(open("rtx5090/kernel_0001_gemv/ncu.metrics.csv")).expect("parses");
        assert_eq!(layout, Layout::Long);
        assert_eq!(recs.len(), 1);
        let k = &recs[0];
        assert!(k.kernel_name.contains("cublasGemvParamsEx"));
        assert_eq!(k.metrics["dram__bytes_read.sum"].unit, Unit::Bytes);
        assert_eq!(k.metrics["dram__bytes_read.sum"].raw_unit, "Mbyte");
        assert_eq!(k.number("dram__bytes_read.sum"), Some(2.33e6));
        assert_eq!(k.number("dram__bytes_write.sum"), Some(0.0));
        assert!((k.number("gpu__time_duration.sum").expect("duration") - 6460.0).abs() < 1e-6);
        assert!(
            (k.number("GPU Speed Of Light Throughput::Duration")
                .expect("duration")
                - 6460.0)
                .abs()
                < 1e-6
        );
        assert!(matches!(
            k.metrics["flop_count_sp.sum"].value,
            Value::Missing(_)
        ));
        assert_eq!(
            k.number("sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
            Some(0.0)
        );
    }

    #[test]
    fn long_h200_details_with_prof_lines() {
        let (layout, recs) = parse(open("h200/ncu_details.csv")).expect("parses");
        assert_eq!(layout, Layout::Long);
        assert_eq!(recs.len(), 1);
        assert_eq!(
            recs[0].number("GPU Speed Of Light Throughput::Duration"),
            Some(1_655_136.0)
        );
        assert_eq!(
            recs[0].number("GPU Speed Of Light Throughput::SM Frequency"),
            Some(1_335_119_213.77)
        );
        assert_eq!(
            recs[0].number("GPU Speed Of Light Throughput::Compute (SM) Throughput"),
            Some(93.46)
        );
    }

    #[test]
    fn not_ncu() {
        assert!(matches!(
            parse("a,b\n1,2\n".as_bytes()),
            Err(Error::NoHeader)
        ));
    }

    #[test]
    fn nvtx_cell() {
        assert_eq!(
            nvtx_ranges("445  \"<default domain>:decode:none:none:none:none:none:none\" \"<default domain>:layer:none:none:none:none:none:none\" "),
            vec!["decode".to_string(), "layer".to_string()]
        );
        // A tensor-parallel rank's kernel (2 x H200, session 35): NCCL's range comes last.
        assert_eq!(
            nvtx_ranges("864  \"<default domain>:decode:none:none:none:none:none:none\"  \"<default domain>:decode_step:none:none:none:none:none:none\"  \"NCCL:ncclCommInitRank:none:none:none:none:REGISTERED:ncclCommInitRank\" "),
            vec!["decode".to_string(), "decode_step".to_string()]
        );
        // Only other domains: theirs.
        assert_eq!(
            nvtx_ranges("1  \"NCCL:ncclAllReduce:none:none:none:none:none:none\" "),
            vec!["ncclAllReduce".to_string()]
        );
    }
}
