//! Batched vision: the views of several pages (each page's global view and its crops) go through
//! SAM, CLIP and the projector together. Views are grouped by shape (a 1024² global view and
//! 640² crops cannot share a call), concatenated along the batch dimension in a fixed order, run
//! in chunks of at most `max_views` rows, and split back, so each page gets exactly the tensors it
//! would get alone (rows of a batch are independent in every layer of the encoder).
use anyhow::{ensure, Result};
use tch::Tensor;

/// Runs `f` over `views` (each `[n_i, ...]`; several inputs per view, all with `n_i` rows),
/// grouping views of equal shape, at most `max_views` rows per call (0: no limit). Returns one
/// output per view, `[n_i, ...]`, in the order of `views`.
pub fn run_grouped(
    views: &[Vec<&Tensor>],
    max_views: usize,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    let arity = views.first().map(Vec::len).unwrap_or(0);
    ensure!(
        views.iter().all(|v| v.len() == arity && arity > 0),
        "every view needs the same, non-zero number of inputs"
    );
    // Groups by the shapes of the inputs without their row count, in order of first appearance.
    let mut groups: Vec<(Vec<Vec<i64>>, Vec<usize>)> = Vec::new();
    for (i, v) in views.iter().enumerate() {
        let key: Vec<Vec<i64>> = v.iter().map(|t| t.size()[1..].to_vec()).collect();
        let rows = v[0].size()[0];
        ensure!(
            v.iter().all(|t| t.size()[0] == rows),
            "view {i}: inputs with different row counts"
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    let mut out: Vec<Option<Tensor>> = (0..views.len()).map(|_| None).collect();
    for (_, members) in &groups {
        let inputs: Vec<Tensor> = (0..arity)
            .map(|a| Tensor::f_cat(&members.iter().map(|&m| views[m][a]).collect::<Vec<_>>(), 0))
            .collect::<Result<_, _>>()?;
        let total = inputs[0].size()[0];
        let chunk = if max_views == 0 {
            total
        } else {
            max_views as i64
        };
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < total {
            let len = chunk.min(total - start);
            let part: Vec<Tensor> = inputs
                .iter()
                .map(|t| t.f_narrow(0, start, len))
                .collect::<Result<_, _>>()?;
            pieces.push(f(&part)?);
            start += len;
        }
        let all = Tensor::f_cat(&pieces, 0)?;
        let mut offset = 0;
        for &m in members {
            let rows = views[m][0].size()[0];
            out[m] = Some(all.f_narrow(0, offset, rows)?);
            offset += rows;
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(i, t)| t.ok_or_else(|| anyhow::anyhow!("view {i} has no output")))
        .collect()
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
        let out = run_grouped(&views, 2, &f).unwrap();
        for (v, o) in views.iter().zip(&out) {
            let alone = f(&[v[0].shallow_clone()]).unwrap();
            assert!(alone.equal(o), "{o:?}");
        }
        // a and c (5 rows of width 3) in chunks of 2, 2, 1; b alone; then the 3 checks above.
        let sizes: Vec<Vec<i64>> = calls.borrow()[..4].to_vec();
        assert_eq!(sizes, vec![vec![2, 3], vec![2, 3], vec![1, 3], vec![1, 4]]);
    }
}
