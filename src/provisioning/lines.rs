//! Where in a YAML text a value is (pure): the line of `webhooks[1].url`.
//!
//! serde_yaml_ng keeps no positions in a parsed value, but an error raised
//! while a node is being read carries that node's place. [`line_of`] walks the
//! text again along a path and raises such an error at the node it names, so
//! that a rule broken by an already parsed item can name its line too.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// The message of the error raised at the node looked for.
const HERE: &str = "vrrp-monitor: the node looked for";

/// `webhooks[1].headers.X-A` as steps (`[n]` after a key is an index).
pub fn path(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in text.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        let key_end = rest.find('[').unwrap_or(rest.len());
        if key_end > 0 {
            steps.push(Step::Key(rest[..key_end].to_owned()));
        }
        rest = &rest[key_end..];
        while let Some(inner) = rest.strip_prefix('[') {
            let Some(close) = inner.find(']') else {
                break;
            };
            match inner[..close].parse() {
                Ok(i) => steps.push(Step::Index(i)),
                Err(_) => steps.push(Step::Key(inner[..close].to_owned())),
            }
            rest = &inner[close + 1..];
        }
    }
    steps
}

/// The 1-based line where the node at `steps` starts; `None` when the text has
/// no such node (or cannot be read).
pub fn line_of(text: &str, steps: &[Step]) -> Option<usize> {
    let result = Probe(steps).deserialize(serde_yaml_ng::Deserializer::from_str(text));
    match result {
        // The message carries the path before it (`webhooks[0].url: …`).
        Err(e) if e.to_string().contains(HERE) => e.location().map(|l| l.line()),
        _ => None,
    }
}

/// The line of the deepest node of `steps` the text has: the field, else the
/// item holding it, and so on up.
pub fn nearest_line(text: &str, steps: &[Step]) -> Option<usize> {
    (0..=steps.len())
        .rev()
        .find_map(|n| line_of(text, &steps[..n]))
}

struct Probe<'a>(&'a [Step]);

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ProbeVisitor(self.0))
    }
}

struct ProbeVisitor<'a>(&'a [Step]);

impl ProbeVisitor<'_> {
    /// At the node looked for: the error that carries its place. Elsewhere: not
    /// found, which is no error.
    fn leaf<E: de::Error>(&self) -> Result<(), E> {
        if self.0.is_empty() {
            Err(E::custom(HERE))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for ProbeVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Step::Key(want), rest)) = self.0.split_first() else {
            return self.leaf();
        };
        while let Some(key) = map.next_key::<String>()? {
            if key == *want {
                return map.next_value_seed(Probe(rest));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Step::Index(want), rest)) = self.0.split_first() else {
            return self.leaf();
        };
        let mut i = 0;
        loop {
            if i == *want {
                return seq.next_element_seed(Probe(rest)).map(|_| ());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# provisioning\nwebhooks:\n  - name: a\n    url: https://a\n  - name: b\n    headers:\n      X-A: 5\n    kinds:\n      - vrrp.*\n      - 3\nsettings:\n  token_retention_days: 7\n";

    #[test]
    fn paths_are_read_as_keys_and_indexes() {
        assert_eq!(
            path("webhooks[1].kinds[0]"),
            vec![
                Step::Key("webhooks".into()),
                Step::Index(1),
                Step::Key("kinds".into()),
                Step::Index(0)
            ]
        );
        assert_eq!(
            path("headers.X-A"),
            vec![Step::Key("headers".into()), Step::Key("X-A".into())]
        );
    }

    #[test]
    fn lines_of_nodes() {
        let line = |p: &str| line_of(TEXT, &path(p));
        assert_eq!(line("webhooks"), Some(3));
        assert_eq!(line("webhooks[0]"), Some(3));
        assert_eq!(line("webhooks[0].url"), Some(4));
        assert_eq!(line("webhooks[1]"), Some(5));
        assert_eq!(line("webhooks[1].headers.X-A"), Some(7));
        assert_eq!(line("webhooks[1].kinds[1]"), Some(10));
        assert_eq!(line("settings.token_retention_days"), Some(12));
        assert_eq!(line("webhooks[2]"), None);
        assert_eq!(line("webhooks[0].headers"), None);
        assert_eq!(
            nearest_line(TEXT, &path("webhooks[0].headers.X-B")),
            Some(3),
            "the item when the field is missing"
        );
    }
}
