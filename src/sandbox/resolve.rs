//! The resolver check of `network: [host:port]`: every host of a rule must resolve, when
//! the sandbox is built, to an address a TCP port rule can stand for. The kernel rule
//! itself is by port only (docs/security.md); this check catches a misspelt or dead host
//! name, and a "host" that is no destination, before the run starts.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

use crate::spec::sandbox::HostPort;

/// How long resolving all the hosts of one sandbox may take: the system resolver can wait
/// far longer on an unreachable name server.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// An error naming the first host that does not resolve, or resolves only to addresses a
/// rule cannot restrict (see [`unrestrictable`]).
pub fn check_hosts(hosts: &[HostPort]) -> Result<(), String> {
    if hosts.is_empty() {
        return Ok(());
    }
    let (send, receive) = mpsc::channel();
    let owned = hosts.to_vec();
    // The resolver blocks; on a timeout its thread is left to finish on its own.
    std::thread::spawn(move || {
        let resolved: Vec<_> = owned
            .iter()
            .map(|rule| {
                let found = (rule.host.as_str(), rule.port).to_socket_addrs();
                (
                    rule.clone(),
                    found.map(Iterator::collect::<Vec<SocketAddr>>),
                )
            })
            .collect();
        let _ = send.send(resolved);
    });
    let resolved = receive.recv_timeout(RESOLVE_TIMEOUT).map_err(|_| {
        format!(
            "sandbox `network`: resolving {} took longer than {}s; check the system's resolver, or use `none` or `loopback`",
            list(hosts),
            RESOLVE_TIMEOUT.as_secs()
        )
    })?;
    resolved
        .into_iter()
        .try_for_each(|(rule, found)| check_one(&rule, found))
}

fn check_one(rule: &HostPort, found: std::io::Result<Vec<SocketAddr>>) -> Result<(), String> {
    let addresses = match found {
        Ok(addresses) if !addresses.is_empty() => addresses,
        Ok(_) => return Err(no_address(rule, "no address")),
        Err(error) => return Err(no_address(rule, &error.to_string())),
    };
    if addresses.iter().all(|a| unrestrictable(a.ip())) {
        let shown: Vec<String> = addresses.iter().map(|a| a.ip().to_string()).collect();
        return Err(format!(
            "sandbox `network`: `{rule}` resolves only to {}, which a port rule cannot stand for (an unspecified address reaches every address of this machine; TCP cannot connect to a multicast or broadcast one); name the host the program connects to",
            shown.join(", ")
        ));
    }
    Ok(())
}

fn no_address(rule: &HostPort, why: &str) -> String {
    format!(
        "sandbox `network`: `{rule}` does not resolve to an address ({why}); check the host name, or drop the rule"
    )
}

/// Addresses that name no single destination: unspecified (`0.0.0.0`, `::`: a connection
/// to it reaches this machine on any of its addresses), multicast and broadcast (no TCP).
fn unrestrictable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast(),
        IpAddr::V6(v6) => v6.is_unspecified() || v6.is_multicast(),
    }
}

fn list(hosts: &[HostPort]) -> String {
    let shown: Vec<String> = hosts.iter().map(|h| format!("`{h}`")).collect();
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> HostPort {
        HostPort::try_from(text.to_string()).unwrap()
    }

    #[test]
    fn literal_addresses_are_checked_without_a_resolver() {
        assert!(check_hosts(&[rule("127.0.0.1:8080"), rule("[::1]:443")]).is_ok());
        let error = check_hosts(&[rule("0.0.0.0:443")]).unwrap_err();
        assert!(
            error.contains("`0.0.0.0:443` resolves only to 0.0.0.0"),
            "{error}"
        );
        let error = check_hosts(&[rule("[ff02::1]:443")]).unwrap_err();
        assert!(error.contains("cannot stand for"), "{error}");
    }
}
