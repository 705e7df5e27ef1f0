//! `model.optim` of the dense_decoder family: none of its own yet. Its fast path is the engine's
//! and the shared decoder layers' (`runtime.optim`); a switch only this family has goes here,
//! with its presets in conf/model/dense_decoder/optim/{fast,eager}.yaml.
use crate::optim::{preset, EngineOptim, FamilyOptions};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DenseOptim {}

impl FamilyOptions for DenseOptim {
    fn preset(name: &str) -> Result<Self, String> {
        preset::read(
            "conf/model/dense_decoder/optim",
            include_str!("../../../../conf/model/dense_decoder/optim/fast.yaml"),
            include_str!("../../../../conf/model/dense_decoder/optim/eager.yaml"),
            None,
            name,
        )
    }

    fn check(&self, _engine: &EngineOptim) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_presets_read() {
        assert_eq!(DenseOptim::preset("fast").unwrap(), DenseOptim {});
        assert_eq!(DenseOptim::preset("eager").unwrap(), DenseOptim {});
        assert!(DenseOptim::preset("turbo").is_err());
    }
}
