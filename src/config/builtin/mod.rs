//! Hydra's own configs, embedded as Hydra ships them: the `pkg://hydra.conf` source (the YAML
//! files of hydra-core 1.3.2's `hydra/conf/hydra/`, copied unchanged: `pkg/`) and the configs
//! its ConfigStore holds (`structured://`: `HydraConf` as `hydra/config` and the basic launcher
//! and sweeper, written as YAML: `structured/`). Hydra is MIT-licensed (Facebook, Inc. and its
//! affiliates), see `LICENSE.hydra` here. Looking configs up in search-path order is repo.rs's job.

/// One embedded config source: (config path without `.yaml`, file text).
pub struct BuiltinSource {
    pub provider: &'static str,
    /// How `hydra.runtime.config_sources` names it: (path, schema).
    pub path: &'static str,
    pub schema: &'static str,
    files: &'static [(&'static str, &'static str)],
}

macro_rules! embed {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!($dir, "/", $path, ".yaml")))),*]
    };
}

/// `pkg://hydra.conf`: searched before the user's config dir, so these win over a user file
/// of the same name (as in Hydra, a user adds options; `hydra/job_logging/custom.yaml`).
pub const HYDRA_CONF: BuiltinSource = BuiltinSource {
    provider: "hydra",
    path: "hydra.conf",
    schema: "pkg",
    files: embed!("pkg":
        "hydra/env/default",
        "hydra/help/default",
        "hydra/hydra_help/default",
        "hydra/hydra_logging/default",
        "hydra/hydra_logging/disabled",
        "hydra/hydra_logging/hydra_debug",
        "hydra/hydra_logging/none",
        "hydra/job_logging/default",
        "hydra/job_logging/disabled",
        "hydra/job_logging/none",
        "hydra/job_logging/stdout",
        "hydra/output/default",
    ),
};

/// `structured://`: searched last, so a user's `hydra/launcher/basic.yaml` wins here.
pub const STRUCTURED: BuiltinSource = BuiltinSource {
    provider: "schema",
    path: "",
    schema: "structured",
    files: embed!("structured":
        "hydra/config",
        "hydra/launcher/basic",
        "hydra/sweeper/basic",
    ),
};

impl BuiltinSource {
    /// The text of a config (`hydra/job_logging/disabled`), if this source holds it.
    pub fn get(&self, config_path: &str) -> Option<&'static str> {
        let p = config_path.trim_start_matches('/');
        let p = p.strip_suffix(".yaml").unwrap_or(p);
        self.files.iter().find(|(k, _)| *k == p).map(|(_, t)| *t)
    }

    /// Option names directly in `group`.
    pub fn options(&self, group: &str) -> impl Iterator<Item = &'static str> + '_ {
        let prefix = group_prefix(group);
        self.files.iter().filter_map(move |(k, _)| {
            k.strip_prefix(prefix.as_str())
                .filter(|rest| !rest.contains('/'))
        })
    }

    /// Sub-group names directly below `group`.
    pub fn subgroups(&self, group: &str) -> impl Iterator<Item = &'static str> + '_ {
        let prefix = group_prefix(group);
        self.files.iter().filter_map(move |(k, _)| {
            k.strip_prefix(prefix.as_str())
                .and_then(|rest| rest.split_once('/'))
                .map(|(sub, _)| sub)
        })
    }

    pub fn has_group(&self, group: &str) -> bool {
        let prefix = group_prefix(group);
        !prefix.is_empty() && self.files.iter().any(|(k, _)| k.starts_with(&prefix))
    }
}

fn group_prefix(group: &str) -> String {
    let g = group.trim_matches('/');
    if g.is_empty() {
        String::new()
    } else {
        format!("{g}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_options_come_from_the_embedded_paths() {
        let mut opts: Vec<_> = HYDRA_CONF.options("hydra/job_logging").collect();
        opts.sort();
        assert_eq!(opts, ["default", "disabled", "none", "stdout"]);
        assert!(HYDRA_CONF.has_group("hydra/output"));
        assert!(HYDRA_CONF.has_group("hydra"));
        assert!(!HYDRA_CONF.has_group("hydra/launcher"));
        assert!(STRUCTURED.has_group("hydra/launcher"));
        assert!(!HYDRA_CONF.has_group(""));
        assert!(HYDRA_CONF.subgroups("hydra").any(|g| g == "hydra_logging"));
        assert_eq!(STRUCTURED.options("hydra").collect::<Vec<_>>(), ["config"]);
        assert!(HYDRA_CONF
            .get("hydra/job_logging/disabled")
            .unwrap()
            .contains("level: ERROR"));
        assert!(HYDRA_CONF.get("/hydra/output/default.yaml").is_some());
        assert!(HYDRA_CONF.get("hydra/launcher/basic").is_none());
    }
}
