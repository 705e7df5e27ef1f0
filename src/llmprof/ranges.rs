//! The one wording of a number below its minimum, for every config check (spec, the engine's and
//! the families' options). Pure; imports nothing.

/// `Err("key=value is out of range: allowed range is >= min")` when `value < min`.
pub fn at_least(key: &str, value: i64, min: i64) -> Result<(), String> {
    if value < min {
        return Err(format!(
            "{key}={value} is out of range: allowed range is >= {min}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_key_the_value_and_the_range() {
        assert_eq!(super::at_least("a.b", 1, 1), Ok(()));
        assert_eq!(
            super::at_least("a.b", 0, 1),
            Err("a.b=0 is out of range: allowed range is >= 1".to_string())
        );
    }
}
