//! Device and element type of a run, shared by every model: `device=auto|cpu|cuda|cuda:N` and
//! `model.dtype=auto|bf16|f32` mapped onto libtorch's `Device` and `Kind`.
use anyhow::{bail, Result};
use llmprof::dtype::Dtype;
use llmprof::spec::{DtypeChoice, RunSpec};
use tch::{Device, Kind};

/// The device `spec.device` names; `auto` is the first GPU when libtorch sees one. A GPU is also
/// made the current CUDA device: streams, CUDA events and graph captures use the current one.
pub fn device_from_spec(spec: &RunSpec) -> Result<Device> {
    let device = named_device(spec)?;
    if let Device::Cuda(i) = device {
        crate::ffi::set_current_cuda_device(i)?;
    }
    Ok(device)
}

/// The device `spec.device` names.
fn named_device(spec: &RunSpec) -> Result<Device> {
    let cuda = tch::Cuda::is_available();
    Ok(match spec.device.as_str() {
        "auto" => {
            if cuda {
                Device::Cuda(0)
            } else {
                Device::Cpu
            }
        }
        "cpu" => Device::Cpu,
        d => {
            let idx: usize = d
                .strip_prefix("cuda:")
                .map(|n| n.parse())
                .transpose()?
                .unwrap_or(0);
            if !cuda {
                bail!("device={d} was requested but no CUDA GPU is visible to libtorch\n  fix: run on a GPU machine, or use device=auto / device=cpu (CPU runs use the tiny model)");
            }
            let n = tch::Cuda::device_count() as usize;
            if idx >= n {
                bail!(
                    "device={d}: only {n} CUDA device(s) are visible (valid: cuda:0..cuda:{})",
                    n.saturating_sub(1)
                );
            }
            Device::Cuda(idx)
        }
    })
}

/// The element type `model.dtype` asks for on `device`: `auto` is bf16 on a GPU, fp32 on the CPU.
pub fn dtype_for(choice: DtypeChoice, device: Device) -> Dtype {
    match (choice, device) {
        (DtypeChoice::Auto, Device::Cpu) | (DtypeChoice::F32, _) => Dtype::F32,
        (DtypeChoice::Auto, _) | (DtypeChoice::Bf16, _) => Dtype::Bf16,
    }
}

/// libtorch's kind for `dtype`.
pub fn kind(dtype: Dtype) -> Kind {
    match dtype {
        Dtype::F32 => Kind::Float,
        Dtype::Bf16 => Kind::BFloat16,
        Dtype::F16 => Kind::Half,
    }
}

/// The CUDA device index of `device`, if it is a GPU.
pub fn cuda_index(device: Device) -> Option<usize> {
    match device {
        Device::Cuda(i) => Some(i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_dtype_follows_the_device() {
        assert_eq!(dtype_for(DtypeChoice::Auto, Device::Cpu), Dtype::F32);
        assert_eq!(dtype_for(DtypeChoice::Auto, Device::Cuda(0)), Dtype::Bf16);
        assert_eq!(dtype_for(DtypeChoice::Bf16, Device::Cpu), Dtype::Bf16);
        assert_eq!(kind(Dtype::Bf16), Kind::BFloat16);
        assert_eq!(cuda_index(Device::Cuda(3)), Some(3));
    }
}
