//! What a query answers besides records: top values and stats.

use crate::values::Keyword;

/// `--top`: one value and how many matching records have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopValue {
    /// The value.
    pub value: Keyword,
    /// Matching records with it.
    pub count: u64,
}

/// `--group-by`: one combination of values and the matching records that
/// have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// A value for each grouped path, in their order.
    pub key: Vec<Keyword>,
    /// Matching records with all of them.
    pub count: u64,
    /// With `--stats`, over those records.
    pub stats: Option<Stats>,
}

impl Group {
    /// `{"key": [...], "count": N, "stats"?: {...}}` as JSON text (a sum
    /// may pass 64 bits).
    #[must_use]
    pub fn to_json_text(&self) -> String {
        let key: Vec<serde_json::Value> = self.key.iter().map(Keyword::to_json).collect();
        let mut text = format!(
            "{{\"key\":{},\"count\":{}",
            serde_json::Value::Array(key),
            self.count
        );
        if let Some(stats) = &self.stats {
            text.push_str(",\"stats\":");
            text.push_str(&stats.to_json_text());
        }
        text.push('}');
        text
    }
}

/// One page of groups, `limit` from the `cursor` (`g` and an offset into
/// the ordered groups of the same query: a write between pages may shift
/// them) on, and the next page's cursor.
///
/// # Errors
///
/// A message when `cursor` is not a groups cursor.
pub fn groups_page<'a>(
    groups: &'a [Group],
    cursor: Option<&str>,
    limit: usize,
) -> Result<(&'a [Group], Option<String>), String> {
    let offset = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix('g')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| format!("cursor {c:?} is not a cursor of grouped pages"))?,
    };
    let start = offset.min(groups.len());
    let end = start.saturating_add(limit).min(groups.len());
    let next = (end < groups.len()).then(|| format!("g{end}"));
    Ok((&groups[start..end], next))
}

/// `{"groups": [...], "cursor"?}` as JSON text.
#[must_use]
pub fn groups_json_text(page: &[Group], cursor: Option<&str>) -> String {
    let items: Vec<String> = page.iter().map(Group::to_json_text).collect();
    let mut text = format!("{{\"groups\":[{}]", items.join(","));
    if let Some(next) = cursor {
        text.push_str(",\"cursor\":");
        text.push_str(&serde_json::Value::from(next).to_string());
    }
    text.push('}');
    text
}

/// `--stats`: over the indexed values of the matching records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Values (a record with several contributes each).
    pub count: u64,
    /// Their exact sum.
    pub sum: i128,
    /// The smallest, absent when `count` is 0.
    pub min: Option<i64>,
    /// The largest, absent when `count` is 0.
    pub max: Option<i64>,
}

impl Stats {
    /// The mean of the values (absent when there are none): the exact
    /// quotient of the sum by the count, rounded once to an `f64`.
    #[must_use]
    pub fn avg(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let count = i128::from(self.count);
        // Both exact as floats: one IEEE division rounds the exact quotient
        // once.
        const EXACT: i128 = 1 << f64::MANTISSA_DIGITS;
        #[allow(clippy::cast_precision_loss)]
        if self.sum.abs() <= EXACT && count <= EXACT {
            return Some(self.sum as f64 / count as f64);
        }
        // Else the whole part and the fraction, both of the sum's sign (no
        // cancellation): `whole` is within the values' range (i64) and
        // `|rest / count|` below 1, so their sum rounds as the exact
        // quotient does but for the last bit.
        let (whole, rest) = (self.sum / count, self.sum % count);
        #[allow(clippy::cast_precision_loss)]
        Some(whole as f64 + rest as f64 / count as f64)
    }

    /// `{"count","sum","min","max","avg"}` (`min`, `max` and `avg` absent
    /// when there are no values) as JSON text, written by hand: the sum
    /// may pass 64 bits, which JSON numbers allow and `serde_json`'s
    /// values do not.
    #[must_use]
    pub fn to_json_text(&self) -> String {
        let mut text = format!("{{\"count\":{},\"sum\":{}", self.count, self.sum);
        if let (Some(min), Some(max), Some(avg)) = (self.min, self.max, self.avg()) {
            let avg = serde_json::to_string(&avg).unwrap_or_else(|_| "null".into());
            text.push_str(&format!(",\"min\":{min},\"max\":{max},\"avg\":{avg}"));
        }
        text.push('}');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_is_the_exact_quotient_rounded_once() {
        let stats = |sum: i128, count: u64| Stats {
            count,
            sum,
            min: Some(0),
            max: Some(0),
        };
        assert_eq!(stats(10, 4).avg(), Some(2.5));
        assert_eq!(stats(-7, 2).avg(), Some(-3.5));
        assert_eq!(stats(1, 3).avg(), Some(1.0 / 3.0));
        // A negative mean above -1: a floored whole part (-1) and a
        // fraction (18/19) would cancel and lose bits.
        assert_eq!(stats(-1, 19).avg(), Some(-1.0 / 19.0));
        // Beyond 2^53 a float sum would have lost the last units.
        let big = i128::from(i64::MAX) * 3;
        assert_eq!(stats(big, 3).avg(), Some(i64::MAX as f64));
        assert_eq!(Stats::default().avg(), None);
        assert_eq!(Stats::default().to_json_text(), r#"{"count":0,"sum":0}"#);
        assert_eq!(
            stats(10, 4).to_json_text(),
            r#"{"count":4,"sum":10,"min":0,"max":0,"avg":2.5}"#
        );
    }
}
