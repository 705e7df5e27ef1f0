//! Layering order, the environment mapping and the errors, each test with its own files and its
//! own variable prefix (tests run in parallel in one process).
use super::*;
use std::path::{Path, PathBuf};

/// A test's own folder, removed when the test ends.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("llmprof-settings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn origins(dir: &Path, prefix: &str) -> Origins {
    Origins {
        user_file: Some(dir.join("user/llmprof/settings.toml")),
        project_file: dir.join("llmprof.toml"),
        env_prefix: prefix.into(),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn no_files_and_no_variables_give_the_built_in_defaults() {
    let dir = scratch("none");
    let s = Settings::load_from(&origins(&dir, "LLMPROF_T_NONE_")).unwrap();
    assert_eq!(s, Settings::default());
    assert_eq!(s.slurm().partition, None);
    assert_eq!(s.tool_path("nsys"), None);
}

#[test]
fn later_layers_win_key_by_key() {
    let dir = scratch("layers");
    let o = origins(&dir, "LLMPROF_T_LAYERS_");
    write(
        o.user_file.as_ref().unwrap(),
        "[slurm]\npartition = \"user-part\"\naccount = \"user-acct\"\nqos = \"user-qos\"\n[tools]\nnsys = \"/user/nsys\"\n",
    );
    write(
        &o.project_file,
        "[slurm]\npartition = \"project-part\"\nqos = \"project-qos\"\nsetup = [\"module load cuda\"]\n",
    );
    std::env::set_var("LLMPROF_T_LAYERS_SLURM__QOS", "env-qos");
    let s = Settings::load_from(&o).unwrap();
    std::env::remove_var("LLMPROF_T_LAYERS_SLURM__QOS");
    assert_eq!(s.slurm.partition.as_deref(), Some("project-part"));
    assert_eq!(s.slurm.account.as_deref(), Some("user-acct"));
    assert_eq!(s.slurm.qos.as_deref(), Some("env-qos"));
    assert_eq!(s.slurm.setup, ["module load cuda"]);
    assert_eq!(s.tool_path("nsys"), Some(Path::new("/user/nsys")));
}

#[test]
fn variables_map_section_and_key_through_a_double_underscore() {
    let dir = scratch("env");
    let o = origins(&dir, "LLMPROF_T_ENV_");
    for (k, v) in [
        ("LLMPROF_T_ENV_HUB__CACHE_DIR", "/scratch/hf"),
        ("LLMPROF_T_ENV_DEFAULTS__DEVICE", "cuda:1"),
        ("LLMPROF_T_ENV_SLURM__SETUP", "[\"a\", \"b\"]"),
        ("LLMPROF_T_ENV_TOOLS__NCU", "/opt/ncu"),
        // A single-word variable (as LLMPROF_WORKER) is not a setting and not an error.
        ("LLMPROF_T_ENV_WORKER", "/bin/true"),
    ] {
        std::env::set_var(k, v);
    }
    let s = Settings::load_from(&o);
    let shown = render(&o);
    for k in [
        "HUB__CACHE_DIR",
        "DEFAULTS__DEVICE",
        "SLURM__SETUP",
        "TOOLS__NCU",
        "WORKER",
    ] {
        std::env::remove_var(format!("LLMPROF_T_ENV_{k}"));
    }
    let s = s.unwrap();
    assert_eq!(s.hub.cache_dir, Some(PathBuf::from("/scratch/hf")));
    assert_eq!(s.defaults.device.as_deref(), Some("cuda:1"));
    assert_eq!(s.slurm.setup, ["a", "b"]);
    assert_eq!(s.tool_path("ncu"), Some(Path::new("/opt/ncu")));
    let shown = shown.unwrap();
    let line = |key: &str| {
        shown
            .lines()
            .find(|l| l.starts_with(&format!("{key} =")))
            .unwrap_or_else(|| panic!("{key} missing in\n{shown}"))
            .to_string()
    };
    assert!(line("hub.cache_dir").contains("\"/scratch/hf\""), "{shown}");
    assert!(
        line("hub.cache_dir").contains("LLMPROF_T_ENV_HUB__CACHE_DIR"),
        "{shown}"
    );
    assert!(line("slurm.partition").ends_with("# unset"), "{shown}");
    assert!(line("slurm.env").ends_with("# built-in default"), "{shown}");
}

#[test]
fn render_names_the_file_each_value_came_from() {
    let dir = scratch("render");
    let o = origins(&dir, "LLMPROF_T_RENDER_");
    write(o.user_file.as_ref().unwrap(), "[slurm]\naccount = \"a1\"\n");
    write(&o.project_file, "[slurm.env]\nHF_HOME = \"/x\"\n");
    let shown = render(&o).unwrap();
    let user = o.user_file.as_ref().unwrap().display().to_string();
    let project = o.project_file.display().to_string();
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("slurm.account = \"a1\"") && l.ends_with(&user)),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("slurm.env.HF_HOME = \"/x\"") && l.ends_with(&project)),
        "{shown}"
    );
}

#[test]
fn an_unknown_key_names_the_file_and_the_key() {
    let dir = scratch("unknown");
    let o = origins(&dir, "LLMPROF_T_UNKNOWN_");
    write(&o.project_file, "[slurm]\npartion = \"gpu\"\n");
    let err = Settings::load_from(&o).unwrap_err().to_string();
    assert!(err.contains("partion"), "{err}");
    assert!(err.contains(&o.project_file.display().to_string()), "{err}");
    assert!(
        err.contains("partition"),
        "the known keys are listed: {err}"
    );
    write(&o.project_file, "[slurmm]\npartition = \"gpu\"\n");
    let err = Settings::load_from(&o).unwrap_err().to_string();
    assert!(err.contains("slurmm"), "{err}");
}

#[test]
fn an_unknown_variable_names_the_variable() {
    let dir = scratch("unknown-env");
    let o = origins(&dir, "LLMPROF_T_UNKVAR_");
    std::env::set_var("LLMPROF_T_UNKVAR_SLURM__PARTION", "gpu");
    let err = Settings::load_from(&o).map(|_| ());
    std::env::remove_var("LLMPROF_T_UNKVAR_SLURM__PARTION");
    let err = err.unwrap_err().to_string();
    assert!(err.contains("partion"), "{err}");
    assert!(err.contains("LLMPROF_T_UNKVAR_SLURM__PARTION"), "{err}");
}

#[test]
fn malformed_toml_names_the_file() {
    let dir = scratch("malformed");
    let o = origins(&dir, "LLMPROF_T_MALFORMED_");
    write(o.user_file.as_ref().unwrap(), "[slurm\npartition = \n");
    let err = Settings::load_from(&o).unwrap_err().to_string();
    assert!(
        err.contains(&o.user_file.as_ref().unwrap().display().to_string()),
        "{err}"
    );
    write(o.user_file.as_ref().unwrap(), "[tools]\nnsys = 5\n");
    let err = Settings::load_from(&o).unwrap_err().to_string();
    assert!(err.contains("tools.nsys"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_settings_file_that_is_a_named_pipe_is_an_error_naming_it() {
    let dir = scratch("fifo");
    let o = origins(&dir, "LLMPROF_T_FIFO_");
    let c = std::ffi::CString::new(o.project_file.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = Settings::load_from(&o).unwrap_err().to_string();
    assert!(
        err.contains(&o.project_file.display().to_string()) && err.contains("named pipe"),
        "{err}"
    );
}
