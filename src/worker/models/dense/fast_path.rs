//! The fast-path check (`engine::fast_path_check`) on a dense decoder: seeded weights
//! under the official names, every switch except the MoE one.
use super::Switches;
use super::{checkpoint, DenseLm};
use crate::engine::fast_path_check::CheckSubject;
use anyhow::Result;
use llmprof::model::dense::DenseArch;
use std::collections::HashMap;
use tch::{Device, Kind, Tensor};

pub struct Subject {
    pub arch: DenseArch,
    pub device: Device,
    pub seed: i64,
}

impl CheckSubject for Subject {
    type Own = llmprof::model::dense::DenseOptim;
    type Weights = (HashMap<String, Tensor>, Kind);
    type Model = DenseLm;
    fn weights_f32(&self) -> Result<Self::Weights> {
        Ok((
            checkpoint::synthetic(&self.arch, self.seed, self.device, Kind::Float)?,
            Kind::Float,
        ))
    }
    fn to_kind(&self, w: &Self::Weights, kind: Kind) -> Result<Self::Weights> {
        let t =
            w.0.iter()
                .map(|(n, t)| Ok((n.clone(), t.f_to_kind(kind)?)))
                .collect::<Result<_>>()?;
        Ok((t, kind))
    }
    fn build(&self, w: &Self::Weights, optim: &Switches) -> Result<DenseLm> {
        DenseLm::load(&w.0, &self.arch, self.device, w.1, optim)
    }
}
