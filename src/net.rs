//! Client addresses: trusted proxies (CIDRs), the client address behind them,
//! and the rate-limit key of an address (an IPv4 address, an IPv6 /64).

use std::net::IpAddr;

/// An address block, `10.0.0.0/8` or `2001:db8::/32` (a bare address is /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = s.split_once('/').map_or((s, None), |(a, p)| (a, Some(p)));
        let net: IpAddr =
            addr.trim().parse().map_err(|_| format!("`{s}` is not an address block such as 10.0.0.0/8"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{s}` has a bad prefix length"))?,
        };
        Ok(Cidr { net, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, canonical(ip)) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                masked(u32::from(n) as u128, 32, self.prefix) == masked(u32::from(a) as u128, 32, self.prefix)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                masked(u128::from(n), 128, self.prefix) == masked(u128::from(a), 128, self.prefix)
            }
            _ => false,
        }
    }
}

fn masked(bits: u128, width: u32, prefix: u8) -> u128 {
    let prefix = u32::from(prefix);
    if prefix == 0 { 0 } else { bits >> (width - prefix) }
}

/// An IPv4-mapped IPv6 address is its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// `RASTRO_TRUSTED_PROXIES`: comma-separated blocks, empty for none.
pub fn parse_cidrs(s: &str) -> Result<Vec<Cidr>, String> {
    s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(Cidr::parse).collect()
}

/// The client's address: the socket peer, or, when the peer is a trusted
/// proxy, the rightmost `X-Forwarded-For` hop that is not one.
pub fn client_ip(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Cidr]) -> IpAddr {
    let peer = canonical(peer);
    if !trusted.iter().any(|c| c.contains(peer)) {
        return peer;
    }
    let Some(hops) = forwarded_for else { return peer };
    for hop in hops.rsplit(',') {
        let Ok(ip) = hop.trim().parse::<IpAddr>() else { return peer };
        let ip = canonical(ip);
        if !trusted.iter().any(|c| c.contains(ip)) {
            return ip;
        }
    }
    peer
}

/// The key rate limits count by: an IPv4 address, or an IPv6 /64 (a host
/// rotates addresses within its /64).
pub fn rate_key(ip: IpAddr) -> u128 {
    match canonical(ip) {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => (u128::from(v6) >> 64) << 64 | 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_match_by_prefix() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.1.2.3")));
        assert!(c.contains(ip("::ffff:10.1.2.3")));
        assert!(!c.contains(ip("11.0.0.1")));
        assert!(Cidr::parse("2001:db8::/32").unwrap().contains(ip("2001:db8:1::1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("nope").is_err());
        assert_eq!(parse_cidrs("").unwrap(), vec![]);
    }

    // rule: TRK-27
    #[test]
    fn forwarded_for_is_read_only_behind_a_trusted_proxy() {
        let trusted = parse_cidrs("127.0.0.1/32, 10.0.0.0/8").unwrap();
        // Untrusted peer: its own address, whatever the header says.
        assert_eq!(client_ip(ip("203.0.113.9"), Some("1.2.3.4"), &trusted), ip("203.0.113.9"));
        // Trusted peer: the rightmost hop outside the list.
        assert_eq!(client_ip(ip("127.0.0.1"), Some("1.2.3.4, 198.51.100.7, 10.0.0.5"), &trusted), ip("198.51.100.7"));
        // Garbage in the header: the peer.
        assert_eq!(client_ip(ip("127.0.0.1"), Some("not-an-ip"), &trusted), ip("127.0.0.1"));
        assert_eq!(client_ip(ip("127.0.0.1"), None, &trusted), ip("127.0.0.1"));
    }

    #[test]
    fn ipv6_counts_per_64() {
        assert_eq!(rate_key(ip("2001:db8:1:2::1")), rate_key(ip("2001:db8:1:2:ffff::9")));
        assert_ne!(rate_key(ip("2001:db8:1:2::1")), rate_key(ip("2001:db8:1:3::1")));
        assert_ne!(rate_key(ip("1.2.3.4")), rate_key(ip("1.2.3.5")));
    }
}
