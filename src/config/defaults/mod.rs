//! Hydra 1.3 defaults lists, cut as Hydra cuts them: elements (`core/default_element.py`) ← the
//! config repository (`_internal/config_repository.py`) ← group overrides and the algorithm
//! (`_internal/defaults_list.py`). Re-exports only.
mod element;
mod flatten;
mod group_overrides;
mod list;
pub mod repo;

pub use element::{DefaultKind, GroupValue, InputDefault, ResultDefault};
pub use group_overrides::Overrides;
pub use list::{create_defaults_list, hydra_defaults_list, HYDRA_CONFIG};
pub use repo::{list_groups, ConfigRepo, LoadedConfig};
