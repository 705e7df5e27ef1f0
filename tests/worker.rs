//! Integration tests that need libtorch or run the model: stage 1 and infer end to end on the
//! CPU, run directories and multirun, the Kineto session. One binary: each extra one would link
//! libtorch again.
//! Each test module lives in tests/worker/: a file's folder names the binary that runs it;
//! `support` (tests/support.rs) is shared with the other binary.
mod support;

mod worker {
    mod bench_table;
    mod deepseek_ocr2;
    mod dense_models;
    mod faults;
    mod first_contact;
    mod hf_parity;
    mod hta;
    mod infer;
    mod kineto;
    mod run_dirs;
    mod signals;
    mod stage1;
    mod tensor_parallel;
}
