//! The one table of tensor element types: the name reports use, the bytes per element the
//! analytic byte counts use, and the precision whose peak FLOP/s MFU divides by.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    #[serde(rename = "fp32")]
    F32,
    #[serde(rename = "bf16")]
    Bf16,
    #[serde(rename = "fp16")]
    F16,
}

impl Dtype {
    /// The spelling in reports and metrics.json (`fp32`, `bf16`, `fp16`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "fp16",
        }
    }

    /// The type a report spelling names (`fp32`, `bf16`, `fp16`).
    pub fn from_name(name: &str) -> Option<Dtype> {
        [Dtype::F32, Dtype::Bf16, Dtype::F16]
            .into_iter()
            .find(|d| d.name() == name)
    }

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 | Dtype::F16 => 2,
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes() {
        assert_eq!((Dtype::F32.name(), Dtype::F32.bytes()), ("fp32", 4));
        assert_eq!((Dtype::Bf16.name(), Dtype::Bf16.bytes()), ("bf16", 2));
        assert_eq!(serde_json::to_string(&Dtype::F16).unwrap(), "\"fp16\"");
        assert_eq!(Dtype::from_name("bf16"), Some(Dtype::Bf16));
        assert_eq!(Dtype::from_name("f32"), None);
    }
}
