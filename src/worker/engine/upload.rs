//! Small host arrays (token ids, slot indices, pad lengths) to the device without holding the
//! host: through page-locked memory, as an asynchronous copy queued on the current stream. A
//! copy from pageable memory waits for everything queued before it, so one issued after the
//! vision pass's launches would hold the host until vision ends (reports/performance-history.md,
//! sessions 12 and 13).
use anyhow::Result;
use tch::{Device, Kind, Tensor};

/// `values` as an int64 tensor on `device`; on a GPU copied asynchronously from page-locked
/// memory (libtorch keeps that buffer until the copy has run).
pub fn ints_to_device(values: &[i64], device: Device) -> Result<Tensor> {
    let host = Tensor::f_from_slice(values)?;
    if !device.is_cuda() {
        return Ok(host.f_to_device(device)?);
    }
    Ok(crate::ffi::host_memory::pinned(&host)?.f_to_device_(device, Kind::Int64, true, false)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_arrive_on_the_cpu() {
        let t = ints_to_device(&[3, -1, 7], Device::Cpu).unwrap();
        assert_eq!(Vec::<i64>::try_from(&t).unwrap(), [3, -1, 7]);
    }

    /// Asynchronous copies queued behind other work still deliver their values.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -- --ignored on the GPU machine"]
    fn values_arrive_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let busy = Tensor::randn([2048, 2048], (Kind::Float, dev));
        let _ = busy.matmul(&busy).matmul(&busy);
        let values: Vec<i64> = (0..1000).map(|i| i * 7 - 300).collect();
        let t = ints_to_device(&values, dev).unwrap();
        assert_eq!(
            Vec::<i64>::try_from(&t.to_device(Device::Cpu)).unwrap(),
            values
        );
    }
}
