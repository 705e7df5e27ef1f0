//! Where the Hub is and where its cache lives, read from the environment the way
//! huggingface_hub reads it (`constants.py`): HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE,
//! HF_TOKEN, HF_TOKEN_PATH. Reading only: nothing here touches the network or the disk.
use std::path::PathBuf;
use std::time::Duration;

/// The Hub's address when HF_ENDPOINT is unset.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Everything a download needs from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubEnv {
    /// Base URL without a trailing slash (HF_ENDPOINT).
    pub endpoint: String,
    /// The hub cache: `models--org--name/{blobs,snapshots,refs}` live here (HF_HUB_CACHE, else
    /// `$HF_HOME/hub`, else `~/.cache/huggingface/hub`).
    pub cache_dir: PathBuf,
    /// HF_HUB_OFFLINE=1: no network; only cached snapshots are used.
    pub offline: bool,
    /// HF_TOKEN, else the token file (HF_TOKEN_PATH, else `$HF_HOME/token`).
    pub token: Option<String>,
    /// How long to wait for a connection, and for each read of an answer (settings
    /// `hub.connect_timeout_s`, `hub.read_timeout_s`): a silent server ends in an error naming
    /// them instead of a wait without end.
    pub timeouts: Timeouts,
}

/// Network waits of the Hub client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT_S),
            read: Duration::from_secs(DEFAULT_READ_TIMEOUT_S),
        }
    }
}

/// `hub.connect_timeout_s` when unset.
pub const DEFAULT_CONNECT_TIMEOUT_S: u64 = 20;
/// `hub.read_timeout_s` when unset: one read of a download may wait this long (a CDN can be slow
/// to start a large file).
pub const DEFAULT_READ_TIMEOUT_S: u64 = 120;
/// The longest wait a setting may ask for (one hour).
pub const MAX_TIMEOUT_S: u64 = 3600;

impl HubEnv {
    /// The settings of this process's environment.
    pub fn from_env() -> HubEnv {
        HubEnv::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// This process's environment with llmprof's site settings applied (`hub.cache_dir` wins
    /// over HF_HUB_CACHE; the timeouts), the settings' own errors named with their source.
    pub fn from_env_and_settings() -> Result<HubEnv, crate::settings::SettingsError> {
        let settings = crate::settings::Settings::load()?;
        let mut env = HubEnv::from_env();
        env.apply(&settings.hub)?;
        Ok(env)
    }

    /// `hub` on top of this environment.
    pub fn apply(
        &mut self,
        hub: &crate::settings::HubSettings,
    ) -> Result<(), crate::settings::SettingsError> {
        if let Some(dir) = &hub.cache_dir {
            self.cache_dir = dir.clone();
        }
        for (key, value, slot) in [
            (
                "hub.connect_timeout_s",
                hub.connect_timeout_s,
                &mut self.timeouts.connect,
            ),
            (
                "hub.read_timeout_s",
                hub.read_timeout_s,
                &mut self.timeouts.read,
            ),
        ] {
            if let Some(v) = value {
                if v == 0 || v > MAX_TIMEOUT_S {
                    return Err(crate::settings::SettingsError {
                        message: format!(
                            "setting `{key}` = {v} is out of range: 1 to {MAX_TIMEOUT_S} seconds (`llmprof settings` shows which file or variable set it)"
                        ),
                    });
                }
                *slot = Duration::from_secs(v);
            }
        }
        Ok(())
    }

    /// The settings `var` gives (a lookup of environment variables; tests pass a map).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> HubEnv {
        let home = var("HOME").map(PathBuf::from).unwrap_or_default();
        let hf_home =
            var("HF_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| match var("XDG_CACHE_HOME") {
                    Some(x) => PathBuf::from(x).join("huggingface"),
                    None => home.join(".cache/huggingface"),
                });
        let cache_dir = var("HF_HUB_CACHE")
            .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("hub"));
        let token_path = var("HF_TOKEN_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("token"));
        let token = var("HF_TOKEN")
            .or_else(|| var("HUGGING_FACE_HUB_TOKEN"))
            // Only a regular file: a FIFO at the token path would block every Hub command.
            .or_else(|| crate::dataset::file_kind::read_to_string(&token_path).ok())
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let offline = ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"]
            .iter()
            .any(|k| var(k).is_some_and(|v| is_true(&v)));
        let endpoint = var("HF_ENDPOINT")
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
            .trim_end_matches('/')
            .to_string();
        HubEnv {
            endpoint,
            cache_dir,
            offline,
            token,
            timeouts: Timeouts::default(),
        }
    }
}

/// huggingface_hub's `_is_true`: 1, ON, YES, TRUE in any case.
fn is_true(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_uppercase().as_str(),
        "1" | "ON" | "YES" | "TRUE"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> HubEnv {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HubEnv::from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn cache_dir_follows_hf_hub_cache_then_hf_home() {
        assert_eq!(
            env(&[("HOME", "/h")]).cache_dir,
            PathBuf::from("/h/.cache/huggingface/hub")
        );
        assert_eq!(
            env(&[("HOME", "/h"), ("HF_HOME", "/x")]).cache_dir,
            PathBuf::from("/x/hub")
        );
        assert_eq!(
            env(&[("HF_HOME", "/x"), ("HF_HUB_CACHE", "/c")]).cache_dir,
            PathBuf::from("/c")
        );
    }

    #[test]
    fn offline_and_endpoint_are_read_like_huggingface_hub() {
        assert!(env(&[("HF_HUB_OFFLINE", "1")]).offline);
        assert!(env(&[("HF_HUB_OFFLINE", "true")]).offline);
        assert!(!env(&[("HF_HUB_OFFLINE", "0")]).offline);
        assert_eq!(
            env(&[("HF_ENDPOINT", "http://127.0.0.1:9/")]).endpoint,
            "http://127.0.0.1:9"
        );
        assert_eq!(env(&[]).endpoint, DEFAULT_ENDPOINT);
    }

    #[test]
    fn token_comes_from_the_variable_else_the_file() {
        let dir = crate::dataset::test_util::temp_dir("hub-token");
        std::fs::write(dir.join("token"), "hf_file\n").unwrap();
        let home = dir.display().to_string();
        assert_eq!(env(&[("HF_HOME", &home)]).token.as_deref(), Some("hf_file"));
        assert_eq!(
            env(&[("HF_HOME", &home), ("HF_TOKEN", "hf_var")])
                .token
                .as_deref(),
            Some("hf_var")
        );
        assert_eq!(env(&[("HOME", "/nonexistent")]).token, None);
    }
}
