//! Model implementations (tensor code only: no timers, no NVTX, no reports), one folder per
//! model family.
pub mod deepseek_ocr;
