//! The batch script of a sweep's job array, kept in the sweep directory
//! (`slurm/array-<attempt>.sbatch`): `#SBATCH` lines from the launcher config (submitit_slurm's
//! flags for the same names), the site's defaults from the settings where the config leaves a
//! flag unset (`slurm.partition`, `.account`, `.qos`), the site's setup lines and exported
//! variables (`slurm.setup`, `slurm.env`), the config's setup lines, then `llmprof __job <sweep>
//! $SLURM_ARRAY_TASK_ID`, which reads its overrides from the sweep plan. Pure: text in, text out.
use super::super::conf::SlurmConf;
use crate::settings::SlurmSettings;
use std::path::Path;

pub struct ScriptInput<'a> {
    pub conf: &'a SlurmConf,
    /// The site's settings (docs/settings.md): defaults under the config's values.
    pub site: &'a SlurmSettings,
    /// The jobs (array task ids) to run.
    pub nums: &'a [usize],
    /// Absolute.
    pub sweep_dir: &'a Path,
    /// Where jobs run (the submitter's directory, `--chdir`).
    pub cwd: &'a Path,
    /// The llmprof binary the nodes run.
    pub llmprof: &'a Path,
}

/// `0-3%2`, `1,3,5-7%256`: the `--array` value for `nums` at most `parallelism` at once.
pub fn array_spec(nums: &[usize], parallelism: u32) -> String {
    let mut sorted = nums.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    format!("{}%{parallelism}", parts.join(","))
}

/// Quotes a word for bash (single quotes).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether `name` can be exported by bash (`slurm.env`'s keys are checked with it).
pub fn is_shell_variable(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `#SBATCH --key=value` line; `true` is a bare flag, `false`/null leave it out.
fn flag(key: &str, value: &serde_json::Value) -> Option<String> {
    let key = key.replace('_', "-");
    match value {
        serde_json::Value::Null | serde_json::Value::Bool(false) => None,
        serde_json::Value::Bool(true) => Some(format!("#SBATCH --{key}")),
        serde_json::Value::String(s) => Some(format!("#SBATCH --{key}={s}")),
        other => Some(format!("#SBATCH --{key}={other}")),
    }
}

pub fn render(input: &ScriptInput) -> String {
    let c = input.conf;
    let logs = input.sweep_dir.join("slurm").join("logs");
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!(
            "# Written by llmprof {} for the sweep {}; kept for reproducibility.",
            crate::VERSION,
            input.sweep_dir.display()
        ),
        format!("#SBATCH --job-name={}", c.name),
        format!(
            "#SBATCH --array={}",
            array_spec(input.nums, c.array_parallelism)
        ),
        format!("#SBATCH --output={}/%A_%a.out", logs.display()),
        format!("#SBATCH --error={}/%A_%a.err", logs.display()),
        format!("#SBATCH --chdir={}", input.cwd.display()),
        format!("#SBATCH --time={}", c.timeout_min),
        format!("#SBATCH --nodes={}", c.nodes),
        format!("#SBATCH --ntasks-per-node={}", c.tasks_per_node),
    ];
    let optional: [(&str, Option<String>); 10] = [
        ("cpus-per-task", c.cpus_per_task.map(|v| v.to_string())),
        ("gpus-per-node", c.gpus_per_node.map(|v| v.to_string())),
        ("mem", c.mem_gb.map(|v| format!("{v}GB"))),
        (
            "partition",
            c.partition.clone().or_else(|| input.site.partition.clone()),
        ),
        ("qos", c.qos.clone().or_else(|| input.site.qos.clone())),
        (
            "account",
            c.account.clone().or_else(|| input.site.account.clone()),
        ),
        ("comment", c.comment.clone()),
        ("constraint", c.constraint.clone()),
        ("exclude", c.exclude.clone()),
        ("gres", c.gres.clone()),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            lines.push(format!("#SBATCH --{key}={v}"));
        }
    }
    lines.extend(
        c.additional_parameters
            .iter()
            .filter_map(|(k, v)| flag(k, v)),
    );
    lines.push(String::new());
    if !input.site.setup.is_empty() || !input.site.env.is_empty() {
        lines.push("# site setup (llmprof settings: slurm.setup, slurm.env)".into());
        lines.extend(input.site.setup.iter().cloned());
        for (name, value) in &input.site.env {
            lines.push(format!("export {name}={}", shell_quote(value)));
        }
        lines.push(String::new());
    }
    if !c.setup.is_empty() {
        lines.push("# setup (hydra.launcher.setup)".into());
        lines.extend(c.setup.iter().cloned());
        lines.push(String::new());
    }
    lines.push("# One sweep job per array task; its overrides are in .llmprof/sweep.json.".into());
    lines.push(format!(
        "exec {} __job {} \"$SLURM_ARRAY_TASK_ID\"",
        shell_quote(&input.llmprof.display().to_string()),
        shell_quote(&input.sweep_dir.display().to_string())
    ));
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::conf::LauncherConf;

    fn conf(extra: serde_json::Value) -> SlurmConf {
        let mut v =
            serde_json::json!({"_target_": "llmprof.launcher.SlurmLauncher", "name": "stage1"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        match LauncherConf::from_node(Some(&v)).unwrap() {
            LauncherConf::Slurm(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn array_specs_compress_runs() {
        assert_eq!(array_spec(&[0, 1, 2, 3], 2), "0-3%2");
        assert_eq!(array_spec(&[7, 1, 3, 5, 6], 256), "1,3,5-7%256");
        assert_eq!(array_spec(&[4], 1), "4%1");
    }

    #[test]
    fn script_has_the_configured_flags_setup_and_job_line() {
        let c = conf(serde_json::json!({
            "partition": "gpu", "gpus_per_node": 1, "cpus_per_task": 8, "mem_gb": 64,
            "account": "proj", "qos": "high", "timeout_min": 90, "array_parallelism": 2,
            "additional_parameters": {"mail_type": "FAIL", "exclusive": true, "x": null},
            "setup": ["module load cuda/12", "source /opt/venv/bin/activate"]
        }));
        let s = render(&ScriptInput {
            conf: &c,
            site: &SlurmSettings::default(),
            nums: &[1, 3],
            sweep_dir: Path::new("/shared/sw eep"),
            cwd: Path::new("/shared/work"),
            llmprof: Path::new("/opt/llmprof/bin/llmprof"),
        });
        let has = |l: &str| assert!(s.lines().any(|x| x == l), "missing {l:?} in\n{s}");
        assert!(s.starts_with("#!/bin/bash\n"));
        has("#SBATCH --job-name=stage1");
        has("#SBATCH --array=1,3%2");
        has("#SBATCH --output=/shared/sw eep/slurm/logs/%A_%a.out");
        has("#SBATCH --chdir=/shared/work");
        has("#SBATCH --time=90");
        has("#SBATCH --partition=gpu");
        has("#SBATCH --gpus-per-node=1");
        has("#SBATCH --cpus-per-task=8");
        has("#SBATCH --mem=64GB");
        has("#SBATCH --account=proj");
        has("#SBATCH --qos=high");
        has("#SBATCH --mail-type=FAIL");
        has("#SBATCH --exclusive");
        has("module load cuda/12");
        has("exec /opt/llmprof/bin/llmprof __job '/shared/sw eep' \"$SLURM_ARRAY_TASK_ID\"");
        assert!(!s.contains("--x"), "null parameters are left out");
        assert!(!s.contains("--gres"), "unset options are left out");
        // #SBATCH lines must all come before the first command.
        let first_cmd = s.lines().position(|l| l == "module load cuda/12").unwrap();
        assert!(s.lines().skip(first_cmd).all(|l| !l.starts_with("#SBATCH")));
    }

    #[test]
    fn site_settings_fill_what_the_config_leaves_unset_and_set_up_each_job() {
        let c = conf(serde_json::json!({"partition": "gpu", "setup": ["echo config"]}));
        let site = SlurmSettings {
            partition: Some("site-part".into()),
            account: Some("site-acct".into()),
            qos: None,
            setup: vec!["module load cuda/12.4".into()],
            env: [("HF_HOME".to_string(), "/shared/hf cache".to_string())].into(),
        };
        let s = render(&ScriptInput {
            conf: &c,
            site: &site,
            nums: &[0],
            sweep_dir: Path::new("/s"),
            cwd: Path::new("/w"),
            llmprof: Path::new("/bin/llmprof"),
        });
        let at = |l: &str| {
            s.lines()
                .position(|x| x == l)
                .unwrap_or_else(|| panic!("missing {l:?} in\n{s}"))
        };
        // The experiment's config wins; the site fills the rest.
        at("#SBATCH --partition=gpu");
        assert!(!s.contains("site-part"));
        at("#SBATCH --account=site-acct");
        assert!(!s.contains("--qos"));
        // Site setup and variables first, then the config's setup, then the job.
        let (module, export, config) = (
            at("module load cuda/12.4"),
            at("export HF_HOME='/shared/hf cache'"),
            at("echo config"),
        );
        assert!(module < export && export < config && config < at(s.lines().last().unwrap()));
    }

    #[test]
    fn shell_variable_names() {
        assert!(is_shell_variable("HF_HOME") && is_shell_variable("_x1"));
        assert!(
            !is_shell_variable("1X")
                && !is_shell_variable("A-B")
                && !is_shell_variable("")
                && !is_shell_variable("A B")
        );
    }

    #[test]
    fn quoting_keeps_words_intact() {
        assert_eq!(shell_quote("/a/b-c_1"), "/a/b-c_1");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
