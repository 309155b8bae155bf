//! Topic and client-id patterns: a literal name, or a glob where `*` is any
//! run of characters and `?` any one (`team-a.*` is a prefix). Neither is
//! a legal topic character, so a topic pattern is never ambiguous.

/// A literal or a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    glob: bool,
}

impl Pattern {
    /// `text` as written: a glob when it has `*` or `?`.
    pub fn new(text: &str) -> Self {
        Pattern {
            text: text.to_owned(),
            glob: text.contains(['*', '?']),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it matches every name (a pattern of only `*`s).
    pub fn matches_all(&self) -> bool {
        !self.text.is_empty() && self.text.chars().all(|c| c == '*')
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        if !self.glob {
            return self.text == name;
        }
        glob(
            &self.text.chars().collect::<Vec<_>>(),
            &name.chars().collect::<Vec<_>>(),
        )
    }
}

/// Glob matching with one backtrack point (the last `*`): linear in
/// practice, never exponential.
fn glob(p: &[char], s: &[char]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_globs_and_prefixes() {
        let cases = [
            ("orders", "orders", true),
            ("orders", "orders2", false),
            ("orders", "order", false),
            ("team-a.*", "team-a.x", true),
            ("team-a.*", "team-a.", true),
            ("team-a.*", "team-b.x", false),
            ("logs-??", "logs-01", true),
            ("logs-??", "logs-1", false),
            ("logs-??", "logs-001", false),
            ("*", "", true),
            ("*", "anything", true),
            ("*.dlq", "a.b.dlq", true),
            ("*.dlq", "a.b.dlq.x", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXcYYb", false),
            ("billing-*", "billing-", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(
                Pattern::new(pattern).matches(name),
                expected,
                "{pattern} ~ {name}"
            );
        }
        assert!(Pattern::new("**").matches_all());
        assert!(!Pattern::new("a*").matches_all());
    }
}
