use super::*;

#[test]
fn a_module_path_selects_the_modules_inside_it() {
    let wanted = ["layer.attention".to_string(), "lm_head".to_string()];
    assert!(module_within("layer.attention.core", &wanted));
    assert!(module_within("layer.attention", &wanted));
    assert!(module_within("lm_head", &wanted));
    assert!(!module_within("layer.attentions", &wanted));
    assert!(!module_within("layer.mlp.down", &wanted));
}

#[test]
fn top_k_skips_copies_collectives_and_duplicates() {
    let rows = vec![
        ("Memcpy HtoD (Pageable -> Device)".to_string(), 100.0),
        (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                .to_string(),
            80.0,
        ),
        ("void a::k<1>(int)".to_string(), 50.0),
        ("void a::k<2>(int)".to_string(), 40.0),
        ("gemm".to_string(), 10.0),
        ("small".to_string(), 1.0),
    ];
    assert_eq!(
        top_k_names(&rows, 2),
        vec!["k".to_string(), "gemm".to_string()]
    );
}

#[test]
fn nvtx_includes_cover_nested_regions() {
    use crate::model::deepseek_ocr::{REGIONS, SAM};
    use crate::region::{DECODE, PREFILL};
    assert_eq!(
        REGIONS.nvtx_includes(DECODE),
        vec!["decode/".to_string(), "decode/decode_step/".to_string()]
    );
    assert_eq!(REGIONS.nvtx_path(SAM), "prefill/vision/sam/");
    assert_eq!(REGIONS.nvtx_includes(PREFILL).len(), 6);
}

#[test]
fn kernel_regex_matches_ncu_function_names() {
    let re = regex::Regex::new(&kernel_regex("elementwise_kernel")).unwrap();
    assert!(re.is_match("elementwise_kernel"));
    assert!(re.is_match("at::native::elementwise_kernel<128, 4>"));
    assert!(!re.is_match("vectorized_elementwise_kernel"));
}
