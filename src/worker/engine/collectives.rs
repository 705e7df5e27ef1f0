//! Collectives between the ranks of a tensor-parallel run (docs/design/tensor-parallel.md): the
//! sum of every rank's tensor (after a row-parallel layer, the vocabulary-parallel embedding) and
//! the concatenation of their last dims (the vocabulary-parallel LM head). [`FileCollectives`]
//! moves the tensors through files in a folder: the CPU transport of the tests and of CPU runs
//! (GPU runs take NCCL). A rank that does not arrive within the timeout fails the call, naming
//! it, so no rank waits forever.
use anyhow::{bail, ensure, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tch::{Kind, Tensor};

/// What a tensor-parallel layer needs from its peers.
pub trait Collectives: std::fmt::Debug + Send + Sync {
    /// This process's rank, in 0..world.
    fn rank(&self) -> usize;
    fn world(&self) -> usize;
    /// Σ over the ranks of `t` (same shape and dtype on every rank).
    fn all_reduce_sum(&self, t: &Tensor) -> Result<Tensor>;
    /// The ranks' `t` concatenated along the last dim, rank 0 first.
    fn all_gather_last(&self, t: &Tensor) -> Result<Tensor>;
}

/// Collectives through files: each call writes this rank's tensor (fp32 values after a small
/// header) to `<dir>/<call>.<rank>` atomically, then reads every rank's file of the same call.
#[derive(Debug)]
pub struct FileCollectives {
    dir: PathBuf,
    rank: usize,
    world: usize,
    calls: AtomicU64,
    timeout: Duration,
}

impl FileCollectives {
    /// Joins the ranks that share `dir` (created if missing).
    pub fn new(dir: &Path, rank: usize, world: usize, timeout: Duration) -> Result<Self> {
        ensure!(
            world >= 1 && rank < world,
            "rank {rank} is not in a world of {world}"
        );
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(FileCollectives {
            dir: dir.to_path_buf(),
            rank,
            world,
            calls: AtomicU64::new(0),
            timeout,
        })
    }

    fn file(&self, call: u64, rank: usize) -> PathBuf {
        self.dir.join(format!("{call}.{rank}"))
    }

    /// Every rank's `t` for this call, in rank order, as fp32 tensors of `t`'s shape.
    fn exchange(&self, t: &Tensor) -> Result<Vec<Tensor>> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if call >= 2 {
            // Every rank wrote call − 1, so all have read call − 2: its file can go.
            let _ = std::fs::remove_file(self.file(call - 2, self.rank));
        }
        let values = Vec::<f32>::try_from(&t.f_to_kind(Kind::Float)?.f_flatten(0, -1)?)?;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let tmp = self.dir.join(format!("{call}.{}.tmp", self.rank));
        std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, self.file(call, self.rank))?;
        let started = Instant::now();
        let mut out = Vec::with_capacity(self.world);
        for r in 0..self.world {
            let path = self.file(call, r);
            let data = loop {
                match std::fs::read(&path) {
                    Ok(d) => break d,
                    Err(_) if started.elapsed() < self.timeout => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(_) => bail!(
                        "tensor-parallel rank {r} did not reach collective {call} within {:?} (rank {} waited): it died or hangs",
                        self.timeout,
                        self.rank
                    ),
                }
            };
            ensure!(
                data.len() == bytes.len(),
                "rank {r} sent {} bytes to collective {call}, rank {} {}: the ranks disagree on a shape",
                data.len(),
                self.rank,
                bytes.len()
            );
            let vals: Vec<f32> = data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            out.push(Tensor::f_from_slice(&vals)?.f_view(t.size().as_slice())?);
        }
        Ok(out)
    }
}

impl Collectives for FileCollectives {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.world
    }

    fn all_reduce_sum(&self, t: &Tensor) -> Result<Tensor> {
        let parts = self.exchange(t)?;
        // Summed in rank order on every rank: every rank gets the same bits.
        let mut sum = parts[0].shallow_clone();
        for p in &parts[1..] {
            sum = sum.f_add(p)?;
        }
        Ok(sum.f_to_kind(t.kind())?.f_to_device(t.device())?)
    }

    fn all_gather_last(&self, t: &Tensor) -> Result<Tensor> {
        let parts = self.exchange(t)?;
        Ok(Tensor::f_cat(&parts, -1)?
            .f_to_kind(t.kind())?
            .f_to_device(t.device())?)
    }
}

/// The rank this process is, when it was started as one (a run's ranks, a `--tensor-parallel`
/// check's): its rank environment variable, read without failing.
pub fn this_rank() -> Option<usize> {
    std::env::var(llmprof::run_files::TP_RANK_ENV)
        .ok()?
        .parse()
        .ok()
}

/// How long a rank waits at a collective for its slowest peer before it fails the run.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(120);

/// This process's peers for a run of `world` ranks (`runtime.tensor_parallel`): `None` for one
/// rank; the file transport on the CPU. The front end sets the rank, world and folder.
pub fn of_this_process(
    world: usize,
    device: tch::Device,
) -> Result<Option<std::sync::Arc<dyn Collectives>>> {
    if world <= 1 {
        return Ok(None);
    }
    let var = |k: &str| {
        std::env::var(k).with_context(|| format!("runtime.tensor_parallel={world} but {k} is not set: ranks are started by `llmprof stage1`, not by hand"))
    };
    use llmprof::run_files::{TP_DIR_ENV, TP_RANK_ENV, TP_WORLD_ENV};
    let rank: usize = var(TP_RANK_ENV)?.parse().context(TP_RANK_ENV)?;
    let env_world: usize = var(TP_WORLD_ENV)?.parse().context(TP_WORLD_ENV)?;
    ensure!(
        env_world == world,
        "{TP_WORLD_ENV}={env_world} but runtime.tensor_parallel={world}"
    );
    let dir = PathBuf::from(var(TP_DIR_ENV)?);
    if let tch::Device::Cuda(index) = device {
        let nccl = NcclCollectives::new(&dir, (rank, world), index, PEER_TIMEOUT)?;
        return Ok(Some(std::sync::Arc::new(nccl)));
    }
    let files = FileCollectives::new(&dir, rank, world, PEER_TIMEOUT)?;
    Ok(Some(std::sync::Arc::new(files)))
}

/// NCCL between the ranks' GPUs: rank 0's unique id reaches the others through `<dir>/nccl.id`.
#[derive(Debug)]
pub struct NcclCollectives {
    comm: crate::ffi::nccl::Communicator,
    rank: usize,
    world: usize,
}

impl NcclCollectives {
    pub fn new(
        dir: &Path,
        (rank, world): (usize, usize),
        device: usize,
        timeout: Duration,
    ) -> Result<Self> {
        use crate::ffi::nccl::{unique_id, Communicator, BUILT_WITH_NCCL, UNIQUE_ID_BYTES};
        ensure!(
            BUILT_WITH_NCCL,
            "runtime.tensor_parallel on GPUs needs NCCL, and this worker was built without it\n  fix: pip install nvidia-nccl-cu13 into the torch venv and rebuild (./bootstrap.sh --yes)"
        );
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join(llmprof::run_files::NCCL_ID);
        let id: [u8; UNIQUE_ID_BYTES] = if rank == 0 {
            let id = unique_id()?;
            let tmp = file.with_extension("id.tmp");
            std::fs::write(&tmp, id).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, &file)?;
            id
        } else {
            let started = Instant::now();
            loop {
                match std::fs::read(&file) {
                    Ok(b) if b.len() == UNIQUE_ID_BYTES => {
                        break b.try_into().expect("length checked")
                    }
                    _ if started.elapsed() < timeout => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    _ => bail!(
                        "rank {rank}: rank 0 wrote no NCCL id to {} within {timeout:?}",
                        file.display()
                    ),
                }
            }
        };
        Ok(NcclCollectives {
            comm: Communicator::new(&id, rank, world, device)?,
            rank,
            world,
        })
    }
}

impl Collectives for NcclCollectives {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.world
    }

    fn all_reduce_sum(&self, t: &Tensor) -> Result<Tensor> {
        let t = t.f_contiguous()?;
        self.comm.all_reduce(&t)?;
        Ok(t)
    }

    fn all_gather_last(&self, t: &Tensor) -> Result<Tensor> {
        let t = t.f_contiguous()?;
        let size = t.size();
        let world = self.world as i64;
        let out = Tensor::f_empty([world, t.numel() as i64], (t.kind(), t.device()))?;
        self.comm.all_gather(&t, &out)?;
        concat_last(&out, &size, world)
    }
}

/// `out` [world, numel] holding each rank's tensor of `size` [..., v] → [..., world·v], rank 0's
/// block first along the last dim.
fn concat_last(out: &Tensor, size: &[i64], world: i64) -> Result<Tensor> {
    let mut shape = vec![world];
    shape.extend(size);
    let nd = shape.len() as i64;
    let mut order: Vec<i64> = (1..nd - 1).collect();
    order.extend([0, nd - 1]);
    let mut last = size.to_vec();
    let v = last.pop().unwrap_or(1);
    last.push(v * world);
    Ok(out
        .f_view(shape.as_slice())?
        .f_permute(&order)?
        .f_reshape(last.as_slice())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn gathered_blocks_concatenate_along_the_last_dim_in_rank_order() {
        // Two ranks' [2, 3] logits: rank 0 holds columns 0-2 of the vocabulary, rank 1 3-5.
        let r0 = Tensor::from_slice(&[0f32, 1., 2., 10., 11., 12.]).view([2, 3]);
        let r1 = Tensor::from_slice(&[3f32, 4., 5., 13., 14., 15.]).view([2, 3]);
        let out = Tensor::stack(&[r0.view([-1]), r1.view([-1])], 0); // as NCCL writes it
        let got = super::concat_last(&out, &[2, 3], 2).unwrap();
        let want = [0f32, 1., 2., 3., 4., 5., 10., 11., 12., 13., 14., 15.];
        assert_eq!(Vec::<f32>::try_from(&got.view([-1])).unwrap(), want);
    }

    #[test]
    fn ranks_sum_and_gather_and_a_missing_rank_is_named() {
        let dir = crate::test_util::temp_dir("collectives");
        let comms: Vec<Arc<FileCollectives>> = (0..3)
            .map(|r| Arc::new(FileCollectives::new(&dir, r, 3, Duration::from_secs(10)).unwrap()))
            .collect();
        let handles: Vec<_> = comms
            .iter()
            .map(|c| {
                let c = c.clone();
                std::thread::spawn(move || {
                    let r = c.rank() as f64;
                    let mine = Tensor::from_slice(&[r, 10.0 * r]).f_view([1, 2]).unwrap();
                    let sum = c.all_reduce_sum(&mine.to_kind(Kind::Float)).unwrap();
                    let all = c.all_gather_last(&mine.to_kind(Kind::Float)).unwrap();
                    // Several calls in a row reuse nothing of the earlier ones.
                    let again = c.all_reduce_sum(&sum).unwrap();
                    (
                        Vec::<f32>::try_from(&sum.view([-1])).unwrap(),
                        Vec::<f32>::try_from(&all.view([-1])).unwrap(),
                        Vec::<f32>::try_from(&again.view([-1])).unwrap(),
                    )
                })
            })
            .collect();
        for h in handles {
            let (sum, all, again) = h.join().unwrap();
            assert_eq!(sum, vec![3.0, 30.0]);
            assert_eq!(all, vec![0.0, 0.0, 1.0, 10.0, 2.0, 20.0]);
            assert_eq!(again, vec![9.0, 90.0]);
        }
        // A world of two where rank 1 never comes: rank 0's call fails naming rank 1.
        let lonely =
            FileCollectives::new(&dir.join("lonely"), 0, 2, Duration::from_millis(50)).unwrap();
        let err = lonely
            .all_reduce_sum(&Tensor::from_slice(&[1f32]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("rank 1 did not reach collective 0"), "{err}");
    }
}
