//! `--cfg job|hydra|all` rendering (YAML like `OmegaConf.to_yaml`, or JSON) and `--help`.
use crate::cli::{CfgPart, Format};
use crate::config::{Composed, Map, Node};
use anyhow::Result;
use std::path::Path;

pub fn render(
    c: &Composed,
    part: CfgPart,
    resolve: bool,
    format: Option<Format>,
) -> Result<String> {
    let job = if resolve {
        c.resolved_job()?
    } else {
        c.job.clone()
    };
    let hydra = || -> Result<Node> {
        let h = if resolve {
            c.resolved_hydra()?
        } else {
            c.hydra.clone()
        };
        let mut m = Map::new();
        m.insert("hydra".into(), h);
        Ok(Node::Map(m))
    };
    let node = match part {
        CfgPart::Job => job,
        CfgPart::Hydra => hydra()?,
        CfgPart::All => {
            let mut all = hydra()?;
            if let (Some(a), Node::Map(j)) = (all.as_map_mut(), job) {
                for (k, v) in j {
                    a.insert(k, v);
                }
            }
            all
        }
    };
    Ok(match format {
        Some(Format::Json) => node.to_json(false) + "\n",
        _ => node.to_yaml(),
    })
}

pub fn help(config_dir: &Path) {
    use clap::CommandFactory;
    let mut cmd = crate::cli::Cli::command();
    let _ = cmd.print_help();
    println!("\n== Configuration groups ==\nCompose your configuration from those groups (group=option)\n");
    for (group, options) in crate::config::list_groups(config_dir) {
        println!("{group}: {}", options.join(", "));
    }
    println!("\nConfig directory: {}", config_dir.display());
    println!("Use --cfg job to see the composed config, e.g. llmprof stage1 --cfg job model=deepseek_ocr_tiny");
}
