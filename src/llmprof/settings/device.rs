//! The one config value a setting may fill: `device`, when the composed config leaves it to the
//! machine (`auto`) and the command line does not name it. Everything else in the config is
//! Hydra's and the command line's.
use super::Settings;
use crate::config::Node;

/// Put `defaults.device` into a resolved job config whose `device` is `auto`, unless an override
/// (`device=…`, `+device=…`, `++device=…`) set it; returns the device put in.
pub fn apply_default_device(
    resolved: &mut Node,
    task_overrides: &[String],
    settings: &Settings,
) -> Option<String> {
    let device = settings.defaults.device.as_ref()?;
    let overridden = task_overrides.iter().any(|o| {
        o.trim_start_matches('+')
            .split_once('=')
            .is_some_and(|(k, _)| k == "device")
    });
    if overridden || resolved.child("device") != Some(&Node::Str("auto".into())) {
        return None;
    }
    resolved
        .as_map_mut()?
        .insert("device".into(), Node::Str(device.clone()));
    Some(device.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::yaml::parse;

    #[test]
    fn only_an_auto_device_not_named_on_the_command_line_is_filled() {
        let mut s = Settings::default();
        let mut cfg = parse("device: auto\n").unwrap();
        assert_eq!(apply_default_device(&mut cfg, &[], &s), None);
        s.defaults.device = Some("cuda:1".into());
        assert_eq!(
            apply_default_device(&mut cfg, &["device=auto".into()], &s),
            None
        );
        assert_eq!(cfg.child("device"), Some(&Node::Str("auto".into())));
        assert_eq!(
            apply_default_device(&mut cfg, &["x=1".into()], &s).as_deref(),
            Some("cuda:1")
        );
        assert_eq!(cfg.child("device"), Some(&Node::Str("cuda:1".into())));
        let mut cfg = parse("device: cpu\n").unwrap();
        assert_eq!(apply_default_device(&mut cfg, &[], &s), None);
        assert_eq!(cfg.child("device"), Some(&Node::Str("cpu".into())));
    }
}
