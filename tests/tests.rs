//! Integration tests: one binary (see docs/style.md), one `mod` per area.

mod region {
    use llmprof::region::Region;

    #[test]
    fn nvtx_names() {
        assert_eq!(Region::DecodeStep.nvtx_name(), "decode_step");
    }
}
