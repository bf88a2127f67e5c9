//! A call's network connections in one line, for the live view and the front end: each host
//! once, with the bytes it sent back or why it was blocked.

use serde_json::Value;

/// Most hosts named; the rest are counted.
const NAMED: usize = 4;

/// "network: index.crates.io 19.2 KiB · example.org blocked (not in the allowed domains)",
/// from a bash result's details (`network`); `None` when it made no connection.
pub(crate) fn summary(details: Option<&Value>) -> Option<String> {
    let connections = details?.get("network")?.as_array()?;
    // Each host once, in the order first seen: bytes received, and why it was blocked.
    let mut hosts: Vec<(String, u64, Option<String>)> = Vec::new();
    for connection in connections {
        let host = connection["host"].as_str().unwrap_or_default();
        let received = connection["received"].as_u64().unwrap_or(0);
        let blocked = (connection["allowed"] == false).then(|| {
            connection["reason"]
                .as_str()
                .unwrap_or("blocked")
                .to_owned()
        });
        match hosts.iter_mut().find(|(seen, ..)| seen == host) {
            Some((_, total, why)) => {
                *total += received;
                if why.is_none() {
                    *why = blocked;
                }
            }
            None => hosts.push((host.to_owned(), received, blocked)),
        }
    }
    if hosts.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = hosts
        .iter()
        .take(NAMED)
        .map(|(host, received, blocked)| {
            let host = crate::view::shown::visible(host);
            match blocked {
                Some(why) => format!("{host} blocked ({why})"),
                None => format!("{host} {}", crate::view::shown::bytes(*received)),
            }
        })
        .collect();
    if hosts.len() > NAMED {
        parts.push(format!("+{} more", hosts.len() - NAMED));
    }
    Some(format!("network: {}", parts.join(" · ")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn each_host_once_with_its_bytes_or_why_it_was_blocked() {
        let details = json!({"network": [
            {"host": "index.crates.io", "allowed": true, "received": 1024},
            {"host": "index.crates.io", "allowed": true, "received": 1024},
            {"host": "example.org", "allowed": false, "reason": "not in the allowed domains", "received": 0},
        ]});
        assert_eq!(
            super::summary(Some(&details)).unwrap(),
            "network: index.crates.io 2.0 KiB · example.org blocked (not in the allowed domains)"
        );
        assert_eq!(super::summary(Some(&json!({}))), None);
        assert_eq!(super::summary(None), None);
        let many: Vec<_> = (0..6)
            .map(|n| json!({"host": format!("h{n}"), "allowed": true, "received": 1}))
            .collect();
        assert!(super::summary(Some(&json!({"network": many})))
            .unwrap()
            .ends_with("+2 more"));
    }
}
