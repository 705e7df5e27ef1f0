//! Independent calls of one pass (the vision pass's global views and crops) overlapped on two
//! CUDA streams, inside CUDA graphs only (`model.optim.vision_streams`).
//!
//! Why only inside graphs: on an H100 (driver 580), once any kernel has run eagerly on a second
//! stream, every later graph replay in the process leaves ≈ 0.45 µs between its kernels instead
//! of ≈ 0.13 µs, which made each batch-1 decode step (223 kernels) 6 % slower
//! (reports/performance-history.md, "Round 2, session 13"). Replays of a graph whose capture forked
//! onto a second stream do not: so the side stream only ever joins captures, and outside a capture
//! the calls run one after the other on the current stream.
use super::shape_graphs::ShapeGraphs;
use crate::ffi::streams::{self, SideStream};
use anyhow::{Context, Result};
use tch::Tensor;

/// The pass's CUDA graphs, and the side stream when calls may overlap in them.
#[derive(Debug)]
pub struct Lanes {
    graphs: ShapeGraphs,
    side: Option<SideStream>,
}

impl Lanes {
    /// Lanes whose graphs capture when `graphs` (`switch` names the setting), with a side stream
    /// on CUDA device `side_device` for captures, if given (the device the model's work runs on).
    pub fn new(graphs: bool, switch: &'static str, side_device: Option<usize>) -> Result<Self> {
        let side = match side_device {
            Some(d) => Some(
                SideStream::new(d)
                    .with_context(|| format!("creating a side CUDA stream on cuda:{d}"))?,
            ),
            None => None,
        };
        Ok(Lanes {
            graphs: ShapeGraphs::new(graphs, switch),
            side,
        })
    }

    /// The graphs (captured per stage or per pass, one memory pool, replayed one at a time).
    pub fn graphs(&self) -> &ShapeGraphs {
        &self.graphs
    }

    /// Whether a captured pass of `calls` calls overlaps them: graphs on, a side stream, more
    /// than one call.
    pub fn overlaps(&self, calls: usize) -> bool {
        self.graphs.enabled() && self.side.is_some() && calls > 1
    }

    /// `call(i)` for each of `calls` calls, in order. While the current stream captures a
    /// graph and [`Lanes::overlaps`] holds, odd calls queue their work on the side stream,
    /// which forks from the capture and joins it again (also when a call failed, so the
    /// capture can end); otherwise every call runs on the current stream.
    pub fn run(&self, calls: usize, call: &dyn Fn(usize) -> Result<Tensor>) -> Result<Vec<Tensor>> {
        let side = match &self.side {
            Some(side) if self.overlaps(calls) && streams::capturing()? => side,
            _ => return (0..calls).map(call).collect(),
        };
        side.fork()
            .context("forking the side stream from the capture")?;
        let outputs = (0..calls)
            .map(|i| match i % 2 {
                1 => side.run(|| call(i)),
                _ => call(i),
            })
            .collect::<Result<Vec<_>>>();
        let joined = side
            .join()
            .context("joining the side stream back into the capture");
        match (outputs, joined) {
            (Ok(outputs), Ok(())) => Ok(outputs),
            // The call's failure is the cause; a join that failed after it is said with it.
            (Err(e), Err(j)) => Err(e.context(format!("a call of the pass failed (below); {j:#}"))),
            (Err(e), Ok(())) | (Ok(_), Err(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmprof::region::NoopObserver;
    use tch::{Device, Kind};

    /// Without graphs or a side stream the calls run in order on the current stream.
    #[test]
    fn without_streams_calls_run_in_order() {
        let lanes = Lanes::new(false, "test.switch", None).unwrap();
        assert!(!lanes.overlaps(2));
        let seen = std::cell::RefCell::new(Vec::new());
        let out = lanes
            .run(3, &|i| {
                seen.borrow_mut().push(i);
                Ok(Tensor::from(i as i64))
            })
            .unwrap();
        assert_eq!(*seen.borrow(), [0, 1, 2]);
        let got: Vec<i64> = out.iter().map(|t| t.int64_value(&[])).collect();
        assert_eq!(got, [0, 1, 2]);
    }

    /// A pass of three calls captured with the side stream: its replays equal the calls run
    /// eagerly, over rounds with new inputs, and a changed input shape captures a second graph.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -- --ignored on the GPU machine"]
    fn captured_pass_on_two_streams_equals_eager_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let work = |x: &Tensor| -> Result<Tensor> {
            let mut h = x.shallow_clone();
            for _ in 0..20 {
                h = h.f_matmul(x)?.f_tanh()?;
            }
            Ok(h)
        };
        let lanes = Lanes::new(true, "test.switch", Some(0)).unwrap();
        assert!(lanes.overlaps(2) && !lanes.overlaps(1));
        for round in 0..4 {
            let first = if round < 2 { 256 } else { 320 };
            let inputs: Vec<Tensor> = [first, 192, 384]
                .iter()
                .map(|&n| Tensor::randn([n, n], (Kind::Float, dev)) / 16.0)
                .collect();
            let got = lanes
                .graphs()
                .call_many("pass", &inputs, &NoopObserver, &|x, _| {
                    lanes.run(x.len(), &|i| work(&x[i]))
                })
                .unwrap();
            for (i, (g, x)) in got.iter().zip(&inputs).enumerate() {
                let want = work(x).unwrap();
                assert!(
                    g.allclose(&want, 1e-5, 1e-5, false),
                    "round {round} call {i}"
                );
            }
        }
        let s = lanes.graphs().stats();
        assert_eq!((s.captured, s.replays), (2, 2), "{s:?}");
    }
}
