//! A run's budget: the tokens and the money it may spend before it is ended.

use crate::message::Usage;

/// What a run may spend. Checked after each turn's batch, before the next request: a run that
/// has reached a limit ends with [`Error::Budget`](super::Error::Budget), carrying its
/// transcript.
///
/// ```
/// use golato::agent::{self, Budget};
///
/// let config = agent::Config {
///     budget: Some(Budget::tokens(200_000).with_max_cost(1.50)),
///     ..Default::default()
/// };
/// # let _ = config;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Budget {
    /// Most tokens of every kind (input, output, cache reads and writes) in all.
    pub max_tokens: Option<u64>,
    /// Most US dollars, at the model's price (the model must have one:
    /// [`Model::with_price`](crate::generator::Model::with_price)).
    pub max_cost: Option<f64>,
}

impl Budget {
    /// At most `tokens` tokens.
    pub fn tokens(tokens: u64) -> Budget {
        Budget {
            max_tokens: Some(tokens),
            max_cost: None,
        }
    }

    /// At most `dollars` US dollars.
    pub fn cost(dollars: f64) -> Budget {
        Budget {
            max_tokens: None,
            max_cost: Some(dollars),
        }
    }

    /// Adds a money limit.
    pub fn with_max_cost(mut self, dollars: f64) -> Budget {
        self.max_cost = Some(dollars);
        self
    }

    /// Adds a token limit.
    pub fn with_max_tokens(mut self, tokens: u64) -> Budget {
        self.max_tokens = Some(tokens);
        self
    }

    /// The tighter of `self` and `other`, limit by limit (`None`, no budget, is the loosest).
    ///
    /// ```
    /// use golato::agent::Budget;
    /// let asked = Some(Budget::tokens(5_000));
    /// let at_most = Some(Budget::tokens(1_000).with_max_cost(0.5));
    /// assert_eq!(
    ///     Budget::tighter(asked, at_most),
    ///     Some(Budget::tokens(1_000).with_max_cost(0.5))
    /// );
    /// assert_eq!(Budget::tighter(None, at_most), at_most);
    /// ```
    pub fn tighter(a: Option<Budget>, b: Option<Budget>) -> Option<Budget> {
        fn least<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        match (a, b) {
            (Some(a), Some(b)) => Some(Budget {
                max_tokens: least(a.max_tokens, b.max_tokens),
                max_cost: least(a.max_cost, b.max_cost),
            }),
            (a, b) => a.or(b),
        }
    }

    /// What is left of this budget once `usage` (costing `cost`) is spent: a money limit
    /// stays as it is when the cost is unknown.
    pub(crate) fn left(&self, usage: &Usage, cost: Option<f64>) -> Budget {
        Budget {
            max_tokens: self
                .max_tokens
                .map(|limit| limit.saturating_sub(usage.total_tokens())),
            max_cost: self
                .max_cost
                .map(|limit| (limit - cost.unwrap_or(0.0)).max(0.0)),
        }
    }

    /// For what is left of a budget: whether nothing is, in words (what a child run that
    /// shares its parent's budget is told).
    pub(crate) fn spent_out(&self) -> Option<String> {
        if self.max_tokens == Some(0) {
            return Some("the parent run's token budget is spent (by it and its subagents)".into());
        }
        self.max_cost
            .filter(|left| *left <= 0.0)
            .map(|_| "the parent run's money budget is spent (by it and its subagents)".into())
    }

    /// The limit `usage` (costing `cost`) has reached, in words, if any.
    pub(crate) fn reached(&self, usage: &Usage, cost: Option<f64>) -> Option<String> {
        let tokens = usage.total_tokens();
        if let Some(limit) = self.max_tokens.filter(|limit| tokens >= *limit) {
            return Some(format!("{tokens} tokens used, the budget is {limit}"));
        }
        let cost = cost?;
        self.max_cost
            .filter(|limit| cost >= *limit)
            .map(|limit| format!("${cost:.4} spent, the budget is ${limit:.4}"))
    }
}
