//! Workload models (tensor code only: no timers, no NVTX, no reports).
pub mod deepseek_ocr;
