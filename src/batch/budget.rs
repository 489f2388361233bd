//! The batch-wide budget (`--max-cost-usd`, `--max-tokens`): once what the batch has spent
//! reaches a bound, no new input starts; the inputs running then finish. Spending is known
//! when an input ends (from its envelope), so a batch can go past a bound by what the
//! inputs running at that moment spend.

use super::ledger::Spent;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// Whether no bound is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_cost_usd.is_none() && self.max_tokens.is_none()
    }

    /// The bound that `spent` reached, said for people, or `None` while there is room.
    pub fn reached(&self, spent: &Spent) -> Option<String> {
        if let Some(max) = self.max_tokens
            && spent.tokens >= max
        {
            return Some(format!(
                "--max-tokens reached: {} tokens spent, the bound is {max}",
                spent.tokens
            ));
        }
        if let Some(max) = self.max_cost_usd
            && spent.cost_usd >= max
        {
            return Some(format!(
                "--max-cost-usd reached: ${:.4} spent, the bound is ${max}",
                spent.cost_usd
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_is_reached_when_spending_gets_to_it() {
        let budget = Budget {
            max_cost_usd: Some(1.0),
            max_tokens: Some(500),
        };
        let spent = |tokens, cost_usd| Spent {
            tokens,
            cost_usd,
            priced: true,
        };
        assert_eq!(budget.reached(&spent(499, 0.99)), None);
        assert!(
            budget
                .reached(&spent(500, 0.0))
                .unwrap()
                .contains("--max-tokens")
        );
        assert!(
            budget
                .reached(&spent(0, 1.0))
                .unwrap()
                .contains("--max-cost-usd")
        );
        assert_eq!(Budget::default().reached(&spent(u64::MAX, 1e9)), None);
    }
}
