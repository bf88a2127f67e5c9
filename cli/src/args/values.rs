//! Parsers of the flags' values that clap's types do not check: amounts, temperatures and
//! durations with their bounds.

pub(crate) fn dollars(text: &str) -> Result<f64, String> {
    match text.trim_start_matches('$').parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err(format!(
            "{text:?} is not an amount of US dollars above 0, such as 0.50"
        )),
    }
}

pub(crate) fn temperature(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.0..=2.0).contains(&value) => Ok(value),
        _ => Err(format!("{text:?} is not a temperature between 0 and 2")),
    }
}

/// The longest duration the command line takes: 100 years, well inside what a timer holds.
const MAX_SECONDS: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 24 * 3600);

/// A positive number of seconds, such as 30 or 0.5.
pub(crate) fn positive_seconds(text: &str) -> Result<std::time::Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if seconds.is_finite() && seconds > 0.0 {
        std::time::Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|duration| *duration <= MAX_SECONDS)
            .ok_or_else(|| {
                format!(
                    "{text} seconds is longer than golato waits (at most {} seconds, 100 years)",
                    MAX_SECONDS.as_secs()
                )
            })
    } else {
        Err(format!("{text} is not a positive number of seconds"))
    }
}
