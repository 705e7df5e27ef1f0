//! Batched vision: the views of several pages (each page's global view and its crops) go through
//! SAM, CLIP and the projector together. Views are grouped by shape (a 1024² global view and
//! 640² crops cannot share a call), taken in a fixed order, run in chunks of at most
//! `max_views` rows, and split back, so each page gets exactly the tensors it would get alone
//! (rows of a batch are independent in every layer of the encoder).
use anyhow::{ensure, Result};
use tch::Tensor;

/// Rows `start .. start + len` of view `view`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub view: usize,
    pub start: i64,
    pub len: i64,
}

/// The calls a batch of views makes: views (of shapes `[n_i, ...]`) grouped by shape, at most
/// `max_views` rows per call (0: no limit). The caller gathers each call's rows
/// ([`Grouping::pieces`]) and runs the calls as it likes (on several CUDA streams, say), then
/// [`Grouping::split`] gives one output per view, `[n_i, ...]`, in the order of the views.
pub struct Grouping {
    /// Per group, its member views in order.
    groups: Vec<Vec<usize>>,
    /// Per call: its rows and the group it belongs to.
    calls: Vec<(Vec<Part>, usize)>,
    /// Rows of each view.
    rows: Vec<i64>,
}

impl Grouping {
    /// Groups the views of shapes `shapes` by their shapes without the row count (in order of
    /// first appearance) and cuts each group into calls of at most `max_views` rows.
    pub fn new(shapes: &[Vec<i64>], max_views: usize) -> Result<Self> {
        ensure!(
            shapes.iter().all(|s| !s.is_empty()),
            "every view needs a row dimension"
        );
        let mut keys: Vec<&[i64]> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, s) in shapes.iter().enumerate() {
            match keys.iter().position(|k| *k == &s[1..]) {
                Some(g) => groups[g].push(i),
                None => {
                    keys.push(&s[1..]);
                    groups.push(vec![i]);
                }
            }
        }
        let rows: Vec<i64> = shapes.iter().map(|s| s[0]).collect();
        let mut calls = Vec::new();
        for (g, members) in groups.iter().enumerate() {
            let mut parts: Vec<Part> = Vec::new();
            let mut filled = 0i64;
            for &view in members {
                let mut start = 0;
                while start < rows[view] {
                    let room = match max_views {
                        0 => i64::MAX,
                        m => m as i64 - filled,
                    };
                    let len = room.min(rows[view] - start);
                    parts.push(Part { view, start, len });
                    filled += len;
                    start += len;
                    if max_views != 0 && filled == max_views as i64 {
                        calls.push((std::mem::take(&mut parts), g));
                        filled = 0;
                    }
                }
            }
            if !parts.is_empty() {
                calls.push((parts, g));
            }
        }
        Ok(Grouping {
            groups,
            calls,
            rows,
        })
    }

    /// How many calls the views make.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether there is no call (no views).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Call `call`'s rows of `views` (the views [`Grouping::new`] was given the shapes of), in
    /// order: concatenated, they are the call's input.
    pub fn pieces(&self, call: usize, views: &[Tensor]) -> Result<Vec<Tensor>> {
        let (parts, _) = self
            .calls
            .get(call)
            .ok_or_else(|| anyhow::anyhow!("no call {call} of {}", self.calls.len()))?;
        parts
            .iter()
            .map(|p| {
                let v = views
                    .get(p.view)
                    .ok_or_else(|| anyhow::anyhow!("no view {}", p.view))?;
                ensure!(
                    v.size()[0] == self.rows[p.view],
                    "view {} changed its rows",
                    p.view
                );
                Ok(v.f_narrow(0, p.start, p.len)?)
            })
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
        let views = [a, b, c];
        let shapes: Vec<Vec<i64>> = views.iter().map(Tensor::size).collect();
        let grouping = Grouping::new(&shapes, 2).unwrap();
        assert_eq!(grouping.len(), 4);
        let outputs: Vec<Tensor> = (0..grouping.len())
            .map(|i| f(&[Tensor::cat(&grouping.pieces(i, &views).unwrap(), 0)]).unwrap())
            .collect();
        let out = grouping.split(&outputs).unwrap();
        for (v, o) in views.iter().zip(&out) {
            let alone = f(&[v.shallow_clone()]).unwrap();
            assert!(alone.equal(o), "{o:?}");
        }
        // a and c (5 rows of width 3) in chunks of 2, 2, 1; b alone; then the 3 checks above.
        let sizes: Vec<Vec<i64>> = calls.borrow()[..4].to_vec();
        assert_eq!(sizes, vec![vec![2, 3], vec![2, 3], vec![1, 3], vec![1, 4]]);
        // With 3 rows a call, the first takes a's two rows and c's first: calls span views.
        let by3 = Grouping::new(&shapes, 3).unwrap();
        let first: Vec<Vec<i64>> = by3
            .pieces(0, &views)
            .unwrap()
            .iter()
            .map(Tensor::size)
            .collect();
        assert_eq!(first, vec![vec![2, 3], vec![1, 3]]);
    }

    #[test]
    fn without_a_limit_a_group_is_one_call() {
        let shapes = vec![
            vec![1, 8, 8, 3],
            vec![6, 4, 4, 3],
            vec![1, 8, 8, 3],
            vec![6, 4, 4, 3],
        ];
        let grouping = Grouping::new(&shapes, 0).unwrap();
        assert_eq!(grouping.len(), 2);
        let views: Vec<Tensor> = shapes
            .iter()
            .map(|s| Tensor::zeros(s.as_slice(), (Kind::Uint8, Device::Cpu)))
            .collect();
        let rows = |i| -> Vec<i64> {
            grouping
                .pieces(i, &views)
                .unwrap()
                .iter()
                .map(|p| p.size()[0])
                .collect()
        };
        assert_eq!((rows(0), rows(1)), (vec![1, 1], vec![6, 6]));
    }
}
