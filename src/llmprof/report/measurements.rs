//! What a stage-1 run measured, as plain data: the input of the report builder
//! ([`super::stage1::build`]). The worker fills it and writes it as measurements.json (a
//! versioned schema, [`SCHEMA`]); the front end builds every report from that file, after the
//! run and again with `llmprof report DIR`. Nothing here needs libtorch, so the builder is
//! unit-tested on hand-made measurements.
use crate::measure::gpu::GpuProps;
use crate::measure::memory::RegionPeak;
use crate::measure::module_tables::ModuleProfile;
use crate::measure::nvml::NvmlTrace;
use crate::measure::op_tables::{KernelRow, OperatorRow};
use crate::model::module_work::ModuleWork;
use crate::model::{BatchWork, GraphStats, ModelInfo, RequestInfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema of measurements.json; a reader refuses any other (the run's llmprof wrote it).
pub const SCHEMA: &str = "llmprof.stage1-measurements/1";

/// Everything stage 1 measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage1Measurements {
    pub model: ModelInfo,
    /// Timer used for region times (`CudaEvents`, `Host`).
    pub clock: String,
    /// Inputs (pages) the run read.
    pub inputs: usize,
    /// One entry per timed request (a batch run once), in run order.
    pub requests: Vec<TimedRequest>,
    pub nvml: Option<NvmlTrace>,
    pub kineto: Option<KinetoSummary>,
    pub memory: Option<MemorySummary>,
    /// The GPU's properties, or why there are none (no GPU, no NVML): an object, or a string.
    #[serde(with = "gpu_or_reason")]
    pub gpu: Result<GpuProps, String>,
    pub graphs: Option<GraphStats>,
    /// What the model states about how its numbers are derived (assumptions.md).
    pub model_assumptions: Vec<String>,
}

/// One timed request: a batch of inputs run once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedRequest {
    /// Index of the batch among the run's batches (repeats of one batch share it).
    pub batch_index: usize,
    pub repeat: u32,
    /// The batch's rows.
    pub rows: Vec<RequestInfo>,
    /// Region → ms for this request (nested regions counted in their parents too).
    pub region_ms: BTreeMap<String, f64>,
    /// Each decode step's forward time, ms.
    pub step_ms: Vec<f64>,
    /// When each token was emitted, ms from the request's start: the end of prefill (first
    /// token), then the end of each decode step. Serving metrics (TTFT, TPOT, ITL) come from it.
    pub token_ms: Vec<f64>,
    pub output_tokens: usize,
    /// Tokens each row generated (its OSL), in row order.
    pub row_output_tokens: Vec<usize>,
    pub decode_steps: usize,
    /// Host unix-ns windows of the prefill and decode regions (for NVML alignment).
    pub windows: Vec<(String, u64, u64)>,
    /// The model's analytic work for this batch and its decode steps.
    pub work: BatchWork,
}

/// What the separate Kineto pass saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KinetoSummary {
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub decode_steps: usize,
    pub events: usize,
    pub operators: Vec<OperatorRow>,
    pub kernels: Vec<KernelRow>,
    /// Sum of Kineto's per-op FLOP counts (ops it knows a formula for: mm, addmm, bmm, conv…).
    pub kineto_flops: u64,
    /// The model's analytic FLOPs of the same pass (its batch and decode steps).
    pub analytic_flops: f64,
    /// GPU time by stage and module (eager work by its module scopes, replayed work by its
    /// graph's capture record); absent in runs from before module attribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modules: Option<ModuleProfile>,
    /// The model's analytic work per module in one decode step of the pass's batch at its mean
    /// context (empty when the model gives none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decode_step_modules: Vec<ModuleWork>,
}

/// Caching-allocator peaks: at the end of the run and per region of the timed requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySummary {
    /// The allocator's own peak counters at the end of the run.
    pub counters: RegionPeak,
    /// Over every reading taken at region boundaries.
    pub overall: RegionPeak,
    pub regions: BTreeMap<String, RegionPeak>,
}

/// Why measurements.json could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0} is not a stage-1 measurements file: {1}")]
    Format(String, serde_json::Error),
    #[error(
        "{path} has schema {found:?}; this llmprof reads {SCHEMA:?}. Rebuild its reports with the \
         llmprof that made the run, or rerun it"
    )]
    Schema { path: String, found: String },
}

impl KinetoSummary {
    /// What stage 2 knows of a kernel from this pass (docs/modules.md): its modules and the
    /// useful-FLOP rules, over the stages `within` accepts. Empty without a module breakdown.
    pub fn kernel_ops(&self, within: impl Fn(&str) -> bool) -> crate::roofline::KernelOps {
        let Some(profile) = &self.modules else {
            return Default::default();
        };
        let stages: Vec<&str> = profile
            .stage_runs
            .keys()
            .map(String::as_str)
            .filter(|s| within(s))
            .collect();
        crate::roofline::module_flops::kernel_ops(profile, &self.decode_step_modules, &stages)
    }
}

impl Stage1Measurements {
    /// measurements.json's text: pretty JSON with `schema` first and a final newline.
    pub fn to_json(&self) -> String {
        let value = serde_json::to_value(self).expect("measurements serialise (string keys only)");
        let mut file = serde_json::Map::new();
        file.insert("schema".into(), SCHEMA.into());
        if let serde_json::Value::Object(fields) = value {
            file.extend(fields);
        }
        serde_json::to_string_pretty(&file).expect("a JSON map serialises") + "\n"
    }

    /// Reads measurements.json, refusing another schema (named before any field it lacks).
    pub fn read(path: &std::path::Path) -> Result<Self, ReadError> {
        let shown = path.display().to_string();
        // A regular file only (a FIFO or device under that name is refused, not waited on).
        let text = crate::dataset::file_kind::read_to_string(path)
            .map_err(|e| ReadError::Io(shown.clone(), e))?;
        let mut value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ReadError::Format(shown.clone(), e))?;
        let schema = value
            .as_object_mut()
            .and_then(|m| m.remove("schema"))
            .and_then(|s| s.as_str().map(str::to_string))
            .unwrap_or_default();
        if schema != SCHEMA {
            return Err(ReadError::Schema {
                path: shown,
                found: schema,
            });
        }
        serde_json::from_value(value).map_err(|e| ReadError::Format(shown, e))
    }
}

/// `Result<GpuProps, String>` as the properties' object, or the reason as a string.
mod gpu_or_reason {
    use super::GpuProps;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Result<GpuProps, String>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Ok(props) => props.serialize(s),
            Err(reason) => reason.serialize(s),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Props(GpuProps),
        Reason(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Result<GpuProps, String>, D::Error> {
        Ok(match Either::deserialize(d)? {
            Either::Props(p) => Ok(p),
            Either::Reason(r) => Err(r),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::nvml::NvmlUnavailable;
    use crate::report::stage1::{build, tests as stage1};

    /// Measurements with every optional part present, a GPU and integer-keyed maps.
    fn full() -> Stage1Measurements {
        let mut m = stage1::measurements();
        m.gpu = Ok(GpuProps {
            name: "NVIDIA H200".into(),
            index: Some(0),
            compute_capability: Some((9, 0)),
            sm_count: Some(132),
            max_mem_clock_mhz: Some(3201.0),
            ..GpuProps::default()
        });
        m.nvml = Some(NvmlTrace {
            device_index: 0,
            interval: std::time::Duration::from_millis(20),
            samples: Vec::new(),
            unavailable: Some(NvmlUnavailable {
                reason: "sampling disabled".into(),
            }),
        });
        m.kineto = Some(KinetoSummary {
            prefill_ms: 24.0,
            decode_ms: 2.0,
            decode_steps: 2,
            events: 7,
            operators: vec![],
            kernels: vec![KernelRow {
                stage: Some("decode".into()),
                name: "sm90_xmma_gemm".into(),
                calls: 3,
                total_ns: 3_000,
                mean_ns: 1_000.0,
                share_of_gpu: 0.1 + 0.2,
                modules: Vec::new(),
            }],
            kineto_flops: 880,
            analytic_flops: 1000.0,
            modules: None,
            decode_step_modules: vec![],
        });
        m.memory = Some(MemorySummary {
            counters: RegionPeak::default(),
            overall: RegionPeak {
                allocated_bytes: 1 << 40,
                reserved_bytes: i64::MAX,
            },
            regions: BTreeMap::new(),
        });
        let mut graphs = GraphStats::default();
        graphs.windows.insert(8, vec![1024, 1280]);
        m.graphs = Some(graphs);
        m
    }

    #[test]
    fn the_file_gives_back_what_was_measured_and_the_same_report() {
        let dir = std::env::temp_dir().join(format!("llmprof-measurements-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = stage1::spec();
        for m in [stage1::measurements(), full()] {
            let text = m.to_json();
            assert!(text.starts_with("{\n  \"schema\": \"llmprof.stage1-measurements/1\""));
            let path = dir.join("measurements.json");
            std::fs::write(&path, &text).unwrap();
            let back = Stage1Measurements::read(&path).unwrap();
            assert_eq!(back.to_json(), text, "every field survives, floats exactly");
            assert_eq!(
                serde_json::to_string(&build(&back, &spec)).unwrap(),
                serde_json::to_string(&build(&m, &spec)).unwrap()
            );
        }
        assert_eq!(full().gpu.unwrap().sm_count, Some(132));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_schema_or_a_bad_file_is_refused_by_name() {
        let dir =
            std::env::temp_dir().join(format!("llmprof-measurements-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("measurements.json");
        let text = stage1::measurements()
            .to_json()
            .replace(SCHEMA, "llmprof.stage1-measurements/9");
        std::fs::write(&path, text).unwrap();
        let e = Stage1Measurements::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("llmprof.stage1-measurements/9") && e.contains("rerun"),
            "{e}"
        );
        std::fs::write(
            &path,
            "{\"schema\": \"llmprof.stage1-measurements/1\", \"clock\": 3}",
        )
        .unwrap();
        let e = Stage1Measurements::read(&path).unwrap_err().to_string();
        assert!(e.contains("is not a stage-1 measurements file"), "{e}");
        let e = Stage1Measurements::read(&dir.join("absent.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("absent.json"), "{e}");
        // A FIFO under the name is refused at once, not read (it would never end).
        let fifo = dir.join("fifo.json");
        crate::dataset::test_util::mkfifo(&fifo);
        let e = Stage1Measurements::read(&fifo).unwrap_err().to_string();
        assert!(e.contains("fifo.json"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
