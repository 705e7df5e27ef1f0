//! The composed config: the job tree and Hydra's node, both unresolved, with their resolution and
//! the reads and writes of Hydra's node a launcher needs (run/sweep dirs, the config source,
//! multirun job numbering, the `.hydra/` files). Composing is loader's job; no file I/O here.
use crate::error::{composition, ConfigError};
use crate::overrides::Override;
use crate::tree::interpolate::{self, ResolveContext};
use crate::tree::node::{Map, Node};
use std::path::{Path, PathBuf};

/// A composed config: the job tree (unresolved) and Hydra's node (unresolved).
#[derive(Debug, Clone)]
pub struct Composed {
    pub job: Node,
    pub hydra: Node,
    pub parsed_overrides: Vec<Override>,
    /// When the composition ran (for `${now:...}`).
    pub now: chrono::DateTime<chrono::Local>,
}

impl Composed {
    pub fn resolve_context<'a>(
        &'a self,
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> ResolveContext<'a> {
        ResolveContext {
            hydra: Some(&self.hydra),
            now: self.now,
            env,
        }
    }

    /// The job config with every interpolation resolved.
    pub fn resolved_job(&self) -> Result<Node, ConfigError> {
        let env = |k: &str| std::env::var(k).ok();
        Ok(interpolate::resolve_tree(
            &self.job,
            &self.resolve_context(&env),
        )?)
    }

    /// Hydra's node with interpolations resolved (inside `{hydra: ...}`, as Hydra does).
    pub fn resolved_hydra(&self) -> Result<Node, ConfigError> {
        let env = |k: &str| std::env::var(k).ok();
        let mut wrapped = Map::new();
        wrapped.insert("hydra".into(), self.hydra.clone());
        let ctx = ResolveContext {
            hydra: Some(&self.hydra),
            now: self.now,
            env: &env,
        };
        let r = interpolate::resolve_tree(&Node::Map(wrapped), &ctx)?;
        Ok(r.child("hydra").cloned().unwrap_or(Node::Null))
    }

    /// A directory named in Hydra's node (`run.dir`, `sweep.dir`, `sweep.subdir`), resolved.
    pub fn hydra_dir(&self, key: &str) -> Result<PathBuf, ConfigError> {
        let hydra = self.resolved_hydra()?;
        match hydra.get_path(key) {
            Some(Node::Str(s)) => Ok(PathBuf::from(s)),
            // `subdir: ${hydra.job.num}` resolves to an int.
            Some(n @ Node::Int(_)) => Ok(PathBuf::from(n.to_python_str())),
            other => Err(composition(format!(
                "hydra.{key} must be a path string, found {other:?}"
            ))),
        }
    }

    /// The primary config directory as Hydra recorded it (the `file` entry of
    /// `hydra.runtime.config_sources`, made absolute when composing); `None` when there is none.
    pub fn primary_config_dir(&self) -> Option<PathBuf> {
        let Some(Node::List(sources)) = self.hydra.get_path("runtime.config_sources") else {
            return None;
        };
        sources
            .iter()
            .find_map(|src| match (src.child("schema"), src.child("path")) {
                (Some(Node::Str(schema)), Some(Node::Str(path))) if schema == "file" => {
                    Some(PathBuf::from(path))
                }
                _ => None,
            })
    }

    /// Make this the `num`-th job of a multirun: `hydra.job.num`, `hydra.job.id` and
    /// `hydra.mode: MULTIRUN`.
    pub fn mark_multirun_job(&mut self, num: usize) {
        for (k, v) in [
            ("num", Node::Int(num as i64)),
            ("id", Node::Str(format!("{num}"))),
        ] {
            if let Some(Node::Map(job)) = self.hydra.as_map_mut().and_then(|h| h.get_mut("job")) {
                job.insert(k.into(), v);
            }
        }
        if let Some(h) = self.hydra.as_map_mut() {
            h.insert("mode".into(), Node::Str("MULTIRUN".into()));
        }
    }

    /// Hydra's node under its `hydra` key, as `--cfg hydra` prints it.
    pub fn hydra_config(&self, resolve: bool) -> Result<Node, ConfigError> {
        let h = if resolve {
            self.resolved_hydra()?
        } else {
            self.hydra.clone()
        };
        let mut m = Map::new();
        m.insert("hydra".into(), h);
        Ok(Node::Map(m))
    }

    /// What `--cfg hydra` prints (`get_sanitized_hydra_cfg`): Hydra's node without its `help`
    /// and `hydra_help` templates.
    pub fn hydra_config_shown(&self, resolve: bool) -> Result<Node, ConfigError> {
        let mut shown = self.hydra_config(resolve)?;
        if let Some(Node::Map(h)) = shown.as_map_mut().and_then(|m| m.get_mut("hydra")) {
            h.shift_remove("help");
            h.shift_remove("hydra_help");
        }
        Ok(shown)
    }

    /// The whole config as Hydra holds it: `hydra` first, then the job's keys (`--cfg all`,
    /// `multirun.yaml`). When resolving, the job is resolved (and fails) first.
    pub fn full_config(&self, resolve: bool) -> Result<Node, ConfigError> {
        let job = if resolve {
            self.resolved_job()?
        } else {
            self.job.clone()
        };
        let mut all = self.hydra_config(resolve)?;
        if let (Some(a), Node::Map(j)) = (all.as_map_mut(), job) {
            for (k, v) in j {
                a.insert(k, v);
            }
        }
        Ok(all)
    }

    /// `.hydra/hydra.yaml` of a run in `output_dir`: Hydra's node (unresolved) under its `hydra`
    /// key, with `runtime.output_dir` set to that folder and `mode: RUN` unless already set.
    pub fn hydra_config_for_run(&self, output_dir: &Path) -> Node {
        let mut hydra = self.hydra.clone();
        if let Some(h) = hydra.as_map_mut() {
            if matches!(h.get("mode"), None | Some(Node::Null)) {
                h.insert("mode".into(), Node::Str("RUN".into()));
            }
        }
        if let Some(Node::Map(rt)) = hydra.as_map_mut().and_then(|h| h.get_mut("runtime")) {
            rt.insert(
                "output_dir".into(),
                Node::Str(output_dir.display().to_string()),
            );
        }
        let mut wrapped = Map::new();
        wrapped.insert("hydra".into(), hydra);
        Node::Map(wrapped)
    }

    /// The job's overrides as Hydra recorded them (`hydra.overrides.task`, `.hydra/overrides.yaml`).
    pub fn task_overrides(&self) -> Node {
        self.hydra
            .get_path("overrides.task")
            .cloned()
            .unwrap_or(Node::List(vec![]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::yaml_read::parse;

    /// The keys of Hydra's own `hydra` node these tests read, as Hydra's defaults set them (the
    /// loader's `hydra_defaults`, which sits above this module, builds the whole node).
    fn hydra_defaults(_multirun: bool) -> Node {
        parse(
            "mode: null\njob: {name: j, num: null, id: null}\nsweep: {dir: multi, subdir: '${hydra.job.num}'}\nruntime: {output_dir: ???, config_sources: [{path: hydra.conf, schema: pkg}]}\n",
        )
        .unwrap()
    }

    fn composed(hydra: Node) -> Composed {
        Composed {
            job: parse("a: 1\nb: '${a}'\n").unwrap(),
            hydra,
            parsed_overrides: Vec::new(),
            now: chrono::Local::now(),
        }
    }

    fn keys(n: &Node) -> Vec<&str> {
        n.as_map().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn hydra_dirs_resolve_to_paths() {
        let c = composed(
            parse("run: {dir: 'out/${hydra:job.name}'}\nsweep: {dir: multi, subdir: '${hydra.job.num}'}\njob: {name: j, num: 3}\nbad: 1.5\n")
                .unwrap(),
        );
        assert_eq!(c.hydra_dir("run.dir").unwrap(), PathBuf::from("out/j"));
        assert_eq!(c.hydra_dir("sweep.dir").unwrap(), PathBuf::from("multi"));
        assert_eq!(c.hydra_dir("sweep.subdir").unwrap(), PathBuf::from("3"));
        let err = c.hydra_dir("bad").unwrap_err().to_string();
        assert_eq!(
            err,
            "hydra.bad must be a path string, found Some(Float(1.5))"
        );
        assert!(c
            .hydra_dir("nope")
            .unwrap_err()
            .to_string()
            .contains("found None"));
    }

    #[test]
    fn primary_config_dir_is_the_file_config_source() {
        let c = composed(
            parse("runtime: {config_sources: [{path: hydra.conf, schema: pkg}, {path: /repo/conf, schema: file}, {path: /other}]}")
                .unwrap(),
        );
        assert_eq!(c.primary_config_dir(), Some(PathBuf::from("/repo/conf")));
        assert_eq!(composed(hydra_defaults(false)).primary_config_dir(), None);
        let c = composed(parse("runtime: {config_sources: [{path: 7}]}").unwrap());
        assert_eq!(c.primary_config_dir(), None);
    }

    #[test]
    fn multirun_jobs_get_num_id_and_mode() {
        let mut c = composed(hydra_defaults(false));
        assert_eq!(c.hydra.get_path("mode"), Some(&Node::Null));
        assert_eq!(
            c.hydra_config_for_run(Path::new("/r"))
                .get_path("hydra.mode"),
            Some(&Node::Str("RUN".into()))
        );
        c.mark_multirun_job(2);
        assert_eq!(c.hydra.get_path("job.num"), Some(&Node::Int(2)));
        assert_eq!(c.hydra.get_path("job.id"), Some(&Node::Str("2".into())));
        assert_eq!(
            c.hydra.get_path("mode"),
            Some(&Node::Str("MULTIRUN".into()))
        );
        assert_eq!(c.hydra_dir("sweep.subdir").unwrap(), PathBuf::from("2"));
    }

    #[test]
    fn hydra_and_full_configs_put_hydra_first() {
        let c = composed(parse("job: {name: '${hydra:job.other}', other: x}").unwrap());
        let h = c.hydra_config(false).unwrap();
        assert_eq!(keys(&h), ["hydra"]);
        assert_eq!(
            h.get_path("hydra.job.name"),
            Some(&Node::Str("${hydra:job.other}".into()))
        );
        let h = c.hydra_config(true).unwrap();
        assert_eq!(h.get_path("hydra.job.name"), Some(&Node::Str("x".into())));
        let all = c.full_config(false).unwrap();
        assert_eq!(keys(&all), ["hydra", "a", "b"]);
        assert_eq!(all.get_path("b"), Some(&Node::Str("${a}".into())));
        let all = c.full_config(true).unwrap();
        assert_eq!(all.get_path("b"), Some(&Node::Int(1)));
        assert_eq!(all.get_path("hydra.job.name"), Some(&Node::Str("x".into())));
    }

    #[test]
    fn run_files_record_output_dir_and_task_overrides() {
        let mut c = composed(hydra_defaults(false));
        let h = c.hydra_config_for_run(Path::new("/runs/r1"));
        assert_eq!(
            h.get_path("hydra.runtime.output_dir"),
            Some(&Node::Str("/runs/r1".into()))
        );
        assert_eq!(c.hydra.get_path("runtime.output_dir"), Some(&Node::Missing));
        assert_eq!(c.task_overrides(), Node::List(vec![]));
        c.hydra = parse("overrides: {task: [a=1, +b=2]}").unwrap();
        assert_eq!(
            c.task_overrides(),
            Node::List(vec![Node::Str("a=1".into()), Node::Str("+b=2".into())])
        );
        c.hydra = Node::Null;
        assert_eq!(c.task_overrides(), Node::List(vec![]));
        assert_eq!(
            c.hydra_config_for_run(Path::new("/x")).get_path("hydra"),
            Some(&Node::Null)
        );
    }
}
