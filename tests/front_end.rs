//! Integration tests of the front end (`llmprof` alone, no libtorch in this test binary): the
//! command line, Hydra conformance, bad inputs, the bootstrap scripts, the Nsight parsers.
mod bad_input;
mod bootstrap;
mod bounded_inputs;
mod cli;
mod conformance;
mod fuzz_compose;
mod fuzz_gen;
mod fuzz_interpolation;
mod fuzz_overrides;
mod fuzz_support;
mod nsight_fuzz;
mod report;
mod stage2;
mod support;
