//! Parsers for keepalived's dump files: the text state dump (`keepalived.data`, in
//! `text`), the counters dump (`keepalived.stats`, in `stats`) and the JSON dump
//! (`keepalived.json`, in `json`).
//!
//! Pure functions from text to wire types. Only the fields the spec lists (and the
//! optional ones we added: excluded VIPs, tracked items, tracker faults,
//! unicast peers, master router; and the settings the readiness checks compare, in
//! `settings`) are copied, one by one, so nothing else keepalived prints (its HMAC
//! keys above all) can reach the wire. The one secret taken, the PASS password, is
//! held as an `AuthPassword` that serde skips and `Debug` redacts: it never leaves the
//! agent; the connection turns it into a fingerprint per server. Unknown keys are
//! skipped; a dump that is not a dump is an error, never a panic, and what any dump
//! can make the parsers keep is bounded (`limits`). An entry of a VIP list counts only
//! when it starts with an address ([`vip_of`]); the others are handed back in
//! [`ParsedDump::not_addresses`] for the caller to log.

mod json;
mod limits;
mod settings;
mod shared;
mod stats;
mod text;
mod trackers;

pub use json::{merge_text_only, parse_json};
#[cfg(test)]
use shared::parse_advert_interval;
pub use shared::{epoch_to_iso, vip_of, Counters, ParseError, ParsedDump};
pub use stats::parse_stats;
pub use text::parse_data;

/// Attaches counters to the instances of the same name.
pub fn attach_counters(dump: &mut ParsedDump, counters: &Counters) {
    for i in &mut dump.instances {
        i.stats = counters.get(&i.name).cloned();
    }
}

#[cfg(test)]
mod tests;
