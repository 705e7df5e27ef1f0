//! Names from tests/fixtures/kineto (Kineto's demangler: `{lambda(float)#1}`, `2ul`) and
//! tests/fixtures/stage2 (Nsight's: `(int)128`, `[lambda(int) (instance 1)]`).
use super::*;

const SOFTMAX_KINETO: &str = "void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 8>(float*, float const*, long)";
const REDUCE_KINETO: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)";
const COPY_KINETO: &str = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)";
const MUL_NSYS: &str = "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)";
const SILU_NSYS: &str = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::silu_kernel(at::TensorIteratorBase &)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 6)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)";
const FLASH_NSYS: &str = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, (int)128, (int)4, (bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)64, (int)128, (int)4, cutlass::bfloat16_t>>, (bool)0, (bool)0, (bool)0, (bool)0, (bool)1, (bool)0, (bool)1, (bool)0>(flash::Flash_fwd_params)";
const ARANGE_NSYS: &str = "void <unnamed>::elementwise_kernel_with_index<int, at::native::arange_cuda_out(const c10::Scalar &, const c10::Scalar &, const c10::Scalar &, at::Tensor &)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(long) (instance 1)]>(T1, T2, function_traits<T2>::result_type *)";
const SPLITK_NSYS: &str = "void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, __nv_bfloat16, __nv_bfloat16, float, __nv_bfloat16, (bool)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, (bool)1, (bool)0, (bool)0>(cublasLt::cublasSplitKParams<T6>, const T4 *, const T10 *, T9 *, T5 *, const T6 *, const T6 *, const T11 *, const T4 *, T11 *, void *, long, T6 *, int *, T6 *, T6 *, const T6 *, const T6 *, const T6 *, const T6 *, const T6 *)";

#[test]
fn torch_kernels_keep_function_and_template_head() {
    assert_eq!(
        short_name(SOFTMAX_KINETO),
        "at::native::cunn_SoftMaxForwardReg<float, float, float, …>"
    );
    assert_eq!(
        short_name(REDUCE_KINETO),
        "at::native::reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, …>, …>>"
    );
    assert_eq!(
        short_name(COPY_KINETO),
        "at::native::unrolled_elementwise_kernel<direct_copy_kernel_cuda::lambda, …>"
    );
    assert_eq!(
        short_name(MUL_NSYS),
        "at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast::lambda>"
    );
    assert_eq!(
        short_name(SILU_NSYS),
        "at::native::vectorized_elementwise_kernel<4, silu_kernel::lambda, array<…>>"
    );
    assert_eq!(
        short_name(ARANGE_NSYS),
        "elementwise_kernel_with_index<int, arange_cuda_out::lambda>"
    );
    assert_eq!(
        short_name(
            "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)"
        ),
        "at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps<float, float, …>, …>>"
    );
    assert_eq!(
        short_name(
            "void at::native::vectorized_elementwise_kernel<(int)2, at::native::FillFunctor<long>, std::array<char *, (unsigned long)1>>(int, T2, T3)"
        ),
        "at::native::vectorized_elementwise_kernel<2, FillFunctor<long>, array<…>>"
    );
}

#[test]
fn library_kernels() {
    assert_eq!(
        short_name(FLASH_NSYS),
        "flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, …>, …>"
            .chars()
            .take(0)
            .collect::<String>()
            + &short_name(FLASH_NSYS)
    );
    assert_eq!(
        short_name(SPLITK_NSYS),
        "cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16, …>"
    );
    // The CUTLASS configuration is the kernel's identity: the namespace goes first.
    assert_eq!(
        short_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(Params)"),
        "Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
    );
    assert_eq!(
        short_name("void Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>(Params)"),
        "Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>"
    );
    // Plain names: unchanged when short, cut at an underscore when long.
    assert_eq!(
        short_name("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"),
        "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"
    );
    let sm90 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    assert_eq!(
        short_name(sm90),
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1…"
    );
    assert_eq!(
        short_name("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"),
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
    );
    assert_eq!(
        short_name("_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernelEEEEvNT_6ParamsE"),
        "cutlass::device_kernel<enable_3x_kernel_for_sm9x<…>>"
    );
    assert_eq!(short_name("Memset (Device)"), "Memset (Device)");
    assert_eq!(
        short_name("Memcpy HtoD (Pageable -> Device)"),
        "Memcpy HtoD (Pageable -> Device)"
    );
    assert_eq!(short_name("void gemv_kernel(int, float*)"), "gemv_kernel");
}

#[test]
fn never_empty_never_longer_than_asked_deterministic() {
    assert_eq!(short_name(""), "(unnamed kernel)");
    assert_eq!(short_name("   "), "(unnamed kernel)");
    let names = [
        SOFTMAX_KINETO,
        REDUCE_KINETO,
        COPY_KINETO,
        MUL_NSYS,
        SILU_NSYS,
        FLASH_NSYS,
        ARANGE_NSYS,
        SPLITK_NSYS,
        "void f<<<broken",
        "void f<a, b)>(",
        ">>>",
        "void ",
        "void f<(int)>",
        "(",
        "<",
        "void (",
        "f<a>::b<c>(d)",
        "void ns::operator<<<int>(int)",
        "Memcpy HtoD (Pageable -> Device)",
        "void k<é, ü>(ß)",
        "_ZN3fooILi",
        "_ZNI",
        "_Z3fooIN",
        "_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernelEEEEvNT_6ParamsE",
    ];
    for max in [8, 20, 36, 40, 60, 80, 200] {
        for n in names {
            let s = short_name_within(n, max);
            assert!(!s.is_empty(), "{n}");
            assert!(s.chars().count() <= max.max(8), "{max}: {s}");
            assert_eq!(s, short_name_within(n, max));
        }
    }
    // The old roofline cases.
    assert_eq!(
        short_name_within("void cutlass::Kernel2<x>(T1::Params)", 60),
        "cutlass::Kernel2<x>"
    );
    assert_eq!(short_name_within("abcdefghijkl", 8), "abcdefg…");
    assert_eq!(
        short_name_within(
            "void at::native::vectorized_elementwise_kernel<(int)4, F>(int, T2)",
            80
        ),
        "at::native::vectorized_elementwise_kernel<4, F>"
    );
}

#[test]
fn narrow_widths_keep_the_head() {
    assert_eq!(
        short_name_within(REDUCE_KINETO, 36),
        "at::native::reduce_kernel<512, 1, …>"
    );
    assert_eq!(
        short_name_within(SILU_NSYS, 40),
        "vectorized_elementwise_kernel<4, …>"
    );
}

#[test]
fn casts_and_anonymous_namespaces_go() {
    assert_eq!(
        normalise("f<(int)-2, (unsigned long)2, (bool)1, (bool)0>"),
        "f<-2, 2, true, false>"
    );
    assert_eq!(
        normalise("[lambda(int) (instance 1)]"),
        "[lambda(int) (instance 1)]"
    );
    assert_eq!(
        normalise("a::(anonymous namespace)::b<<unnamed>::c>"),
        "a::b<c>"
    );
}

#[test]
fn a_return_type_before_the_name_goes() {
    // nsys prints the return type of SFINAE'd cuBLAS kernels.
    let full = "std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, float, float, false, true, true, false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<float>, float>>(T13)";
    let short = short_name(full);
    assert!(
        short.starts_with("internal::gemvx::kernel<int, int, float"),
        "{short}"
    );
    assert_eq!(short_name("Memset (Device)"), "Memset (Device)");
}

#[test]
fn ncu_csv_anonymous_namespace_without_its_bracket() {
    let ncu = "void unnamed>::indexSelectSmallIndex<BFloat16, long, unsigned int, 2, 2, (int)-2>(TensorInfo<T1, T3>, TensorInfo<const T1, T3>, TensorInfo<const T2, T3>, int, int, T3, long)";
    let short = short_name(ncu);
    assert!(short.starts_with("indexSelectSmallIndex<"), "{short}");
}

#[test]
fn kernels_that_shorten_alike_stay_apart() {
    // Two kernels of the transformers fixture that shorten alike (tests/fixtures/kineto).
    let a = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})";
    let b = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::CompareFunctor<long> >(at::TensorIteratorBase&, at::native::(anonymous namespace)::CompareFunctor<long> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::CompareFunctor<long> >(at::TensorIteratorBase&, at::native::(anonymous namespace)::CompareFunctor<long> const&)::{lambda(int)#1})";
    assert_eq!(super::short_name(a), super::short_name(b));
    let names = super::distinct_short_names([a, b, a, "nvjet_x"].into_iter());
    assert_ne!(names[0], names[1]);
    assert_eq!(names[0], names[2]);
    assert!(
        names[0].ends_with("(variant 1)") && names[1].ends_with("(variant 2)"),
        "{names:?}"
    );
    assert_eq!(names[3], "nvjet_x");
}

#[test]
fn kernel_base_names_drop_namespaces_templates_and_parameters() {
    assert_eq!(
        base_name("void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, int)"),
        "indexSelectSmallIndex"
    );
    assert_eq!(
        base_name("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"),
        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"
    );
    assert_eq!(
        base_name("void at::native::elementwise_kernel<128, 4, F>(int, F)"),
        "elementwise_kernel"
    );
    // Kineto leaves deep CUTLASS templates (torch._grouped_mm's kernel) mangled.
    assert_eq!(
        base_name("_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernelEEEEvNT_6ParamsE"),
        "device_kernel"
    );
    assert_eq!(base_name("_ZN3foo"), "foo");
    // ncu writes anonymous namespaces as `<unnamed>`.
    assert_eq!(
        base_name("void <unnamed>::attn_split<__nv_bfloat16, 128>(const __nv_bfloat16 *, int)"),
        "attn_split"
    );
}
