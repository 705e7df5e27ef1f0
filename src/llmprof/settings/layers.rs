//! The settings layers, lowest first: built-in defaults < the user's file
//! (`$XDG_CONFIG_HOME/llmprof/settings.toml`, else `~/.config/llmprof/settings.toml`) < the
//! project's `./llmprof.toml` < `LLMPROF_<SECTION>__<KEY>` environment variables. Hydra's
//! composition and the command line are not settings: they stay above all of these.
use super::types::Settings;
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use std::path::{Path, PathBuf};

/// The environment prefix; a setting's variable is `LLMPROF_` + section + `__` + key.
pub const ENV_PREFIX: &str = "LLMPROF_";
/// Between section and key in a variable name (a key itself may hold `_`: `cache_dir`).
pub const ENV_SPLIT: &str = "__";
/// The project file, read from the current directory.
pub const PROJECT_FILE: &str = "llmprof.toml";

/// Where the settings come from: the environment's values, so tests can give their own.
#[derive(Debug, Clone)]
pub struct Origins {
    /// The user's settings file (it need not exist).
    pub user_file: Option<PathBuf>,
    /// The project's settings file (it need not exist).
    pub project_file: PathBuf,
    /// The environment variables' prefix (`LLMPROF_`; tests use their own).
    pub env_prefix: String,
}

impl Origins {
    /// The files this process reads: `XDG_CONFIG_HOME` (or `HOME/.config`) and the current dir.
    pub fn from_env() -> Self {
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| Path::new(&h).join(".config"))
            });
        Self {
            user_file: config_home.map(|d| d.join("llmprof").join("settings.toml")),
            project_file: std::env::current_dir()
                .map(|d| d.join(PROJECT_FILE))
                .unwrap_or_else(|_| PathBuf::from(PROJECT_FILE)),
            env_prefix: ENV_PREFIX.into(),
        }
    }
}

/// The layered figment. Only `LLMPROF_*` variables with a `__` are settings, so that
/// `LLMPROF_WORKER` and other single-word variables are never read as unknown settings.
pub fn figment(origins: &Origins) -> Figment {
    let mut f = Figment::from(Serialized::defaults(Settings::default()));
    // An absent file is no layer (figment's `file_exact` would report it as an error).
    for file in origins.user_file.iter().chain([&origins.project_file]) {
        if file.exists() {
            f = f.merge(Toml::file_exact(file));
        }
    }
    f.merge(
        Env::prefixed(&origins.env_prefix)
            .filter(|k| k.as_str().contains(ENV_SPLIT))
            .split(ENV_SPLIT),
    )
}
