//! Relative data paths (`dataset.root`, `dataset.subset_filelist`, `model.path`, `model.config`)
//! made absolute
//! in the front end, before the resolved config is written: the worker then reads exactly the
//! files config.resolved.yaml names, wherever it runs.
use crate::config::Node;
use std::path::Path;

/// The config keys holding paths to data the run reads.
pub const DATA_PATH_KEYS: [&str; 4] = [
    "dataset.root",
    "dataset.subset_filelist",
    "model.path",
    "model.config",
];

pub use crate::dataset::paths::absolute;

/// Rewrites every [`DATA_PATH_KEYS`] string of the resolved job config as an absolute path (an
/// empty one names no path and stays empty).
pub fn make_absolute(resolved: &mut Node, cwd: &Path, repo: Option<&Path>) {
    for key in DATA_PATH_KEYS {
        if let Some(node) = resolved.get_path_mut(key) {
            if let Node::Str(s) = node {
                if s.is_empty() {
                    continue;
                }
                *node = Node::Str(absolute(s, cwd, repo).display().to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::test_util::{temp_dir, touch};

    #[test]
    fn relative_paths_prefer_cwd_then_the_repository() {
        let cwd = temp_dir("paths-cwd");
        let repo = temp_dir("paths-repo");
        touch(&cwd, &["here/a.png"]);
        touch(&repo, &["datasets/samples/b.png"]);
        assert_eq!(absolute("here", &cwd, Some(&repo)), cwd.join("here"));
        assert_eq!(
            absolute("datasets/samples", &cwd, Some(&repo)),
            repo.join("datasets/samples")
        );
        assert_eq!(absolute("missing", &cwd, Some(&repo)), cwd.join("missing"));
        assert_eq!(
            absolute("/abs/x", &cwd, Some(&repo)),
            std::path::PathBuf::from("/abs/x")
        );
        let mut tree = crate::config::yaml::parse(
            "dataset: {root: here, subset_filelist: null}\nmodel: {path: missing}\n",
        )
        .unwrap();
        make_absolute(&mut tree, &cwd, Some(&repo));
        assert_eq!(
            tree.get_path("dataset.root"),
            Some(&Node::Str(cwd.join("here").display().to_string()))
        );
        assert_eq!(tree.get_path("dataset.subset_filelist"), Some(&Node::Null));
        assert_eq!(
            tree.get_path("model.path"),
            Some(&Node::Str(cwd.join("missing").display().to_string()))
        );
    }
}
