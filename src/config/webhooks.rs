//! The `webhooks` block of the config file: which link-local
//! networks webhooks may still reach (`webhooks.allowed_networks`).

/// The `webhooks` block.
#[derive(Debug, Clone, Default)]
pub struct WebhooksConfig {
    /// Link-local networks (169.254.0.0/16, fe80::/10) webhooks may still reach:
    /// a cloud's metadata service lives there, so they are refused unless listed.
    pub allowed_networks: Vec<ipnet::IpNet>,
}

/// What an entry of `webhooks.allowed_networks` must be.
pub const NETWORK_RULE: &str =
    "must be an IPv4 or IPv6 address or CIDR network (e.g. 169.254.169.254/32)";

/// The entries as networks (an address is its own /32 or /128); the index of
/// the first that is none.
pub fn networks(items: &[String]) -> Result<Vec<ipnet::IpNet>, usize> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.parse::<ipnet::IpNet>()
                .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map(|n| n.trunc())
                .map_err(|_| i)
        })
        .collect()
}
