//! Host tensors as inputs of a CUDA graph: a copy from page-locked host memory to the GPU made
//! inside a capture ([`copy_into`]) becomes a node of the graph, recorded here
//! ([`recording`]), so that [`super::shape_graphs::ShapeGraphs`] can point it at each replay's
//! host input. The copy then runs inside the replay, where it can overlap the graph's other
//! work (the vision pass uploads its second group of views while the first one computes),
//! instead of before it.
use crate::ffi::cuda_graph::{self, CapturedUpload};
use crate::ffi::streams;
use anyhow::{bail, ensure, Context, Result};
use std::cell::RefCell;
use tch::{Device, Tensor};

thread_local! {
    /// The uploads of the capture in progress on this thread, while one records them.
    static RECORDED: RefCell<Option<Vec<CapturedUpload>>> = const { RefCell::new(None) };
}

/// Copies `src` into `dst` (same shape and dtype), without blocking the host where the copy
/// allows it. A host → GPU copy while the current stream captures a graph is captured as an
/// upload node of the graph and recorded for [`recording`]; its source must then be
/// page-locked and dense.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let host_to_gpu = src.device() == Device::Cpu && dst.device().is_cuda();
    if host_to_gpu && streams::capturing()? {
        let upload = cuda_graph::capture_upload(dst, src)
            .context("capturing a host-to-GPU copy in a CUDA graph")?;
        return RECORDED.with(|r| match r.borrow_mut().as_mut() {
            Some(uploads) => {
                uploads.push(upload);
                Ok(())
            }
            None => bail!(
                "a host tensor was copied to the GPU inside a CUDA graph capture that does not \
                 take host inputs; its replays would read the capture's host memory"
            ),
        });
    }
    Ok(crate::ffi::host_memory::copy_async(dst, src)?)
}

/// `body()` and the uploads [`copy_into`] captured while it ran (on this thread).
pub fn recording<T>(body: impl FnOnce() -> Result<T>) -> Result<(T, Vec<CapturedUpload>)> {
    /// Puts the recorder of an enclosing call back, also when `body` panics.
    struct Restore(Option<Option<Vec<CapturedUpload>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                RECORDED.with(|r| *r.borrow_mut() = outer);
            }
        }
    }
    let mut restore = Restore(Some(RECORDED.with(|r| r.borrow_mut().replace(Vec::new()))));
    let result = body();
    let outer = restore.0.take().unwrap_or_default();
    let uploads = RECORDED.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    Ok((result?, uploads.unwrap_or_default()))
}

/// The bytes `t` occupies from its data pointer on (a dense tensor's whole memory).
pub fn byte_range(t: &Tensor) -> (usize, usize) {
    (
        t.data_ptr() as usize,
        t.numel() * t.kind().elt_size_in_bytes(),
    )
}

/// Whether no two of `tensors` overlap in memory ([`byte_range`]).
pub fn disjoint<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> bool {
    let mut ranges: Vec<(usize, usize)> = tensors.into_iter().map(byte_range).collect();
    ranges.sort_unstable();
    ranges.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0)
}

/// The strides of `t` when its rows (dimension 0) are dense blocks of memory, one after the
/// other: then pieces of such rows gather into a tensor of the same layout by plain copies.
pub fn dense_rows_strides(t: &Tensor) -> Option<Vec<i64>> {
    let (size, stride) = (t.size(), t.stride());
    let mut dims: Vec<(i64, i64)> = size
        .iter()
        .zip(&stride)
        .skip(1)
        .filter(|(&n, _)| n != 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    dims.sort_unstable();
    let mut expected = 1;
    for (s, n) in dims {
        if s != expected {
            return None;
        }
        expected *= n;
    }
    let (&rows, &row_stride) = (size.first()?, stride.first()?);
    if rows > 1 && row_stride != expected {
        return None;
    }
    let mut out = stride;
    out[0] = expected;
    Some(out)
}

/// The rows of `pieces` (same shape past the first dimension, same dtype and layout) one after
/// the other, on `device`: the piece itself when it is the only one and already there, else a
/// new tensor in the pieces' layout that each piece is copied into ([`copy_into`]; inside a
/// capture, host pieces become upload nodes).
pub fn gather(pieces: &[Tensor], device: Device) -> Result<Tensor> {
    let first = pieces.first().context("nothing to gather")?;
    if let [one] = pieces {
        if one.device() == device {
            return Ok(one.shallow_clone());
        }
    }
    for (i, p) in pieces.iter().enumerate() {
        ensure!(
            p.kind() == first.kind() && p.size().get(1..) == first.size().get(1..),
            "piece {i} to gather is {:?} {:?}, unlike the first piece's {:?} {:?}",
            p.kind(),
            p.size(),
            first.kind(),
            first.size()
        );
    }
    let mut shape = first.size();
    shape[0] = pieces.iter().map(|p| p.size()[0]).sum();
    let options = (first.kind(), device);
    let out = match dense_rows_strides(first) {
        Some(strides) => Tensor::f_empty_strided(&shape, &strides, options)?,
        None => Tensor::f_empty(&shape, options)?,
    };
    let mut row = 0;
    for p in pieces {
        let n = p.size()[0];
        copy_into(&out.f_narrow(0, row, n)?, p)?;
        row += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn gather_stacks_pieces_in_order_on_the_cpu() {
        let a = Tensor::arange(6, (Kind::Int64, Device::Cpu)).view([2, 3]);
        let b = Tensor::arange(3, (Kind::Int64, Device::Cpu)).view([1, 3]) + 100;
        let got = gather(&[a.shallow_clone(), b.shallow_clone()], Device::Cpu).unwrap();
        assert!(got.equal(&Tensor::cat(&[&a, &b], 0)));
        // Channels-last rows keep their layout.
        let cl = Tensor::arange(2 * 3 * 4 * 5, (Kind::Int64, Device::Cpu))
            .view([2, 4, 5, 3])
            .permute([0, 3, 1, 2]);
        assert_eq!(dense_rows_strides(&cl), Some(vec![60, 1, 15, 3]));
        let both = gather(&[cl.narrow(0, 1, 1), cl.narrow(0, 0, 1)], Device::Cpu).unwrap();
        assert_eq!(both.stride(), cl.stride());
        assert!(both.equal(&Tensor::cat(&[cl.narrow(0, 1, 1), cl.narrow(0, 0, 1)], 0)));
        // A transposed matrix's rows are not dense blocks.
        assert_eq!(dense_rows_strides(&a.tr()), None);
        // One piece already on the device is passed through, not copied.
        let same = gather(&[a.shallow_clone()], Device::Cpu).unwrap();
        assert_eq!(same.data_ptr(), a.data_ptr());
    }

    #[test]
    fn recording_outside_a_capture_records_nothing() {
        let src = Tensor::ones([4], (Kind::Float, Device::Cpu));
        let dst = Tensor::zeros([4], (Kind::Float, Device::Cpu));
        let ((), uploads) = recording(|| copy_into(&dst, &src)).unwrap();
        assert!(uploads.is_empty());
        assert!(dst.equal(&src));
    }

    /// A nested recording, a failing one and a panicking one each leave the enclosing
    /// recorder as it was; outside any recording there is none.
    #[test]
    fn recording_restores_the_enclosing_recorder() {
        let active = || RECORDED.with(|r| r.borrow().is_some());
        let ((), _) = recording(|| {
            assert!(active());
            assert!(recording(|| -> Result<()> { bail!("inner failure") }).is_err());
            assert!(active());
            let caught = std::panic::catch_unwind(|| recording(|| -> Result<()> { panic!("x") }));
            assert!(caught.is_err() && active());
            Ok(())
        })
        .unwrap();
        assert!(!active());
    }

    #[test]
    fn disjoint_tells_shared_memory() {
        let a = Tensor::zeros([4, 3], (Kind::Float, Device::Cpu));
        let b = Tensor::zeros([4, 3], (Kind::Float, Device::Cpu));
        assert!(disjoint([&a, &b]));
        assert!(!disjoint([&a, &b, &a]));
        // Overlapping rows of one tensor, and its two halves.
        assert!(!disjoint([&a.narrow(0, 0, 2), &a.narrow(0, 1, 2)]));
        assert!(disjoint([&a.narrow(0, 0, 2), &a.narrow(0, 2, 2)]));
    }

    #[test]
    fn gather_refuses_pieces_of_other_shapes() {
        let a = Tensor::zeros([1, 3], (Kind::Float, Device::Cpu));
        let b = Tensor::zeros([1, 4], (Kind::Float, Device::Cpu));
        let e = format!("{:#}", gather(&[a, b], Device::Cpu).unwrap_err());
        assert!(e.contains("piece 1"), "{e}");
    }
}
