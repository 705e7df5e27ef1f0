//! Integration tests, one binary (each extra test binary would link libtorch again).
mod bad_input;
mod bootstrap;
mod conformance;
mod front_end;
mod infer;
mod kineto;
mod stage1;
mod stage2;
mod support;

mod region {
    use llmprof::region::Region;

    #[test]
    fn nvtx_names() {
        assert_eq!(Region::DecodeStep.nvtx_name(), "decode_step");
    }
}
