//! `--cfg job|hydra|all` rendering (YAML like `OmegaConf.to_yaml`, or JSON) and `--help`.
use crate::cli::{CfgPart, Format};
use crate::config::Composed;
use anyhow::Result;
use std::path::Path;

pub fn render(
    c: &Composed,
    part: CfgPart,
    resolve: bool,
    format: Option<Format>,
) -> Result<String> {
    let node = match part {
        CfgPart::Job => {
            if resolve {
                c.resolved_job()?
            } else {
                c.job.clone()
            }
        }
        CfgPart::Hydra => {
            // As for the other parts, the job is resolved first, so its errors come first.
            if resolve {
                c.resolved_job()?;
            }
            c.hydra_config_shown(resolve)?
        }
        CfgPart::All => c.full_config(resolve)?,
    };
    Ok(match format {
        Some(Format::Json) => node.to_json(false) + "\n",
        _ => node.to_yaml(),
    })
}

pub fn help(config_dir: &Path) -> std::io::Result<()> {
    use clap::CommandFactory;
    let mut text = crate::cli::Cli::command().render_help().to_string();
    text.push_str("\n== Configuration groups ==\nCompose your configuration from those groups (group=option)\n\n");
    for (group, options) in crate::config::list_groups(config_dir) {
        text.push_str(&format!("{group}: {}\n", options.join(", ")));
    }
    text.push_str(&format!("\nConfig directory: {}\n", config_dir.display()));
    text.push_str("Use --cfg job to see the composed config, e.g. llmprof stage1 --cfg job model=deepseek_ocr_tiny\n");
    crate::stdout::print(&text)
}
