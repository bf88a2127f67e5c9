//! What tokens cost, and how many a model holds: a price per model, so that usage can be turned into money and a run can
//! be held to a budget. A model golato has no price for has none (its cost is unknown, never
//! guessed as zero); give one with [`Model::with_price`](super::Model::with_price).

use crate::message::Usage;

/// A model's price in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Price {
    /// Prompt tokens (not read from a cache).
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: f64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: f64,
}

/// The prices golato ships, per million tokens, as the providers published them (OpenAI's and
/// Anthropic's price pages): the models the README names and their close relatives. Check
/// them against your bill; [`Model::with_price`](super::Model::with_price) replaces one.
const KNOWN: [(&str, Price); 8] = [
    ("gpt-4o-mini", Price::new(0.15, 0.60, 0.075, 0.0)),
    ("gpt-4o", Price::new(2.50, 10.00, 1.25, 0.0)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60, 0.10, 0.0)),
    ("gpt-4.1", Price::new(2.00, 8.00, 0.50, 0.0)),
    ("claude-sonnet-4-5", Price::new(3.00, 15.00, 0.30, 3.75)),
    ("claude-sonnet-4", Price::new(3.00, 15.00, 0.30, 3.75)),
    ("claude-haiku-4-5", Price::new(1.00, 5.00, 0.10, 1.25)),
    ("claude-opus-4-1", Price::new(15.00, 75.00, 1.50, 18.75)),
];

/// The context windows golato ships, in tokens, as the providers publish them, for the models
/// of the price table.
const WINDOWS: [(&str, u64); 8] = [
    ("gpt-4o-mini", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1-mini", 1_047_576),
    ("gpt-4.1", 1_047_576),
    ("claude-sonnet-4-5", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-opus-4-1", 200_000),
];

/// The models golato knows the price of, by ID (the ones a front end can offer to switch to).
///
/// ```
/// assert!(golato::generator::known_models().any(|id| id.starts_with("claude-")));
/// ```
pub fn known_models() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|(id, _)| *id)
}

/// The context window golato knows for `model`, in tokens (the models it has prices for,
/// also with a date suffix), or `None`.
///
/// ```
/// assert_eq!(golato::generator::context_window("claude-sonnet-4-5-20250929"), Some(200_000));
/// assert_eq!(golato::generator::context_window("my-local-model"), None);
/// ```
pub fn context_window(model: &str) -> Option<u64> {
    known_entry(&WINDOWS, model)
}

/// The entry of `table` for `model`: an exact ID, or one followed by a date suffix; the
/// longest match wins (`gpt-4o-mini` over `gpt-4o`).
fn known_entry<T: Copy>(table: &[(&str, T)], model: &str) -> Option<T> {
    table
        .iter()
        .filter(|(id, _)| {
            model == *id
                || model.strip_prefix(id).is_some_and(|rest| {
                    rest.starts_with('-') && rest[1..].starts_with(|c: char| c.is_ascii_digit())
                })
        })
        .max_by_key(|(id, _)| id.len())
        .map(|(_, value)| *value)
}

impl Price {
    /// A price: input, output, cache read and cache write, in dollars per million tokens.
    pub const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
        Price {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// The price golato knows for `model` (an exact ID, or one with a date suffix such as
    /// `claude-sonnet-4-5-20250929`), or `None`.
    ///
    /// ```
    /// use golato::generator::Price;
    ///
    /// assert!(Price::known("gpt-4o-mini").is_some());
    /// assert_eq!(Price::known("my-local-model"), None);
    /// ```
    pub fn known(model: &str) -> Option<Price> {
        known_entry(&KNOWN, model)
    }

    /// What `usage` costs, in dollars.
    ///
    /// ```
    /// use golato::generator::Price;
    /// use golato::message::Usage;
    ///
    /// let price = Price::new(3.0, 15.0, 0.3, 3.75);
    /// let usage = Usage { input_tokens: 1_000_000, output_tokens: 100_000, ..Default::default() };
    /// assert!((price.cost(&usage) - 4.5).abs() < 1e-9);
    /// ```
    pub fn cost(&self, usage: &Usage) -> f64 {
        let millions = |tokens: u64| tokens as f64 / 1_000_000.0;
        millions(usage.input_tokens) * self.input
            + millions(usage.output_tokens) * self.output
            + millions(usage.cache_read_tokens) * self.cache_read
            + millions(usage.cache_write_tokens) * self.cache_write
    }
}
