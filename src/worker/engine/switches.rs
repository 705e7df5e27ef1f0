//! The switches a model is built with, as the spec holds them: the engine's and the shared
//! decoder layers' (`runtime.optim`, [`EngineOptim`]) and the family's own (`model.optim`, `F`).
//! "fast" and "eager" are the presets of conf/ (`llmprof::optim`), never a list written here.
use llmprof::optim::{with_switches, EngineOptim, FamilyOptions};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Switches<F> {
    /// `runtime.optim`.
    pub engine: EngineOptim,
    /// `model.optim`.
    pub own: F,
}

impl<F: FamilyOptions> Switches<F> {
    /// The presets `name` (`fast` or `eager`) of the engine and of the family, as
    /// `runtime=<name>` composes them.
    pub fn preset(name: &str) -> anyhow::Result<Self> {
        Ok(Switches {
            engine: EngineOptim::preset(name).map_err(anyhow::Error::msg)?,
            own: F::preset(name).map_err(anyhow::Error::msg)?,
        })
    }

    /// Every switch off: `runtime=eager`.
    pub fn eager() -> Self {
        Self::preset("eager").expect("the eager presets are checked by tests")
    }

    /// The defaults: `runtime=fast`.
    pub fn fast() -> Self {
        Self::preset("fast").expect("the fast presets are checked by tests")
    }

    /// These switches with the named ones on, wherever each lives (engine or family), and the
    /// names that are neither's (a family without experts has no `grouped_moe`).
    pub fn with_on(&self, names: &[&str]) -> (Self, Vec<String>) {
        self.with_set(names, true)
    }

    /// These switches with the named ones off; an error names a switch neither has.
    pub fn with_off(&self, names: &[&str]) -> anyhow::Result<Self> {
        let (out, unknown) = self.with_set(names, false);
        anyhow::ensure!(
            unknown.is_empty(),
            "no switch {} in runtime.optim or this family's model.optim (docs/fast-path.md lists them)",
            unknown.join(", ")
        );
        Ok(out)
    }

    fn with_set(&self, names: &[&str], on: bool) -> (Self, Vec<String>) {
        let mut out = *self;
        let mut unknown = Vec::new();
        for name in names {
            if let Some(e) = with_switches(&out.engine, &[name], on) {
                out.engine = e;
            } else if let Some(o) = with_switches(&out.own, &[name], on) {
                out.own = o;
            } else {
                unknown.push(name.to_string());
            }
        }
        (out, unknown)
    }
}
