//! The precisions a kernel's FLOPs are counted in (ncu's pipe counters), each with its own roof.
use serde::Serialize;

/// Precision of counted FLOPs; `Tensor*` are tensor-core paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Fp64,
    Fp32,
    Fp16,
    TensorFp64,
    TensorTf32,
    TensorFp16,
    TensorBf16,
    TensorFp8,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp64 => "fp64",
            Self::Fp32 => "fp32",
            Self::Fp16 => "fp16",
            Self::TensorFp64 => "tensor_fp64",
            Self::TensorTf32 => "tensor_tf32",
            Self::TensorFp16 => "tensor_fp16",
            Self::TensorBf16 => "tensor_bf16",
            Self::TensorFp8 => "tensor_fp8",
        }
    }

    pub fn is_tensor(self) -> bool {
        matches!(
            self,
            Self::TensorFp64
                | Self::TensorTf32
                | Self::TensorFp16
                | Self::TensorBf16
                | Self::TensorFp8
        )
    }
}
