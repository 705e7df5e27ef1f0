//! Which inputs each timed batch runs: consecutive groups of `runtime.batch_size` sampled inputs,
//! every batch filled to the requested size by cycling the inputs from the first, so that a
//! batch-size sweep measures the batch it names even when fewer inputs were sampled (a batch 8
//! over 2 pages runs 8 rows: pages 0, 1, 0, 1, …). The rows that repeat an input already in the
//! run are recorded (inputs.yaml) and announced (log, report notes).
use serde::Serialize;

/// The rows of every batch, as indices into the sampled inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchPlan {
    /// Inputs sampled for the run.
    pub inputs: usize,
    /// The requested batch size (`runtime.batch_size`).
    pub batch_size: usize,
    /// Per batch, the input index of each row.
    pub batches: Vec<Vec<usize>>,
}

impl BatchPlan {
    /// `inputs` sampled inputs in batches of `batch_size` rows (0 is taken as 1), the last batch
    /// (or the only one, when `inputs < batch_size`) filled by cycling from input 0.
    pub fn new(inputs: usize, batch_size: usize) -> Self {
        let batch_size = batch_size.max(1);
        let batches = if inputs == 0 {
            Vec::new()
        } else {
            let count = inputs.div_ceil(batch_size);
            (0..count)
                .map(|b| {
                    (0..batch_size)
                        .map(|r| (b * batch_size + r) % inputs)
                        .collect()
                })
                .collect()
        };
        BatchPlan {
            inputs,
            batch_size,
            batches,
        }
    }

    /// Per batch, the positions of its rows that repeat an input (rows past the run's
    /// `inputs`-th row, counted over all batches in order).
    pub fn repeated_rows(&self) -> Vec<Vec<usize>> {
        self.batches
            .iter()
            .enumerate()
            .map(|(b, rows)| {
                (0..rows.len())
                    .filter(|r| b * self.batch_size + r >= self.inputs)
                    .collect()
            })
            .collect()
    }

    /// Rows that repeat an input, over every batch.
    pub fn filled_rows(&self) -> usize {
        self.repeated_rows().iter().map(Vec::len).sum()
    }

    /// The sentence a log and a report carry when rows were filled; `None` when none were.
    pub fn fill_note(&self) -> Option<String> {
        let filled = self.filled_rows();
        if filled == 0 {
            return None;
        }
        let batches = self.batches.len();
        Some(format!(
            "runtime.batch_size={} over {} sampled input{}: {} row{} of {} batch{} repeat earlier inputs \
             (cycled from the first), so every timed batch runs {} rows; inputs.yaml lists them under \
             `batches`. Sample more inputs (dataset.sampling.num_samples_per_epoch) to time only distinct ones.",
            self.batch_size,
            self.inputs,
            plural(self.inputs),
            filled,
            plural(filled),
            batches,
            if batches == 1 { "" } else { "es" },
            self.batch_size,
        ))
    }

    /// Gathers each batch's rows from `items` (the sampled inputs, in order).
    pub fn gather<'a, T>(&self, items: &'a [T]) -> Vec<Vec<&'a T>> {
        self.batches
            .iter()
            .map(|rows| rows.iter().map(|&i| &items[i]).collect())
            .collect()
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_inputs_than_the_batch_cycle_to_fill_it() {
        let plan = BatchPlan::new(2, 8);
        assert_eq!(plan.batches, vec![vec![0, 1, 0, 1, 0, 1, 0, 1]]);
        assert_eq!(plan.repeated_rows(), vec![vec![2, 3, 4, 5, 6, 7]]);
        assert_eq!(plan.filled_rows(), 6);
        let note = plan.fill_note().unwrap();
        assert!(
            note.contains("runtime.batch_size=8 over 2 sampled inputs"),
            "{note}"
        );
        assert!(note.contains("6 rows of 1 batch repeat"), "{note}");
    }

    #[test]
    fn the_last_partial_batch_is_filled_from_the_first_input() {
        let plan = BatchPlan::new(10, 4);
        assert_eq!(
            plan.batches,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9, 0, 1]]
        );
        assert_eq!(plan.repeated_rows(), vec![vec![], vec![], vec![2, 3]]);
        assert!(plan.fill_note().unwrap().contains("2 rows of 3 batches"));
    }

    #[test]
    fn whole_batches_repeat_nothing() {
        let plan = BatchPlan::new(6, 3);
        assert_eq!(plan.batches, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert_eq!(plan.filled_rows(), 0);
        assert_eq!(plan.fill_note(), None);
        assert_eq!(
            BatchPlan::new(3, 1).batches,
            vec![vec![0], vec![1], vec![2]]
        );
    }

    #[test]
    fn gather_follows_the_plan() {
        let items = ["a", "b", "c"];
        let plan = BatchPlan::new(3, 2);
        let got: Vec<Vec<&str>> = plan
            .gather(&items)
            .into_iter()
            .map(|b| b.into_iter().copied().collect())
            .collect();
        assert_eq!(got, vec![vec!["a", "b"], vec!["c", "a"]]);
    }

    #[test]
    fn no_inputs_no_batches() {
        assert!(BatchPlan::new(0, 4).batches.is_empty());
        assert_eq!(BatchPlan::new(5, 0).batch_size, 1);
    }
}
