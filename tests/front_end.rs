//! Integration tests of the front end (`llmprof` alone, no libtorch in this test binary): the
//! command line, Hydra conformance, bad inputs, the bootstrap scripts, the Nsight parsers.
//! Each test module lives in tests/front_end/: a file's folder names the binary that runs it;
//! `support` (tests/support.rs) is shared with the other binary.
mod support;

mod front_end {
    mod analyze_trace;
    mod bad_input;
    mod bad_model_input;
    mod bootstrap;
    mod bounded_inputs;
    mod cli;
    mod compare;
    mod conformance;
    mod dense_presets;
    mod fake_hub;
    mod fuzz_compose;
    mod fuzz_gen;
    mod fuzz_interpolation;
    mod fuzz_overrides;
    mod fuzz_parsers;
    mod fuzz_support;
    mod hub;
    mod hub_hostile;
    mod hydra_groups_settings;
    mod launchers;
    mod nsight_fuzz;
    mod report;
    mod report_hostile;
    mod stage2;
    mod variants;
    mod verify_script;
}
