//! The setup PIN: generated at every start of an unregistered agent, never written
//! anywhere but the log, replaced after 5 wrong attempts (both routes count together),
//! dropped after registration. Pure apart from the random source, which is passed in.

use rand::Rng;

/// No 0, O, 1, I, L: nothing that reads as something else.
pub const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
/// Wrong attempts before the PIN is replaced.
pub const MAX_WRONG: u32 = 5;

/// A PIN as printed: two groups of 4 joined by `-`. Debug does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Pin(String);

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pin(****-****)")
    }
}

impl Pin {
    pub fn generate(rng: &mut impl Rng) -> Pin {
        let mut s = String::with_capacity(9);
        for i in 0..8 {
            if i == 4 {
                s.push('-');
            }
            s.push(ALPHABET[rng.gen_range(0..ALPHABET.len())] as char);
        }
        Pin(s)
    }

    /// The printed form (for the log block only).
    pub fn display(&self) -> &str {
        &self.0
    }

    /// Case and hyphens do not matter; compared in constant time over the normalised
    /// bytes (the length is not secret).
    pub fn matches(&self, input: &str) -> bool {
        let norm = |s: &str| -> Vec<u8> {
            s.bytes()
                .filter(|b| *b != b'-' && !b.is_ascii_whitespace())
                .map(|b| b.to_ascii_uppercase())
                .collect()
        };
        crate::config::secret_eq(&norm(&self.0), &norm(input))
    }
}

/// Outcome of one attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Check {
    Ok,
    Wrong {
        left: u32,
    },
    /// The fifth wrong attempt: a new PIN is in force (the caller logs it).
    Replaced(Pin),
    /// No PIN in force (registered, or none generated).
    NoPin,
}

/// The PIN in force and the count of wrong attempts.
#[derive(Debug, Default)]
pub struct PinGuard {
    pin: Option<Pin>,
    wrong: u32,
}

impl PinGuard {
    pub fn new(pin: Option<Pin>) -> PinGuard {
        PinGuard { pin, wrong: 0 }
    }

    pub fn current(&self) -> Option<&Pin> {
        self.pin.as_ref()
    }

    pub fn check(&mut self, input: &str, rng: &mut impl Rng) -> Check {
        let Some(pin) = &self.pin else {
            return Check::NoPin;
        };
        if pin.matches(input) {
            return Check::Ok;
        }
        self.wrong += 1;
        if self.wrong >= MAX_WRONG {
            let new = Pin::generate(rng);
            self.pin = Some(new.clone());
            self.wrong = 0;
            Check::Replaced(new)
        } else {
            Check::Wrong {
                left: MAX_WRONG - self.wrong,
            }
        }
    }

    /// After a registration: no PIN is accepted any more.
    pub fn drop_pin(&mut self) {
        self.pin = None;
        self.wrong = 0;
    }
}

/// Whether an unregistered agent gets a PIN at start: always with the register page;
/// without it only while there is neither a `serverUrl` nor a registration secret.
pub fn wanted(
    registered: bool,
    register_page: bool,
    has_server_url: bool,
    has_secret: bool,
) -> bool {
    !registered && (register_page || (!has_server_url && !has_secret))
}

/// The log block printed once the web server listens.
pub fn log_lines(
    pin: &Pin,
    scheme: &str,
    port: u16,
    register_page: bool,
    outbound_hint: bool,
) -> Vec<String> {
    let mut v = vec![format!("Setup PIN: {}", pin.display())];
    if register_page {
        v.push(format!(
            "Register this agent in its web UI: {scheme}://<this host>:{port}/register"
        ));
    }
    if outbound_hint {
        v.push(format!(
            "Or add it on the server as an outbound client at {scheme}://<this host>:{port} with this PIN"
        ));
    }
    v.push(
        "The setup PIN is required to register this agent (case and hyphen do not matter).".into(),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(7)
    }

    #[test]
    fn format_is_two_groups_of_four_from_the_alphabet() {
        let mut r = rng();
        for _ in 0..200 {
            let p = Pin::generate(&mut r);
            let s = p.display();
            assert_eq!(s.len(), 9, "{s}");
            assert_eq!(&s[4..5], "-");
            for c in s.bytes().filter(|b| *b != b'-') {
                assert!(ALPHABET.contains(&c), "{s}");
                assert!(!b"0O1IL".contains(&c));
            }
        }
    }

    #[test]
    fn case_and_hyphen_do_not_matter() {
        let p = Pin("K7QM-3XRD".into());
        assert!(p.matches("K7QM-3XRD"));
        assert!(p.matches("k7qm3xrd"));
        assert!(p.matches("k7qm-3XRD"));
        assert!(p.matches(" K7QM-3XRD "));
        assert!(!p.matches("K7QM-3XRE"));
        assert!(!p.matches("K7QM"));
        assert!(!p.matches(""));
    }

    #[test]
    fn fifth_wrong_attempt_replaces_the_pin() {
        let mut r = rng();
        let first = Pin("K7QM-3XRD".into());
        let mut g = PinGuard::new(Some(first.clone()));
        for left in (1..MAX_WRONG).rev() {
            assert_eq!(g.check("AAAA-AAAA", &mut r), Check::Wrong { left });
        }
        let Check::Replaced(new) = g.check("AAAA-AAAA", &mut r) else {
            panic!("fifth wrong attempt must replace the PIN")
        };
        assert_ne!(new, first);
        assert_eq!(g.check("K7QM-3XRD", &mut r), Check::Wrong { left: 4 });
        assert_eq!(g.check(new.display(), &mut r), Check::Ok);
        g.drop_pin();
        assert_eq!(g.check(new.display(), &mut r), Check::NoPin);
    }

    #[test]
    fn pin_is_wanted_per_the_register_page_rule() {
        assert!(wanted(false, true, true, true));
        assert!(wanted(false, false, false, false));
        assert!(!wanted(false, false, true, false));
        assert!(!wanted(false, false, false, true));
        assert!(!wanted(true, true, false, false));
    }

    #[test]
    fn debug_never_shows_the_pin() {
        let p = Pin("K7QM-3XRD".into());
        assert!(!format!("{p:?}").contains("K7QM"));
    }

    #[test]
    fn log_block_names_the_scheme_and_optional_lines() {
        let p = Pin("K7QM-3XRD".into());
        let all = log_lines(&p, "https", 3011, true, true).join("\n");
        assert!(all.contains("K7QM-3XRD") && all.contains("https://") && all.contains("/register"));
        assert!(all.contains("outbound"));
        let min = log_lines(&p, "http", 3011, false, false);
        assert_eq!(min.len(), 2);
        assert!(min[1].contains("required"));
    }
}
