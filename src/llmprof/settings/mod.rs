//! Site settings (issue #16): machine and cluster facts that are not part of an experiment
//! (Slurm account details, profiler paths, the HF cache, a default device), layered with
//! `figment` (layers.rs) into the typed `Settings` (types.rs); `llmprof settings` shows each
//! value's source (show.rs). The Hydra config is not read here.
mod device;
mod layers;
mod show;
mod types;

pub use device::apply_default_device;
pub use layers::{figment, Origins, ENV_PREFIX, ENV_SPLIT, PROJECT_FILE};
pub use show::{render, source_of_setting};
pub use types::{DefaultSettings, HubSettings, Settings, SlurmSettings, ToolSettings};

/// A settings file or variable that cannot be read: the message names the file (or variable)
/// and the key. `llmprof` exits with status 2 on it.
#[derive(Debug, thiserror::Error)]
#[error("bad llmprof settings: {message}\n  fix: correct or remove that entry (`llmprof settings` shows every setting and where it comes from; docs/settings.md lists the keys)")]
pub struct SettingsError {
    pub message: String,
}

impl SettingsError {
    /// One line per problem, each naming where it is: the file and key, or the variable.
    fn from_figment(e: figment::Error, origins: &Origins) -> Self {
        let message = e
            .into_iter()
            .map(|one| {
                let key = one.path.join(".");
                let md = one.metadata.as_ref();
                match md.and_then(|m| m.source.as_ref()) {
                    Some(figment::Source::File(file)) if key.is_empty() => {
                        format!("{}: {}", file.display(), one.kind)
                    }
                    Some(figment::Source::File(file)) => {
                        format!("{}: key `{key}`: {}", file.display(), one.kind)
                    }
                    _ if md.is_some_and(|m| m.name.contains("environment")) => format!(
                        "environment variable {}: {}",
                        env_var_name(&origins.env_prefix, &one.path),
                        one.kind
                    ),
                    _ => one.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n  ");
        Self { message }
    }
}

/// The variable of a setting: `LLMPROF_` + `SLURM__PARTITION`.
pub fn env_var_name(prefix: &str, path: &[String]) -> String {
    format!("{prefix}{}", path.join(ENV_SPLIT).to_uppercase())
}

impl Settings {
    /// The merged settings of this process (its files, current directory and environment).
    pub fn load() -> Result<Self, SettingsError> {
        Self::load_from(&Origins::from_env())
    }

    /// The merged settings from the given files (and this process's environment).
    pub fn load_from(origins: &Origins) -> Result<Self, SettingsError> {
        // A settings file that is there but not a regular file (a named pipe would block every
        // command on its read) is an error naming it.
        for file in origins.user_file.iter().chain([&origins.project_file]) {
            use crate::dataset::file_kind::{regular_file, NotRegular};
            match regular_file(file) {
                Err(s) if s.kind != NotRegular::Missing => {
                    return Err(SettingsError {
                        message: format!("{s}, not a regular file"),
                    })
                }
                _ => {}
            }
        }
        figment(origins)
            .extract()
            .map_err(|e| SettingsError::from_figment(e, origins))
    }

    /// The Slurm part, for `hydra/launcher=slurm`.
    pub fn slurm(&self) -> &SlurmSettings {
        &self.slurm
    }

    /// The configured path of a profiler (`nsys`, `ncu`), if any.
    pub fn tool_path(&self, tool: &str) -> Option<&std::path::Path> {
        match tool {
            "nsys" => self.tools.nsys.as_deref(),
            "ncu" => self.tools.ncu.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
