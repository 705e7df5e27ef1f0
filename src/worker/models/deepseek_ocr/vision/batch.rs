//! Batched vision: the views of several pages (each page's global view and its crops) go through
//! SAM, CLIP and the projector together. Views are grouped by shape (a 1024² global view and
//! 640² crops cannot share a call), concatenated along the batch dimension in a fixed order, run
//! in chunks of at most `max_views` rows, and split back, so each page gets exactly the tensors it
//! would get alone (rows of a batch are independent in every layer of the encoder).
use anyhow::{ensure, Result};
use tch::Tensor;

/// The calls a batch of views makes: `views` (each `[n_i, ...]`; several inputs per view, all
/// with `n_i` rows) grouped by shape, at most `max_views` rows per call (0: no limit). The caller
/// runs [`Grouping::calls`] as it likes (on several CUDA streams, say), then
/// [`Grouping::split`] gives one output per view, `[n_i, ...]`, in the order of `views`.
pub struct Grouping {
    /// Per group, its member views in order.
    groups: Vec<Vec<usize>>,
    /// Per call: its inputs and the group it belongs to.
    calls: Vec<(Vec<Tensor>, usize)>,
    /// Rows of each view.
    rows: Vec<i64>,
}

impl Grouping {
    /// Groups `views` by the shapes of their inputs without the row count (in order of first
    /// appearance), concatenates each group and cuts it into calls of at most `max_views` rows.
    pub fn new(views: &[Vec<&Tensor>], max_views: usize) -> Result<Self> {
        let arity = views.first().map(Vec::len).unwrap_or(0);
        ensure!(
            views.iter().all(|v| v.len() == arity && arity > 0),
            "every view needs the same, non-zero number of inputs"
        );
        let mut keys: Vec<Vec<Vec<i64>>> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut rows = Vec::with_capacity(views.len());
        for (i, v) in views.iter().enumerate() {
            let key: Vec<Vec<i64>> = v.iter().map(|t| t.size()[1..].to_vec()).collect();
            let n = v[0].size()[0];
            ensure!(
                v.iter().all(|t| t.size()[0] == n),
                "view {i}: inputs with different row counts"
            );
            rows.push(n);
            match keys.iter().position(|k| *k == key) {
                Some(g) => groups[g].push(i),
                None => {
                    keys.push(key);
                    groups.push(vec![i]);
                }
            }
        }
        let mut calls = Vec::new();
        for (g, members) in groups.iter().enumerate() {
            // A group of one view is that view (no copy).
            let inputs: Vec<Tensor> = (0..arity)
                .map(|a| match members.as_slice() {
                    [one] => Ok(views[*one][a].shallow_clone()),
                    _ => {
                        Tensor::f_cat(&members.iter().map(|&m| views[m][a]).collect::<Vec<_>>(), 0)
                    }
                })
                .collect::<Result<_, _>>()?;
            let total = inputs[0].size()[0];
            let chunk = if max_views == 0 {
                total
            } else {
                max_views as i64
            };
            let mut start = 0;
            while start < total {
                let len = chunk.min(total - start);
                let part: Vec<Tensor> = inputs
                    .iter()
                    .map(|t| t.f_narrow(0, start, len))
                    .collect::<Result<_, _>>()?;
                calls.push((part, g));
                start += len;
            }
        }
        Ok(Grouping {
            groups,
            calls,
            rows,
        })
    }

    /// Each call's inputs, in the order the outputs go to [`Grouping::split`].
    pub fn calls(&self) -> Vec<&[Tensor]> {
        self.calls
            .iter()
            .map(|(inputs, _)| inputs.as_slice())
            .collect()
    }

    /// One output per call (rows in the call's order) → one output per view, in the order of
    /// the views.
    pub fn split(&self, outputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ensure!(
            outputs.len() == self.calls.len(),
            "{} outputs for {} calls",
            outputs.len(),
            self.calls.len()
        );
        let mut out: Vec<Option<Tensor>> = (0..self.rows.len()).map(|_| None).collect();
        for (g, members) in self.groups.iter().enumerate() {
            let pieces: Vec<&Tensor> = self
                .calls
                .iter()
                .zip(outputs)
                .filter(|((_, group), _)| *group == g)
                .map(|(_, o)| o)
                .collect();
            let all = match pieces.as_slice() {
                [one] => one.shallow_clone(),
                _ => Tensor::f_cat(&pieces, 0)?,
            };
            let mut offset = 0;
            for &m in members {
                out[m] = Some(all.f_narrow(0, offset, self.rows[m])?);
                offset += self.rows[m];
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, t)| t.ok_or_else(|| anyhow::anyhow!("view {i} has no output")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    #[test]
    fn groups_by_shape_chunks_and_restores_order() {
        let a = Tensor::arange(2 * 3, (Kind::Float, Device::Cpu)).view([2, 3]);
        let b = Tensor::arange(4, (Kind::Float, Device::Cpu)).view([1, 4]); // another shape
        let c = Tensor::arange(3 * 3, (Kind::Float, Device::Cpu)).view([3, 3]) + 100.0;
        let calls = std::cell::RefCell::new(Vec::new());
        // A row-wise function whose result reveals misplaced rows: each row times 2 plus its sum.
        let f = |x: &[Tensor]| -> Result<Tensor> {
            calls.borrow_mut().push(x[0].size());
            Ok(&x[0] * 2.0 + x[0].sum_dim_intlist(1, true, Kind::Float))
        };
        let views = vec![vec![&a], vec![&b], vec![&c]];
        let grouping = Grouping::new(&views, 2).unwrap();
        let outputs: Vec<Tensor> = grouping.calls().iter().map(|x| f(x).unwrap()).collect();
        let out = grouping.split(&outputs).unwrap();
        for (v, o) in views.iter().zip(&out) {
            let alone = f(&[v[0].shallow_clone()]).unwrap();
            assert!(alone.equal(o), "{o:?}");
        }
        // a and c (5 rows of width 3) in chunks of 2, 2, 1; b alone; then the 3 checks above.
        let sizes: Vec<Vec<i64>> = calls.borrow()[..4].to_vec();
        assert_eq!(sizes, vec![vec![2, 3], vec![2, 3], vec![1, 3], vec![1, 4]]);
    }
}
